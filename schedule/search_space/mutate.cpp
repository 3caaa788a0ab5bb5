// mutate: a weighted pick among the mutations (Ansor's evolutionary-search mutation step).
#include "tessera/schedule/mutation.h"

#include <algorithm>

namespace tessera::sched {

std::optional<State> mutate(const State& s, Rng& rng, const SampleOptions& opts,
                            const MutationWeights& weights) {
    const double w[4] = {std::max(0.0, weights.tile_size), std::max(0.0, weights.auto_unroll),
                         std::max(0.0, weights.compute_location), std::max(0.0, weights.parallel)};
    const double total = w[0] + w[1] + w[2] + w[3];
    if (!(total > 0))
        return std::nullopt;
    double x = rng.uniform01() * total;
    int pick = 0;
    while (pick < 3 && x >= w[pick]) {
        x -= w[pick];
        ++pick;
    }
    // Rounding can land past the last positive weight: take the last one that has weight.
    while (w[pick] <= 0)
        --pick;
    try {
        switch (pick) {
        case 0:
            return mutate_tile_size(s, rng, opts);
        case 1:
            return mutate_auto_unroll(s, rng, opts);
        case 2:
            return mutate_compute_location(s, rng, opts);
        default:
            return mutate_parallel(s, rng, opts);
        }
    } catch (const ScheduleError&) {
        return std::nullopt;
    }
}

} // namespace tessera::sched
