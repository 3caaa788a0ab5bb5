// split and follow_split: replayed and checked numerically on odd extents and imperfect
// splits; illegal splits throw ScheduleError.
#include "schedule_test_util.h"
#include "tessera/ir/printer.h"

namespace tessera::testing {
namespace {

using sched::State;

TEST(Split, PerfectSplitOfElementwise) {
    te::Compute c = op_compute("relu:m=8,n=16");
    State s = sched::make_initial_state(c);
    const int st = 1;
    auto ids = sched::split(s, st, 1, {4});
    EXPECT_EQ(ids, (std::vector<int>{1, 2}));
    EXPECT_EQ(s.stages[st].iters.size(), 3u);
    EXPECT_EQ(s.stages[st].iters[1].extent, 4);
    EXPECT_EQ(s.stages[st].iters[2].extent, 4);
    expect_state_matches(s);
}

TEST(Split, ImperfectSplitsOnOddExtents) {
    for (int64_t n : {1, 7, 13, 127}) {
        SCOPED_TRACE(n);
        te::Compute c = op_compute("relu:m=3,n=" + std::to_string(n));
        State s = sched::make_initial_state(c);
        sched::split(s, 1, 1, {4, 2});
        EXPECT_EQ(s.stages[1].iters[1].extent, (n + 7) / 8);
        sched::vectorize(s, 1, 3);
        expect_state_matches(s);
    }
}

TEST(Split, PartitioningRemovesEveryGuardOfNestedImperfectSplits) {
    te::Compute c = op_compute("relu:m=3,n=127");
    State s = sched::make_initial_state(c);
    sched::split(s, 1, 1, {8, 4}); // 127 = 3 * 32 + 31: partial tiles at two levels
    sched::vectorize(s, 1, 3);
    const std::string text = ir::to_string(sched::lower_state(s, "p"));
    EXPECT_EQ(text.find("if ("), std::string::npos) << text;
    sched::LowerOptions no_partition;
    no_partition.partition_loops = false;
    EXPECT_NE(ir::to_string(sched::lower_state(s, "p", no_partition)).find("if ("),
              std::string::npos);
    expect_state_matches(s);
    expect_state_matches(s, 7, false, 1e-4, no_partition);
}

TEST(Split, OuterToInnerLengths) {
    te::Compute c = op_compute("relu:m=13,n=5");
    State s = sched::make_initial_state(c);
    sched::split(s, 1, 0, {3}, /*inner_to_outer=*/false);
    EXPECT_EQ(s.stages[1].iters[0].extent, 3);
    EXPECT_EQ(s.stages[1].iters[1].extent, 5);
    expect_state_matches(s);
}

TEST(Split, ReduceAxisOfMatmulImperfect) {
    te::Compute c = op_compute("matmul:m=7,n=13,k=127");
    State s = sched::make_initial_state(c);
    const int mm = 2;
    sched::split(s, mm, 2, {16});
    sched::split(s, mm, 1, {4});
    sched::split(s, mm, 0, {3});
    // i.0 i.1 j.0 j.1 k.0 k.1 -> i.0 j.0 k.0 i.1 j.1 k.1
    sched::reorder(s, mm, {0, 2, 4, 1, 3, 5});
    sched::unroll(s, mm, 4);
    expect_state_matches(s);
}

TEST(Split, FollowSplit) {
    te::Compute c = op_compute("relu:m=13,n=24");
    State s = sched::make_initial_state(c);
    sched::split(s, 1, 1, {2, 4});
    const int src = 0;
    sched::follow_split(s, 1, 0, src, 2);
    // follows lengths [2, 4]: i -> (ceil(13/8), 2, 4)
    ASSERT_EQ(s.stages[1].iters.size(), 6u);
    EXPECT_EQ(s.stages[1].iters[0].extent, 2);
    EXPECT_EQ(s.stages[1].iters[1].extent, 2);
    EXPECT_EQ(s.stages[1].iters[2].extent, 4);
    expect_state_matches(s);
    State t = sched::make_initial_state(c);
    sched::split(t, 1, 1, {2, 4});
    sched::follow_split(t, 1, 0, src, 1); // lengths [8]
    EXPECT_EQ(t.stages[1].iters[1].extent, 8);
    expect_state_matches(t);
}

TEST(Split, IllegalSplitsThrow) {
    te::Compute c = op_compute("matmul:m=4,n=4,k=4");
    State s = sched::make_initial_state(c);
    EXPECT_THROW(sched::split(s, 2, 0, {}), ScheduleError);
    EXPECT_THROW(sched::split(s, 2, 0, {0}), ScheduleError);
    EXPECT_THROW(sched::split(s, 2, 0, {-3}), ScheduleError);
    EXPECT_THROW(sched::split(s, 2, 3, {2}), ScheduleError);
    EXPECT_THROW(sched::split(s, 2, -1, {2}), ScheduleError);
    EXPECT_THROW(sched::split(s, 3, 0, {2}), ScheduleError);
    EXPECT_THROW(sched::split(s, -1, 0, {2}), ScheduleError);
    EXPECT_THROW(sched::split(s, 0, 0, {2}), ScheduleError); // an input
    EXPECT_THROW(sched::split(s, 2, 0, {int64_t{1} << 30, int64_t{1} << 30}), ScheduleError);
    EXPECT_THROW(sched::follow_split(s, 2, 0, 0, 1), ScheduleError); // no step 0
    sched::annotate(s, 2, 0, sched::IterAnnotation::Parallel);
    EXPECT_THROW(sched::follow_split(s, 2, 1, 0, 1), ScheduleError); // not a split step
    sched::split(s, 2, 1, {2});
    EXPECT_THROW(sched::follow_split(s, 2, 0, 1, 0), ScheduleError);
    EXPECT_THROW(sched::follow_split(s, 2, 0, 1, 2), ScheduleError);
    // The state is unchanged by the failures.
    EXPECT_EQ(s.steps.size(), 2u);
    EXPECT_EQ(s.stages[2].iters.size(), 4u);
}

} // namespace
} // namespace tessera::testing
