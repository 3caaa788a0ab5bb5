// mutate_tile_size: Ansor's MutateTileSize, plus free resampling for imperfect tiles.
#include <algorithm>
#include <optional>

#include "search_space_util.h"
#include "tessera/schedule/mutation.h"
#include "tessera/schedule/schedule.h"

namespace tessera::sched {

namespace {

/// The multi-level tile's cache tile of one stage dropped (what fill_tile_sizes samples with
/// opts.register_resident_probability): each four-part spatial split of the stage that has a
/// second-innermost part > 1 moves that part into the part outside it. Empty when no stage
/// has such a split.
std::optional<State> drop_cache_tile(const State& s, Rng& rng, const SampleOptions& opts) {
    std::vector<int> stages;
    for (const Step& st : s.steps)
        if (st.kind == StepKind::Split && st.lengths.size() == 3 && st.lengths[1] > 1 &&
            std::find(stages.begin(), stages.end(), st.stage) == stages.end())
            stages.push_back(st.stage);
    if (stages.empty())
        return std::nullopt;
    const int stage = detail::pick(stages, rng);
    // One pass over the original steps tells each split's iterator kind (kinds do not depend
    // on lengths) and keeps the state before the first changed step, where the replay starts.
    std::vector<Step> steps = s.steps;
    State pre = make_initial_state(s.compute);
    std::optional<State> before_first;
    size_t first = steps.size();
    for (size_t k = 0; k < steps.size(); ++k) {
        Step& st = steps[k];
        if (st.kind == StepKind::Split && st.stage == stage && st.lengths.size() == 3 &&
            st.lengths[1] > 1) {
            const Stage& at = pre.stage(st.stage, "split stage");
            if (st.iter >= 0 && st.iter < static_cast<int>(at.iters.size()) &&
                at.iters[st.iter].kind == IterKind::Spatial) {
                st.lengths[0] *= st.lengths[1];
                st.lengths[1] = 1;
                if (!before_first) {
                    before_first = pre;
                    first = k;
                }
            }
        }
        apply_step(pre, s.steps[k]);
    }
    if (!before_first)
        return std::nullopt;
    const State mutated = detail::replay_rest_limiting_vectors(
        *before_first, steps, first,
        std::max(opts.max_vectorize_lanes, opts.max_innermost_split_factor));
    return refresh_panel_widths(mutated, opts);
}

} // namespace

State mutate_tile_size(const State& s, Rng& rng, const SampleOptions& opts) {
    std::vector<size_t> splits;
    for (size_t i = 0; i < s.steps.size(); ++i)
        if (s.steps[i].kind == StepKind::Split && !s.steps[i].lengths.empty())
            splits.push_back(i);
    if (splits.empty())
        throw ScheduleError("mutate_tile_size: the state has no split");
    if (rng.uniform01() < opts.register_resident_probability)
        if (std::optional<State> dropped = drop_cache_tile(s, rng, opts))
            return *std::move(dropped);
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
