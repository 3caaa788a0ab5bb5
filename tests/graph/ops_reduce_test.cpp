// Reductions and normalizations (src/graph/ops/reduce.cpp, normalization.cpp, the global pools
// of conv_pool.cpp): the reference evaluator on literal inputs against values computed
// independently (onnx.reference of onnx 1.23, onnxruntime 1.32 for the old-opset Softmax forms
// and the global pools, numpy in double where neither has the op; pasted here as literals),
// refusals naming the node, the import of each opset form, and the kernel-vs-evaluator cases
// (op_case.h) of every op added here.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "graph_test_util.h"
#include "op_case.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/te/reduce_ops.h"

namespace tessera::graph {
namespace {

using testing::in;
using testing::konst;
using testing::ModelBuilder;
using testing::run_node;

TensorData f32(const Shape& s, std::vector<float> v) {
    return TensorData::from_vector<float>(s, std::move(v));
}

// [3, 2, 5], uniform in [-2, 2] rounded to 0.01 (numpy default_rng(7)), no value near 0.
const std::vector<float> kX = {0.5f,   1.59f,  1.1f,   -1.1f,  -0.8f,  1.49f,  -1.98f, 1.28f,
                               1.19f,  -0.13f, -0.79f, -0.89f, -0.98f, -0.22f, 0.37f,  0.21f,
                               1.98f,  1.17f,  0.49f,  1.96f,  -1.14f, -1.36f, 0.45f,  -1.82f,
                               -1.86f, 0.37f,  -0.14f, 1.67f,  0.52f,  0.37f};
// [3, 2, 5], uniform in [0.2, 2] rounded to 0.01: positive sums for ReduceLogSum.
const std::vector<float> kP = {1.09f, 0.65f, 0.22f, 0.55f, 1.45f, 0.56f, 0.87f, 0.21f,
                               1.69f, 0.48f, 0.68f, 1.78f, 1.12f, 1.72f, 1.35f, 1.54f,
                               0.36f, 1.17f, 1.11f, 1.77f, 0.85f, 1.28f, 0.31f, 0.9f,
                               0.78f, 0.47f, 1.67f, 0.88f, 1.96f, 1.26f};
// [3, 4] integers in [-5, 5], none 0.
const std::vector<int64_t> kXI = {-1, 1, -1, 2, 1, 2, 5, -4, 1, -1, -2, -3};

TensorData x_data() { return f32({3, 2, 5}, kX); }
TensorData p_data() { return f32({3, 2, 5}, kP); }
TensorData xi_data() { return TensorData::from_vector<int64_t>({3, 4}, kXI); }

// One float reduction's expected values (onnx.reference, opset 18) on kX (kP for ReduceLogSum)
// for: axes [1] keepdims 1 -> [3, 1, 5]; axes [-1, 0] keepdims 0 -> [2]; no axes keepdims 1
// -> [1, 1, 1].
struct FloatReduce {
    const char* name;
    Op op;
    std::vector<float> axis1_kept, last_first_dropped, all_kept;
};

const std::vector<FloatReduce>& float_reductions() {
    static const std::vector<FloatReduce> r = {
        {"ReduceMin",
         Op::ReduceMin,
         {0.5f, -1.98f, 1.1f, -1.1f, -0.8f, -0.79f, -0.89f, -0.98f, -0.22f, 0.37f, -1.14f, -1.36f,
          0.45f, -1.82f, -1.86f},
         {-1.86f, -1.98f},
         {-1.98f}},
        {"ReduceProd",
         Op::ReduceProd,
         {0.745000005f, -3.14820004f, 1.40799999f, -1.30900013f, 0.103999995f, -0.165899992f,
          -1.7622f, -1.14660001f, -0.107799999f, 0.725199997f, -0.421799988f, 0.190400004f,
          0.751499951f, -0.946399987f, -0.688199997f},
         {0.101941437f, -0.00454282016f},
         {-0.000463101576f}},
        {"ReduceL1",
         Op::ReduceL1,
         {1.99000001f, 3.57000017f, 2.38000011f, 2.28999996f, 0.930000007f, 1.0f, 2.86999989f,
          2.1500001f, 0.710000038f, 2.32999992f, 1.50999999f, 1.5f, 2.11999989f, 2.34000015f,
          2.23000002f},
         {14.9700003f, 14.9500008f},
         {29.920002f}},
        {"ReduceL2",
         Op::ReduceL2,
         {1.57165515f, 2.53938961f, 1.68772042f, 1.62052464f, 0.810493708f, 0.817435026f,
          2.1708293f, 1.52620447f, 0.537121952f, 1.99461782f, 1.19854081f, 1.3671869f, 1.72956634f,
          1.89282858f, 1.89644396f},
         {4.30391645f, 4.6882515f},
         {6.36422825f}},
        {"ReduceLogSum",
         Op::ReduceLogSum,
         {0.500775337f, 0.418710321f, -0.84397006f, 0.806475878f, 0.657520056f, 0.797507226f,
          0.760805786f, 0.828551769f, 1.04027677f, 1.137833f, 0.27763176f, 1.08180511f,
          0.173953369f, 1.05082166f, 0.712949812f},
         {2.68988633f, 2.77258873f},
         {3.42523932f}},
        {"ReduceLogSumExp",
         Op::ReduceLogSumExp,
         {1.80596089f, 1.61776674f, 1.88719165f, 1.286461f, 0.283240438f, 0.523261666f, 2.03514981f,
          1.28018451f, 0.889878988f, 2.14558768f, 0.569596469f, 0.11868839f, 1.92868829f,
          0.611966074f, 0.472130924f},
         {2.79063678f, 3.77335978f},
         {4.09129715f}},
        {"ReduceSumSquare",
         Op::ReduceSumSquare,
         {2.47009993f, 6.44850016f, 2.84840012f, 2.62610006f, 0.656900048f, 0.668200016f,
          4.7125001f, 2.32929993f, 0.288500011f, 3.97850013f, 1.43650007f, 1.86920011f, 2.99139977f,
          3.58280015f, 3.59649992f},
         {18.5236988f, 21.9797001f},
         {40.5034027f}},
        {"ReduceMean",
         Op::ReduceMean,
         {0.995000005f, -0.194999993f, 1.19000006f, 0.0450000167f, -0.465000004f, -0.290000021f,
          0.545000017f, 0.094999969f, 0.135000005f, 1.16499996f, -0.38499999f, -0.75f, 1.05999994f,
          -0.650000036f, -0.745000005f},
         {-0.463333309f, 0.696666718f},
         {0.116666652f}},
        {"ReduceMax",
         Op::ReduceMax,
         {1.49f, 1.59f, 1.28f, 1.19f, -0.13f, 0.21f, 1.98f, 1.17f, 0.49f, 1.96f, 0.37f, -0.14f,
          1.67f, 0.52f, 0.37f},
         {1.59f, 1.98f},
         {1.98f}},
    };
    return r;
}

TensorData input_of(const FloatReduce& r) { return r.op == Op::ReduceLogSum ? p_data() : x_data(); }

// ---- evaluator ---------------------------------------------------------------------------------

TEST(ReduceEval, FloatReductionsMatchOnnxReference) {
    for (const FloatReduce& r : float_reductions()) {
        SCOPED_TRACE(r.name);
        const TensorData x = input_of(r);
        auto a = run_node(r.op, {in(x)}, {{"axes", Is({1})}, {"keepdims", I(1)}});
        EXPECT_TENSOR_NEAR(a[0], f32({3, 1, 5}, r.axis1_kept), 1e-6, 1e-6);
        auto b = run_node(r.op, {in(x)}, {{"axes", Is({-1, 0})}, {"keepdims", I(0)}});
        EXPECT_TENSOR_NEAR(b[0], f32({2}, r.last_first_dropped), 1e-6, 1e-6);
        // No axes: every axis; keepdims defaults to 1.
        auto c = run_node(r.op, {in(x)});
        EXPECT_TENSOR_NEAR(c[0], f32({1, 1, 1}, r.all_kept), 1e-6, 1e-6);
    }
}

TEST(ReduceEval, IntegerReductionsAreExact) {
    struct IntReduce {
        Op op;
        std::vector<int64_t> first_axis; // axes [0], keepdims 0 -> [4]
        int64_t all;                     // no axes, keepdims 0 -> scalar
    };
    const IntReduce cases[] = {
        {Op::ReduceMin, {-1, -1, -2, -4}, -4}, {Op::ReduceProd, {-1, -2, 10, 24}, 480},
        {Op::ReduceL1, {3, 4, 8, 9}, 24},      {Op::ReduceSumSquare, {3, 6, 30, 29}, 68},
        {Op::ReduceMax, {1, 2, 5, 2}, 5},
    };
    for (const IntReduce& c : cases) {
        SCOPED_TRACE(op_name(c.op));
        auto a = run_node(c.op, {in(xi_data())}, {{"axes", Is({0})}, {"keepdims", I(0)}});
        EXPECT_EQ(a[0], TensorData::from_vector<int64_t>({4}, c.first_axis));
        auto b = run_node(c.op, {in(xi_data())}, {{"keepdims", I(0)}});
        EXPECT_EQ(b[0], TensorData::scalar<int64_t>(c.all));
    }
}

// max + log(sum(exp(x - max))): no overflow at 1000, and an all -inf slice gives -inf.
TEST(ReduceEval, LogSumExpIsStable) {
    const float inf = std::numeric_limits<float>::infinity();
    const TensorData x = f32({2, 3}, {1000.0f, 1001.0f, -1000.5f, -inf, -inf, -inf});
    auto y = run_node(Op::ReduceLogSumExp, {in(x)}, {{"axes", Is({1})}, {"keepdims", I(0)}});
    const std::vector<float> v = y[0].to_vector<float>();
    ASSERT_EQ(v.size(), 2u);
    EXPECT_FLOAT_EQ(v[0], 1001.31326169f);
    EXPECT_EQ(v[1], -inf);
}

TEST(ReduceEval, ProductWrapsAndMinKeepsNaN) {
    // 2^40 * 2^40 wraps to 0 in int64 (numpy's and the kernels' arithmetic).
    const int64_t big = int64_t{1} << 40;
    auto p = run_node(Op::ReduceProd, {in(TensorData::from_vector<int64_t>({2}, {big, big}))},
                      {{"keepdims", I(0)}});
    EXPECT_EQ(p[0], TensorData::scalar<int64_t>(0));
    const float nan = std::numeric_limits<float>::quiet_NaN();
    auto m = run_node(Op::ReduceMin, {in(f32({3}, {1.0f, nan, -2.0f}))}, {{"keepdims", I(0)}});
    EXPECT_TRUE(std::isnan(m[0].to_vector<float>()[0]));
}

// Reductions of empty sets (ONNX's reduce_*_empty_set cases): each gives its identity.
TEST(ReduceEval, EmptySetsGiveTheirIdentities) {
    const float inf = std::numeric_limits<float>::infinity();
    const TensorData x(DType::F32, {2, 0, 3});
    const std::vector<std::pair<Op, float>> want = {
        {Op::ReduceMax, -inf},       {Op::ReduceMin, inf},        {Op::ReduceProd, 1.0f},
        {Op::ReduceL1, 0.0f},        {Op::ReduceL2, 0.0f},        {Op::ReduceLogSum, -inf},
        {Op::ReduceLogSumExp, -inf}, {Op::ReduceSumSquare, 0.0f}, {Op::ReduceMean, 0.0f}};
    for (const auto& [op, value] : want) {
        SCOPED_TRACE(op_name(op));
        auto y = run_node(op, {in(x)}, {{"axes", Is({1})}, {"keepdims", I(1)}});
        ASSERT_EQ(y[0].shape(), (Shape{2, 1, 3}));
        for (float v : y[0].to_vector<float>())
            EXPECT_EQ(v, value);
    }
    // Bools (opset 20): the max of nothing is false (any), the min true (all).
    const TensorData b(DType::Bool, {3, 0});
    auto any = run_node(Op::ReduceMax, {in(b)}, {{"axes", Is({1})}, {"keepdims", I(0)}});
    auto all = run_node(Op::ReduceMin, {in(b)}, {{"axes", Is({1})}, {"keepdims", I(0)}});
    EXPECT_EQ(any[0], TensorData::from_vector<uint8_t>({3}, {0, 0, 0}));
    EXPECT_EQ(all[0], TensorData::from_vector<uint8_t>({3}, {1, 1, 1}));
}

TEST(ReduceEval, MaxAndMinOfBoolsAreAnyAndAll) {
    const TensorData b = TensorData::from_vector<uint8_t>({2, 3}, {0, 1, 0, 1, 1, 1});
    auto any = run_node(Op::ReduceMax, {in(b)}, {{"axes", Is({1})}, {"keepdims", I(0)}});
    auto all = run_node(Op::ReduceMin, {in(b)}, {{"axes", Is({1})}, {"keepdims", I(0)}});
    EXPECT_EQ(any[0], TensorData::from_vector<uint8_t>({2}, {1, 1}));
    EXPECT_EQ(all[0], TensorData::from_vector<uint8_t>({2}, {0, 1}));
    // The other reductions of bools stay refused.
    EXPECT_THROW(run_node(Op::ReduceSum, {in(b)}), UserError);
}

TEST(ReduceEval, RefusesBadAxesAndIntegerLogs) {
    const TensorData x = x_data();
    for (Op op : {Op::ReduceMin, Op::ReduceProd, Op::ReduceL1, Op::ReduceL2, Op::ReduceLogSum,
                  Op::ReduceLogSumExp, Op::ReduceSumSquare}) {
        SCOPED_TRACE(op_name(op));
        EXPECT_THROW(run_node(op, {in(x)}, {{"axes", Is({3})}}), UserError);
        EXPECT_THROW(run_node(op, {in(x)}, {{"axes", Is({1, -2})}}), UserError);
    }
    // Integer results of sqrt and log would need a rounding: floats only.
    for (Op op : {Op::ReduceL2, Op::ReduceLogSum, Op::ReduceLogSumExp}) {
        SCOPED_TRACE(op_name(op));
        EXPECT_THROW(run_node(op, {in(xi_data())}), UserError);
    }
}

// [2, 3, 5]: kX's values.
TensorData x3() { return f32({2, 3, 5}, kX); }

TEST(LogSoftmaxEval, AlongOneAxis) {
    auto a = run_node(Op::LogSoftmax, {in(x3())}, {{"axis", I(1)}});
    EXPECT_TENSOR_NEAR(
        a[0],
        f32({2, 3, 5}, {-1.37788546f,  -0.106069364f, -0.842492402f, -2.58669853f,  -1.82070816f,
                        -0.387885392f, -3.6760695f,   -0.662492394f, -0.2966986f,   -1.15070808f,
                        -2.6678853f,   -2.58606935f,  -2.9224925f,   -1.70669866f,  -0.65070802f,
                        -0.889022887f, -0.144505993f, -1.14278018f,  -0.755988538f, -0.203637257f,
                        -2.23902273f,  -3.48450613f,  -1.86278033f,  -3.06598854f,  -4.02363729f,
                        -0.729022801f, -2.2645061f,   -0.642780185f, -0.725988507f, -1.79363728f}),
        1e-6, 1e-6);
    auto b = run_node(Op::LogSoftmax, {in(x3())}, {{"axis", I(-1)}});
    EXPECT_TENSOR_NEAR(
        b[0],
        f32({2, 3, 5}, {-1.83590722f, -0.745907307f, -1.23590732f,  -3.43590736f, -3.13590741f,
                        -1.02260137f, -4.49260139f,  -1.2326014f,   -1.32260132f, -2.64260149f,
                        -2.03992057f, -2.13992023f,  -2.22992039f,  -1.46992028f, -0.879920423f,
                        -2.80700731f, -1.03700733f,  -1.84700727f,  -2.52700734f, -1.05700719f,
                        -2.04117298f, -2.26117325f,  -0.451173246f, -2.72117329f, -2.76117325f,
                        -2.0057447f,  -2.51574469f,  -0.705744803f, -1.85574472f, -2.0057447f}),
        1e-6, 1e-6);
    // Large inputs: no overflow (x - max).
    auto c = run_node(Op::LogSoftmax, {in(f32({1, 2}, {1000.0f, 1001.0f}))}, {{"axis", I(1)}});
    EXPECT_TENSOR_NEAR(c[0], f32({1, 2}, {-1.31326169f, -0.31326169f}), 1e-6, 1e-6);
    EXPECT_THROW(run_node(Op::LogSoftmax, {in(x3())}, {{"axis", I(3)}}), UserError);
}

const std::vector<float> kScale = {0.5f, -1.25f, 2.0f}, kBias = {0.1f, -0.2f, 0.3f};

TEST(InstanceNormEval, OverSpatialDimsPerChannel) {
    auto a = run_node(Op::InstanceNormalization,
                      {in(x3()), konst(f32({3}, kScale)), konst(f32({3}, kBias))},
                      {{"epsilon", F(1e-5f)}});
    EXPECT_TENSOR_NEAR(
        a[0],
        f32({2, 3, 5}, {0.215313107f,  0.734698653f, 0.501213431f, -0.547087669f, -0.404137582f,
                        -1.27202141f,  2.04933047f,  -1.07101738f, -0.984872878f, 0.278580964f,
                        -0.828791201f, -1.22073245f, -1.57347989f, 1.40527487f,   3.71772909f,
                        -0.55212456f,  0.660333872f, 0.105479971f, -0.36032325f,  0.646633804f,
                        -0.208891958f, 0.117143974f, -2.56524205f, 0.798855424f,  0.858134568f,
                        -0.327376187f, -2.0293014f,  4.01086426f,  0.173189938f,  -0.327376187f}),
        1e-5, 1e-6);
    auto b = run_node(Op::InstanceNormalization,
                      {in(x3()), konst(f32({3}, kScale)), konst(f32({3}, kBias))},
                      {{"epsilon", F(0.5f)}});
    EXPECT_TENSOR_NEAR(
        b[0],
        f32({2, 3, 5}, {0.195627332f,  0.626345575f,  0.432719946f,  -0.43661961f,  -0.318073332f,
                        -1.14270639f,  1.77800012f,   -0.965948939f, -0.890195847f, 0.220851079f,
                        -0.360553861f, -0.589912772f, -0.796335995f, 0.946792483f,  2.30001044f,
                        -0.368385971f, 0.502457619f,  0.103935964f,  -0.230625391f, 0.492617607f,
                        -0.206814229f, 0.0430388302f, -2.0125699f,   0.565458834f,  0.610886633f,
                        -0.105645537f, -1.20606709f,  2.6993506f,    0.218007833f,  -0.105645537f}),
        1e-5, 1e-6);
}

TEST(InstanceNormEval, RefusesBadOperands) {
    const TensorData s = f32({3}, kScale), b = f32({3}, kBias);
    // Rank 2: no spatial dims.
    EXPECT_THROW(run_node(Op::InstanceNormalization,
                          {in(f32({3, 2}, {1, 2, 3, 4, 5, 6})), konst(s), konst(b)}),
                 UserError);
    // scale of the wrong length.
    EXPECT_THROW(run_node(Op::InstanceNormalization, {in(x3()), konst(f32({2}, {1, 2})), konst(b)}),
                 UserError);
    EXPECT_THROW(run_node(Op::InstanceNormalization, {in(x3()), konst(s)}), UserError);
}

TEST(GlobalPoolEval, MaxAndLp) {
    auto m = run_node(Op::GlobalMaxPool, {in(x3())});
    EXPECT_EQ(m[0], f32({2, 3, 1}, {1.59f, 1.49f, 0.37f, 1.98f, 0.45f, 1.67f}));
    const std::vector<std::vector<float>> lp = {
        {5.09000015f, 6.07000017f, 3.25f, 5.80999994f, 6.63000011f, 3.06999993f},
        {2.41621614f, 3.03511119f, 1.60059369f, 3.06840348f, 3.18177629f, 1.83103788f},
        {1.94153059f, 2.45823145f, 1.30069017f, 2.57231236f, 2.54847026f, 1.6987443f}};
    for (int64_t p = 1; p <= 3; ++p) {
        SCOPED_TRACE(p);
        auto y = run_node(Op::GlobalLpPool, {in(x3())}, {{"p", I(p)}});
        EXPECT_TENSOR_NEAR(y[0], f32({2, 3, 1}, lp[p - 1]), 1e-6, 1e-6);
    }
    EXPECT_THROW(run_node(Op::GlobalLpPool, {in(x3())}, {{"p", I(0)}}), UserError);
    EXPECT_THROW(run_node(Op::GlobalMaxPool, {in(f32({2, 3}, {1, 2, 3, 4, 5, 6}))}), UserError);
}

// ---- import ------------------------------------------------------------------------------------

Graph import(const ModelBuilder& b) { return import_onnx_bytes(b.bytes(), "test.onnx", {}); }

std::string import_error(const ModelBuilder& b) {
    try {
        import(b);
    } catch (const UserError& e) {
        return e.what();
    }
    return "no error";
}

#define EXPECT_CONTAINS(text, part)                                                                \
    EXPECT_NE(std::string(text).find(part), std::string::npos) << "in: " << (text)

const Node& only_node(const Graph& g) {
    const std::vector<NodeId> ids = g.node_ids();
    EXPECT_EQ(ids.size(), 1u) << to_string(g);
    return g.node(ids.at(0));
}

// One reduction over axes [-1, 0] without keepdims: the axes attribute up to opset 17, an
// operand (an initializer, or a Constant node) from 18.
ModelBuilder reduce_model(const char* op, int opset, bool constant_node = false) {
    ModelBuilder m(opset);
    m.input("x", DType::F32, {3, 2, 5});
    if (opset < 18) {
        m.node(op, {"x"}, {"y"}, "r").ints("axes", {-1, 0}).i("keepdims", 0);
    } else {
        if (constant_node)
            m.node("Constant", {}, {"axes"}).t("value", testing::i64s({-1, 0}));
        else
            m.initializer("axes", testing::i64s({-1, 0}));
        m.node(op, {"x", "axes"}, {"y"}, "r").i("keepdims", 0);
    }
    m.output("y");
    return m;
}

// Every opset form imports as one node with the axes attribute and computes the same values.
TEST(ReduceImport, EachOpsetFormImportsAsTheAxesAttribute) {
    for (const FloatReduce& r : float_reductions()) {
        for (int opset : {1, 11, 13, 17, 18}) {
            SCOPED_TRACE(std::string(r.name) + " opset " + std::to_string(opset));
            const Graph g = import(reduce_model(r.name, opset));
            const Node& n = only_node(g);
            EXPECT_EQ(n.op, r.op);
            EXPECT_EQ(n.inputs.size(), 1u);
            EXPECT_EQ(n.attr_ints("axes"), (std::vector<int64_t>{-1, 0}));
            EXPECT_EQ(n.attr_int("keepdims", 1), 0);
            auto y = evaluate(g, {input_of(r)});
            EXPECT_TENSOR_NEAR(y[0], f32({2}, r.last_first_dropped), 1e-6, 1e-6);
        }
    }
    // Axes from a Constant node are known at import too.
    const Graph g = import(reduce_model("ReduceMax", 18, true));
    auto y = evaluate(g, {x_data()});
    EXPECT_TENSOR_NEAR(y[0], f32({2}, {1.59f, 1.98f}), 0, 0);
}

TEST(ReduceImport, Opset18EmptyAxesReduceAllOrNothing) {
    for (const char* op : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                           "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
        SCOPED_TRACE(op);
        const TensorData x = std::string(op) == "ReduceLogSum" ? p_data() : x_data();
        // No axes operand: every axis.
        ModelBuilder all(18);
        all.input("x", DType::F32, {3, 2, 5});
        all.node(op, {"x"}, {"y"}).i("keepdims", 0);
        all.output("y");
        const Graph ga = import(all);
        EXPECT_EQ(ga.value(ga.outputs[0]).shape, Shape{});
        EXPECT_FALSE(only_node(ga).attrs.count("axes"));
        // noop_with_empty_axes with an absent or an empty axes operand: the input unchanged.
        for (bool empty_operand : {false, true}) {
            ModelBuilder noop(18);
            noop.input("x", DType::F32, {3, 2, 5});
            if (empty_operand) {
                noop.initializer("axes", TensorData::from_vector<int64_t>({0}, {}));
                noop.node(op, {"x", "axes"}, {"y"}).i("noop_with_empty_axes", 1);
            } else {
                noop.node(op, {"x"}, {"y"}).i("noop_with_empty_axes", 1);
            }
            noop.output("y");
            const Graph g = import(noop);
            EXPECT_EQ(only_node(g).op, Op::Identity);
            EXPECT_EQ(evaluate(g, {x})[0], x);
        }
    }
    // ReduceSum keeps its own canonical form: noop_with_empty_axes stays an attribute.
    ModelBuilder sum(18);
    sum.input("x", DType::F32, {3, 2, 5});
    sum.node("ReduceSum", {"x"}, {"y"}).i("noop_with_empty_axes", 1);
    sum.output("y");
    EXPECT_EQ(only_node(import(sum)).op, Op::ReduceSum);
}

TEST(ReduceImport, RefusesFormsOfOtherOpsets) {
    // A runtime axes operand: the kernels need the axes at compile time.
    ModelBuilder dyn(18);
    dyn.input("x", DType::F32, {3, 2, 5}).input("axes", DType::I64, {1});
    dyn.node("ReduceL2", {"x", "axes"}, {"y"}, "l2");
    dyn.output("y");
    const std::string e = import_error(dyn);
    EXPECT_CONTAINS(e, "node 'l2' (ReduceL2, opset 18)");
    EXPECT_CONTAINS(e, "compile-time constant");
    // The axes attribute is gone at 18; the operand does not exist before.
    ModelBuilder attr18(18);
    attr18.input("x", DType::F32, {3, 2, 5});
    attr18.node("ReduceProd", {"x"}, {"y"}, "p").ints("axes", {1});
    attr18.output("y");
    EXPECT_CONTAINS(import_error(attr18), "unsupported attribute 'axes'");
    ModelBuilder operand13(13);
    operand13.input("x", DType::F32, {3, 2, 5}).initializer("axes", testing::i64s({1}));
    operand13.node("ReduceMin", {"x", "axes"}, {"y"}, "m");
    operand13.output("y");
    EXPECT_CONTAINS(import_error(operand13), "node 'm' (ReduceMin, opset 13): has 2 inputs");
    ModelBuilder noop13(13);
    noop13.input("x", DType::F32, {3, 2, 5});
    noop13.node("ReduceLogSumExp", {"x"}, {"y"}).i("noop_with_empty_axes", 1);
    noop13.output("y");
    EXPECT_CONTAINS(import_error(noop13), "unsupported attribute 'noop_with_empty_axes'");
    // Integer L2 is refused by type inference at import, naming the node.
    ModelBuilder int_l2(13);
    int_l2.input("x", DType::I64, {3, 4});
    int_l2.node("ReduceL2", {"x"}, {"y"}, "l2i");
    int_l2.output("y", DType::I64);
    EXPECT_CONTAINS(import_error(int_l2), "node 'l2i'");
}

// Softmax and LogSoftmax before opset 13 normalize the input coerced to 2-D at `axis`
// (values from onnxruntime, which implements the old opsets).
TEST(SoftmaxImport, OldOpsetsCoerceTo2D) {
    auto build = [](const char* op, int opset, int64_t axis) {
        ModelBuilder m(opset);
        m.input("x", DType::F32, {2, 3, 5});
        m.node(op, {"x"}, {"y"}).i("axis", axis);
        m.output("y");
        return m;
    };
    const TensorData log_coerced =
        f32({2, 3, 5},
            {-2.76445627f, -1.67445624f, -2.16445637f, -4.36445618f, -4.06445646f, -1.77445626f,
             -5.24445629f, -1.9844563f,  -2.07445621f, -3.39445639f, -4.05445623f, -4.15445614f,
             -4.24445629f, -3.4844563f,  -2.89445639f, -3.3060596f,  -1.53605962f, -2.3460598f,
             -3.02605963f, -1.5560596f,  -4.65605927f, -4.87605953f, -3.06605959f, -5.33605957f,
             -5.37605953f, -3.14605951f, -3.65605974f, -1.84605968f, -2.99605966f, -3.14605951f});
    const TensorData soft_coerced = f32(
        {2, 3, 5}, {0.0630103499f,  0.187410057f,   0.114812344f,  0.0127215702f,  0.0171723235f,
                    0.169575617f,   0.00527668931f, 0.137455329f,  0.125624716f,   0.0335587934f,
                    0.0173449069f,  0.0156943221f,  0.0143435281f, 0.0306704305f,  0.0553290993f,
                    0.0366603434f,  0.2152275f,     0.0957456827f, 0.048506394f,   0.210965708f,
                    0.00950383767f, 0.00762700615f, 0.0466044322f, 0.00481480453f, 0.00462601334f,
                    0.0430213138f,  0.025834104f,   0.15785794f,   0.0499836318f,  0.0430213138f});
    for (int opset : {1, 11}) {
        SCOPED_TRACE(opset);
        const Graph lg = import(build("LogSoftmax", opset, 1));
        EXPECT_EQ(op_histogram(lg),
                  (std::map<std::string, int>{{"Flatten", 1}, {"LogSoftmax", 1}, {"Reshape", 1}}));
        EXPECT_TENSOR_NEAR(evaluate(lg, {x3()})[0], log_coerced, 1e-6, 1e-6);
        const Graph sg = import(build("Softmax", opset, 1));
        EXPECT_TENSOR_NEAR(evaluate(sg, {x3()})[0], soft_coerced, 1e-6, 1e-6);
        // At the last axis the coercion changes nothing: one node.
        EXPECT_EQ(op_histogram(import(build("LogSoftmax", opset, -1))),
                  (std::map<std::string, int>{{"LogSoftmax", 1}}));
    }
    // From 13 on, axis 1 is one axis.
    const Graph g13 = import(build("LogSoftmax", 13, 1));
    EXPECT_EQ(only_node(g13).attr_int("axis", -1), 1);
    EXPECT_TENSOR_NEAR(evaluate(g13, {x3()})[0],
                       run_node(Op::LogSoftmax, {in(x3())}, {{"axis", I(1)}})[0], 0, 0);
    // The default axis is 1 before 13 (coerced) and -1 from 13.
    ModelBuilder d11(11), d13(13);
    for (ModelBuilder* m : {&d11, &d13}) {
        m->input("x", DType::F32, {2, 3, 5});
        m->node("LogSoftmax", {"x"}, {"y"});
        m->output("y");
    }
    EXPECT_TENSOR_NEAR(evaluate(import(d11), {x3()})[0], log_coerced, 1e-6, 1e-6);
    EXPECT_EQ(only_node(import(d13)).attr_int("axis", 0), 2);
}

ModelBuilder instance_norm_model(int opset, bool consumed_inputs) {
    ModelBuilder m(opset);
    m.input("x", DType::F32, {2, 3, 5});
    m.initializer("s", f32({3}, kScale)).initializer("b", f32({3}, kBias));
    auto n = m.node("InstanceNormalization", {"x", "s", "b"}, {"y"}, "in");
    n.f("epsilon", 0.5f);
    if (consumed_inputs)
        n.ints("consumed_inputs", {0, 0, 0});
    m.output("y");
    return m;
}

TEST(InstanceNormImport, Opsets1And6) {
    const TensorData want = run_node(Op::InstanceNormalization,
                                     {in(x3()), konst(f32({3}, kScale)), konst(f32({3}, kBias))},
                                     {{"epsilon", F(0.5f)}})[0];
    for (int opset : {1, 6, 17}) {
        SCOPED_TRACE(opset);
        const Graph g = import(instance_norm_model(opset, opset == 1));
        EXPECT_EQ(only_node(g).attr_float("epsilon", 0), 0.5f);
        EXPECT_EQ(evaluate(g, {x3()})[0], want);
    }
    EXPECT_CONTAINS(import_error(instance_norm_model(6, true)),
                    "unsupported attribute 'consumed_inputs'");
    // Default epsilon 1e-5 made explicit.
    ModelBuilder m(6);
    m.input("x", DType::F32, {2, 3, 5});
    m.initializer("s", f32({3}, kScale)).initializer("b", f32({3}, kBias));
    m.node("InstanceNormalization", {"x", "s", "b"}, {"y"});
    m.output("y");
    EXPECT_EQ(only_node(import(m)).attr_float("epsilon", 0), 1e-5f);
}

ModelBuilder lp_model(int opset, bool float_p, float p) {
    ModelBuilder m(opset);
    m.input("x", DType::F32, {2, 3, 5});
    auto n = m.node("GlobalLpPool", {"x"}, {"y"}, "lp");
    if (float_p)
        n.f("p", p);
    else
        n.i("p", static_cast<int64_t>(p));
    m.output("y");
    return m;
}

TEST(GlobalPoolImport, MaxAndLpOpsets) {
    ModelBuilder mx(1);
    mx.input("x", DType::F32, {2, 3, 5});
    mx.node("GlobalMaxPool", {"x"}, {"y"});
    mx.output("y");
    EXPECT_EQ(evaluate(import(mx), {x3()})[0], run_node(Op::GlobalMaxPool, {in(x3())})[0]);
    // p is a float in opset 1 and an int from 2: both import as the int.
    const TensorData want3 = run_node(Op::GlobalLpPool, {in(x3())}, {{"p", I(3)}})[0];
    const Graph g1 = import(lp_model(1, true, 3.0f));
    EXPECT_EQ(only_node(g1).attr_int("p", 0), 3);
    EXPECT_EQ(evaluate(g1, {x3()})[0], want3);
    const Graph g2 = import(lp_model(2, false, 3));
    EXPECT_EQ(evaluate(g2, {x3()})[0], want3);
    // The default p is 2 in both.
    for (int opset : {1, 2}) {
        ModelBuilder m(opset);
        m.input("x", DType::F32, {2, 3, 5});
        m.node("GlobalLpPool", {"x"}, {"y"});
        m.output("y");
        EXPECT_EQ(only_node(import(m)).attr_int("p", 0), 2);
    }
    EXPECT_CONTAINS(import_error(lp_model(1, true, 2.5f)), "p = 2.5");
    EXPECT_CONTAINS(import_error(lp_model(2, true, 2.0f)), "attribute 'p' must be");
    EXPECT_CONTAINS(import_error(lp_model(2, false, 0)), "node 'lp'");
}

// BatchNormalization opsets 1-8: consumed_inputs (until 6) and is_test (until 7) are accepted
// and ignored (the outputs used decide the mode); spatial must be 1; training outputs refused.
TEST(BatchNormImport, OldOpsets) {
    const TensorData s = testing::random_tensor({3}, 2, 0.5f, 1.5f),
                     b = testing::random_tensor({3}, 3), mean = testing::random_tensor({3}, 4),
                     var = testing::random_tensor({3}, 5, 0.5f, 1.5f);
    auto build = [&](int opset, bool training_outputs, int64_t spatial) {
        ModelBuilder m(opset);
        m.input("x", DType::F32, {2, 3, 5});
        m.initializer("s", s).initializer("b", b).initializer("mean", mean).initializer("var", var);
        std::vector<std::string> outs = {"y"};
        if (training_outputs)
            outs.insert(outs.end(), {"rm", "rv", "sm", "sv"});
        auto n = m.node("BatchNormalization", {"x", "s", "b", "mean", "var"}, outs, "bn");
        n.f("epsilon", 1e-3f);
        if (opset < 6)
            n.ints("consumed_inputs", {0, 0, 0, 1, 1});
        if (opset < 7)
            n.i("is_test", 1);
        if (opset < 9 && spatial >= 0)
            n.i("spatial", spatial);
        m.output("y");
        return m;
    };
    const TensorData x = x3();
    const TensorData want = evaluate(import(build(15, false, -1)), {x})[0];
    for (int opset : {1, 5, 6, 7, 8}) {
        SCOPED_TRACE(opset);
        const Graph g = import(build(opset, false, 1));
        EXPECT_EQ(op_histogram(g), (std::map<std::string, int>{{"BatchNormalization", 1}}));
        EXPECT_EQ(evaluate(g, {x})[0], want);
        EXPECT_CONTAINS(import_error(build(opset, true, 1)), "output 1 ('rm') is not supported");
        EXPECT_CONTAINS(import_error(build(opset, false, 0)), "spatial=0 is not supported");
    }
    ModelBuilder late(7);
    late.input("x", DType::F32, {2, 3, 5});
    late.initializer("s", s).initializer("b", b).initializer("mean", mean).initializer("var", var);
    late.node("BatchNormalization", {"x", "s", "b", "mean", "var"}, {"y"}).i("is_test", 1);
    late.output("y");
    EXPECT_CONTAINS(import_error(late), "unsupported attribute 'is_test'");
}

TEST(LayerNormImport, StartsAtOpset17) {
    for (int opset : {16, 17}) {
        ModelBuilder m(opset);
        m.input("x", DType::F32, {2, 3, 5}).initializer("s", testing::random_tensor({5}, 1));
        m.node("LayerNormalization", {"x", "s"}, {"y"}, "ln");
        m.output("y");
        if (opset == 16)
            EXPECT_CONTAINS(import_error(m), "does not exist before opset 17");
        else
            EXPECT_EQ(import_error(m), "no error");
    }
}

// ---- te builders ------------------------------------------------------------------------------

std::string builder_error(const std::function<void()>& f) {
    try {
        f();
    } catch (const UserError& e) {
        return e.what();
    }
    return "no error";
}

TEST(ReduceBuilders, ShapesAndRefusals) {
    const te::Tensor x = te::placeholder({3, 70}, ir::DataType::f32(), "x");
    const te::Tensor k = te::placeholder({3, 70}, ir::DataType::i64(), "k");
    const te::Tensor img = te::placeholder({2, 3, 5, 7}, ir::DataType::f32(), "img");
    const te::Tensor c3 = te::placeholder({3}, ir::DataType::f32(), "c3");
    const te::Tensor c4 = te::placeholder({4}, ir::DataType::f32(), "c4");
    EXPECT_EQ(te::reduce_prod(x, {1}, true).shape(), (std::vector<int64_t>{3, 1}));
    EXPECT_EQ(te::reduce_prod(x, {-1, 0}, false).shape(), std::vector<int64_t>{});
    EXPECT_EQ(te::reduce_prod(k, {0}, false).dtype(), ir::DataType::i64());
    EXPECT_EQ(te::reduce_log_sum_exp(x, {}, true).shape(), (std::vector<int64_t>{1, 1}));
    EXPECT_EQ(te::instance_norm(img, c3, c3, 1e-5).shape(), img.shape());
    EXPECT_EQ(te::global_lp_pool(img, 3).shape(), (std::vector<int64_t>{2, 3, 1, 1}));
    EXPECT_NE(builder_error([&] { te::reduce_l1(x, {2}); }).find("reduce_l1"), std::string::npos);
    for (auto* f : {&te::reduce_l2, &te::reduce_log_sum, &te::reduce_log_sum_exp})
        EXPECT_NE(builder_error([&] { f(k, {0}, false); }), "no error");
    EXPECT_NE(builder_error([&] { te::log_softmax(x, 2); }), "no error");
    EXPECT_NE(builder_error([&] { te::instance_norm(x, c3, c3, 1e-5); }).find("rank >= 3"),
              std::string::npos);
    EXPECT_NE(builder_error([&] { te::instance_norm(img, c4, c3, 1e-5); }).find("'c4'"),
              std::string::npos);
    EXPECT_NE(builder_error([&] { te::instance_norm(img, c3, c3, -1.0); }).find("epsilon"),
              std::string::npos);
    EXPECT_NE(builder_error([&] { te::global_lp_pool(img, 0); }).find("p must be >= 1"),
              std::string::npos);
}

// ---- kernels against the evaluator (op_case.h) -------------------------------------------------

// i64 values in [-3, 3] without 0, so that products are not 0.
TensorData nonzero_ints(const Shape& s, uint64_t seed) {
    TensorData t = ints(s, seed, -3, 3);
    int64_t* p = t.data<int64_t>();
    for (int64_t i = 0; i < t.numel(); ++i)
        p[i] = p[i] == 0 ? 2 : p[i];
    return t;
}

std::vector<OpCase> reduce_op_cases() {
    std::vector<OpCase> cs;
    cs.push_back({"ReduceMinProdL1SumSquare",
                  {Op::ReduceMin, Op::ReduceProd, Op::ReduceL1, Op::ReduceSumSquare},
                  [](Case& c) -> std::vector<ValueId> {
                      const ValueId x = c.input(nonzero_floats({7, 13, 1}, 1));
                      const ValueId xi = c.input(nonzero_ints({7, 13}, 2));
                      return {
                          c.op(Op::ReduceMin, {x}, {{"axes", Is({1})}, {"keepdims", I(1)}}),
                          c.op(Op::ReduceProd, {x}, {{"axes", Is({0, -1})}, {"keepdims", I(0)}}),
                          c.op(Op::ReduceL1, {x}, {{"keepdims", I(0)}}),
                          c.op(Op::ReduceSumSquare, {x}, {{"axes", Is({1})}, {"keepdims", I(0)}}),
                          c.op(Op::ReduceMin, {xi}, {{"axes", Is({0})}, {"keepdims", I(0)}}),
                          c.op(Op::ReduceProd, {xi}, {{"axes", Is({1})}, {"keepdims", I(1)}}),
                          c.op(Op::ReduceL1, {xi}, {{"axes", Is({-1})}, {"keepdims", I(0)}}),
                          c.op(Op::ReduceSumSquare, {xi}, {{"keepdims", I(1)}})};
                  }});
    // 70 -> 9 -> 2 -> 1: three product stages, the last group of each ragged.
    cs.push_back({"ReduceProdLongAxes", {Op::ReduceProd}, [](Case& c) -> std::vector<ValueId> {
                      const ValueId x = c.input(floats({3, 70}, 3, 0.9f, 1.1f));
                      return {c.op(Op::ReduceProd, {x}, {{"axes", Is({1})}, {"keepdims", I(1)}}),
                              c.op(Op::ReduceProd, {x}, {{"keepdims", I(0)}})};
                  }});
    cs.push_back(
        {"ReduceL2LogSumLogSumExp",
         {Op::ReduceL2, Op::ReduceLogSum, Op::ReduceLogSumExp},
         [](Case& c) -> std::vector<ValueId> {
             const ValueId x = c.input(floats({1, 7, 13}, 4, 0.25f, 1.25f));
             // exp(88.8) overflows f32: the max shift must be there.
             const ValueId big = c.input(floats({1, 7, 13}, 5, 85.0f, 95.0f));
             return {c.op(Op::ReduceL2, {x}, {{"axes", Is({2})}, {"keepdims", I(1)}}),
                     c.op(Op::ReduceLogSum, {x}, {{"axes", Is({1})}, {"keepdims", I(0)}}),
                     c.op(Op::ReduceLogSumExp, {x}, {{"axes", Is({-1, 0})}, {"keepdims", I(1)}}),
                     c.op(Op::ReduceLogSumExp, {big}, {{"axes", Is({2})}, {"keepdims", I(0)}})};
         }});
    cs.push_back({"LogSoftmax", {Op::LogSoftmax}, [](Case& c) -> std::vector<ValueId> {
                      c.atol = 1e-5;
                      const ValueId x = c.input(floats({1, 7, 13}, 6, -3.0f, 3.0f));
                      const ValueId big = c.input(floats({1, 7, 13}, 7, 85.0f, 95.0f));
                      return {c.op(Op::LogSoftmax, {x}, {{"axis", I(1)}}),
                              c.op(Op::LogSoftmax, {big}, {{"axis", I(-1)}})};
                  }});
    cs.push_back(
        {"InstanceNormalization", {Op::InstanceNormalization}, [](Case& c) -> std::vector<ValueId> {
             c.atol = 1e-5;
             const ValueId x = c.input(floats({2, 7, 13}, 8, -2.0f, 2.0f));
             const ValueId x4 = c.input(floats({1, 3, 5, 7}, 9, -2.0f, 2.0f));
             return {c.op(Op::InstanceNormalization,
                          {x, c.constant(nonzero_floats({7}, 10)), c.constant(floats({7}, 11))},
                          {{"epsilon", F(1e-5f)}}),
                     c.op(Op::InstanceNormalization,
                          {x4, c.constant(nonzero_floats({3}, 12)), c.constant(floats({3}, 13))},
                          {{"epsilon", F(0.25f)}})};
         }});
    cs.push_back(
        {"ReduceMaxMinBools", {Op::ReduceMax, Op::ReduceMin}, [](Case& c) -> std::vector<ValueId> {
             TensorData b = testing::random_ints({5, 7, 3}, 16, 0, 1).cast(DType::Bool);
             const ValueId x = c.input(b);
             return {c.op(Op::ReduceMax, {x}, {{"axes", Is({1})}, {"keepdims", I(1)}}),
                     c.op(Op::ReduceMin, {x}, {{"axes", Is({0, 2})}, {"keepdims", I(0)}}),
                     c.op(Op::ReduceMax, {x}, {{"keepdims", I(0)}})};
         }});
    cs.push_back({"GlobalMaxLpPool",
                  {Op::GlobalMaxPool, Op::GlobalLpPool},
                  [](Case& c) -> std::vector<ValueId> {
                      const ValueId x = c.input(nonzero_floats({1, 7, 5, 3}, 14));
                      const ValueId x3 = c.input(nonzero_floats({2, 3, 13}, 15));
                      return {c.op(Op::GlobalMaxPool, {x}), c.op(Op::GlobalMaxPool, {x3}),
                              c.op(Op::GlobalLpPool, {x}, {{"p", I(1)}}),
                              c.op(Op::GlobalLpPool, {x}, {{"p", I(2)}}),
                              c.op(Op::GlobalLpPool, {x3}, {{"p", I(3)}})};
                  }});
    return cs;
}
TESSERA_REGISTER_OP_CASES(reduce_op_cases);

} // namespace
} // namespace tessera::graph
