// Horizontal fusion through build and run: an Inception block whose 1x1 convolutions merge into
// one (`BuildOptions::horizontal_fusion`), its branches' channel slices read by the next convs
// (inside their kernels), a Concat and a pool branch; the library's outputs against the graph's
// reference evaluator at -O2 (NCHW) and -O3 (NCHW[x]c), with odd spatial sizes.
#include <gtest/gtest.h>

#include "common/model_library_loader.h"
#include "graph/graph_test_util.h"
#include "tessera/compile/model_compiler.h"

namespace tessera {
namespace {

using graph::DType;
using testing::ModelBuilder;
using testing::random_tensor;

/// x [1, 19, 9, 7]: 1x1 convs to 16, 32 and 5 channels (biases, Relu), 3x3 convs after the
/// second and third, a 3x3 max pool and 1x1 conv beside them, all four concatenated.
ModelBuilder inception_block() {
    ModelBuilder m(13);
    m.input("x", DType::F32, {1, 19, 9, 7});
    const int64_t ks[] = {16, 32, 5};
    for (int i = 0; i < 3; ++i) {
        const std::string w = "w" + std::to_string(i), b = "b" + std::to_string(i);
        m.initializer(w, random_tensor({ks[i], 19, 1, 1}, 20 + i));
        m.initializer(b, random_tensor({ks[i]}, 30 + i));
        m.node("Conv", {"x", w, b}, {"c" + std::to_string(i)});
        m.node("Relu", {"c" + std::to_string(i)}, {"r" + std::to_string(i)});
    }
    m.initializer("w1b", random_tensor({24, 32, 3, 3}, 40));
    m.initializer("w2b", random_tensor({8, 5, 3, 3}, 41));
    m.initializer("wp", random_tensor({16, 19, 1, 1}, 42));
    m.node("Conv", {"r1", "w1b"}, {"s1"}).ints("pads", {1, 1, 1, 1});
    m.node("Conv", {"r2", "w2b"}, {"s2"}).ints("pads", {1, 1, 1, 1});
    m.node("MaxPool", {"x"}, {"p"})
        .ints("kernel_shape", {3, 3})
        .ints("pads", {1, 1, 1, 1})
        .ints("strides", {1, 1});
    m.node("Conv", {"p", "wp"}, {"sp"});
    m.node("Concat", {"r0", "s1", "s2", "sp"}, {"y"}).i("axis", 1);
    m.output("y", DType::F32, {1, 64, 9, 7});
    return m;
}

TEST(HorizontalFusionBuild, MergedConvsMatchTheReference) {
    testing::ScratchDir dir("tessera_horizontal_build");
    const std::string onnx = dir.write("inception.onnx", inception_block().bytes());
    for (int level : {2, 3}) {
        SCOPED_TRACE("-O" + std::to_string(level));
        compile::BuildOptions opts;
        opts.model_path = onnx;
        opts.opt_level = level;
        opts.horizontal_fusion = true;
        const compile::ModelBuild b = compile::prepare_model_build(opts);
        // The three 1x1 convs of x are one task's conv now; the slices of its result are read
        // inside the next convs' kernels (at -O3 the 32-channel slice by its 3x3 conv's
        // Winograd input transform, while the 5-channel branch's conv, under one block of
        // outputs, stays NCHW and reads its slice converted back) or copied into the concat.
        int slice_prologues = 0;
        std::string patterns;
        for (const compile::TaskBuild& t : b.tasks) {
            slice_prologues += t.task.pattern.rfind("slice+conv2d", 0) == 0 ||
                               t.task.pattern.rfind("slice+winograd_input", 0) == 0;
            patterns += t.task.pattern + "\n";
        }
        EXPECT_EQ(slice_prologues, level == 2 ? 2 : 1) << patterns;
        compile::BuildOptions apart = opts;
        apart.horizontal_fusion = false;
        EXPECT_LT(b.groups.size(), compile::prepare_model_build(apart).groups.size());
        const std::string so = dir.file("inception" + std::to_string(level) + ".so");
        compile::write_model_library(b, so, opts);
        EXPECT_TRUE(testing::library_matches_evaluator(so, onnx, {1, 19, 9, 7}, {5, 6}));
    }
}

} // namespace
} // namespace tessera
