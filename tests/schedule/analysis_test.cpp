// The State queries the sketch rules use: data flow, access analysis, attachment.
#include "schedule_test_util.h"
#include "tessera/schedule/sketch.h"

namespace tessera::testing {
namespace {

using sched::State;

TEST(Analysis, ConvWithPadBiasRelu) {
    te::Compute c = op_compute("conv2d:n=1,c=2,h=5,w=5,k=3,r=3,pad=1,bias=1,relu=1");
    State s = sched::make_initial_state(c);
    const int x = s.stage_id_of("x"), pad = s.stage_id_of("conv2d_pad"),
              conv = s.stage_id_of("conv2d"), bias = s.stage_id_of("conv2d_bias");
    const int out = static_cast<int>(s.stages.size()) - 1;
    ASSERT_GE(x, 0);
    ASSERT_GE(bias, 0);
    EXPECT_EQ(s.stage_id_of(s.stages[conv].tensor), conv);
    EXPECT_EQ(s.stage_id_of("nothing"), -1);
    EXPECT_TRUE(s.is_input(x));
    EXPECT_FALSE(s.is_input(pad));
    EXPECT_TRUE(s.is_output(out));
    EXPECT_FALSE(s.is_output(conv));
    EXPECT_EQ(s.consumers(x), std::vector<int>{pad});
    EXPECT_EQ(s.consumers(pad), std::vector<int>{conv});
    EXPECT_EQ(s.producers(pad), std::vector<int>{x});
    EXPECT_TRUE(s.needs_multi_level_tiling(conv));
    EXPECT_FALSE(s.needs_multi_level_tiling(pad));
    EXPECT_FALSE(s.needs_multi_level_tiling(out));
    EXPECT_FALSE(s.is_strict_inlinable(pad)); // a Select on the bounds
    EXPECT_FALSE(s.is_strict_inlinable(conv));
    EXPECT_TRUE(s.is_strict_inlinable(bias));
    EXPECT_TRUE(s.is_strict_inlinable(out));
    EXPECT_TRUE(s.is_injective(pad));
    EXPECT_FALSE(s.is_injective(conv));
    EXPECT_TRUE(s.elementwise_match(conv, bias));
    EXPECT_FALSE(s.elementwise_match(pad, conv));
    EXPECT_EQ(s.reduce_size(conv), 2 * 3 * 3);
    EXPECT_EQ(s.spatial_size(conv), 3 * 5 * 5);
    // Through inlined stages.
    sched::compute_inline(s, bias);
    EXPECT_EQ(s.consumers_through_inlined(conv), std::vector<int>{out});
    EXPECT_EQ(s.producers_through_inlined(out), (std::vector<int>{s.stage_id_of("bias"), conv}));
    sched::compute_at(s, conv, out, 3);
    EXPECT_EQ(s.attached_stages(out), std::vector<int>{conv});
    EXPECT_EQ(s.attached_at(out, 3), std::vector<int>{conv});
    EXPECT_TRUE(s.attached_at(out, 2).empty());
    EXPECT_THROW(s.consumers(99), ScheduleError);
    EXPECT_THROW(s.stage(-1), ScheduleError);
    EXPECT_NE(sched::to_string(s).find("conv2d"), std::string::npos);
}

TEST(Analysis, MatmulAndElementwise) {
    te::Compute c = op_compute("matmul:m=4,n=5,k=6");
    State s = sched::make_initial_state(c);
    EXPECT_TRUE(s.needs_multi_level_tiling(2));
    EXPECT_FALSE(s.is_strict_inlinable(2));
    te::Compute e = op_compute("transpose:m=4,n=5");
    State t = sched::make_initial_state(e);
    EXPECT_FALSE(t.needs_multi_level_tiling(1));
    EXPECT_FALSE(t.elementwise_match(0, 1));
    te::Compute g = op_compute("gelu:m=4,n=5");
    State u = sched::make_initial_state(g);
    for (size_t i = 1; i < u.stages.size(); ++i)
        EXPECT_FALSE(u.needs_multi_level_tiling(static_cast<int>(i)));
}

TEST(Analysis, UnitBatchDimReadAsZeroStillMatchesElementwise) {
    // An ONNX MatMul [1, 7, 13] x [13, 11] plus a bias: the Add broadcasts, and reads the
    // product at [0, i, j] on its unit batch axis. It is still an elementwise consumer the
    // product can be fused into; a read at 0 on an axis longer than 1 is not.
    te::Tensor a = te::placeholder({1, 7, 13}, ir::DataType::f32(), "a");
    te::Tensor w = te::placeholder({13, 11}, ir::DataType::f32(), "w");
    te::Tensor b = te::placeholder({11}, ir::DataType::f32(), "b");
    te::Tensor y = te::add(te::matmul(a, w), b);
    State s = sched::make_initial_state(te::make_compute({a, w, b}, {y}));
    const int mm = s.stage_id_of("matmul"), out = static_cast<int>(s.stages.size()) - 1;
    ASSERT_GE(mm, 0);
    EXPECT_TRUE(s.elementwise_match(mm, out));
    EXPECT_EQ(sched::fusible_consumer(s, mm), out);

    te::Tensor x = te::placeholder({2, 5}, ir::DataType::f32(), "x");
    te::Tensor first = te::relu(x);
    te::Tensor row0 = te::compute(
        {2, 5}, [&](const std::vector<te::Var>& i) { return first(te::Expr(0), i[1]); }, "row0");
    State r = sched::make_initial_state(te::make_compute({x}, {row0}));
    EXPECT_FALSE(r.elementwise_match(r.stage_id_of("relu"), r.stage_id_of("row0")));
}

} // namespace
} // namespace tessera::testing
