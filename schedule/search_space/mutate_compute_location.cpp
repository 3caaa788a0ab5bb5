// mutate_compute_location: Ansor's MutateComputeLocation, extended to the root and inline
// choices of annotation.
#include <algorithm>

#include "search_space_util.h"
#include "tessera/schedule/mutation.h"
#include "tessera/schedule/schedule.h"

namespace tessera::sched {

namespace {

bool is_location_step(const Step& st) {
    return st.kind == StepKind::ComputeAt || st.kind == StepKind::ComputeRoot ||
           st.kind == StepKind::ComputeInline;
}

bool adds_stage(const Step& st) {
    return st.kind == StepKind::CacheWrite || st.kind == StepKind::CacheRead ||
           st.kind == StepKind::Rfactor;
}

} // namespace

State mutate_compute_location(const State& s, Rng& rng, const SampleOptions& opts) {
    // The location steps annotation made: those of movable stages, leaving out the inlining of
    // strictly inlinable stages (a sketch decision).
    std::vector<size_t> movable;
    {
        State cur = make_initial_state(s.compute);
        for (size_t i = 0; i < s.steps.size(); ++i) {
            const Step& st = s.steps[i];
            if (is_location_step(st) && st.stage >= 0 &&
                st.stage < static_cast<int>(cur.stages.size()) &&
                can_change_compute_location(cur, st.stage) &&
                !(st.kind == StepKind::ComputeInline && cur.is_strict_inlinable(st.stage)))
                movable.push_back(i);
            apply_step(cur, st);
        }
    }
    if (movable.empty())
        throw ScheduleError("mutate_compute_location: no movable stage");
    const size_t k = detail::pick(movable, rng);
    const Step old = s.steps[k];
    const int sid = old.stage;
    State pre = detail::replay_prefix(s.compute, s.steps, k);

    std::vector<Step> choices;
    Step root;
    root.kind = StepKind::ComputeRoot;
    root.stage = sid;
    choices.push_back(root);
    if (!pre.stages[sid].has_reduce() && pre.attached_stages(sid).empty()) {
        Step inl;
        inl.kind = StepKind::ComputeInline;
        inl.stage = sid;
        choices.push_back(inl);
    }
    for (const auto& [target, iter] : compute_location_candidates(pre, sid)) {
        Step at;
        at.kind = StepKind::ComputeAt;
        at.stage = sid;
        at.target_stage = target;
        at.target_iter = iter;
        choices.push_back(at);
    }
    std::vector<Step> others;
    for (const Step& c : choices)
        if (c != old)
            others.push_back(c);
    if (others.empty())
        throw ScheduleError("mutate_compute_location: stage " + std::to_string(sid) +
                            " has no other location");
    std::vector<Step> steps = s.steps;
    steps[k] = detail::pick(others, rng);
    if (steps[k].kind == StepKind::ComputeInline) {
        // An inlined stage has no loops: its later annotations go (ids stay valid as long as
        // no later step adds a stage).
        for (size_t i = steps.size(); i-- > k + 1;) {
            if (adds_stage(steps[i]))
                throw ScheduleError("mutate_compute_location: a stage is added after step " +
                                    std::to_string(k));
            if (steps[i].stage == sid)
                detail::erase_step(steps, i);
        }
    }
    // A loop vectorized for a small attached region may now span the whole tensor.
    return detail::replay_rest_limiting_vectors(
        pre, steps, k, std::max(opts.max_vectorize_lanes, opts.max_innermost_split_factor));
}

} // namespace tessera::sched
