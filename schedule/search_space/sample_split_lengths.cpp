// sample_split_lengths: tile sizes for one split, perfect or imperfect.
#include <algorithm>

#include "search_space_util.h"
#include "tessera/schedule/sampling.h"

namespace tessera::sched {

std::vector<int64_t> sample_split_lengths(int64_t extent, size_t lengths_count, Rng& rng,
                                          const SampleOptions& opts) {
    std::vector<int64_t> lengths(lengths_count, 1);
    // Innermost first: each part takes a share of what the parts inside it leave, so the
    // product never exceeds the extent by much (the outer part gets the ceiling).
    int64_t left = std::max<int64_t>(extent, 1);
    for (size_t k = lengths_count; k-- > 0;) {
        int64_t cap = left;
        if (k + 1 == lengths_count)
            cap = std::min(cap, std::max<int64_t>(opts.max_innermost_split_factor, 1));
        int64_t v;
        if (rng.uniform01() < opts.divisor_probability) {
            std::vector<int64_t> divs = detail::divisors(left);
            divs.erase(std::upper_bound(divs.begin(), divs.end(), cap), divs.end());
            v = detail::pick(divs, rng);
        } else {
            v = rng.uniform_int(1, cap);
        }
        lengths[k] = v;
        left = (left + v - 1) / v;
    }
    return lengths;
}

} // namespace tessera::sched
