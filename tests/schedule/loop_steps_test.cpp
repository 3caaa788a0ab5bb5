// fuse, reorder, annotate and the auto_unroll_max_step pragma: replayed and checked
// numerically; their illegal uses throw ScheduleError.
#include "schedule_test_util.h"
#include "tessera/ir/printer.h"

namespace tessera::testing {
namespace {

using sched::IterAnnotation;
using sched::State;

TEST(Fuse, SpatialThenImperfectSplitAndParallel) {
    te::Compute c = op_compute("relu:m=7,n=13");
    State s = sched::make_initial_state(c);
    EXPECT_EQ(sched::fuse(s, 1, {0, 1}), 0);
    ASSERT_EQ(s.stages[1].iters.size(), 1u);
    EXPECT_EQ(s.stages[1].iters[0].extent, 91);
    sched::split(s, 1, 0, {8});
    sched::parallel(s, 1, 0);
    sched::vectorize(s, 1, 1);
    expect_state_matches(s);
}

TEST(Fuse, ReduceAxesOfConv) {
    te::Compute c = op_compute("conv2d:n=1,c=3,h=7,w=7,k=5,r=3");
    State s = sched::make_initial_state(c);
    const int conv = s.stage_id_of("conv2d");
    // n, k, oh, ow, rc, rh, rw: fuse the reduce axes, split them imperfectly.
    sched::fuse(s, conv, {4, 5, 6});
    EXPECT_EQ(s.stages[conv].iters[4].extent, 27);
    sched::split(s, conv, 4, {4});
    sched::fuse(s, conv, {0, 1, 2});
    expect_state_matches(s);
}

TEST(Fuse, AttachedStagesFollowTheFusedLoop) {
    te::Tensor a = te::placeholder({5, 6}, ir::DataType::f32(), "a");
    te::Tensor b = te::exp(a);
    te::Tensor y = te::relu(b);
    te::Compute c = te::make_compute({a}, {y});
    State s = sched::make_initial_state(c);
    sched::compute_at(s, 1, 2, 1);
    sched::fuse(s, 2, {0, 1});
    EXPECT_EQ(s.stages[1].location.iter, 0);
    expect_state_matches(s);
}

TEST(Fuse, IllegalCasesThrow) {
    te::Compute c = op_compute("matmul:m=4,n=4,k=4");
    State s = sched::make_initial_state(c);
    EXPECT_THROW(sched::fuse(s, 2, {}), ScheduleError);
    EXPECT_THROW(sched::fuse(s, 2, {0, 2}), ScheduleError); // not consecutive
    EXPECT_THROW(sched::fuse(s, 2, {1, 0}), ScheduleError); // not ascending
    EXPECT_THROW(sched::fuse(s, 2, {1, 2}), ScheduleError); // spatial with reduce
    EXPECT_THROW(sched::fuse(s, 2, {2, 3}), ScheduleError); // out of range
    EXPECT_THROW(sched::fuse(s, 0, {0}), ScheduleError);    // an input
    EXPECT_EQ(sched::fuse(s, 2, {1}), 1);                   // one iterator: unchanged
    EXPECT_EQ(s.stages[2].iters.size(), 3u);
}

TEST(Reorder, PermutationsAndIllegalOrders) {
    te::Compute c = op_compute("matmul:m=7,n=5,k=3");
    State s = sched::make_initial_state(c);
    sched::reorder(s, 2, {2, 1, 0});
    EXPECT_EQ(s.stages[2].iters[0].kind, sched::IterKind::Reduce);
    expect_state_matches(s);
    EXPECT_THROW(sched::reorder(s, 2, {0, 1}), ScheduleError);
    EXPECT_THROW(sched::reorder(s, 2, {0, 1, 1}), ScheduleError);
    EXPECT_THROW(sched::reorder(s, 2, {0, 1, 3}), ScheduleError);
    EXPECT_THROW(sched::reorder(s, 2, {0, 1, -1}), ScheduleError);
    EXPECT_THROW(sched::reorder(s, 0, {}), ScheduleError);
}

TEST(Annotate, KindsAndReduceRestrictions) {
    te::Compute c = op_compute("matmul:m=7,n=13,k=5");
    State s = sched::make_initial_state(c);
    EXPECT_THROW(sched::vectorize(s, 2, 2), ScheduleError);
    EXPECT_THROW(sched::parallel(s, 2, 2), ScheduleError);
    EXPECT_THROW(sched::annotate(s, 2, 3, IterAnnotation::Unroll), ScheduleError);
    EXPECT_THROW(sched::annotate(s, 0, 0, IterAnnotation::Unroll), ScheduleError);
    sched::unroll(s, 2, 2);
    sched::parallel(s, 2, 0);
    sched::vectorize(s, 2, 1);
    ir::LoweredFunc f = sched::lower_state(s, "mm");
    const std::string text = ir::to_string(f);
    EXPECT_NE(text.find("parallel"), std::string::npos) << text;
    EXPECT_NE(text.find("vectorized"), std::string::npos) << text;
    EXPECT_NE(text.find("unrolled"), std::string::npos) << text;
    expect_state_matches(s);
    // GPU bindings are recorded; the CPU lowering runs them serially.
    State g = sched::make_initial_state(c);
    sched::annotate(g, 2, 0, IterAnnotation::BlockX);
    sched::annotate(g, 2, 1, IterAnnotation::ThreadX);
    EXPECT_EQ(g.stages[2].iters[0].annotation, IterAnnotation::BlockX);
    expect_state_matches(g);
}

TEST(Annotate, NestedParallelRunsSerially) {
    te::Tensor a = te::placeholder({6, 10}, ir::DataType::f32(), "a");
    te::Tensor b = te::exp(a);
    te::Tensor y = te::relu(b);
    te::Compute c = te::make_compute({a}, {y});
    State s = sched::make_initial_state(c);
    sched::compute_at(s, 1, 2, 0);
    sched::parallel(s, 2, 0);
    sched::parallel(s, 1, 1);
    ir::LoweredFunc f = sched::lower_state(s, "nested");
    const std::string text = ir::to_string(f);
    EXPECT_EQ(text.find("parallel"), text.rfind("parallel")) << text;
    expect_state_matches(s);
}

TEST(Pragma, AutoUnrollMaxStep) {
    te::Compute c = op_compute("matmul:m=7,n=13,k=4");
    State s = sched::make_initial_state(c);
    sched::split(s, 2, 1, {4});
    // i, j.0, j.1, k: inner loops j.1 * k = 16 <= 16 are unrolled, j.0 is not.
    sched::pragma(s, 2, 0, "auto_unroll_max_step", 16);
    EXPECT_EQ(s.stages[2].auto_unroll_max_step, 16);
    ir::LoweredFunc f = sched::lower_state(s, "mm", {16 * 1024, true, false});
    const std::string text = ir::to_string(f);
    EXPECT_NE(text.find("(k, 0, 4) unrolled"), std::string::npos) << text;
    EXPECT_NE(text.find("(i1.1, 0, 4) unrolled"), std::string::npos) << text;
    EXPECT_EQ(text.find("(i1.0, 0, 4) unrolled"), std::string::npos) << text;
    expect_state_matches(s);
    EXPECT_THROW(sched::pragma(s, 2, 0, "unroll_explicit", 1), ScheduleError);
    EXPECT_THROW(sched::pragma(s, 2, 0, "auto_unroll_max_step", -1), ScheduleError);
    EXPECT_THROW(sched::pragma(s, 2, 9, "auto_unroll_max_step", 4), ScheduleError);
}

// A register tile: matmul.local (cache_write) computed at the tile loop of matmul, which copies
// it out. The copy-out loops unroll as the tile's own pragma unrolls its loops (every access
// to the tile then has a constant index, so code generation keeps it in registers); loops
// above the tile, and a copy-out larger than the pragma, stay rolled.
TEST(Pragma, LocalTileIsReadBackAsItsPragmaUnrolls) {
    for (int64_t max_step : {0, 8, 64}) {
        te::Compute c = op_compute("matmul:m=8,n=12,k=5");
        State s = sched::make_initial_state(c);
        const int local = sched::cache_write(s, 2, "local"), out = local + 1;
        // matmul: i.0, i.1 (4 rows), j; the tile is computed at i.0.
        sched::split(s, out, 0, {4});
        sched::compute_at(s, local, out, 0);
        sched::pragma(s, local, 0, "auto_unroll_max_step", max_step);
        const std::string text = ir::to_string(sched::lower_state(s, "tile"));
        EXPECT_EQ(text.find("(i0.0, 0, 2) unrolled"), std::string::npos) << text;
        // The copy-out, after the tile's loops: i.1 (4) around j (12), 48 steps.
        const size_t at = text.find("for (i0.1, 0, 4)");
        ASSERT_NE(at, std::string::npos) << text;
        const std::string copy_out = text.substr(at);
        const bool rows = max_step >= 48, columns = max_step >= 12;
        EXPECT_EQ(copy_out.find("(i0.1, 0, 4) unrolled") != std::string::npos, rows)
            << max_step << "\n"
            << text;
        EXPECT_EQ(copy_out.find(", 0, 12) unrolled") != std::string::npos, columns)
            << max_step << "\n"
            << text;
        expect_state_matches(s);
    }
}

TEST(Lowering, VectorWidthAndUnrollLimitsAreScheduleErrors) {
    te::Compute c = op_compute("relu:m=100,n=100");
    State s = sched::make_initial_state(c);
    sched::vectorize(s, 1, 1);
    EXPECT_THROW(sched::lower_state(s, "wide"), ScheduleError);
    State t = sched::make_initial_state(c);
    sched::unroll(t, 1, 0);
    sched::unroll(t, 1, 1);
    EXPECT_THROW(sched::lower_state(t, "unrolled"), ScheduleError);
    sched::split(t, 1, 1, {20});
    sched::annotate(t, 1, 1, IterAnnotation::None);
    expect_state_matches(t, 3, /*interpreter_only=*/true);
}

TEST(Lowering, ScalarOutputAndManyStages) {
    // A rank-0 reduction output, then a softmax and a layer norm with every stage at root.
    for (const char* spec : {"reduce_sum:m=7,n=13", "softmax:m=5,n=13", "layer_norm:m=3,n=7"}) {
        SCOPED_TRACE(spec);
        te::Compute c = op_compute(spec);
        State s = sched::make_initial_state(c);
        expect_state_matches(s);
    }
    te::Tensor x = te::placeholder({7, 13}, ir::DataType::f32(), "x");
    te::Tensor y = te::reduce_sum(x, {}, false);
    te::Compute c = te::make_compute({x}, {y});
    State s = sched::make_initial_state(c);
    sched::fuse(s, 1, {0, 1});
    sched::split(s, 1, 0, {8});
    expect_state_matches(s);
}

} // namespace
} // namespace tessera::testing
