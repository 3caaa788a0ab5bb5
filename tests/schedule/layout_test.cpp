// transform_layout and host-side packing: packed weights of matmul and convolution, packed
// intermediates, and invalid layouts.
#include "schedule_test_util.h"

namespace tessera::testing {
namespace {

using sched::LayoutTransform;
using sched::State;

TEST(Layout, PackedShapeAndPacking) {
    const LayoutTransform panels{{1, 4}, {1, 0, 2}};
    EXPECT_EQ(sched::packed_shape(panels, {3, 10}), (std::vector<int64_t>{3, 3, 4}));
    std::vector<float> src(30);
    for (size_t i = 0; i < src.size(); ++i)
        src[i] = static_cast<float>(i + 1);
    const std::vector<float> p = sched::pack_layout(panels, {3, 10}, src);
    ASSERT_EQ(p.size(), 36u);
    // Panel 0 holds columns 0..3 of each row; panel 2 holds columns 8, 9 and zero padding.
    EXPECT_EQ(p[0], 1.0f);
    EXPECT_EQ(p[3], 4.0f);
    EXPECT_EQ(p[4], 11.0f);
    EXPECT_EQ(p[24], 9.0f);
    EXPECT_EQ(p[25], 10.0f);
    EXPECT_EQ(p[26], 0.0f);
    EXPECT_TRUE(LayoutTransform{}.is_identity());
    EXPECT_TRUE((LayoutTransform{{1, 1}, {0, 1}}).is_identity());
    EXPECT_FALSE(panels.is_identity());
}

TEST(Layout, MatmulWithPackedB) {
    for (int64_t n : {1, 13, 48}) {
        te::Compute c = op_compute("matmul:m=7,n=" + std::to_string(n) + ",k=5");
        State s = sched::make_initial_state(c);
        sched::transform_layout(s, 1, {{1, 16}, {1, 0, 2}});
        expect_state_matches(s);
    }
}

TEST(Layout, ConvWeightsInBlocksOfOutputChannels) {
    te::Compute c = op_compute("conv2d:n=1,c=3,h=7,w=7,k=12,r=3,pad=1");
    State s = sched::make_initial_state(c);
    const int w = 1;
    ASSERT_EQ(s.stages[w].tensor.name(), "w");
    // OIHW -> O/8, I, H, W, 8 (OIHW8o), padded from 12 to 16 output channels.
    sched::transform_layout(s, w, {{8, 1, 1, 1}, {0, 2, 3, 4, 1}});
    EXPECT_EQ(sched::packed_shape(s.stages[w].layout, s.stages[w].tensor.shape()),
              (std::vector<int64_t>{2, 3, 3, 3, 8}));
    expect_state_matches(s);
}

TEST(Layout, PackedIntermediateStage) {
    te::Compute c = op_compute("matmul:m=9,n=21,k=6");
    State s = sched::make_initial_state(c);
    const int copy = sched::cache_read(s, 1, "global", {2});
    sched::transform_layout(s, copy, {{1, 8}, {1, 0, 2}});
    expect_state_matches(s);
}

TEST(Layout, InvalidLayoutsThrow) {
    te::Compute c = op_compute("matmul:m=4,n=4,k=4");
    State s = sched::make_initial_state(c);
    EXPECT_THROW(sched::transform_layout(s, 1, {{4}, {}}), ScheduleError);        // rank
    EXPECT_THROW(sched::transform_layout(s, 1, {{1, -2}, {}}), ScheduleError);    // factor
    EXPECT_THROW(sched::transform_layout(s, 1, {{1, 2}, {0, 1}}), ScheduleError); // order size
    EXPECT_THROW(sched::transform_layout(s, 1, {{1, 2}, {0, 1, 1}}), ScheduleError);
    EXPECT_THROW(sched::transform_layout(s, 1, {{}, {2, 0}}), ScheduleError);
    EXPECT_THROW(sched::transform_layout(s, 1, {{1, 5000}, {}}), ScheduleError);    // too large
    EXPECT_THROW(sched::transform_layout(s, 1, {{4096, 4096}, {}}), ScheduleError); // pads 1e6x
    EXPECT_THROW(sched::transform_layout(s, 2, {{2, 1}, {}}), ScheduleError);       // output
    EXPECT_THROW(sched::transform_layout(s, 3, {{2, 1}, {}}), ScheduleError);
    EXPECT_TRUE(s.steps.empty());
}

} // namespace
} // namespace tessera::testing
