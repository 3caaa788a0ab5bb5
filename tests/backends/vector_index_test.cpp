// The index analysis behind vector loads, without code generation: which lanes of a load with
// constant per-lane offsets share a window of consecutive elements, and when there are too
// many windows (a gather then).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "../../backends/llvm/vector_index.h"

using namespace tessera;

namespace {

TEST(LoadWindows, AChannelShuffleTakesTwoWindows) {
    // lane 2k + s reads k + s * 59: windows [0, 7] and [59, 66], lanes alternating.
    std::vector<int64_t> offsets;
    for (int lane = 0; lane < 16; ++lane)
        offsets.push_back(lane / 2 + (lane % 2) * 59);
    const auto w = backend::load_windows(offsets, 16);
    ASSERT_TRUE(w);
    EXPECT_EQ(w->first, (std::vector<int64_t>{0, 59}));
    EXPECT_EQ(w->last, (std::vector<int64_t>{7, 66}));
    for (int lane = 0; lane < 16; ++lane)
        EXPECT_EQ(w->window[static_cast<size_t>(lane)], lane % 2) << "lane " << lane;
}

TEST(LoadWindows, AWindowNeverSpansMoreThanAVectorOfElements) {
    // Stride 3 over 16 lanes spans 46 elements: windows of at most 16 start at 0, 18 and 36
    // (4 at most allowed), each ending at the last lane inside it.
    std::vector<int64_t> offsets;
    for (int lane = 0; lane < 16; ++lane)
        offsets.push_back(3 * lane);
    const auto w = backend::load_windows(offsets, 16);
    ASSERT_TRUE(w);
    EXPECT_EQ(w->first, (std::vector<int64_t>{0, 18, 36}));
    EXPECT_EQ(w->last, (std::vector<int64_t>{15, 33, 45}));
    for (size_t k = 0; k < w->first.size(); ++k)
        EXPECT_LT(w->last[k] - w->first[k], 16);
}

TEST(LoadWindows, OffsetsInAnyOrderAndRepeatedShareWindows) {
    // Lanes read 9, 8, 9, 0, 1, 0, 8, 1 (a gather-like permutation of two runs) on 8 lanes:
    // two windows, [0, 1] and [8, 9]; offsets may repeat.
    const std::vector<int64_t> offsets{9, 8, 9, 0, 1, 0, 8, 1};
    const auto w = backend::load_windows(offsets, 8);
    ASSERT_TRUE(w);
    EXPECT_EQ(w->first, (std::vector<int64_t>{0, 8}));
    EXPECT_EQ(w->last, (std::vector<int64_t>{1, 9}));
    EXPECT_EQ(w->window, (std::vector<int>{1, 1, 1, 0, 0, 0, 1, 0}));
}

TEST(LoadWindows, TooManyWindowsAreAGather) {
    // Stride 6 over 16 lanes needs 6 windows of at most 16 elements: more than 16 / 4.
    std::vector<int64_t> offsets;
    for (int lane = 0; lane < 16; ++lane)
        offsets.push_back(6 * lane);
    EXPECT_FALSE(backend::load_windows(offsets, 16));
    // Four lanes always get two windows: lanes 0 and 3 apart by more than 4 elements.
    EXPECT_TRUE(backend::load_windows({0, 100, 1, 101}, 4));
    EXPECT_FALSE(backend::load_windows({0, 100, 200, 101}, 4));
}

} // namespace
