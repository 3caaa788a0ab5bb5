// fuse: consecutive iterators into one.
#include "../internal/error_msg.h"
#include "../internal/iter_graph.h"
#include "../internal/primitive.h"
#include "tessera/schedule/schedule.h"

namespace tessera::sched {

void do_fuse(State& s, int stage, const std::vector<int>& iters) {
    Stage& st = loop_stage(s, stage, "fuse");
    if (iters.empty())
        throw ScheduleError(Msg() << "fuse of '" << st.tensor.name() << "' without iterators");
    for (size_t k = 0; k < iters.size(); ++k) {
        check_iter(st, iters[k], "fuse");
        if (k > 0 && iters[k] != iters[k - 1] + 1)
            throw ScheduleError(Msg() << "fuse of '" << st.tensor.name()
                                      << "' of iterators that are not consecutive (" << iters[k - 1]
                                      << " then " << iters[k] << ")");
        if (st.iters[iters[k]].kind != st.iters[iters[0]].kind)
            throw ScheduleError(Msg() << "fuse of '" << st.tensor.name()
                                      << "' mixes spatial and reduce iterators");
    }
    if (iters.size() == 1)
        return;
    const int first = iters.front(), last = iters.back();
    IterRelation rel;
    rel.kind = IterRelation::Kind::Fuse;
    IterNode n;
    n.kind = st.iters[first].kind;
    int64_t extent = 1;
    for (int i : iters) {
        rel.inputs.push_back(st.iters[i].node);
        n.name += st.iters[i].name + ".";
        if (__builtin_mul_overflow(extent, st.iters[i].extent, &extent))
            throw ScheduleError(Msg() << "fuse of '" << st.tensor.name() << "' overflows");
    }
    n.name += "fused";
    n.extent = extent;
    const int node = static_cast<int>(st.nodes.size());
    rel.outputs = {node};
    st.nodes.push_back(n);
    st.relations.push_back(std::move(rel));
    st.iters.erase(st.iters.begin() + first, st.iters.begin() + last + 1);
    st.iters.insert(st.iters.begin() + first,
                    Iterator{n.name, n.extent, n.kind, IterAnnotation::None, node});
    recompute_extents(st);
    const int removed = last - first;
    for (Stage& other : s.stages) {
        ComputeLocation& loc = other.location;
        if (loc.kind != ComputeLocKind::At || loc.stage != stage || loc.iter < first)
            continue;
        loc.iter = loc.iter <= last ? first : loc.iter - removed;
    }
}

int fuse(State& s, int stage, const std::vector<int>& iters) {
    Step st;
    st.kind = StepKind::Fuse;
    st.stage = stage;
    st.iters = iters;
    apply_step(s, st);
    return iters.front();
}

} // namespace tessera::sched
