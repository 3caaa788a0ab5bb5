// mutate_auto_unroll: Ansor's MutateAutoUnroll.
#include "search_space_util.h"
#include "tessera/schedule/mutation.h"

namespace tessera::sched {

State mutate_auto_unroll(const State& s, Rng& rng, const SampleOptions& opts) {
    std::vector<size_t> pragmas;
    for (size_t i = 0; i < s.steps.size(); ++i)
        if (s.steps[i].kind == StepKind::Pragma && s.steps[i].pragma == "auto_unroll_max_step")
            pragmas.push_back(i);
    if (pragmas.empty())
        throw ScheduleError("mutate_auto_unroll: the state has no auto_unroll_max_step pragma");
    const size_t k = detail::pick(pragmas, rng);
    std::vector<int64_t> values;
    for (int64_t v : opts.auto_unroll_configs)
        if (v != s.steps[k].value)
            values.push_back(v);
    if (values.empty())
        throw ScheduleError("mutate_auto_unroll: no other auto_unroll_max_step value");
    std::vector<Step> steps = s.steps;
    steps[k].value = detail::pick(values, rng);
    return detail::replay_rest(detail::replay_prefix(s.compute, steps, k), steps, k);
}

} // namespace tessera::sched
