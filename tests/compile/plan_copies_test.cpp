// Models whose values are not all computed by a kernel: a graph input, a constant and a value
// listed twice as outputs become copy calls, a channel concat is written in place by the
// kernels of its operands; built from small ModelProtos with odd sizes and checked against
// the graph's reference evaluator.
#include <gtest/gtest.h>

#include "common/model_library_loader.h"
#include "graph/graph_test_util.h"
#include "tessera/compile/model_compiler.h"
#include "tessera/graph/evaluate.h"
#include "tessera/graph/import_onnx.h"

namespace tessera {
namespace {

using graph::DType;
using testing::ModelBuilder;
using testing::random_tensor;

/// Writes m to `dir`/name.onnx, builds it untuned; returns the library path and the plan.
std::string build(const ModelBuilder& m, const testing::ScratchDir& dir, const std::string& name,
                  runtime::ModelPlan* plan) {
    const std::string onnx = dir.write(name + ".onnx", m.bytes());
    compile::BuildOptions opts;
    opts.model_path = onnx;
    const compile::ModelBuild b = compile::prepare_model_build(opts);
    std::vector<uint8_t> weights;
    *plan = compile::make_model_plan(b, weights);
    const std::string so = dir.file(name + ".so");
    compile::write_model_library(b, so, opts);
    return so;
}

int count_copies(const runtime::ModelPlan& plan) {
    int n = 0;
    for (const runtime::PlanCall& c : plan.calls)
        n += c.kernel < 0;
    return n;
}

TEST(PlanCopies, InputConstantAndRepeatedOutputsAreCopied) {
    testing::ScratchDir dir("tessera_compile_copies");
    const graph::TensorData w = random_tensor({13, 5}, 1), c = random_tensor({7, 5}, 2);
    ModelBuilder m(13);
    m.input("x", DType::F32, {7, 13}).initializer("w", w).initializer("c", c);
    m.node("MatMul", {"x", "w"}, {"h"});
    m.node("Relu", {"h"}, {"y"});
    m.node("Identity", {"y"}, {"y2"});
    m.output("y", DType::F32, {7, 5}).output("x", DType::F32, {7, 13});
    m.output("c", DType::F32, {7, 5}).output("y2", DType::F32, {7, 5});
    m.output("y", DType::F32, {7, 5}); // the same value twice

    runtime::ModelPlan plan;
    const std::string so = build(m, dir, "copies", &plan);
    // x, c and the second y are copies (y2 may be its own kernel or a copy of y).
    EXPECT_GE(count_copies(plan), 3);

    const graph::TensorData x = random_tensor({7, 13}, 3);
    testing::LoadedModel lib(so);
    const auto got = lib.run({x});
    const auto want = graph::evaluate(graph::import_onnx(dir.file("copies.onnx")), {x});
    EXPECT_TRUE(testing::outputs_match(got, want));
    ASSERT_EQ(got.size(), 5u);
    EXPECT_EQ(got[1], x);
    EXPECT_EQ(got[2], c);
    EXPECT_EQ(got[3], got[0]);
    EXPECT_EQ(got[4], got[0]);
}

TEST(PlanCopies, ElementwiseChainsOverOddShapesReuseTheArena) {
    // Enough elementwise steps that the memory plan reuses buffers (some in place).
    testing::ScratchDir dir("tessera_compile_chain");
    const graph::TensorData w = random_tensor({127, 13}, 4), b = random_tensor({13}, 5);
    ModelBuilder m(13);
    m.input("x", DType::F32, {1, 127}).initializer("w", w).initializer("b", b);
    m.node("MatMul", {"x", "w"}, {"h0"});
    m.node("Softmax", {"h0"}, {"h1"}).i("axis", -1);
    m.node("Add", {"h1", "b"}, {"h2"});
    m.node("Softmax", {"h2"}, {"h3"}).i("axis", -1);
    m.node("Tanh", {"h3"}, {"h4"});
    m.node("Softmax", {"h4"}, {"h5"}).i("axis", -1);
    m.node("Sigmoid", {"h5"}, {"h6"});
    m.node("Softmax", {"h6"}, {"y"}).i("axis", -1);
    m.output("y", DType::F32, {1, 13});

    runtime::ModelPlan plan;
    const std::string so = build(m, dir, "chain", &plan);
    int arena = 0;
    for (const runtime::PlanTensor& t : plan.tensors)
        arena += t.storage == runtime::TensorStorage::Arena;
    EXPECT_GE(arena, 3);
    EXPECT_LT(plan.arena_bytes, arena * 64); // buffers are shared, not one 64-byte slot per value

    EXPECT_TRUE(testing::library_matches_evaluator(so, dir.file("chain.onnx"), {1, 127}, {6, 7}));
}

TEST(PlanCopies, ChannelConcatsAreWrittenInPlace) {
    // A SqueezeNet Fire module (squeeze 1x1 -> relu -> expand 1x1 and 3x3 -> relu -> channel
    // Concat) and a conv after it: the expand convs write their outputs into the concat's
    // buffer, the concat runs no kernel and is no task.
    testing::ScratchDir dir("tessera_compile_concat");
    ModelBuilder m(13);
    m.input("x", DType::F32, {1, 11, 9, 8});
    m.initializer("ws", random_tensor({16, 11, 1, 1}, 8));
    m.initializer("w1", random_tensor({16, 16, 1, 1}, 9));
    m.initializer("w3", random_tensor({32, 16, 3, 3}, 10));
    m.initializer("wo", random_tensor({16, 48, 1, 1}, 11));
    m.node("Conv", {"x", "ws"}, {"s0"});
    m.node("Relu", {"s0"}, {"s"});
    m.node("Conv", {"s", "w1"}, {"e10"});
    m.node("Relu", {"e10"}, {"e1"});
    m.node("Conv", {"s", "w3"}, {"e30"}).ints("pads", {1, 1, 1, 1});
    m.node("Relu", {"e30"}, {"e3"});
    m.node("Concat", {"e1", "e3"}, {"cat"}).i("axis", 1);
    m.node("Conv", {"cat", "wo"}, {"y"});
    m.output("y", DType::F32, {1, 16, 9, 8});

    const std::string onnx = dir.write("fire.onnx", m.bytes());
    compile::BuildOptions opts;
    opts.model_path = onnx;
    const compile::ModelBuild b = compile::prepare_model_build(opts);
    int in_place = 0;
    for (const graph::FusedGroup& grp : b.groups)
        in_place += grp.operands_in_place;
    EXPECT_EQ(in_place, 1);
    for (const compile::TaskBuild& t : b.tasks)
        EXPECT_EQ(t.task.pattern.find("concat"), std::string::npos) << t.task.pattern;
    std::vector<uint8_t> weights;
    const runtime::ModelPlan plan = compile::make_model_plan(b, weights);
    EXPECT_EQ(plan.calls.size(), b.groups.size() - 1);
    const std::string so = dir.file("fire.so");
    compile::write_model_library(b, so, opts);

    EXPECT_TRUE(testing::library_matches_evaluator(so, onnx, {1, 11, 9, 8}, {12, 13}));
}

} // namespace
} // namespace tessera
