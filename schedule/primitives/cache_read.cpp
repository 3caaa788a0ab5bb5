// cache_read: a copy of a stage for some of its readers.
#include <algorithm>

#include "../internal/body_util.h"
#include "../internal/error_msg.h"
#include "../internal/iter_graph.h"
#include "../internal/primitive.h"
#include "tessera/schedule/schedule.h"

namespace tessera::sched {

using namespace ir;

void do_cache_read(State& s, int stage, const std::string& scope, const std::vector<int>& readers) {
    const Stage& src = s.stage(stage);
    const StageScope sc = parse_scope(scope);
    if (src.location.kind == ComputeLocKind::Inlined)
        throw ScheduleError(Msg() << "cache_read of inlined stage '" << src.tensor.name() << "'");
    if (readers.empty())
        throw ScheduleError(Msg() << "cache_read of '" << src.tensor.name() << "' without readers");
    const std::vector<int> consumers = s.consumers(stage);
    for (size_t k = 0; k < readers.size(); ++k) {
        (void)s.stage(readers[k], "cache_read reader stage");
        if (std::find(consumers.begin(), consumers.end(), readers[k]) == consumers.end())
            throw ScheduleError(Msg() << "cache_read of '" << src.tensor.name() << "' for '"
                                      << s.stages[readers[k]].tensor.name()
                                      << "', which does not read it");
        if (std::find(readers.begin(), readers.begin() + k, readers[k]) != readers.begin() + k)
            throw ScheduleError(Msg() << "cache_read of '" << src.tensor.name() << "' lists reader "
                                      << readers[k] << " twice");
    }
    std::vector<Var> axes;
    std::vector<Expr> idx;
    for (size_t d = 0; d < src.tensor.ndim(); ++d) {
        axes.emplace_back("ax" + std::to_string(d));
        idx.push_back(axes.back());
    }
    Expr body = TensorRead::make(src.tensor, idx);
    Stage copy;
    copy.tensor = make_tensor(src.tensor.name() + "." + scope, src.tensor.dtype(),
                              src.tensor.shape(), axes, body);
    copy.axes = axes;
    copy.body = body;
    copy.scope = sc;
    copy.origin = StageOrigin::CacheRead;
    init_stage_iters(copy);
    const Tensor from = src.tensor, to = copy.tensor;
    for (int r : readers)
        s.stages[r].body = replace_reads(s.stages[r].body, from, to);
    insert_stage(s, stage + 1, std::move(copy));
}

int cache_read(State& s, int stage, const std::string& scope, const std::vector<int>& readers) {
    Step st;
    st.kind = StepKind::CacheRead;
    st.stage = stage;
    st.scope = scope;
    st.readers = readers;
    apply_step(s, st);
    return stage + 1;
}

} // namespace tessera::sched
