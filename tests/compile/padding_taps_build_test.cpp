// Atrous convolutions through build and run: DeepLabV3's pyramid on a 14x14 map (dilations 12
// and 24 with bias and Relu, next to a 1x1 branch, joined along the channels), whose taps that
// read only padding drop_padding_taps removes; the library's outputs against the graph's
// reference evaluator, at -O3 (blocked layout: slices and concats along rows and columns).
#include <gtest/gtest.h>

#include "common/model_library_loader.h"
#include "graph/graph_test_util.h"
#include "tessera/compile/model_compiler.h"

namespace tessera {
namespace {

using graph::DType;
using testing::ModelBuilder;
using testing::random_tensor;

ModelBuilder atrous_pyramid() {
    ModelBuilder m(13);
    m.input("x", DType::F32, {1, 24, 14, 14});
    m.initializer("w12", random_tensor({16, 24, 3, 3}, 31));
    m.initializer("b12", random_tensor({16}, 32));
    m.initializer("w24", random_tensor({16, 24, 3, 3}, 33));
    m.initializer("w1", random_tensor({16, 24, 1, 1}, 34));
    m.initializer("wo", random_tensor({8, 48, 1, 1}, 35));
    m.node("Conv", {"x", "w12", "b12"}, {"c12"})
        .ints("pads", {12, 12, 12, 12})
        .ints("dilations", {12, 12});
    m.node("Relu", {"c12"}, {"r12"});
    m.node("Conv", {"x", "w24"}, {"c24"})
        .ints("pads", {24, 24, 24, 24})
        .ints("dilations", {24, 24});
    m.node("Conv", {"x", "w1"}, {"c1"});
    m.node("Concat", {"r12", "c24", "c1"}, {"cat"}).i("axis", 1);
    m.node("Conv", {"cat", "wo"}, {"y"});
    m.output("y", DType::F32, {1, 8, 14, 14});
    return m;
}

TEST(PaddingTapsBuild, AtrousPyramidMatchesTheReference) {
    testing::ScratchDir dir("tessera_padding_taps_build");
    const std::string onnx = dir.write("atrous.onnx", atrous_pyramid().bytes());
    compile::BuildOptions opts;
    opts.model_path = onnx;
    const compile::ModelBuild b = compile::prepare_model_build(opts);
    // The dilation-12 conv in 9 parts, the dilation-24 one a 1x1 conv beside the 1x1 branch:
    // 9 + 1 + 1 + the output conv.
    int convs = 0;
    std::string patterns;
    for (const graph::FusedGroup& grp : b.groups) {
        convs += grp.pattern.find("conv2d") != std::string::npos;
        patterns += grp.pattern + "\n";
    }
    EXPECT_EQ(convs, 12) << patterns;
    const std::string so = dir.file("atrous.so");
    compile::write_model_library(b, so, opts);
    EXPECT_TRUE(testing::library_matches_evaluator(so, onnx, {1, 24, 14, 14}, {5, 6}));
}

} // namespace
} // namespace tessera
