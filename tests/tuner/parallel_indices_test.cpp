// tune::for_each_index: every index once, on any thread count, and a thrown exception reaches
// the caller.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "../../tuner/parallel_indices.h"

namespace tessera::tune {
namespace {

TEST(ForEachIndex, EveryIndexRunsOnceOnAnyThreadCount) {
    for (int threads : {1, 3, 0}) {
        std::vector<std::atomic<int>> runs(37);
        for_each_index(runs.size(), threads, [&](size_t i) { ++runs[i]; });
        for (size_t i = 0; i < runs.size(); ++i)
            EXPECT_EQ(runs[i].load(), 1) << "index " << i << ", threads " << threads;
    }
    for_each_index(0, 2, [](size_t) { FAIL() << "no index of an empty range runs"; });
}

TEST(ForEachIndex, TheFirstExceptionReachesTheCaller) {
    for (int threads : {1, 2}) {
        std::atomic<int> ran{0};
        try {
            for_each_index(1000, threads, [&](size_t i) {
                ++ran;
                if (i == 5)
                    throw std::runtime_error("index 5 failed");
            });
            ADD_FAILURE() << "no exception, threads " << threads;
        } catch (const std::runtime_error& e) {
            EXPECT_STREQ(e.what(), "index 5 failed");
        }
        EXPECT_LT(ran.load(), 1000) << "calls kept starting after the failure";
    }
}

} // namespace
} // namespace tessera::tune
