// split and follow_split.
#include "../internal/error_msg.h"
#include "../internal/iter_graph.h"
#include "../internal/primitive.h"
#include "tessera/schedule/schedule.h"

namespace tessera::sched {

void do_split(State& s, int stage, int iter, const std::vector<int64_t>& lengths,
              bool inner_to_outer) {
    Stage& st = loop_stage(s, stage, "split");
    check_iter(st, iter, "split");
    if (lengths.empty())
        throw ScheduleError(Msg() << "split of '" << st.tensor.name() << "' without lengths");
    int64_t prod = 1;
    for (int64_t l : lengths) {
        if (l < 1)
            throw ScheduleError(Msg() << "split of '" << st.tensor.name()
                                      << "' with a non-positive length " << l);
        if (__builtin_mul_overflow(prod, l, &prod) || prod > (int64_t{1} << 40))
            throw ScheduleError(Msg() << "split of '" << st.tensor.name()
                                      << "' with lengths whose product is too large");
    }
    const Iterator old = st.iters[iter];
    IterRelation rel;
    rel.kind = IterRelation::Kind::Split;
    rel.inputs = {old.node};
    rel.inner_to_outer = inner_to_outer;
    const size_t parts = lengths.size() + 1;
    std::vector<Iterator> made;
    for (size_t k = 0; k < parts; ++k) {
        IterNode n;
        n.name = old.name + "." + std::to_string(k);
        n.kind = old.kind;
        // The given lengths fill the parts other than the ceiling part.
        const bool is_ceil = inner_to_outer ? k == 0 : k == parts - 1;
        n.length = is_ceil ? 0 : lengths[inner_to_outer ? k - 1 : k];
        n.extent = is_ceil ? 1 : n.length;
        rel.outputs.push_back(static_cast<int>(st.nodes.size()));
        made.push_back(
            {n.name, n.extent, n.kind, IterAnnotation::None, static_cast<int>(st.nodes.size())});
        st.nodes.push_back(std::move(n));
    }
    st.relations.push_back(std::move(rel));
    st.iters.erase(st.iters.begin() + iter);
    st.iters.insert(st.iters.begin() + iter, made.begin(), made.end());
    recompute_extents(st);
    // Stages attached at the split loop move to its innermost part; later loops shift.
    const int shift = static_cast<int>(lengths.size());
    for (Stage& other : s.stages)
        if (other.location.kind == ComputeLocKind::At && other.location.stage == stage &&
            other.location.iter >= iter)
            other.location.iter += shift;
}

void do_follow_split(State& s, int stage, int iter, int src_step, int n_split) {
    if (src_step < 0 || src_step >= static_cast<int>(s.steps.size()))
        throw ScheduleError(Msg() << "follow_split of step " << src_step
                                  << " out of range (the state has " << s.steps.size()
                                  << " steps)");
    const Step& src = s.steps[src_step];
    if (src.kind != StepKind::Split)
        throw ScheduleError(Msg() << "follow_split of step " << src_step << ", which is a "
                                  << to_string(src.kind) << " step, not a split");
    const int n = static_cast<int>(src.lengths.size());
    if (n_split < 1 || n_split > n)
        throw ScheduleError(Msg() << "follow_split with n_split " << n_split << " outside [1, " << n
                                  << "]");
    std::vector<int64_t> lengths(src.lengths.begin(), src.lengths.begin() + (n_split - 1));
    int64_t last = 1;
    for (int k = n_split - 1; k < n; ++k)
        last *= src.lengths[k];
    lengths.push_back(last);
    do_split(s, stage, iter, lengths, true);
}

std::vector<int> split(State& s, int stage, int iter, const std::vector<int64_t>& lengths,
                       bool inner_to_outer) {
    Step st;
    st.kind = StepKind::Split;
    st.stage = stage;
    st.iter = iter;
    st.lengths = lengths;
    st.inner_to_outer = inner_to_outer;
    apply_step(s, st);
    std::vector<int> ids;
    for (size_t k = 0; k <= lengths.size(); ++k)
        ids.push_back(iter + static_cast<int>(k));
    return ids;
}

std::vector<int> follow_split(State& s, int stage, int iter, int src_step, int n_split) {
    Step st;
    st.kind = StepKind::FollowSplit;
    st.stage = stage;
    st.iter = iter;
    st.src_step = src_step;
    st.n_split = n_split;
    apply_step(s, st);
    std::vector<int> ids;
    for (int k = 0; k <= n_split; ++k)
        ids.push_back(iter + k);
    return ids;
}

} // namespace tessera::sched
