// reorder: a permutation of a stage's iterators.
#include "../internal/error_msg.h"
#include "../internal/primitive.h"
#include "tessera/schedule/schedule.h"

namespace tessera::sched {

void do_reorder(State& s, int stage, const std::vector<int>& order) {
    Stage& st = loop_stage(s, stage, "reorder");
    const size_t n = st.iters.size();
    if (order.size() != n)
        throw ScheduleError(Msg() << "reorder of '" << st.tensor.name() << "' lists "
                                  << order.size() << " iterators, the stage has " << n);
    std::vector<bool> seen(n, false);
    for (int i : order) {
        check_iter(st, i, "reorder");
        if (seen[i])
            throw ScheduleError(Msg() << "reorder of '" << st.tensor.name()
                                      << "' is not a permutation (iterator " << i << " twice)");
        seen[i] = true;
    }
    std::vector<Iterator> iters;
    std::vector<int> new_pos(n);
    for (size_t k = 0; k < n; ++k) {
        iters.push_back(st.iters[order[k]]);
        new_pos[order[k]] = static_cast<int>(k);
    }
    st.iters = std::move(iters);
    // Attached stages follow their loop.
    for (Stage& other : s.stages)
        if (other.location.kind == ComputeLocKind::At && other.location.stage == stage)
            other.location.iter = new_pos[other.location.iter];
}

void reorder(State& s, int stage, const std::vector<int>& order) {
    Step st;
    st.kind = StepKind::Reorder;
    st.stage = stage;
    st.iters = order;
    apply_step(s, st);
}

void move_innermost(State& s, int stage, int iter) {
    const int n = static_cast<int>(s.stage(stage, "move_innermost stage").iters.size());
    if (iter < 0 || iter >= n)
        throw ScheduleError("move_innermost: loop " + std::to_string(iter) + " of " +
                            std::to_string(n));
    std::vector<int> order;
    for (int k = 0; k < n; ++k)
        if (k != iter)
            order.push_back(k);
    order.push_back(iter);
    reorder(s, stage, order);
}

} // namespace tessera::sched
