#include "common/test_util.h"

#include <cmath>
#include <iterator>
#include <limits>

#include "tessera/support/rng.h"

namespace tessera::testing {

std::vector<float> random_floats(size_t n, uint64_t seed, float lo, float hi) {
    std::vector<float> v(n);
    Rng rng(seed);
    rng.fill(v, lo, hi);
    return v;
}

std::vector<int32_t> random_words(size_t n, uint64_t seed) {
    std::vector<int32_t> v(n);
    Rng rng(seed);
    for (auto& x : v)
        x = static_cast<int32_t>(static_cast<uint32_t>(rng.next()));
    const uint32_t extremes[] = {0xffffffffu, 0x80808080u, 0x7f7f7f7fu, 0u, 0xff80ff80u};
    for (size_t k = 0; k < std::size(extremes) && k < n; ++k)
        v[k] = static_cast<int32_t>(extremes[k]);
    return v;
}

double max_rel_error(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::isnan(a[i]) != std::isnan(b[i])) return std::numeric_limits<double>::infinity();
        if (std::isnan(a[i])) continue;
        if (std::isinf(a[i]) || std::isinf(b[i])) {
            if (a[i] != b[i]) return std::numeric_limits<double>::infinity();
            continue;
        }
        double d = std::fabs((double)a[i] - b[i]) / std::max(1.0, std::fabs((double)b[i]));
        worst = std::max(worst, d);
    }
    return worst;
}

int count_occurrences(const std::string& text, const std::string& what) {
    int n = 0;
    for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1))
        ++n;
    return n;
}

} // namespace tessera::testing
