// cache_read (packing a panel per tile), cache_write and rfactor, replayed and checked
// numerically; their illegal uses throw ScheduleError.
#include "schedule_test_util.h"
#include "tessera/ir/printer.h"

namespace tessera::testing {
namespace {

using sched::State;

TEST(CacheRead, PackPanelOfBPerColumnTile) {
    te::Compute c = op_compute("matmul:m=13,n=37,k=7");
    State s = sched::make_initial_state(c);
    const int copy = sched::cache_read(s, 1, "local", {2});
    EXPECT_EQ(copy, 2);
    const int mm = 3;
    EXPECT_EQ(s.stages[copy].origin, sched::StageOrigin::CacheRead);
    EXPECT_EQ(s.consumers(1), std::vector<int>{copy});
    EXPECT_EQ(s.consumers(copy), std::vector<int>{mm});
    // matmul: i, j, k -> j.0, i, j.1, k with j tiles of 16; the B panel [7][16] per j tile.
    sched::split(s, mm, 1, {16});
    sched::reorder(s, mm, {1, 0, 2, 3});
    sched::compute_at(s, copy, mm, 0);
    EXPECT_EQ(s.stages[copy].iters[0].extent, 7);
    EXPECT_EQ(s.stages[copy].iters[1].extent, 16);
    expect_state_matches(s);
}

TEST(CacheRead, OfComputeStageForOneOfTwoReaders) {
    te::Tensor a = te::placeholder({9, 5}, ir::DataType::f32(), "a");
    te::Tensor b = te::exp(a);
    te::Tensor y = te::add(te::relu(b), te::sigmoid(b));
    te::Compute c = te::make_compute({a}, {y});
    State s = sched::make_initial_state(c);
    const int bid = s.stage_id_of(b);
    const auto readers = s.consumers(bid);
    ASSERT_EQ(readers.size(), 2u);
    sched::cache_read(s, bid, "global", {readers[0]});
    expect_state_matches(s);
}

TEST(CacheRead, IllegalCasesThrow) {
    te::Compute c = op_compute("matmul:m=4,n=4,k=4");
    State s = sched::make_initial_state(c);
    EXPECT_THROW(sched::cache_read(s, 0, "local", {}), ScheduleError);
    EXPECT_THROW(sched::cache_read(s, 0, "local", {1}), ScheduleError); // b does not read a
    EXPECT_THROW(sched::cache_read(s, 0, "local", {2, 2}), ScheduleError);
    EXPECT_THROW(sched::cache_read(s, 0, "texture", {2}), ScheduleError);
    EXPECT_THROW(sched::cache_read(s, 5, "local", {2}), ScheduleError);
    EXPECT_THROW(sched::cache_read(s, 0, "local", {7}), ScheduleError);
    EXPECT_TRUE(s.steps.empty());
}

TEST(CacheWrite, ReductionTileAndElementwise) {
    te::Compute c = op_compute("matmul:m=7,n=13,k=5");
    State s = sched::make_initial_state(c);
    EXPECT_EQ(sched::cache_write(s, 2, "local"), 2);
    EXPECT_EQ(s.stages[2].origin, sched::StageOrigin::CacheWrite);
    EXPECT_EQ(s.stages[2].scope, sched::StageScope::Local);
    EXPECT_TRUE(s.stages[2].has_reduce());
    EXPECT_FALSE(s.stages[3].has_reduce());
    expect_state_matches(s);

    te::Compute e = op_compute("relu:m=3,n=5");
    State t = sched::make_initial_state(e);
    sched::cache_write(t, 1, "local");
    sched::compute_at(t, 1, 2, 0);
    expect_state_matches(t);
}

TEST(CacheWrite, IllegalCasesThrow) {
    te::Compute c = op_compute("matmul:m=4,n=4,k=4");
    State s = sched::make_initial_state(c);
    EXPECT_THROW(sched::cache_write(s, 0, "local"), ScheduleError); // an input
    EXPECT_THROW(sched::cache_write(s, 2, "register"), ScheduleError);
    sched::split(s, 2, 0, {2});
    EXPECT_THROW(sched::cache_write(s, 2, "local"), ScheduleError); // loops already split
}

TEST(Rfactor, SumOfRowsInnerAndOuter) {
    for (int which : {0, 1}) {
        for (int64_t k : {1, 7, 127}) {
            SCOPED_TRACE(std::to_string(which) + " k=" + std::to_string(k));
            te::Compute c = op_compute("reduce_sum:m=3,n=" + std::to_string(k));
            State s = sched::make_initial_state(c);
            const int r = static_cast<int>(s.stages.size()) - 1;
            ASSERT_TRUE(s.stages[r].has_reduce());
            const int red_iter = static_cast<int>(s.stages[r].iters.size()) - 1;
            sched::split(s, r, red_iter, {8}); // imperfect unless k = 8n
            const int rf = sched::rfactor(s, r, red_iter + which);
            EXPECT_EQ(s.stages[rf].origin, sched::StageOrigin::Rfactor);
            const int orig = rf + 1;
            EXPECT_TRUE(s.stages[orig].has_reduce());
            // Vectorize the factored axis of the partial sums when it is the inner part.
            const sched::Stage& rst = s.stages[rf];
            int rf_axis = -1;
            for (size_t i = 0; i < rst.iters.size(); ++i)
                if (rst.iters[i].kind == sched::IterKind::Spatial)
                    rf_axis = static_cast<int>(i);
            if (which == 1) {
                // Move the factored axis inside the remaining reduction, then vectorize it.
                std::vector<int> order;
                for (size_t i = 0; i < rst.iters.size(); ++i)
                    if (static_cast<int>(i) != rf_axis)
                        order.push_back(static_cast<int>(i));
                order.push_back(rf_axis);
                sched::reorder(s, rf, order);
                sched::vectorize(s, rf, static_cast<int>(order.size()) - 1);
            }
            expect_state_matches(s);
        }
    }
}

TEST(Rfactor, MatmulReduction) {
    te::Compute c = op_compute("matmul:m=5,n=6,k=13");
    State s = sched::make_initial_state(c);
    sched::split(s, 2, 2, {4});
    const int rf = sched::rfactor(s, 2, 3);
    sched::compute_at(s, rf, rf + 1, 1);
    expect_state_matches(s);
}

TEST(Rfactor, IllegalCasesThrow) {
    te::Compute c = op_compute("matmul:m=4,n=4,k=4");
    State s = sched::make_initial_state(c);
    EXPECT_THROW(sched::rfactor(s, 2, 0), ScheduleError); // spatial iterator
    EXPECT_THROW(sched::rfactor(s, 2, 5), ScheduleError);
    EXPECT_THROW(sched::rfactor(s, 1, 0), ScheduleError); // an input
    te::Compute e = op_compute("relu:m=3,n=5");
    State t = sched::make_initial_state(e);
    EXPECT_THROW(sched::rfactor(t, 1, 0), ScheduleError); // no reduction
}

} // namespace
} // namespace tessera::testing
