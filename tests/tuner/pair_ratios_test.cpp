// The ratios of timed pairs: the statistics the measurement's rules read.
#include "tessera/tuner/pair_ratios.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace tessera::tune {
namespace {

TEST(PairRatios, MedianAndSpreadOfTheRunByRunRatios) {
    // Ratios 0.5, 0.9, 1.0, 1.2, 2.0 (unsorted pairs; the baseline's runs vary).
    const PairRatios r({1.0, 0.9, 3.0, 1.2, 0.5}, {2.0, 1.0, 1.5, 1.0, 0.5});
    EXPECT_DOUBLE_EQ(r.median(), 1.0);
    EXPECT_DOUBLE_EQ(r.quantile(0), 0.5);
    EXPECT_DOUBLE_EQ(r.quantile(1), 2.0);
    // Quartiles 0.9 and 1.2 of five: (1.2 - 0.9) / 1.0 / sqrt(5).
    EXPECT_NEAR(r.relative_error(), 0.3 / std::sqrt(5.0), 1e-12);
}

TEST(PairRatios, SignTestCountsThePairsTheFirstKernelWon) {
    auto p = [](int below, int above) {
        std::vector<double> a, b;
        for (int i = 0; i < below; ++i) {
            a.push_back(0.97 + 0.001 * i); // below 1, each by another margin
            b.push_back(1.0);
        }
        for (int i = 0; i < above; ++i) {
            a.push_back(1.02 + 0.001 * i);
            b.push_back(1.0);
        }
        return PairRatios(a, b).sign_test_p();
    };
    EXPECT_NEAR(p(8, 0), 1.0 / 256, 1e-12);         // every pair
    EXPECT_NEAR(p(7, 1), 9.0 / 256, 1e-12);         // C(8,7) + C(8,8)
    EXPECT_NEAR(p(0, 8), 1.0, 1e-12);               // none: no evidence at all
    EXPECT_NEAR(p(3, 0), 1.0 / 8, 1e-12);           // three pairs can prove little
    EXPECT_NEAR(p(16, 4), 6196.0 / 1048576, 1e-12); // P(X >= 16), X ~ B(20, 1/2)
    // A thousand pairs, every one won: 2^-1000, near the smallest normal double, not 0.
    const PairRatios thousand(std::vector<double>(1000, 0.99), std::vector<double>(1000, 1.0));
    EXPECT_NEAR(thousand.sign_test_p() / std::pow(0.5, 1000), 1.0, 1e-9);
    // A ratio of exactly 1 is no win.
    EXPECT_NEAR(PairRatios({1.0, 0.5}, {1.0, 1.0}).sign_test_p(), 3.0 / 4, 1e-12);
}

} // namespace
} // namespace tessera::tune
