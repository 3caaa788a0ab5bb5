// Grouped convolutions through build and run: groups narrower than a block (RegNet's 8
// channels, one group per block with block-diagonal weights), groups of whole blocks (32
// channels) and groups that fit neither (20 channels, left in NCHW), with biases, strides and
// odd spatial sizes; the library's outputs against the graph's reference evaluator.
#include <gtest/gtest.h>

#include "common/model_library_loader.h"
#include "graph/graph_test_util.h"
#include "tessera/compile/model_compiler.h"

namespace tessera {
namespace {

using graph::DType;
using testing::ModelBuilder;
using testing::random_tensor;

/// x [1, 64, 11, 9] -> 3x3 conv in 8 groups of 8 (bias, Relu) -> 3x3 stride-2 conv in 2 groups
/// of 32: y; beside it x -> 1x1 conv to 40 -> 3x3 conv in 2 groups of 20: z.
ModelBuilder grouped_block() {
    ModelBuilder m(13);
    m.input("x", DType::F32, {1, 64, 11, 9});
    m.initializer("w1", random_tensor({64, 8, 3, 3}, 21));
    m.initializer("b1", random_tensor({64}, 22));
    m.initializer("w2", random_tensor({64, 32, 3, 3}, 23));
    m.initializer("w3", random_tensor({40, 64, 1, 1}, 24));
    m.initializer("w4", random_tensor({40, 20, 3, 3}, 25));
    m.node("Conv", {"x", "w1", "b1"}, {"c1"}).ints("pads", {1, 1, 1, 1}).i("group", 8);
    m.node("Relu", {"c1"}, {"r1"});
    m.node("Conv", {"r1", "w2"}, {"y"})
        .ints("pads", {1, 1, 1, 1})
        .ints("strides", {2, 2})
        .i("group", 2);
    m.node("Conv", {"x", "w3"}, {"c3"});
    m.node("Conv", {"c3", "w4"}, {"z"}).ints("pads", {1, 1, 1, 1}).i("group", 2);
    m.output("y", DType::F32, {1, 64, 6, 5});
    m.output("z", DType::F32, {1, 40, 11, 9});
    return m;
}

TEST(GroupedConvBuild, BlockedGroupsMatchTheReference) {
    testing::ScratchDir dir("tessera_grouped_build");
    const std::string onnx = dir.write("grouped.onnx", grouped_block().bytes());
    compile::BuildOptions opts;
    opts.model_path = onnx;
    const compile::ModelBuild b = compile::prepare_model_build(opts);
    // The groups of 8 and of 32 run as blocked convs; only the groups of 20 stay NCHW.
    int nchw_convs = 0;
    std::string patterns;
    for (const compile::TaskBuild& t : b.tasks) {
        nchw_convs +=
            t.task.pattern.rfind("conv2d", 0) == 0 && t.task.pattern.rfind("conv2d_nchwc", 0) != 0;
        patterns += t.task.pattern + "\n";
    }
    EXPECT_EQ(nchw_convs, 1) << patterns;
    const std::string so = dir.file("grouped.so");
    compile::write_model_library(b, so, opts);
    EXPECT_TRUE(testing::library_matches_evaluator(so, onnx, {1, 64, 11, 9}, {5, 6}));
}

} // namespace
} // namespace tessera
