// compute_at, compute_inline and compute_root.
#include "../internal/error_msg.h"
#include "../internal/primitive.h"
#include "tessera/schedule/schedule.h"

namespace tessera::sched {

void do_compute_at(State& s, int stage, int target_stage, int target_iter) {
    Stage& st = loop_stage(s, stage, "compute_at");
    (void)s.stage(target_stage, "compute_at target stage");
    if (stage == target_stage)
        throw ScheduleError(Msg() << "compute_at of '" << st.tensor.name() << "' at itself");
    if (s.is_output(stage))
        throw ScheduleError(Msg() << "compute_at of output '" << st.tensor.name() << "'");
    const Stage& target = s.stages[target_stage];
    if (target.is_input() || target.location.kind == ComputeLocKind::Inlined)
        throw ScheduleError(Msg() << "compute_at of '" << st.tensor.name() << "' at '"
                                  << target.tensor.name() << "', which has no loops");
    check_iter(target, target_iter, "compute_at");
    // Bound inference sees the element a word read indexes, not the ones after it: a stage
    // read as words is computed whole, at the root.
    if (s.is_read_as_words(stage))
        throw ScheduleError(Msg() << "compute_at of '" << st.tensor.name()
                                  << "', which a reader takes as words of its elements in memory");
    // A target computed (transitively) inside this stage would be a cycle.
    int cur = target_stage;
    for (size_t n = 0; n <= s.stages.size(); ++n) {
        const ComputeLocation& loc = s.stages[cur].location;
        if (loc.kind != ComputeLocKind::At)
            break;
        if (loc.stage == stage)
            throw ScheduleError(Msg() << "compute_at of '" << st.tensor.name() << "' at '"
                                      << target.tensor.name()
                                      << "', which is computed inside it (a cycle)");
        cur = loc.stage;
    }
    st.location = {ComputeLocKind::At, target_stage, target_iter};
}

void do_compute_inline(State& s, int stage) {
    const Stage& c = s.stage(stage);
    if (c.is_input())
        throw ScheduleError(Msg() << "compute_inline of input '" << c.tensor.name() << "'");
    Stage& st = s.stages[stage];
    if (s.is_output(stage))
        throw ScheduleError(Msg() << "compute_inline of output '" << st.tensor.name() << "'");
    if (st.has_reduce())
        throw ScheduleError(Msg() << "compute_inline of reduction '" << st.tensor.name() << "'");
    if (!s.attached_stages(stage).empty())
        throw ScheduleError(Msg() << "compute_inline of '" << st.tensor.name()
                                  << "', which other stages are computed at");
    if (s.is_read_as_words(stage))
        throw ScheduleError(Msg() << "compute_inline of '" << st.tensor.name()
                                  << "', which a reader takes as words of its elements in memory");
    st.location = {ComputeLocKind::Inlined, -1, -1};
}

void do_compute_root(State& s, int stage) {
    const Stage& c = s.stage(stage);
    if (c.is_input())
        throw ScheduleError(Msg() << "compute_root of input '" << c.tensor.name() << "'");
    s.stages[stage].location = {ComputeLocKind::Root, -1, -1};
}

void compute_at(State& s, int stage, int target_stage, int target_iter) {
    Step st;
    st.kind = StepKind::ComputeAt;
    st.stage = stage;
    st.target_stage = target_stage;
    st.target_iter = target_iter;
    apply_step(s, st);
}

void compute_inline(State& s, int stage) {
    Step st;
    st.kind = StepKind::ComputeInline;
    st.stage = stage;
    apply_step(s, st);
}

void compute_root(State& s, int stage) {
    Step st;
    st.kind = StepKind::ComputeRoot;
    st.stage = stage;
    apply_step(s, st);
}

} // namespace tessera::sched
