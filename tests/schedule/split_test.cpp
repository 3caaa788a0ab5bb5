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

TEST(Split, LengthsLongerThanWhatIsLeftAreClamped) {
    // 13 by [8, 4]: the inner part keeps 4, the middle one runs 4 (ceil(13 / 4)), not 8.
    te::Compute c = op_compute("relu:m=3,n=13");
    State s = sched::make_initial_state(c);
    sched::split(s, 1, 1, {8, 4});
    EXPECT_EQ(s.stages[1].iters[1].extent, 1);
    EXPECT_EQ(s.stages[1].iters[2].extent, 4);
    EXPECT_EQ(s.stages[1].iters[3].extent, 4);
    EXPECT_EQ(s.steps.back().lengths, (std::vector<int64_t>{8, 4})); // the step keeps them
    expect_state_matches(s);
    // Outer-to-inner lengths: an outer part of 20 over 13 runs 13.
    State o = sched::make_initial_state(c);
    sched::split(o, 1, 1, {20}, /*inner_to_outer=*/false);
    EXPECT_EQ(o.stages[1].iters[1].extent, 13);
    EXPECT_EQ(o.stages[1].iters[2].extent, 1);
    expect_state_matches(o);
}

TEST(Split, AProducerInsideItsConsumersTileRunsOnlyThatTile) {
    // relu(matmul) 12x16: the matmul tiled (i: [1, 4, 3], j: [1, 8, 2]) and computed inside
    // the consumer's tiles that follow its first three levels: per tile it needs 3 x 2 outputs,
    // so its own levels above the register tile run once.
    te::Tensor a = te::placeholder({12, 7}, ir::DataType::f32(), "a");
    te::Tensor b = te::placeholder({7, 16}, ir::DataType::f32(), "b");
    te::Compute c = te::make_compute({a, b}, {te::relu(te::matmul(a, b))});
    State s = sched::make_initial_state(c);
    const int mm = 2, out = 3;
    const int si = static_cast<int>(s.steps.size());
    sched::split(s, mm, 0, {1, 4, 3});
    sched::split(s, mm, 4, {1, 8, 2});
    sched::follow_split(s, out, 0, si, 3);
    sched::follow_split(s, out, 4, si + 1, 3);
    sched::reorder(s, out, {0, 4, 1, 5, 2, 6, 3, 7});
    sched::compute_at(s, mm, out, 5); // inside both level-2 loops
    const sched::Stage& st = s.stages[mm];
    for (int k : {0, 1, 2, 4, 5, 6})
        EXPECT_EQ(st.iters[k].extent, 1) << st.iters[k].name;
    EXPECT_EQ(st.iters[3].extent, 3);
    EXPECT_EQ(st.iters[7].extent, 2);
    expect_state_matches(s);
}

TEST(Split, PartsOfAGpuBindingKeepTheirLengths) {
    // A 127-long row reduced by 128 threads: the bound part keeps 128 (whole warps), a plain
    // part of the same split would run 127.
    te::Compute c = op_compute("reduce_max:m=7,n=127");
    State s = sched::make_initial_state(c);
    sched::split(s, 1, 1, {128});
    EXPECT_EQ(s.stages[1].iters[2].extent, 127);
    sched::annotate(s, 1, 2, sched::IterAnnotation::ThreadX);
    EXPECT_EQ(s.stages[1].iters[2].extent, 128);
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
