// Inputs that set shapes bound to values (ImportOptions::bound_inputs, `--bind`), and scalar
// parameters fed at run time (Clip's bounds, Pad's constant value) without binding.
#include <gtest/gtest.h>

#include "graph_test_util.h"
#include "op_case.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/support/error.h"

namespace tessera::graph {
namespace {

using testing::i64s;
using testing::ModelBuilder;

#define EXPECT_CONTAINS(text, part)                                                                \
    EXPECT_NE(std::string(text).find(part), std::string::npos) << "in: " << (text)

// x [3, 35] -> Reshape(x, shape) -> Relu, with `shape` a graph input, as ONNX's node tests
// feed it.
ModelBuilder reshape_model() {
    ModelBuilder mb(13);
    mb.input("x", DType::F32, {3, 35}).input("shape", DType::I64, {3});
    mb.node("Reshape", {"x", "shape"}, {"r"}, "reshape");
    mb.node("Relu", {"r"}, {"y"});
    mb.output("y");
    return mb;
}

std::string import_error(const ModelBuilder& mb, const ImportOptions& o) {
    try {
        import_onnx_bytes(mb.bytes(), "test.onnx", o);
    } catch (const UserError& e) {
        return e.what();
    }
    return "no error";
}

TEST(BindInputs, ABoundInputIsAConstantAndNoLongerAnInput) {
    // Without the binding the shape is a runtime value: the output shape is unknown.
    EXPECT_CONTAINS(import_error(reshape_model(), {}), "must be a compile-time constant");
    ImportOptions o;
    o.bound_inputs["shape"] = i64s({5, -1, 7});
    const Graph g = import_onnx_bytes(reshape_model().bytes(), "test.onnx", o);
    ASSERT_EQ(g.inputs.size(), 1u);
    EXPECT_EQ(g.value(g.inputs[0]).name, "x");
    EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{5, 3, 7}));
    const TensorData x = testing::random_tensor({3, 35}, 5, -1.0f, 1.0f);
    const TensorData y = evaluate(g, {x})[0];
    for (int64_t i = 0; i < x.numel(); ++i)
        EXPECT_EQ(y.data<float>()[i], std::max(0.0f, x.data<float>()[i]));
}

// A shape computed from graph inputs (CenterCropPad's expansion computes Pad's pads from its
// 'shape' input): the error names the inputs to bind, and binding them builds.
TEST(BindInputs, AValueComputedFromInputsNamesThem) {
    ModelBuilder mb(13);
    mb.input("x", DType::F32, {3, 5}).input("before", DType::I64, {2});
    mb.input("after", DType::I64, {2});
    mb.node("Concat", {"before", "after"}, {"pads"}).i("axis", 0);
    mb.node("Pad", {"x", "pads"}, {"y"}, "pad");
    mb.output("y");
    EXPECT_EQ(import_error(mb, {}),
              "node 'pad' (Pad): pads 'pads' must be a compile-time constant (computed from graph "
              "inputs 'before', 'after': give their values with --bind NAME=FILE.npy)");
    EXPECT_CONTAINS(import_error(reshape_model(), {}),
                    "shape 'shape' must be a compile-time constant (a graph input: give its value "
                    "with --bind NAME=FILE.npy)");
    ImportOptions o;
    o.bound_inputs["before"] = i64s({1, 0});
    o.bound_inputs["after"] = i64s({0, 2});
    const Graph g = import_onnx_bytes(mb.bytes(), "test.onnx", o);
    EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{4, 7}));
}

TEST(BindInputs, TheLibraryTakesTheRemainingInputs) {
    ImportOptions o;
    o.bound_inputs["shape"] = i64s({7, 5, 3});
    for (int level : {0, 3})
        expect_library_matches_evaluator(reshape_model().bytes(),
                                         {testing::random_tensor({3, 35}, 6, -1.0f, 1.0f)}, level,
                                         1e-5, 1e-6, o);
}

TEST(BindInputs, ErrorsNameTheInput) {
    ImportOptions o;
    o.bound_inputs["nosuch"] = i64s({1});
    EXPECT_CONTAINS(import_error(reshape_model(), o),
                    "a bound value given for 'nosuch', which is not an input of 'test.onnx' "
                    "(inputs: x, shape)");
    o.bound_inputs = {{"shape", TensorData::from_vector<int32_t>({3}, {5, 3, 7})}};
    EXPECT_CONTAINS(import_error(reshape_model(), o),
                    "the value bound to input 'shape' is i32[3], the input is i64[3]");
    o.bound_inputs = {{"shape", i64s({5, 21})}};
    EXPECT_CONTAINS(import_error(reshape_model(), o),
                    "the value bound to input 'shape' is i64[2], the input is i64[3]");
    o.bound_inputs = {{"shape", i64s({5, 3, 7})}};
    o.input_shapes = {{"shape", {3}}};
    EXPECT_CONTAINS(import_error(reshape_model(), o),
                    "input 'shape' is given both a bound value and an input shape");
}

// Clip with both bounds graph inputs, and with one bound constant and the other fed: the
// kernel reads the fed ones, without --bind.
TEST(RuntimeScalars, ClipBoundsFedAtRunTime) {
    ModelBuilder mb(13);
    mb.input("x", DType::F32, {3, 7, 13}).input("lo", DType::F32, {}).input("hi", DType::F32, {});
    mb.initializer("half", TensorData::scalar<float>(0.5f));
    mb.node("Clip", {"x", "lo", "hi"}, {"a"});
    mb.node("Clip", {"x", "", "hi"}, {"b"});
    mb.node("Clip", {"x", "lo", "half"}, {"c"});
    mb.node("Add", {"a", "b"}, {"ab"});
    mb.node("Add", {"ab", "c"}, {"y"});
    mb.output("y");
    for (int level : {0, 3})
        expect_library_matches_evaluator(mb.bytes(),
                                         {testing::random_tensor({3, 7, 13}, 7, -2.0f, 2.0f),
                                          TensorData::scalar(-0.75f), TensorData::scalar(0.625f)},
                                         level);
}

TEST(RuntimeScalars, PadValueFedAtRunTime) {
    ModelBuilder mb(13);
    mb.input("x", DType::F32, {1, 3, 5, 7}).input("v", DType::F32, {});
    mb.initializer("pads", i64s({0, 0, 1, 2, 0, 1, 3, 0}));
    mb.node("Pad", {"x", "pads", "v"}, {"p"});
    mb.node("Relu", {"p"}, {"y"});
    mb.output("y");
    for (int level : {0, 3})
        expect_library_matches_evaluator(
            mb.bytes(),
            {testing::random_tensor({1, 3, 5, 7}, 8, -1.0f, 1.0f), TensorData::scalar(0.375f)},
            level);
}

} // namespace
} // namespace tessera::graph
