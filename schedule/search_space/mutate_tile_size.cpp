// mutate_tile_size: Ansor's MutateTileSize, plus free resampling for imperfect tiles.
#include <algorithm>

#include "search_space_util.h"
#include "tessera/schedule/mutation.h"
#include "tessera/schedule/schedule.h"

namespace tessera::sched {

State mutate_tile_size(const State& s, Rng& rng, const SampleOptions& opts) {
    std::vector<size_t> splits;
    for (size_t i = 0; i < s.steps.size(); ++i)
        if (s.steps[i].kind == StepKind::Split && !s.steps[i].lengths.empty())
            splits.push_back(i);
    if (splits.empty())
        throw ScheduleError("mutate_tile_size: the state has no split");
    for (int attempt = 0; attempt < 8; ++attempt) {
        const size_t k = detail::pick(splits, rng);
        const Step& step = s.steps[k];
        State pre = detail::replay_prefix(s.compute, s.steps, k);
        const Stage& st = pre.stage(step.stage, "split stage");
        if (step.iter < 0 || step.iter >= static_cast<int>(st.iters.size()))
            throw ScheduleError("mutate_tile_size: split step " + std::to_string(k) +
                                " has iterator " + std::to_string(step.iter) + " out of range");
        std::vector<int64_t> lengths = detail::mutate_split_lengths(
            st.iters[step.iter].extent, step.lengths, opts.divisor_probability, rng);
        if (lengths == step.lengths || lengths.back() > opts.max_innermost_split_factor)
            continue;
        std::vector<Step> steps = s.steps;
        steps[k].lengths = lengths;
        // Larger tiles make larger regions of attached stages, and their vectorized loops.
        const State mutated = detail::replay_rest_limiting_vectors(
            pre, steps, k, std::max(opts.max_vectorize_lanes, opts.max_innermost_split_factor));
        // Packed panels follow the register tile they feed.
        return refresh_panel_widths(mutated, opts);
    }
    throw ScheduleError("mutate_tile_size: no new tile size found");
}

} // namespace tessera::sched
