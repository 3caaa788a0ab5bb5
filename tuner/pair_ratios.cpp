// The ratios of timed pairs (include/tessera/tuner/pair_ratios.h).
#include "tessera/tuner/pair_ratios.h"

#include <algorithm>
#include <cmath>

namespace tessera::tune {

PairRatios::PairRatios(const std::vector<double>& a, const std::vector<double>& b)
    : sorted(a.size()) {
    for (size_t i = 0; i < a.size(); ++i)
        sorted[i] = a[i] / b[i];
    std::sort(sorted.begin(), sorted.end());
}

double PairRatios::quantile(double p) const {
    return sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * double(sorted.size())))];
}

double PairRatios::relative_error() const {
    return (quantile(0.75) - quantile(0.25)) / median() / std::sqrt(double(sorted.size()));
}

double PairRatios::sign_test_p() const {
    const int n = static_cast<int>(sorted.size());
    const int below =
        static_cast<int>(std::lower_bound(sorted.begin(), sorted.end(), 1.0) - sorted.begin());
    // P(X >= below) for X ~ Binomial(n, 1/2), its terms C(n, k) / 2^n in logarithms (no
    // underflow at any count).
    double tail = 0;
    for (int k = below; k <= n; ++k)
        tail += std::exp(std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0) -
                         n * std::log(2.0));
    return std::min(1.0, tail);
}

} // namespace tessera::tune
