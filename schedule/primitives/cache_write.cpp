// cache_write: compute a stage into a local buffer; the stage becomes its copy-out.
#include "../internal/body_util.h"
#include "../internal/error_msg.h"
#include "../internal/iter_graph.h"
#include "../internal/primitive.h"
#include "tessera/schedule/schedule.h"

namespace tessera::sched {

using namespace ir;

/// A fresh copy of st's definition (new axis and reduce variables): {axes, body}.
static std::pair<std::vector<Var>, Expr> fresh_definition(const Stage& st) {
    VarMap m;
    std::vector<Var> axes;
    for (const Var& a : st.axes) {
        axes.emplace_back(a.name());
        m[a.get()] = axes.back();
    }
    Expr body;
    if (const auto* r = st.body.as<Reduce>()) {
        std::vector<IterVar> raxes;
        for (const IterVar& iv : r->axes) {
            raxes.push_back({Var(iv.var.name()), iv.extent});
            m[iv.var.get()] = raxes.back().var;
        }
        body = Reduce::make(r->op, substitute(r->source, m), raxes);
    } else {
        body = substitute(st.body, m);
    }
    return {axes, body};
}

void do_cache_write(State& s, int stage, const std::string& scope) {
    Stage& st = loop_stage(s, stage, "cache_write");
    const StageScope sc = parse_scope(scope);
    if (st.location.kind != ComputeLocKind::Root)
        throw ScheduleError(Msg() << "cache_write of '" << st.tensor.name()
                                  << "', which is not at root");
    if (!st.relations.empty())
        throw ScheduleError(Msg() << "cache_write of '" << st.tensor.name()
                                  << "' after its loops were split or fused");
    if (!s.attached_stages(stage).empty())
        throw ScheduleError(Msg() << "cache_write of '" << st.tensor.name()
                                  << "', which other stages are computed at");
    if (st.predicate.defined())
        throw ScheduleError(Msg() << "cache_write of the rfactor result '" << st.tensor.name()
                                  << "'");
    auto [axes, body] = fresh_definition(st);
    Stage cache;
    cache.tensor = make_tensor(st.tensor.name() + "." + scope, st.tensor.dtype(), st.tensor.shape(),
                               axes, body);
    cache.axes = axes;
    cache.body = body;
    cache.scope = sc;
    cache.origin = StageOrigin::CacheWrite;
    init_stage_iters(cache);

    std::vector<Expr> idx(st.axes.begin(), st.axes.end());
    st.body = TensorRead::make(cache.tensor, idx);
    init_stage_iters(st);
    st.auto_unroll_max_step = 0;
    insert_stage(s, stage, std::move(cache));
}

int cache_write(State& s, int stage, const std::string& scope) {
    Step st;
    st.kind = StepKind::CacheWrite;
    st.stage = stage;
    st.scope = scope;
    apply_step(s, st);
    return stage;
}

} // namespace tessera::sched
