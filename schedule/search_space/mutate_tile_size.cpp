// mutate_tile_size: Ansor's MutateTileSize, plus free resampling for imperfect tiles.
#include <algorithm>

#include "search_space_util.h"
#include "tessera/schedule/mutation.h"
#include "tessera/schedule/schedule.h"

namespace tessera::sched {

namespace {

/// New inner lengths for a split of `extent`; may return `lengths` unchanged.
std::vector<int64_t> mutate_lengths(int64_t extent, std::vector<int64_t> lengths, Rng& rng,
                                    const SampleOptions& opts) {
    const size_t n = lengths.size();
    int64_t prod = 1;
    for (int64_t l : lengths)
        prod *= l;
    if (rng.uniform01() < opts.divisor_probability) {
        // Move a factor d of one part (position 0 is the outer part, whose extent is the
        // ceiling of what the others leave) to another part.
        std::vector<int64_t> value(n + 1);
        value[0] = (extent + prod - 1) / prod;
        std::copy(lengths.begin(), lengths.end(), value.begin() + 1);
        std::vector<size_t> sources;
        for (size_t p = 0; p <= n; ++p)
            if (value[p] > 1)
                sources.push_back(p);
        if (sources.empty())
            return lengths;
        const size_t src = detail::pick(sources, rng);
        std::vector<int64_t> factors = detail::divisors(value[src]);
        factors.erase(factors.begin()); // 1
        const int64_t d = detail::pick(factors, rng);
        size_t dst = static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(n) - 1));
        if (dst >= src)
            ++dst;
        if (src > 0)
            lengths[src - 1] = value[src] / d;
        if (dst > 0)
            lengths[dst - 1] *= d;
    } else {
        // Resample one part freely, keeping the product within about the extent.
        const size_t j = static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(n) - 1));
        const int64_t others = prod / lengths[j];
        lengths[j] = rng.uniform_int(1, std::max<int64_t>(1, (extent + others - 1) / others));
    }
    return lengths;
}

} // namespace

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
        std::vector<int64_t> lengths =
            mutate_lengths(st.iters[step.iter].extent, step.lengths, rng, opts);
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
