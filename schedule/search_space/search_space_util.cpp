// Internal helpers of annotation and mutation.
#include "search_space_util.h"

#include <algorithm>

#include "tessera/schedule/schedule.h"
#include "tessera/support/error.h"

namespace tessera::sched::detail {

std::vector<int64_t> divisors(int64_t n) {
    std::vector<int64_t> small, large;
    for (int64_t d = 1; d * d <= n; ++d) {
        if (n % d != 0)
            continue;
        small.push_back(d);
        if (d != n / d)
            large.push_back(n / d);
    }
    small.insert(small.end(), large.rbegin(), large.rend());
    return small;
}

State replay_prefix(const te::Compute& c, const std::vector<Step>& steps, size_t n) {
    TESSERA_CHECK(n <= steps.size()) << "prefix of " << n << " of " << steps.size() << " steps";
    return replay(c, std::vector<Step>(steps.begin(), steps.begin() + static_cast<long>(n)));
}

State replay_rest(State s, const std::vector<Step>& steps, size_t from) {
    for (size_t i = from; i < steps.size(); ++i) {
        try {
            apply_step(s, steps[i]);
        } catch (const ScheduleError& e) {
            throw ScheduleError("step " + std::to_string(i) + " (" + to_string(steps[i]) +
                                "): " + e.what());
        }
    }
    return s;
}

State replay_rest_limiting_vectors(const State& s, std::vector<Step> steps, size_t from,
                                   int64_t max_lanes) {
    State out = replay_rest(s, steps, from);
    std::vector<bool> wide(out.stages.size(), false);
    bool any = false;
    for (size_t sid = 0; sid < out.stages.size(); ++sid)
        for (const Iterator& it : out.stages[sid].iters)
            if (it.annotation == IterAnnotation::Vectorize && it.extent > max_lanes)
                any = wide[sid] = true;
    if (!any)
        return out;
    // Stage ids in steps after `from` are those of the final state as long as no stage is
    // added after it; otherwise leave the state as it is (lowering reports the wide loop).
    for (size_t i = from; i < steps.size(); ++i)
        if (steps[i].kind == StepKind::CacheWrite || steps[i].kind == StepKind::CacheRead ||
            steps[i].kind == StepKind::Rfactor)
            return out;
    for (size_t i = steps.size(); i-- > from;)
        if (steps[i].kind == StepKind::Annotate &&
            steps[i].annotation == IterAnnotation::Vectorize && steps[i].stage >= 0 &&
            steps[i].stage < static_cast<int>(wide.size()) && wide[steps[i].stage])
            erase_step(steps, i);
    return replay_rest(s, steps, from);
}

void erase_step(std::vector<Step>& steps, size_t idx) {
    TESSERA_CHECK(idx < steps.size()) << "erase of step " << idx << " of " << steps.size();
    const int removed = static_cast<int>(idx);
    for (size_t i = idx + 1; i < steps.size(); ++i) {
        Step& st = steps[i];
        if (st.kind != StepKind::FollowSplit)
            continue;
        if (st.src_step == removed)
            throw ScheduleError("step " + std::to_string(i) + " follows the removed step " +
                                std::to_string(idx));
        if (st.src_step > removed)
            --st.src_step;
    }
    steps.erase(steps.begin() + static_cast<long>(idx));
}

void insert_step(std::vector<Step>& steps, size_t idx, Step st) {
    TESSERA_CHECK(idx <= steps.size()) << "insert at " << idx << " of " << steps.size();
    for (size_t i = idx; i < steps.size(); ++i)
        if (steps[i].kind == StepKind::FollowSplit && steps[i].src_step >= static_cast<int>(idx))
            ++steps[i].src_step;
    steps.insert(steps.begin() + static_cast<long>(idx), std::move(st));
}

} // namespace tessera::sched::detail
