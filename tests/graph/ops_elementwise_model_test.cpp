// ONNX models of the elementwise ops through the whole build (import, passes, kernels, the
// library's C API) against the graph evaluator at -O0 and -O2: the old-opset forms (opsets 1 to
// 6: consumed_inputs, the legacy broadcast attributes, attribute bounds of Clip), the ops of
// opsets 7 to 17, Mish (opset 18) and Gelu with both approximations (opset 20). Plus the
// import refusals of the legacy forms and of the opset range.
#include <gtest/gtest.h>

#include <functional>
#include <limits>

#include "graph_test_util.h"
#include "op_case.h"
#include "tessera/graph/import_onnx.h"

namespace tessera::graph {
namespace {

using testing::model_import_error;
using testing::ModelBuilder;

// Opset 5: every op with `consumed_inputs`, the legacy broadcast (B of A's trailing dims, B of
// one element, `axis` at the trailing position), Clip's attribute bounds, PRelu's one-element
// slope, Max / Min / Sum / Mean of equal shapes.
std::string opset5_model() {
    ModelBuilder m(5, 3);
    m.input("x", DType::F32, {3, 5, 7});
    m.input("p", DType::F32, {3, 5, 7}); // positive
    m.input("b", DType::F32, {5, 7});
    m.initializer("one", TensorData::from_vector<float>({1}, {0.75f}));
    const std::vector<int64_t> ci = {0};
    for (const char* op : {"Relu", "Sigmoid", "Tanh", "Neg", "Abs", "Floor", "Ceil", "Exp"})
        m.node(op, {"x"}, {std::string("u_") + op}).ints("consumed_inputs", ci);
    for (const char* op : {"Sqrt", "Log", "Reciprocal"})
        m.node(op, {"p"}, {std::string("u_") + op}).ints("consumed_inputs", ci);
    m.node("Elu", {"x"}, {"elu"}).f("alpha", 0.5f).ints("consumed_inputs", ci);
    m.node("Selu", {"x"}, {"selu"}).ints("consumed_inputs", ci);
    m.node("LeakyRelu", {"x"}, {"leaky"}).f("alpha", 0.2f).ints("consumed_inputs", ci);
    m.node("HardSigmoid", {"x"}, {"hsig"}).ints("consumed_inputs", ci);
    m.node("Clip", {"x"}, {"clip"}).f("min", -0.5f).f("max", 0.25f).ints("consumed_inputs", ci);
    m.node("Add", {"x", "b"}, {"add"}).i("broadcast", 1).ints("consumed_inputs", ci);
    m.node("Sub", {"x", "one"}, {"sub"}).i("broadcast", 1);
    m.node("Mul", {"x", "b"}, {"mul"}).i("broadcast", 1).i("axis", 1);
    m.node("Div", {"x", "p"}, {"div"}).ints("consumed_inputs", ci);
    m.node("Pow", {"p", "one"}, {"pow"}).i("broadcast", 1);
    m.node("Less", {"x", "b"}, {"less"}).i("broadcast", 1);
    m.node("Greater", {"x", "one"}, {"greater"}).i("broadcast", 1);
    m.node("Equal", {"less", "greater"}, {"equal"});
    m.node("Xor", {"less", "greater"}, {"xor"});
    m.node("PRelu", {"x", "one"}, {"prelu"}).ints("consumed_inputs", ci);
    m.node("PRelu", {"x", "p"}, {"prelu_full"});
    for (const char* op : {"Max", "Min", "Sum", "Mean"})
        m.node(op, {"x", "p", "elu"}, {std::string("v_") + op}).ints("consumed_inputs", ci);
    for (const char* op : {"Relu", "Sigmoid", "Tanh", "Neg", "Abs", "Floor", "Ceil", "Exp", "Sqrt",
                           "Log", "Reciprocal"})
        m.output(std::string("u_") + op);
    for (const char* o : {"elu", "selu", "leaky", "hsig", "clip", "add", "sub", "mul", "div", "pow",
                          "prelu", "prelu_full", "v_Max", "v_Min", "v_Sum", "v_Mean"})
        m.output(o);
    for (const char* o : {"less", "greater", "equal", "xor"})
        m.output(o, DType::Bool);
    return m.bytes();
}

// Opset 13: the ops new in opsets 7 to 17, with numpy broadcasting and attribute variants.
std::string opset13_model() {
    ModelBuilder m(13);
    m.input("x", DType::F32, {3, 5, 7});
    m.input("r", DType::F32, {5, 1});
    m.input("ia", DType::I64, {3, 5, 7});
    m.input("ib", DType::I64, {7});
    m.input("m", DType::Bool, {5, 7});
    m.input("n", DType::Bool, {7});
    m.initializer("slope", TensorData::from_vector<float>({5, 1}, {0.1f, -0.2f, 0.3f, 2, 0.5f}));
    for (const char* op : {"Abs", "Sign", "Floor", "Ceil", "Round", "Softplus", "Softsign", "Elu",
                           "Selu", "Celu", "ThresholdedRelu"})
        m.node(op, {"x"}, {std::string("u_") + op});
    m.node("Celu", {"x"}, {"celu2"}).f("alpha", 2.0f);
    m.node("ThresholdedRelu", {"x"}, {"thr"}).f("alpha", 0.4f);
    m.node("Mod", {"x", "r"}, {"fmod0"});
    m.node("Mod", {"x", "r"}, {"fmod1"}).i("fmod", 1);
    m.node("Mod", {"ia", "ib"}, {"imod0"});
    m.node("Mod", {"ia", "ib"}, {"imod1"}).i("fmod", 1);
    m.node("PRelu", {"x", "slope"}, {"prelu"});
    m.node("And", {"m", "n"}, {"and"});
    m.node("Or", {"m", "n"}, {"or"});
    m.node("Xor", {"n", "m"}, {"xor"});
    m.node("LessOrEqual", {"ia", "ib"}, {"le"});
    m.node("GreaterOrEqual", {"x", "r"}, {"ge"});
    m.node("Sum", {"x", "r", "slope"}, {"sum"});
    m.node("Mean", {"r", "x"}, {"mean"});
    m.node("Sum", {"x"}, {"sum1"});
    for (const char* op : {"Abs", "Sign", "Floor", "Ceil", "Round", "Softplus", "Softsign", "Elu",
                           "Selu", "Celu", "ThresholdedRelu"})
        m.output(std::string("u_") + op);
    for (const char* o : {"celu2", "thr", "fmod0", "fmod1", "prelu", "sum", "mean", "sum1"})
        m.output(o);
    m.output("imod0", DType::I64);
    m.output("imod1", DType::I64);
    for (const char* o : {"and", "or", "xor", "le", "ge"})
        m.output(o, DType::Bool);
    return m.bytes();
}

// Opset 20: Gelu in both forms, Mish (opset 18) and opset-1 ops at the newest opset.
std::string opset20_model() {
    ModelBuilder m(20, 9);
    m.input("x", DType::F32, {3, 5, 7});
    m.node("Gelu", {"x"}, {"gelu"});
    m.node("Gelu", {"x"}, {"gelu_none"}).s("approximate", "none");
    m.node("Gelu", {"x"}, {"gelu_tanh"}).s("approximate", "tanh");
    m.node("Mish", {"x"}, {"mish"});
    m.node("Add", {"mish", "gelu_tanh"}, {"add"});
    m.node("Clip", {"x"}, {"clip"});
    for (const char* o : {"gelu", "gelu_none", "gelu_tanh", "mish", "add", "clip"})
        m.output(o);
    return m.bytes();
}

class ElementwiseModelTest : public ::testing::TestWithParam<int> {};

TEST_P(ElementwiseModelTest, Opset5FormsMatchTheEvaluator) {
    const TensorData x = floats({3, 5, 7}, 51, -3, 3);
    const TensorData p = floats({3, 5, 7}, 52, 0.25f, 4);
    const TensorData b = floats({5, 7}, 53, -2, 2);
    expect_library_matches_evaluator(opset5_model(), {x, p, b}, GetParam());
}

TEST_P(ElementwiseModelTest, Opset13OpsMatchTheEvaluator) {
    TensorData ib = ints({7}, 55, -9, 9);
    for (int64_t i = 0; i < ib.numel(); ++i)
        if (ib.data<int64_t>()[i] == 0)
            ib.data<int64_t>()[i] = -4; // no integer modulo by zero
    expect_library_matches_evaluator(opset13_model(),
                                     {floats({3, 5, 7}, 54, -4, 4), nonzero_floats({5, 1}, 56),
                                      ints({3, 5, 7}, 57, -40, 40), ib, bools({5, 7}, 58),
                                      bools({7}, 59)},
                                     GetParam());
}

TEST_P(ElementwiseModelTest, Opset20GeluAndMishMatchTheEvaluator) {
    expect_library_matches_evaluator(opset20_model(), {floats({3, 5, 7}, 60, -4, 4)}, GetParam());
}

// Round and QuantizeLinear on halves (kernels round with one round-to-nearest-even
// instruction): 21 elements, a vector of 16 and a tail, exactly as the evaluator.
TEST_P(ElementwiseModelTest, RoundAndQuantizeHalvesToEvenExactly) {
    ModelBuilder m(13);
    m.input("x", DType::F32, {3, 7});
    m.initializer("s", TensorData::scalar(0.5f));
    m.initializer("zp", TensorData::scalar<int32_t>(128).cast(DType::U8));
    m.node("Round", {"x"}, {"r"});
    m.node("QuantizeLinear", {"x", "s", "zp"}, {"q"});
    m.output("r").output("q", DType::U8);
    const TensorData x = TensorData::from_vector<float>(
        {3, 7}, {-3.5f, -2.5f,  -1.5f,       -0.5f,        0.5f,        1.5f,   2.5f,
                 3.5f,  -1.75f, 1.25f,       1e8f,         -7,          -0.25f, 0.25f,
                 0.75f, -0.75f, 0.49999997f, -0.50000006f, 2.50000024f, 6.5f,   -6.5f});
    const TensorData want_r = TensorData::from_vector<float>(
        {3, 7}, {-4, -2, -2, -0.0f, 0, 2, 2, 4, -2, 1, 1e8f, -7, -0.0f, 0, 1, -1, 0, -1, 3, 6, -6});
    // x / 0.5 rounded, + 128, saturated: halves of x / 0.5 are x = +-0.25, +-0.75.
    const TensorData want_q = TensorData::from_vector<int32_t>(
                                  {3, 7}, {121, 123, 125, 127, 129, 131, 133, 135, 124, 130, 255,
                                           114, 128, 128, 130, 126, 129, 127, 133, 141, 115})
                                  .cast(DType::U8);
    const Graph g = expect_library_matches_evaluator(m.bytes(), {x}, GetParam(), 0, 0);
    const std::vector<TensorData> got = evaluate(g, {x});
    EXPECT_EQ(got[0], want_r);
    EXPECT_EQ(got[1], want_q);
}

INSTANTIATE_TEST_SUITE_P(OptLevels, ElementwiseModelTest, ::testing::Values(0, 2),
                         [](const ::testing::TestParamInfo<int>& info) {
                             return "O" + std::to_string(info.param);
                         });

TEST(ElementwiseModelImportTest, LegacyBroadcastIsNumpysOrRefused) {
    // The accepted legacy forms compute numpy's broadcast: y = x + b over A's trailing dims.
    ModelBuilder ok(6);
    ok.input("x", DType::F32, {3, 5});
    ok.input("b", DType::F32, {5});
    ok.node("Add", {"x", "b"}, {"y"}).i("broadcast", 1).i("axis", 1);
    ok.output("y");
    const Graph g = import_onnx_bytes(ok.bytes(), "test.onnx");
    const TensorData x = floats({3, 5}, 61), b = floats({5}, 62);
    const TensorData y = evaluate(g, {x, b})[0];
    ASSERT_EQ(y.shape(), (Shape{3, 5}));
    for (int64_t i = 0; i < 15; ++i)
        EXPECT_EQ(y.data<float>()[i], x.data<float>()[i] + b.data<float>()[i % 5]) << i;

    auto model = [](int opset, const Shape& bshape,
                    const std::function<void(testing::NodeRef&)>& f) {
        ModelBuilder m(opset);
        m.input("x", DType::F32, {2, 3, 5});
        m.input("b", DType::F32, bshape);
        testing::NodeRef n = m.node("Mul", {"x", "b"}, {"y"}, "mul");
        f(n);
        m.output("y");
        return m;
    };
    auto none = [](testing::NodeRef&) {};
    auto bcast = [](testing::NodeRef& n) { n.i("broadcast", 1); };
    EXPECT_EQ(model_import_error(model(6, {5}, none)),
              "node 'mul' (Mul, opset 6): operand shapes differ (A [2,3,5], B [5]) and broadcast "
              "is not 1: before opset 7 they must be equal");
    EXPECT_EQ(model_import_error(
                  model(6, {3}, [](testing::NodeRef& n) { n.i("broadcast", 1).i("axis", 1); })),
              "node 'mul' (Mul, opset 6): B does not broadcast to A (A [2,3,5], B [3]): B must "
              "have one element or A's trailing dims");
    EXPECT_EQ(model_import_error(
                  model(6, {3, 5}, [](testing::NodeRef& n) { n.i("broadcast", 1).i("axis", 0); })),
              "node 'mul' (Mul, opset 6): broadcast from axis 0 (A [2,3,5], B [3,5]) is not "
              "supported: only B aligned with A's trailing dims");
    EXPECT_EQ(model_import_error(model(6, {1, 5}, bcast)),
              "node 'mul' (Mul, opset 6): B does not broadcast to A (A [2,3,5], B [1,5]): B must "
              "have one element or A's trailing dims");
    EXPECT_EQ(model_import_error(model(7, {5}, bcast)),
              "node 'mul' (Mul, opset 7): unsupported attribute 'broadcast'");
    EXPECT_EQ(model_import_error(
                  model(6, {5}, [](testing::NodeRef& n) { n.ints("consumed_inputs", {0}); })),
              "node 'mul' (Mul, opset 6): unsupported attribute 'consumed_inputs'");
    EXPECT_EQ(model_import_error(model(5, {1, 1}, bcast)), "no error");
    EXPECT_EQ(model_import_error(model(1, {3, 5}, bcast)), "no error");
}

TEST(ElementwiseModelImportTest, ClipDefaultBoundsBeforeOpset11) {
    // Opsets 6 to 10 default absent bounds to the f32 extremes, which clamp infinities; opsets
    // before 6 have no default bound.
    auto clip = [](int opset) {
        ModelBuilder m(opset, 3);
        m.input("x", DType::F32, {4});
        m.node("Clip", {"x"}, {"y"}).f("max", 0.5f);
        m.node("Clip", {"x"}, {"z"}).f("min", -0.5f);
        m.output("y").output("z");
        return import_onnx_bytes(m.bytes(), "test.onnx");
    };
    const float inf = std::numeric_limits<float>::infinity();
    const float big = std::numeric_limits<float>::max();
    const TensorData x = TensorData::from_vector<float>({4}, {-inf, -0.75f, 0.75f, inf});
    const std::vector<TensorData> at6 = evaluate(clip(6), {x});
    EXPECT_EQ(at6[0].to_vector<float>(), (std::vector<float>{-big, -0.75f, 0.5f, 0.5f}));
    EXPECT_EQ(at6[1].to_vector<float>(), (std::vector<float>{-0.5f, -0.5f, 0.75f, big}));
    EXPECT_EQ(evaluate(clip(10), {x}), at6);
    const std::vector<TensorData> at5 = evaluate(clip(5), {x});
    EXPECT_EQ(at5[0].to_vector<float>(), (std::vector<float>{-inf, -0.75f, 0.5f, 0.5f}));
    EXPECT_EQ(at5[1].to_vector<float>(), (std::vector<float>{-0.5f, -0.5f, 0.75f, inf}));
}

TEST(ElementwiseModelImportTest, OldPReluSlopesAndTheOpsetRange) {
    ModelBuilder prelu(6);
    prelu.input("x", DType::F32, {2, 3, 5});
    prelu.input("s", DType::F32, {5});
    prelu.node("PRelu", {"x", "s"}, {"y"}, "p");
    prelu.output("y");
    EXPECT_EQ(model_import_error(prelu),
              "node 'p' (PRelu, opset 6): slope of shape [5] for X of shape [2,3,5]: before "
              "opset 7 the slope must have one element or X's shape");
    // Later versions only add attributes: Cast-19's `saturate` imports there (it matters only
    // to the 8-bit floats) and is refused by name before opset 19.
    ModelBuilder cast(19, 9);
    cast.input("x", DType::F32, {2, 3});
    cast.node("Cast", {"x"}, {"y"}, "c").i("to", 7);
    cast.output("y", DType::I64);
    EXPECT_EQ(model_import_error(cast), "no error");
    ModelBuilder saturate(19, 9);
    saturate.input("x", DType::F32, {2, 3});
    saturate.node("Cast", {"x"}, {"y"}, "c").i("to", 7).i("saturate", 0);
    saturate.output("y", DType::I64);
    EXPECT_EQ(model_import_error(saturate), "no error");
    ModelBuilder early(18, 9);
    early.input("x", DType::F32, {2, 3});
    early.node("Cast", {"x"}, {"y"}, "c").i("to", 7).i("saturate", 0);
    early.output("y", DType::I64);
    EXPECT_EQ(model_import_error(early),
              "node 'c' (Cast, opset 18): unsupported attribute 'saturate'");
    ModelBuilder mish(17);
    mish.input("x", DType::F32, {2, 3});
    mish.node("Mish", {"x"}, {"y"}, "m");
    mish.output("y");
    EXPECT_EQ(model_import_error(mish), "node 'm' (Mish, opset 17): op Mish does not exist before "
                                        "opset 18");
    ModelBuilder gelu(20, 9);
    gelu.input("x", DType::F32, {2, 3});
    gelu.node("Gelu", {"x"}, {"y"}, "g").s("approximate", "fast");
    gelu.output("y");
    EXPECT_EQ(
        model_import_error(gelu),
        "node 'g' (Gelu): attribute 'approximate' must be \"none\" or \"tanh\", got \"fast\"");
}

} // namespace
} // namespace tessera::graph
