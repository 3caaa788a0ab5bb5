// compute_at, compute_inline and compute_root: bounds inference on padded convolutions and
// fused consumers, nested attachment, and the illegal cases.
#include "schedule_test_util.h"
#include "tessera/ir/op.h"
#include "tessera/ir/printer.h"

namespace tessera::testing {
namespace {

using sched::State;

int sid(const State& s, const std::string& name) {
    int id = s.stage_id_of(name);
    EXPECT_GE(id, 0) << "no stage " << name;
    return id;
}

TEST(ComputeAt, PaddedConvInputAtOutputRowTile) {
    te::Compute c = op_compute("conv2d:n=1,c=3,h=13,w=13,k=8,r=3,pad=1");
    State s = sched::make_initial_state(c);
    const int pad = sid(s, "conv2d_pad"), conv = sid(s, "conv2d");
    // conv: n, k, oh, ow, rc, rh, rw -> split oh by 4.
    sched::split(s, conv, 2, {4});
    sched::compute_at(s, pad, conv, 2);
    // Region of the padded input per row tile: 4 output rows + 2 halo rows, all 15 columns,
    // all 3 channels.
    const sched::Stage& p = s.stages[pad];
    ASSERT_EQ(p.iters.size(), 4u);
    EXPECT_EQ(p.iters[0].extent, 1);
    EXPECT_EQ(p.iters[1].extent, 3);
    EXPECT_EQ(p.iters[2].extent, 6);
    EXPECT_EQ(p.iters[3].extent, 15);
    expect_state_matches(s);
}

TEST(ComputeAt, PaddedConvInputAtInnermostSpatialLoop) {
    te::Compute c = op_compute("conv2d:n=1,c=2,h=7,w=7,k=3,r=3,pad=1,stride=2");
    State s = sched::make_initial_state(c);
    const int pad = sid(s, "conv2d_pad"), conv = sid(s, "conv2d");
    sched::compute_at(s, pad, conv, 3);
    const sched::Stage& p = s.stages[pad];
    EXPECT_EQ(p.iters[1].extent, 2); // all channels
    EXPECT_EQ(p.iters[2].extent, 3); // the 3x3 window of one output pixel
    EXPECT_EQ(p.iters[3].extent, 3);
    expect_state_matches(s);
}

TEST(ComputeAt, PadIntoCacheWriteTileIntoConv) {
    te::Compute c = op_compute("conv2d:n=1,c=4,h=13,w=13,k=16,r=3,pad=1");
    State s = sched::make_initial_state(c);
    const int pad = sid(s, "conv2d_pad");
    const int local = sched::cache_write(s, sid(s, "conv2d"), "local");
    const int conv = local + 1;
    // conv: n, k, oh, ow -> n, k.0, oh, ow.0, k.1, ow.1 (k tile 8, ow tile 4, imperfect).
    sched::split(s, conv, 1, {8});
    sched::split(s, conv, 4, {4});
    sched::reorder(s, conv, {0, 1, 3, 4, 2, 5});
    sched::vectorize(s, conv, 5);
    sched::parallel(s, conv, 1);
    sched::compute_at(s, local, conv, 3);
    sched::compute_at(s, pad, local, 4); // inside the tile's rc loop
    EXPECT_EQ(s.stages[local].iters[1].extent, 8);
    EXPECT_EQ(s.stages[local].iters[3].extent, 4);
    expect_state_matches(s);
}

TEST(ComputeAt, MatmulAtReluTile) {
    te::Tensor a = te::placeholder({13, 9}, ir::DataType::f32(), "a");
    te::Tensor b = te::placeholder({9, 22}, ir::DataType::f32(), "b");
    te::Tensor y = te::relu(te::matmul(a, b));
    te::Compute c = te::make_compute({a, b}, {y});
    State s = sched::make_initial_state(c);
    const int mm = 2, out = 3;
    sched::split(s, out, 0, {4});
    sched::split(s, out, 2, {8});
    sched::reorder(s, out, {0, 2, 1, 3});
    sched::compute_at(s, mm, out, 1);
    EXPECT_EQ(s.stages[mm].iters[0].extent, 4);
    EXPECT_EQ(s.stages[mm].iters[1].extent, 8);
    EXPECT_EQ(s.stages[mm].iters[2].extent, 9);
    sched::vectorize(s, mm, 1);
    expect_state_matches(s);
    // Moving it back to root restores the full extents.
    sched::compute_root(s, mm);
    EXPECT_EQ(s.stages[mm].iters[0].extent, 13);
    expect_state_matches(s);
}

TEST(ComputeAt, ElementwiseProducerAtShiftedReads) {
    // c[i] = b[i] + b[i + 2] with b = a * 2: the region of b per tile has a halo of 2.
    te::Tensor a = te::placeholder({15}, ir::DataType::f32(), "a");
    te::Tensor b = te::compute(
        {15}, [&](const std::vector<ir::Var>& i) { return a(i[0]) * 2.0f; }, "b");
    te::Tensor y = te::compute(
        {13}, [&](const std::vector<ir::Var>& i) { return b(i[0]) + b(i[0] + 2); }, "c");
    te::Compute c = te::make_compute({a}, {y});
    State s = sched::make_initial_state(c);
    sched::split(s, 2, 0, {4});
    sched::compute_at(s, 1, 2, 0);
    EXPECT_EQ(s.stages[1].iters[0].extent, 6);
    expect_state_matches(s);
}

TEST(ComputeInline, ElementwiseChain) {
    te::Tensor x = te::placeholder({7, 13}, ir::DataType::f32(), "x");
    te::Tensor y = te::relu(te::add(te::exp(x), te::sigmoid(x)));
    te::Compute c = te::make_compute({x}, {y});
    State s = sched::make_initial_state(c);
    ASSERT_GE(s.stages.size(), 4u);
    for (int i = static_cast<int>(s.stages.size()) - 2; i >= 1; --i)
        sched::compute_inline(s, i);
    ir::LoweredFunc f = sched::lower_state(s, "chain");
    EXPECT_EQ(ir::to_string(f).find("allocate"), std::string::npos) << ir::to_string(f);
    expect_state_matches(s);
    // Consumers through inlined stages reach the output.
    EXPECT_EQ(s.consumers_through_inlined(0),
              std::vector<int>{static_cast<int>(s.stages.size()) - 1});
}

TEST(ComputeInline, PadIntoConv) {
    te::Compute c = op_compute("conv2d:n=1,c=2,h=7,w=7,k=3,r=3,pad=2,relu=1,bias=1");
    State s = sched::make_initial_state(c);
    sched::compute_inline(s, sid(s, "conv2d_pad"));
    expect_state_matches(s);
}

TEST(ComputeAt, IllegalCasesThrow) {
    te::Tensor a = te::placeholder({8}, ir::DataType::f32(), "a");
    te::Tensor b = te::compute(
        {8}, [&](const std::vector<ir::Var>& i) { return a(i[0]) + 1.0f; }, "b");
    te::Tensor c1 = te::compute(
        {8}, [&](const std::vector<ir::Var>& i) { return b(i[0]) * 2.0f; }, "c1");
    te::Tensor d = te::compute(
        {8}, [&](const std::vector<ir::Var>& i) { return b(i[0]) + c1(i[0]); }, "d");
    te::Compute c = te::make_compute({a}, {d});
    State s = sched::make_initial_state(c);
    const int B = s.stage_id_of(b), C1 = s.stage_id_of(c1), D = s.stage_id_of(d);
    EXPECT_THROW(sched::compute_at(s, B, B, 0), ScheduleError);  // itself
    EXPECT_THROW(sched::compute_at(s, D, C1, 0), ScheduleError); // an output
    EXPECT_THROW(sched::compute_at(s, 0, D, 0), ScheduleError);  // an input
    EXPECT_THROW(sched::compute_at(s, B, 0, 0), ScheduleError);  // at an input
    EXPECT_THROW(sched::compute_at(s, B, D, 1), ScheduleError);  // no loop 1
    EXPECT_THROW(sched::compute_at(s, B, 9, 0), ScheduleError);  // no stage 9
    // b is read by c1 and d: computing it inside c1 leaves d reading outside.
    EXPECT_THROW(sched::compute_at(s, B, C1, 0), ScheduleError);
    // A cycle: c1 inside b, then b inside c1.
    sched::compute_at(s, C1, D, 0);
    sched::compute_at(s, B, D, 0);
    EXPECT_THROW(sched::compute_at(s, D, B, 0), ScheduleError);
    EXPECT_THROW(sched::compute_at(s, C1, B, 0), ScheduleError);
    expect_state_matches(s);
    // Inline: not of outputs, inputs, or stages others are computed at.
    EXPECT_THROW(sched::compute_inline(s, D), ScheduleError);
    EXPECT_THROW(sched::compute_inline(s, 0), ScheduleError);
    EXPECT_THROW(sched::compute_at(s, C1, C1, 0), ScheduleError);
    sched::compute_inline(s, C1);
    EXPECT_THROW(sched::compute_at(s, B, C1, 0), ScheduleError); // at an inlined stage
    EXPECT_THROW(sched::split(s, C1, 0, {2}), ScheduleError);    // an inlined stage has no loops
    EXPECT_THROW(sched::compute_root(s, 0), ScheduleError);
    expect_state_matches(s);
}

TEST(ComputeInline, ReductionAndAttachTargetThrow) {
    te::Compute c = op_compute("conv2d:n=1,c=2,h=5,w=5,k=3,r=3,pad=1,relu=1");
    State s = sched::make_initial_state(c);
    const int conv = sid(s, "conv2d");
    EXPECT_THROW(sched::compute_inline(s, conv), ScheduleError);
    const int relu = static_cast<int>(s.stages.size()) - 1;
    sched::compute_at(s, conv, relu, 2);
    sched::compute_at(s, sid(s, "conv2d_pad"), conv, 2);
    EXPECT_THROW(sched::compute_inline(s, conv), ScheduleError);
    expect_state_matches(s);
}

TEST(ComputeAt, ReorderThatBreaksTheScopeThrows) {
    te::Tensor a = te::placeholder({6, 6}, ir::DataType::f32(), "a");
    te::Tensor b = te::compute(
        {6, 6}, [&](const std::vector<ir::Var>& i) { return a(i[0], i[1]) + 1.0f; }, "b");
    te::Tensor c1 = te::compute(
        {6, 6}, [&](const std::vector<ir::Var>& i) { return b(i[0], i[1]) * 2.0f; }, "c1");
    te::Tensor d = te::compute(
        {6, 6}, [&](const std::vector<ir::Var>& i) { return c1(i[0], i[1]) + 1.0f; }, "d");
    te::Compute c = te::make_compute({a}, {d});
    State s = sched::make_initial_state(c);
    sched::compute_at(s, 2, 3, 0); // c1 at d's i loop
    // b at d's j loop: c1 (at the i loop) would read it outside the j loop.
    EXPECT_THROW(sched::compute_at(s, 1, 3, 1), ScheduleError);
    EXPECT_EQ(s.stages[1].location.kind, sched::ComputeLocKind::Root);
    // c1 at j, b at i: fine; then a reorder that puts j outside i breaks it.
    sched::compute_at(s, 2, 3, 1);
    sched::compute_at(s, 1, 3, 0);
    expect_state_matches(s);
    EXPECT_THROW(sched::reorder(s, 3, {1, 0}), ScheduleError);
    // Attached stages follow their loop through a legal reorder.
    sched::compute_at(s, 1, 3, 1);
    sched::reorder(s, 3, {1, 0});
    EXPECT_EQ(s.stages[1].location.iter, 0);
    EXPECT_EQ(s.stages[2].location.iter, 0);
    expect_state_matches(s);
}

} // namespace
} // namespace tessera::testing
