// mutate_parallel: Ansor's MutateParallel (how many outer loops the parallel loop fuses).
#include "search_space_util.h"
#include "tessera/schedule/mutation.h"
#include "tessera/schedule/schedule.h"

namespace tessera::sched {

namespace {

/// Renumbers an iterator id of `stage` after the parallel fuse at `t` changed from old_k to
/// new_k loops; ids inside the new fused range cannot be renumbered.
int shift_iter(int id, int t, int old_k, int new_k) {
    if (id <= t)
        return id;
    const int moved = id + old_k - new_k;
    if (moved <= t)
        throw ScheduleError("mutate_parallel: a later step uses a loop that is now fused");
    return moved;
}

} // namespace

State mutate_parallel(const State& s, Rng& rng, const SampleOptions&) {
    std::vector<size_t> parallels;
    for (size_t i = 0; i < s.steps.size(); ++i)
        if (s.steps[i].kind == StepKind::Annotate &&
            s.steps[i].annotation == IterAnnotation::Parallel)
            parallels.push_back(i);
    if (parallels.empty())
        throw ScheduleError("mutate_parallel: the state has no parallel loop");
    const size_t p = detail::pick(parallels, rng);
    const int sid = s.steps[p].stage, t = s.steps[p].iter;
    const Step* prev = p > 0 ? &s.steps[p - 1] : nullptr;
    const bool had_fuse = prev && prev->kind == StepKind::Fuse && prev->stage == sid &&
                          !prev->iters.empty() && prev->iters.front() == t;
    const int old_k = had_fuse ? static_cast<int>(prev->iters.size()) : 1;
    const size_t first = had_fuse ? p - 1 : p;
    State pre = detail::replay_prefix(s.compute, s.steps, first);

    // The loops the parallel loop may fuse: spatial, unannotated, up to one with attachments.
    const Stage& st = pre.stage(sid, "parallel stage");
    int max_k = 0;
    for (int k = t; k >= 0 && k < static_cast<int>(st.iters.size()); ++k) {
        const Iterator& it = st.iters[k];
        if (it.kind == IterKind::Reduce || it.annotation != IterAnnotation::None)
            break;
        ++max_k;
        if (!pre.attached_at(sid, k).empty())
            break;
    }
    std::vector<int> counts;
    for (int k = 1; k <= max_k; ++k)
        if (k != old_k)
            counts.push_back(k);
    if (counts.empty())
        throw ScheduleError("mutate_parallel: no other fusion for the parallel loop");
    const int new_k = detail::pick(counts, rng);

    std::vector<Step> steps(s.steps.begin(), s.steps.begin() + static_cast<long>(first));
    if (new_k > 1) {
        Step f;
        f.kind = StepKind::Fuse;
        f.stage = sid;
        for (int k = 0; k < new_k; ++k)
            f.iters.push_back(t + k);
        steps.push_back(f);
    }
    steps.push_back(s.steps[p]);
    // Steps after p move by the change in the number of fuse steps.
    const int delta = (new_k > 1 ? 1 : 0) - (had_fuse ? 1 : 0);
    for (size_t i = p + 1; i < s.steps.size(); ++i) {
        Step st2 = s.steps[i];
        if (st2.kind == StepKind::FollowSplit && st2.src_step >= static_cast<int>(first)) {
            if (st2.src_step <= static_cast<int>(p))
                throw ScheduleError("mutate_parallel: a later split follows a replaced step");
            st2.src_step += delta;
        }
        if (st2.stage == sid) {
            switch (st2.kind) {
            case StepKind::Split:
            case StepKind::FollowSplit:
            case StepKind::Annotate:
            case StepKind::Pragma:
            case StepKind::Rfactor:
                st2.iter = shift_iter(st2.iter, t, old_k, new_k);
                break;
            case StepKind::Fuse:
                for (int& id : st2.iters)
                    id = shift_iter(id, t, old_k, new_k);
                break;
            case StepKind::Reorder:
                throw ScheduleError(
                    "mutate_parallel: the stage is reordered after its parallel loop");
            case StepKind::ComputeAt:
            case StepKind::ComputeInline:
            case StepKind::ComputeRoot:
            case StepKind::CacheWrite:
            case StepKind::CacheRead:
            case StepKind::TransformLayout:
                break;
            }
        }
        if (st2.kind == StepKind::ComputeAt && st2.target_stage == sid)
            st2.target_iter = shift_iter(st2.target_iter, t, old_k, new_k);
        steps.push_back(st2);
    }
    return detail::replay_rest(std::move(pre), steps, first);
}

} // namespace tessera::sched
