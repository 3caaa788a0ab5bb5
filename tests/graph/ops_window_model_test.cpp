// Whole ONNX models of the windowed ops beyond the 2-D Conv, built into a library at -O0, -O2
// and -O3 (-O3 runs the blocked layout pass) and run against the graph evaluator: a U-Net
// decoder block (ConvTranspose upsampling, skip Concat, Conv, Relu), the front of a Whisper
// encoder (Conv1d k3 p1, Gelu, Conv1d k3 s2 p1, Gelu), a 3-D conv block, and 1-D pools with a
// 1-D ConvTranspose.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "graph_test_util.h"
#include "op_case.h"

namespace tessera::graph {
namespace {

using testing::ModelBuilder;

std::map<Op, int> ops_of(const Graph& g) {
    std::map<Op, int> ops;
    for (NodeId id : g.node_ids())
        ++ops[g.node(id).op];
    return ops;
}

/// y = x * 0.5 * (1 + erf(x / sqrt(2))) as ONNX nodes (opset 17 has no Gelu); the -O2 pattern
/// pass recognizes it.
void gelu(ModelBuilder& m, const std::string& x, const std::string& y) {
    m.node("Div", {x, "sqrt2"}, {x + "_scaled"});
    m.node("Erf", {x + "_scaled"}, {x + "_erf"});
    m.node("Add", {x + "_erf", "one"}, {x + "_1p"});
    m.node("Mul", {x, x + "_1p"}, {x + "_prod"});
    m.node("Mul", {x + "_prod", "half"}, {y});
}

std::string unet_decoder_model() {
    ModelBuilder m(17);
    m.input("low", DType::F32, {1, 8, 5, 6}).input("skip", DType::F32, {1, 4, 10, 12});
    m.initializer("w_up", nonzero_floats({8, 4, 2, 2}, 1)).initializer("b_up", floats({4}, 2));
    m.initializer("w_c", nonzero_floats({16, 8, 3, 3}, 3)).initializer("b_c", floats({16}, 4));
    m.initializer("w_up2", nonzero_floats({16, 3, 3, 3}, 5)).initializer("b_up2", floats({3}, 6));
    m.node("ConvTranspose", {"low", "w_up", "b_up"}, {"up"}, "up")
        .ints("kernel_shape", {2, 2})
        .ints("strides", {2, 2});
    m.node("Concat", {"up", "skip"}, {"cat"}).i("axis", 1);
    m.node("Conv", {"cat", "w_c", "b_c"}, {"conv"}).ints("pads", {1, 1, 1, 1});
    m.node("Relu", {"conv"}, {"act"});
    m.node("ConvTranspose", {"act", "w_up2", "b_up2"}, {"up2"}, "up2")
        .ints("strides", {2, 2})
        .ints("pads", {1, 1, 1, 1})
        .ints("output_padding", {1, 1});
    m.node("Relu", {"up2"}, {"out"});
    m.output("out");
    return m.bytes();
}

/// Weights of magnitude [0.25, 1.25) / sqrt(fan_in) with random signs, as trained layers have:
/// wide sums stay of order 1 rather than growing with the channel count.
TensorData layer_weights(const Shape& s, uint64_t seed) {
    TensorData t = nonzero_floats(s, seed);
    const float scale = 1.0f / std::sqrt(static_cast<float>(t.numel() / s[0]));
    for (int64_t i = 0; i < t.numel(); ++i)
        t.data<float>()[i] *= scale;
    return t;
}

/// Whisper's encoder front with `mels` input channels, `width` channels and `frames` frames.
std::string whisper_front_model(int64_t mels = 16, int64_t width = 24, int64_t frames = 30) {
    ModelBuilder m(17);
    m.input("mel", DType::F32, {1, mels, frames});
    m.initializer("w1", layer_weights({width, mels, 3}, 7)).initializer("b1", floats({width}, 8));
    m.initializer("w2", layer_weights({width, width, 3}, 9)).initializer("b2", floats({width}, 10));
    m.initializer("sqrt2", TensorData::scalar<float>(std::sqrt(2.0f)));
    m.initializer("one", TensorData::scalar<float>(1.0f));
    m.initializer("half", TensorData::scalar<float>(0.5f));
    m.node("Conv", {"mel", "w1", "b1"}, {"c1"}, "conv1").ints("pads", {1, 1});
    gelu(m, "c1", "g1");
    m.node("Conv", {"g1", "w2", "b2"}, {"c2"}, "conv2")
        .ints("kernel_shape", {3})
        .ints("pads", {1, 1})
        .ints("strides", {2});
    gelu(m, "c2", "out");
    m.output("out");
    return m.bytes();
}

std::string conv3d_model() {
    ModelBuilder m(17);
    m.input("vol", DType::F32, {1, 3, 6, 7, 5});
    m.initializer("w", nonzero_floats({4, 3, 3, 3, 3}, 11)).initializer("b", floats({4}, 12));
    m.initializer("w_up", nonzero_floats({4, 2, 2, 2, 2}, 13));
    m.node("Conv", {"vol", "w", "b"}, {"c"}, "conv3d").ints("pads", {1, 1, 1, 1, 1, 1});
    m.node("Relu", {"c"}, {"r"});
    m.node("MaxPool", {"r"}, {"p"})
        .ints("kernel_shape", {2, 2, 2})
        .ints("strides", {2, 2, 2})
        .i("ceil_mode", 1);
    m.node("AveragePool", {"p"}, {"a"})
        .ints("kernel_shape", {2, 1, 2})
        .ints("pads", {1, 0, 0, 0, 0, 1});
    m.node("ConvTranspose", {"a", "w_up"}, {"out"}, "up3d").ints("strides", {2, 2, 2});
    m.output("out");
    return m.bytes();
}

std::string pools_1d_model() {
    ModelBuilder m(17);
    m.input("seq", DType::F32, {1, 4, 17});
    m.initializer("w", nonzero_floats({4, 3, 3}, 14)).initializer("b", floats({3}, 15));
    m.node("MaxPool", {"seq"}, {"mp"})
        .ints("kernel_shape", {3})
        .ints("strides", {2})
        .ints("pads", {1, 1});
    m.node("AveragePool", {"mp"}, {"ap"})
        .ints("kernel_shape", {2})
        .ints("pads", {1, 0})
        .i("count_include_pad", 1);
    m.node("ConvTranspose", {"ap", "w", "b"}, {"ct"}, "up1d")
        .ints("strides", {2})
        .ints("pads", {1, 1})
        .ints("output_padding", {1});
    m.node("Relu", {"ct"}, {"out"});
    m.output("out");
    return m.bytes();
}

class WindowModel : public ::testing::TestWithParam<int> {};

TEST_P(WindowModel, UNetDecoderBlock) {
    const Graph g = expect_library_matches_evaluator(
        unet_decoder_model(),
        {nonzero_floats({1, 8, 5, 6}, 21), nonzero_floats({1, 4, 10, 12}, 22)}, GetParam(), 1e-5,
        1e-5);
    const std::map<Op, int> ops = ops_of(g);
    EXPECT_EQ(ops.count(Op::ConvTranspose) ? ops.at(Op::ConvTranspose) : 0, 2);
    if (GetParam() == 3) {
        EXPECT_TRUE(ops.count(Op::ConvBlocked)) << "the 2-D Conv was not blocked at -O3";
    }
}

TEST_P(WindowModel, WhisperConv1dFront) {
    const Graph g = expect_library_matches_evaluator(
        whisper_front_model(), {nonzero_floats({1, 16, 30}, 23)}, GetParam(), 1e-5, 1e-5);
    const std::map<Op, int> ops = ops_of(g);
    // The 1-D convs run as 2-D ones (blocked at -O3).
    EXPECT_TRUE(ops.count(GetParam() == 3 ? Op::ConvBlocked : Op::Conv));
    if (GetParam() >= 2) {
        EXPECT_TRUE(ops.count(Op::Gelu)) << "the Gelu pattern was not recognized";
    }
}

// Whisper-base's widths (80 mel bins, 384 channels) on 64 frames: sums of 240 and 1152 terms
// (the blocked layout at -O3 adds them in another order than the evaluator).
TEST_P(WindowModel, WhisperConv1dFrontFullWidth) {
    expect_library_matches_evaluator(whisper_front_model(80, 384, 64),
                                     {nonzero_floats({1, 80, 64}, 26)}, GetParam(), 1e-5, 1e-5);
}

TEST_P(WindowModel, Conv3dBlock) {
    const Graph g = expect_library_matches_evaluator(
        conv3d_model(), {nonzero_floats({1, 3, 6, 7, 5}, 24)}, GetParam(), 1e-5, 1e-5);
    const std::map<Op, int> ops = ops_of(g);
    for (Op op : {Op::Conv, Op::MaxPool, Op::AveragePool, Op::ConvTranspose})
        EXPECT_TRUE(ops.count(op)) << op_name(op) << " is not in the built graph";
    EXPECT_FALSE(ops.count(Op::ConvBlocked)) << "a 3-D Conv was blocked";
}

TEST_P(WindowModel, Pools1dAndConvTranspose1d) {
    expect_library_matches_evaluator(pools_1d_model(), {nonzero_floats({1, 4, 17}, 25)}, GetParam(),
                                     1e-5, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(OptLevels, WindowModel, ::testing::Values(0, 2, 3),
                         [](const ::testing::TestParamInfo<int>& info) {
                             return "O" + std::to_string(info.param);
                         });

} // namespace
} // namespace tessera::graph
