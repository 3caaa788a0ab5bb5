// Reductions and normalizations through the whole build: ONNX models of every op added in
// src/graph/ops/reduce.cpp and normalization.cpp (plus GlobalMaxPool and GlobalLpPool) in their
// opset 13 and opset 18 forms and an old-opset model (opset 6: Softmax and LogSoftmax coerced
// to 2-D, BatchNormalization with is_test, GlobalLpPool), imported, optimized at -O0 and -O2,
// built into a library and run through its C API against the graph evaluator
// (expect_library_matches_evaluator in op_case.h).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "graph_test_util.h"
#include "op_case.h"

namespace tessera::graph {
namespace {

using testing::ModelBuilder;

// The reductions whose axes are an attribute before opset 18 and an operand from 18.
const char* const kReductions[] = {"ReduceMean",   "ReduceMax",       "ReduceMin",
                                   "ReduceProd",   "ReduceL1",        "ReduceL2",
                                   "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};

// x [2, 3, 5, 7] through every reduction (on differently chosen axes, some fed by elementwise
// ops that fuse into them), LogSoftmax, InstanceNormalization and the global pools. At opset 18
// the axes are initializers, and one ReduceMax with noop_with_empty_axes passes x through.
std::string reductions_model(int opset) {
    ModelBuilder m(opset);
    m.input("x", DType::F32, {2, 3, 5, 7});
    m.initializer("half", TensorData::scalar(0.5f));
    m.initializer("scale", nonzero_floats({3}, 21)).initializer("bias", floats({3}, 22));
    m.node("Mul", {"x", "half"}, {"xh"});
    m.node("Exp", {"xh"}, {"pos"}); // positive: ReduceLogSum's sums
    const std::vector<std::vector<int64_t>> axes = {{1},    {-1},    {2, 3}, {0},   {1},
                                                    {1, 2}, {-1, 0}, {3},    {0, 2}};
    const std::vector<int64_t> keep = {1, 0, 1, 0, 1, 0, 1, 0, 1};
    std::vector<std::string> outs;
    for (size_t i = 0; i < std::size(kReductions); ++i) {
        const std::string op = kReductions[i], y = "r" + std::to_string(i);
        const std::string src = op == "ReduceLogSum" ? "pos" : i % 2 ? "xh" : "x";
        if (opset < 18) {
            m.node(op, {src}, {y}).ints("axes", axes[i]).i("keepdims", keep[i]);
        } else {
            m.initializer("axes" + std::to_string(i), testing::i64s(axes[i]));
            m.node(op, {src, "axes" + std::to_string(i)}, {y}).i("keepdims", keep[i]);
        }
        outs.push_back(y);
    }
    // A reduction over every axis, and (opset 18) the noop form.
    m.node("ReduceLogSumExp", {"x"}, {"all"}).i("keepdims", 0);
    outs.push_back("all");
    if (opset >= 18) {
        m.node("ReduceMax", {"x"}, {"same"}).i("noop_with_empty_axes", 1);
        m.node("Relu", {"same"}, {"same_relu"});
        outs.push_back("same_relu");
    }
    m.node("LogSoftmax", {"xh"}, {"ls"}).i("axis", 2);
    m.node("InstanceNormalization", {"x", "scale", "bias"}, {"in"}).f("epsilon", 1e-3f);
    m.node("Relu", {"in"}, {"in_relu"});
    m.node("GlobalMaxPool", {"x"}, {"gmp"});
    m.node("GlobalLpPool", {"x"}, {"glp"}).i("p", 3);
    m.node("GlobalLpPool", {"xh"}, {"glp2"});
    for (const char* y : {"ls", "in_relu", "gmp", "glp", "glp2"})
        outs.push_back(y);
    for (const std::string& y : outs)
        m.output(y);
    return m.bytes();
}

// Opset 6: Softmax and LogSoftmax on axis 1 of a rank-4 input (coerced to 2-D), a
// BatchNormalization with is_test, reductions with the axes attribute, GlobalLpPool.
std::string old_opset_model() {
    ModelBuilder m(6);
    m.input("x", DType::F32, {2, 3, 5, 7});
    m.initializer("s", nonzero_floats({3}, 31)).initializer("b", floats({3}, 32));
    m.initializer("mean", floats({3}, 33)).initializer("var", floats({3}, 34, 0.5f, 1.5f));
    m.node("BatchNormalization", {"x", "s", "b", "mean", "var"}, {"bn"})
        .i("is_test", 1)
        .f("epsilon", 1e-3f);
    m.node("LogSoftmax", {"bn"}, {"ls"}).i("axis", 1);
    m.node("Softmax", {"x"}, {"sm"}).i("axis", 1);
    m.node("ReduceL2", {"bn"}, {"l2"}).ints("axes", {1, 3}).i("keepdims", 0);
    m.node("ReduceProd", {"x"}, {"prod"}).ints("axes", {2});
    m.node("InstanceNormalization", {"bn", "s", "b"}, {"in"});
    m.node("GlobalLpPool", {"in"}, {"glp"});
    for (const char* y : {"ls", "sm", "l2", "prod", "glp"})
        m.output(y);
    return m.bytes();
}

struct ModelCase {
    std::string name;
    std::string (*model)();
    std::vector<std::string> ops; // in the built graph
};

std::string opset13() { return reductions_model(13); }
std::string opset18() { return reductions_model(18); }

const ModelCase kModels[] = {
    {"Opset13",
     opset13,
     {"ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
      "ReduceSumSquare", "LogSoftmax", "InstanceNormalization", "GlobalMaxPool", "GlobalLpPool"}},
    {"Opset18",
     opset18,
     {"ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
      "ReduceSumSquare", "LogSoftmax", "InstanceNormalization", "GlobalMaxPool", "GlobalLpPool"}},
    {"Opset6",
     old_opset_model,
     {"LogSoftmax", "Softmax", "ReduceL2", "ReduceProd", "InstanceNormalization", "GlobalLpPool"}},
};

class ReduceModelBuild : public ::testing::TestWithParam<std::tuple<size_t, int>> {};

TEST_P(ReduceModelBuild, LibraryMatchesEvaluator) {
    const ModelCase& mc = kModels[std::get<0>(GetParam())];
    const int opt = std::get<1>(GetParam());
    const Graph built = expect_library_matches_evaluator(
        mc.model(), {floats({2, 3, 5, 7}, 41, -2.0f, 2.0f)}, opt, 1e-5, 1e-5);
    const std::map<std::string, int> ops = op_histogram(built);
    for (const std::string& op : mc.ops)
        EXPECT_TRUE(ops.count(op)) << op << " is not in the built graph at -O" << opt;
}

INSTANTIATE_TEST_SUITE_P(Models, ReduceModelBuild,
                         ::testing::Combine(::testing::Range<size_t>(0, std::size(kModels)),
                                            ::testing::Values(0, 2)),
                         [](const ::testing::TestParamInfo<std::tuple<size_t, int>>& info) {
                             return kModels[std::get<0>(info.param)].name + "_O" +
                                    std::to_string(std::get<1>(info.param));
                         });

// The opset 18 axes operand imports as the attribute the pattern recognizers read: an exported
// decomposed softmax (ReduceMax and ReduceSum with axes operands) becomes Softmax at -O2.
TEST(ReduceModel, Opset18DecomposedSoftmaxIsRecognized) {
    ModelBuilder m(18);
    m.input("x", DType::F32, {2, 7, 13});
    m.initializer("axes", testing::i64s({-1}));
    m.node("ReduceMax", {"x", "axes"}, {"mx"}).i("keepdims", 1);
    m.node("Sub", {"x", "mx"}, {"d"});
    m.node("Exp", {"d"}, {"e"});
    m.node("ReduceSum", {"e", "axes"}, {"s"}).i("keepdims", 1);
    m.node("Div", {"e", "s"}, {"y"});
    m.output("y");
    const Graph built =
        expect_library_matches_evaluator(m.bytes(), {floats({2, 7, 13}, 51, -4.0f, 4.0f)}, 2);
    EXPECT_EQ(op_histogram(built), (std::map<std::string, int>{{"Softmax", 1}}));
}

} // namespace
} // namespace tessera::graph
