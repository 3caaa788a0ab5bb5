// apply_step and replay: the step dispatcher, with the shared checks of the primitives.
#include "internal/bound.h"
#include "internal/error_msg.h"
#include "internal/primitive.h"
#include "tessera/schedule/schedule.h"

namespace tessera::sched {

Stage& loop_stage(State& s, int stage, const char* step) {
    (void)s.stage(stage, step);
    Stage& st = s.stages[stage];
    if (st.is_input())
        throw ScheduleError(Msg() << step << " of input '" << st.tensor.name() << "'");
    if (st.location.kind == ComputeLocKind::Inlined)
        throw ScheduleError(Msg() << step << " of inlined stage '" << st.tensor.name() << "'");
    return st;
}

void check_iter(const Stage& st, int iter, const char* step) {
    if (iter < 0 || iter >= static_cast<int>(st.iters.size()))
        throw ScheduleError(Msg() << step << " of '" << st.tensor.name() << "' at iterator " << iter
                                  << ", which is out of range (" << st.iters.size()
                                  << " iterators)");
}

void insert_stage(State& s, int pos, Stage st) {
    for (Stage& other : s.stages)
        if (other.location.kind == ComputeLocKind::At && other.location.stage >= pos)
            ++other.location.stage;
    s.stages.insert(s.stages.begin() + pos, std::move(st));
}

StageScope parse_scope(const std::string& s) {
    if (s == "global")
        return StageScope::Global;
    if (s == "local")
        return StageScope::Local;
    if (s == "shared")
        return StageScope::Shared;
    throw ScheduleError(Msg() << "unknown storage scope '" << s << "'");
}

namespace {
void dispatch(State& s, const Step& st) {
    switch (st.kind) {
    case StepKind::Split:
        return do_split(s, st.stage, st.iter, st.lengths, st.inner_to_outer);
    case StepKind::FollowSplit:
        return do_follow_split(s, st.stage, st.iter, st.src_step, st.n_split);
    case StepKind::Fuse:
        return do_fuse(s, st.stage, st.iters);
    case StepKind::Reorder:
        return do_reorder(s, st.stage, st.iters);
    case StepKind::Annotate:
        return do_annotate(s, st.stage, st.iter, st.annotation);
    case StepKind::Pragma:
        return do_pragma(s, st.stage, st.iter, st.pragma, st.value);
    case StepKind::ComputeAt:
        return do_compute_at(s, st.stage, st.target_stage, st.target_iter);
    case StepKind::ComputeInline:
        return do_compute_inline(s, st.stage);
    case StepKind::ComputeRoot:
        return do_compute_root(s, st.stage);
    case StepKind::CacheWrite:
        return do_cache_write(s, st.stage, st.scope);
    case StepKind::CacheRead:
        return do_cache_read(s, st.stage, st.scope, st.readers);
    case StepKind::Rfactor:
        return do_rfactor(s, st.stage, st.iter);
    case StepKind::TransformLayout:
        return do_transform_layout(s, st.stage, LayoutTransform{st.lengths, st.iters});
    }
    throw ScheduleError(Msg() << "unknown step kind " << int(st.kind));
}
} // namespace

void apply_step(State& s, const Step& step) {
    State next = s;
    dispatch(next, step);
    infer_bounds(next);
    next.steps.push_back(step);
    s = std::move(next);
}

State replay(const te::Compute& c, const std::vector<Step>& steps) {
    State s = make_initial_state(c);
    for (size_t i = 0; i < steps.size(); ++i) {
        try {
            apply_step(s, steps[i]);
        } catch (const ScheduleError& e) {
            throw ScheduleError(Msg() << "step " << i << " (" << to_string(steps[i])
                                      << "): " << e.what());
        }
    }
    return s;
}

} // namespace tessera::sched
