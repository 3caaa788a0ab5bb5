// Algebraic simplification: identities, transpose and reshape chains, BatchNorm folding,
// MatMul+Add into Gemm, squares, and the LayerNorm / GELU / Softmax recognizers.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <optional>

#include "passes_util.h"
#include "tessera/graph/import_onnx.h"

namespace tessera::graph {
namespace {

Attributes perm(std::vector<int64_t> p) { return {{"perm", Attribute::of_ints(std::move(p))}}; }
Attributes axis(int64_t a) { return {{"axis", Attribute::of_int(a)}}; }

TEST(Simplify, RemovesIdentities) {
    GraphBuilder b;
    ValueId x = b.input("x", {7, 13});
    ValueId v = b.op(Op::Add, {x, b.constant(TensorData(DType::F32, {13}))}); // x + 0
    v = b.op(Op::Mul, {b.scalar(1.0f), v});                                   // 1 * x
    v = b.op(Op::Div, {v, b.scalar(1.0f)});                                   // x / 1
    v = b.op(Op::Sub, {v, b.scalar(0.0f)});                                   // x - 0
    v = b.op(Op::Identity, {v});
    v = b.op(Op::Dropout, {v});
    v = b.op(Op::Cast, {v}, {{"to", Attribute::of_string("f32")}});
    v = b.op(Op::Pad, {v, b.ints({0, 0, 0, 0})}, {{"mode", Attribute::of_string("constant")}});
    v = b.op(Op::Reshape, {v, b.ints({7, 13})}, {{"allowzero", Attribute::of_int(0)}});
    v = b.op(Op::Transpose, {v}, perm({0, 1}));
    ValueId y = b.op(Op::Relu, {v});
    Graph g = b.finish({y});
    PassResult r = check_pass(g, simplify_algebra);
    EXPECT_EQ(r.changes, 10) << r.summary;
    EXPECT_EQ(op_histogram(g), (std::map<std::string, int>{{"Relu", 1}}));
    EXPECT_EQ(first_node(g, Op::Relu).inputs[0], x);
}

// x^2 is x*x (the same rounding) and x^3 is x*x*x (check_pass evaluates before and after);
// other exponents and an exponent that widens x stay.
TEST(Simplify, SquaresAndCubesBecomeMultiplies) {
    GraphBuilder b;
    ValueId x = b.input("x", {7, 13});
    ValueId sq = b.op(Op::Pow, {x, b.scalar(2.0f)});
    ValueId cube = b.op(Op::Pow, {sq, b.scalar(3.0f)});
    ValueId fourth = b.op(Op::Pow, {cube, b.scalar(4.0f)});
    ValueId wide = b.op(Op::Pow, {fourth, b.constant(TensorData::from_vector<float>(
                                              {3, 7, 13}, std::vector<float>(3 * 7 * 13, 2.0f)))});
    Graph g = b.finish({wide});
    PassResult r = check_pass(g, simplify_algebra);
    EXPECT_EQ(r.changes, 2) << r.summary;
    EXPECT_EQ(op_histogram(g), (std::map<std::string, int>{{"Mul", 3}, {"Pow", 2}}));
    const Node& square = first_node(g, Op::Mul);
    EXPECT_EQ(square.inputs[0], x);
    EXPECT_EQ(square.inputs[1], x);
    // The cube: (sq * sq) * sq.
    const Node& fourth_pow = g.node(g.value(fourth).producer);
    const Node& cubed = g.node(g.value(fourth_pow.inputs[0]).producer);
    ASSERT_EQ(cubed.op, Op::Mul);
    const ValueId squared_sq = cubed.inputs[0], sq_now = cubed.inputs[1];
    EXPECT_EQ(g.node(g.value(sq_now).producer).inputs, (std::vector<ValueId>{x, x}));
    EXPECT_EQ(g.node(g.value(squared_sq).producer).inputs, (std::vector<ValueId>{sq_now, sq_now}));
}

// AveragePool(Pad(x, zeros)) -> AveragePool(x) with the pads and count_include_pad 1 (odd
// pads, a stride; the pad's rows and columns differ). Left: a Pad of another value, a pool
// with pads of its own, a Pad on the channels, a Pad read twice.
TEST(Simplify, ZeroPadsMoveIntoAveragePools) {
    auto pool_of_pad = [](std::vector<int64_t> pads, float value, Attributes extra,
                          bool second_reader) {
        GraphBuilder b;
        ValueId x = b.input("x", {1, 5, 13, 11});
        ValueId p = b.op(Op::Pad, {x, b.ints(std::move(pads)), b.scalar(value)},
                         {{"mode", Attribute::of_string("constant")}});
        Attributes attrs = {{"kernel_shape", Attribute::of_ints({3, 2})},
                            {"strides", Attribute::of_ints({2, 1})},
                            {"count_include_pad", Attribute::of_int(0)}};
        for (auto& [k, v] : extra)
            attrs[k] = v;
        ValueId y = b.op(Op::AveragePool, {p}, attrs);
        std::vector<ValueId> outs = {y};
        if (second_reader)
            outs.push_back(b.op(Op::Relu, {p}));
        return b.finish(outs);
    };
    Graph g = pool_of_pad({0, 0, 1, 0, 0, 0, 2, 1}, 0.0f, {}, false);
    PassResult r = check_pass(g, simplify_algebra);
    EXPECT_EQ(r.changes, 1) << r.summary;
    EXPECT_EQ(count_op(g, Op::Pad), 0) << to_string(g);
    const Node& pool = first_node(g, Op::AveragePool);
    EXPECT_EQ(pool.inputs[0], g.inputs[0]);
    EXPECT_EQ(pool.attr_ints("pads"), (std::vector<int64_t>{1, 0, 2, 1}));
    EXPECT_EQ(pool.attr_int("count_include_pad", 0), 1);

    const Attributes own_pads = {{"pads", Attribute::of_ints({1, 1, 1, 1})}};
    for (Graph left : {pool_of_pad({0, 0, 1, 0, 0, 0, 1, 1}, 0.5f, {}, false),
                       pool_of_pad({0, 0, 1, 0, 0, 0, 1, 1}, 0.0f, own_pads, false),
                       pool_of_pad({0, 1, 1, 0, 0, 0, 1, 1}, 0.0f, {}, false),
                       pool_of_pad({0, 0, 3, 0, 0, 0, 1, 1}, 0.0f, {}, false),
                       pool_of_pad({0, 0, 1, 0, 0, 0, 1, 1}, 0.0f, {}, true)}) {
        check_pass(left, simplify_algebra);
        EXPECT_EQ(count_op(left, Op::Pad), 1) << to_string(left);
    }
}

// x + c where c broadcasts x to a larger shape is not an identity even when c is zero.
TEST(Simplify, KeepsBroadcastingNeutralOperand) {
    GraphBuilder b;
    ValueId x = b.input("x", {13});
    ValueId y = b.op(Op::Add, {x, b.constant(TensorData(DType::F32, {7, 13}))});
    ValueId z = b.op(Op::Mul, {y, b.scalar(2.0f)}); // not neutral
    Graph g = b.finish({z});
    EXPECT_EQ(check_pass(g, simplify_algebra).changes, 0);
    EXPECT_EQ(g.num_nodes(), 2u);
}

TEST(Simplify, CancelsTransposePairsAndComposesOthers) {
    GraphBuilder b;
    ValueId x = b.input("x", {2, 3, 5, 7});
    ValueId t = b.op(Op::Transpose, {b.op(Op::Transpose, {x}, perm({0, 2, 3, 1}))},
                     perm({0, 3, 1, 2})); // cancels
    ValueId u = b.op(Op::Transpose, {b.op(Op::Transpose, {t}, perm({0, 2, 3, 1}))},
                     perm({2, 0, 3, 1})); // composes into one (the perms do not commute)
    ValueId y = b.op(Op::Relu, {u});
    Graph g = b.finish({y});
    check_pass(g, simplify_algebra);
    EXPECT_EQ(op_histogram(g), (std::map<std::string, int>{{"Relu", 1}, {"Transpose", 1}}));
    EXPECT_EQ(first_node(g, Op::Transpose).attr_ints("perm"), (std::vector<int64_t>{3, 0, 1, 2}));
    EXPECT_EQ(first_node(g, Op::Transpose).inputs[0], x);
}

TEST(Simplify, CollapsesReshapeChains) {
    GraphBuilder b;
    ValueId x = b.input("x", {1, 7, 13});
    ValueId v = b.op(Op::Reshape, {x, b.ints({7, 13})}, {{"allowzero", Attribute::of_int(0)}});
    v = b.op(Op::Unsqueeze, {v, b.ints({0})});
    v = b.op(Op::Flatten, {v}, axis(2));
    v = b.op(Op::Reshape, {v, b.ints({91})}, {{"allowzero", Attribute::of_int(0)}});
    ValueId y = b.op(Op::Exp, {v});
    Graph g = b.finish({y});
    check_pass(g, simplify_algebra);
    EXPECT_EQ(op_histogram(g), (std::map<std::string, int>{{"Exp", 1}, {"Reshape", 1}}));
    EXPECT_EQ(first_node(g, Op::Reshape).inputs[0], x);
}

// A reshape there and back cancels entirely.
TEST(Simplify, CancelsReshapePairs) {
    GraphBuilder b;
    ValueId x = b.input("x", {7, 13});
    ValueId v = b.op(Op::Reshape, {x, b.ints({91})}, {{"allowzero", Attribute::of_int(0)}});
    v = b.op(Op::Reshape, {v, b.ints({7, -1})}, {{"allowzero", Attribute::of_int(0)}});
    ValueId y = b.op(Op::Exp, {v});
    Graph g = b.finish({y});
    check_pass(g, simplify_algebra);
    EXPECT_EQ(op_histogram(g), (std::map<std::string, int>{{"Exp", 1}}));
    EXPECT_EQ(first_node(g, Op::Exp).inputs[0], x);
}

ValueId batch_norm(GraphBuilder& b, ValueId x, int64_t c, uint64_t seed) {
    return b.op(Op::BatchNormalization,
                {x, b.constant_f32({c}, seed, 0.5f, 1.5f), b.constant_f32({c}, seed + 1),
                 b.constant_f32({c}, seed + 2), b.constant_f32({c}, seed + 3, 0.2f, 2.0f)},
                {{"epsilon", Attribute::of_float(1e-3f)}});
}

Attributes conv_attrs() {
    return {{"kernel_shape", Attribute::of_ints({3, 3})},
            {"strides", Attribute::of_ints({1, 1})},
            {"dilations", Attribute::of_ints({1, 1})},
            {"pads", Attribute::of_ints({1, 1, 1, 1})},
            {"group", Attribute::of_int(1)}};
}

TEST(Simplify, FoldsBatchNormIntoConv) {
    for (bool bias : {false, true}) {
        GraphBuilder b;
        ValueId x = b.input("x", {1, 3, 7, 13});
        std::vector<ValueId> ins = {x, b.constant_f32({5, 3, 3, 3}, 21)};
        if (bias)
            ins.push_back(b.constant_f32({5}, 22));
        ValueId c = b.op(Op::Conv, ins, conv_attrs());
        ValueId y = b.op(Op::Relu, {batch_norm(b, c, 5, 30)});
        Graph g = b.finish({y});
        PassResult r = check_pass(g, simplify_algebra);
        EXPECT_EQ(op_histogram(g), (std::map<std::string, int>{{"Conv", 1}, {"Relu", 1}}))
            << r.summary;
        EXPECT_EQ(first_node(g, Op::Conv).inputs.size(), 3u);
    }
}

TEST(Simplify, FoldsBatchNormIntoGemm) {
    for (int trans_b : {0, 1}) {
        GraphBuilder b;
        ValueId x = b.input("x", {7, 13});
        ValueId w = b.constant_f32(trans_b ? Shape{5, 13} : Shape{13, 5}, 41);
        ValueId gm = b.op(Op::Gemm, {x, w, b.constant_f32({5}, 42)},
                          {{"alpha", Attribute::of_float(0.5f)},
                           {"beta", Attribute::of_float(2.0f)},
                           {"transA", Attribute::of_int(0)},
                           {"transB", Attribute::of_int(trans_b)}});
        ValueId y = batch_norm(b, gm, 5, 50);
        Graph g = b.finish({y});
        check_pass(g, simplify_algebra);
        EXPECT_EQ(op_histogram(g), (std::map<std::string, int>{{"Gemm", 1}}));
    }
}

// A BN whose producer has another user (or is a graph input) becomes Mul + Add.
TEST(Simplify, LoneBatchNormBecomesScaleShift) {
    GraphBuilder b;
    ValueId x = b.input("x", {1, 5, 7, 3});
    ValueId y = batch_norm(b, x, 5, 60);
    Graph g = b.finish({y});
    check_pass(g, simplify_algebra);
    EXPECT_EQ(op_histogram(g), (std::map<std::string, int>{{"Add", 1}, {"Mul", 1}}));
    EXPECT_EQ(g.value(g.outputs[0]).name, "v" + std::to_string(y));
}

TEST(Simplify, MatMulAddBecomesGemm) {
    GraphBuilder b;
    ValueId x = b.input("x", {7, 13});
    ValueId mm = b.op(Op::MatMul, {x, b.constant_f32({13, 5}, 70)});
    ValueId y = b.op(Op::Add, {b.constant_f32({5}, 71), mm});
    // 3-D MatMul: shapes do not allow Gemm, left alone.
    ValueId x3 = b.input("x3", {2, 7, 13});
    ValueId mm3 = b.op(Op::MatMul, {x3, b.constant_f32({13, 5}, 72)});
    ValueId y3 = b.op(Op::Add, {mm3, b.constant_f32({5}, 73)});
    Graph g = b.finish({y, y3});
    check_pass(g, simplify_algebra);
    EXPECT_EQ(op_histogram(g),
              (std::map<std::string, int>{{"Add", 1}, {"Gemm", 1}, {"MatMul", 1}}));
}

// The exported decomposition of LayerNorm with scale and bias over the last axis.
ValueId decomposed_layer_norm(GraphBuilder& b, ValueId x, int64_t d, uint64_t seed) {
    Attributes last = {{"axes", Attribute::of_ints({-1})}, {"keepdims", Attribute::of_int(1)}};
    ValueId m = b.op(Op::ReduceMean, {x}, last);
    ValueId dx = b.op(Op::Sub, {x, m});
    ValueId var = b.op(Op::ReduceMean, {b.op(Op::Pow, {dx, b.scalar(2.0f)})}, last);
    ValueId sd = b.op(Op::Sqrt, {b.op(Op::Add, {var, b.scalar(1e-5f)})});
    ValueId n = b.op(Op::Div, {dx, sd});
    ValueId s = b.op(Op::Mul, {n, b.constant_f32({d}, seed, 0.5f, 1.5f)});
    return b.op(Op::Add, {s, b.constant_f32({d}, seed + 1)});
}

ValueId decomposed_gelu(GraphBuilder& b, ValueId x) {
    ValueId e = b.op(Op::Erf, {b.op(Op::Div, {x, b.scalar(1.4142135f)})});
    ValueId p = b.op(Op::Add, {e, b.scalar(1.0f)});
    return b.op(Op::Mul, {b.op(Op::Mul, {x, p}), b.scalar(0.5f)});
}

TEST(Simplify, RecognizesLayerNormAndGelu) {
    GraphBuilder b;
    ValueId x = b.input("x", {1, 7, 13});
    ValueId ln = decomposed_layer_norm(b, x, 13, 80);
    ValueId y = decomposed_gelu(b, ln);
    // The other GELU operand order: (x * 0.5) * (1 + erf(x * (1 / sqrt 2))).
    ValueId e = b.op(Op::Erf, {b.op(Op::Mul, {b.scalar(0.70710678f), y})});
    ValueId z =
        b.op(Op::Mul, {b.op(Op::Mul, {y, b.scalar(0.5f)}), b.op(Op::Add, {b.scalar(1.0f), e})});
    Graph g = b.finish({z});
    PassResult r = check_pass(g, simplify_algebra);
    EXPECT_EQ(op_histogram(g), (std::map<std::string, int>{{"Gelu", 2}, {"LayerNormalization", 1}}))
        << r.summary;
    EXPECT_FLOAT_EQ(first_node(g, Op::LayerNormalization).attr_float("epsilon", 0), 1e-5f);
}

// Without scale and bias, the LayerNorm gets unit scale and zero bias.
TEST(Simplify, RecognizesBareLayerNorm) {
    GraphBuilder b;
    ValueId x = b.input("x", {7, 13});
    Attributes last = {{"axes", Attribute::of_ints({1})}, {"keepdims", Attribute::of_int(1)}};
    ValueId dx = b.op(Op::Sub, {x, b.op(Op::ReduceMean, {x}, last)});
    ValueId var = b.op(Op::ReduceMean, {b.op(Op::Mul, {dx, dx})}, last);
    ValueId n = b.op(Op::Div, {dx, b.op(Op::Sqrt, {b.op(Op::Add, {b.scalar(1e-3f), var})})});
    ValueId y = b.op(Op::Relu, {n});
    Graph g = b.finish({y});
    check_pass(g, simplify_algebra);
    EXPECT_EQ(op_histogram(g),
              (std::map<std::string, int>{{"LayerNormalization", 1}, {"Relu", 1}}));
}

TEST(Simplify, RecognizesSoftmax) {
    for (bool with_max : {true, false}) {
        GraphBuilder b;
        ValueId x = b.input("x", {7, 13, 3});
        ValueId t = x;
        if (with_max)
            t = b.op(Op::Sub, {x, b.op(Op::ReduceMax, {x},
                                       {{"axes", Attribute::of_ints({1})},
                                        {"keepdims", Attribute::of_int(1)}})});
        ValueId e = b.op(Op::Exp, {t});
        ValueId s = b.op(Op::ReduceSum, {e, b.ints({-2})}, {{"keepdims", Attribute::of_int(1)}});
        ValueId y = b.op(Op::Div, {e, s});
        Graph g = b.finish({y});
        check_pass(g, simplify_algebra);
        EXPECT_EQ(op_histogram(g), (std::map<std::string, int>{{"Softmax", 1}}));
        EXPECT_EQ(first_node(g, Op::Softmax).attr_int("axis", -1), 1);
    }
}

// The Gelu op the recognizer produces: evaluator and shape inference.
TEST(GeluOp, EvaluatesErfForm) {
    EXPECT_EQ(op_from_name("Gelu"), Op::Gelu);
    const TensorData x = testing::random_tensor({7, 13}, 90, -4.0f, 4.0f);
    std::vector<TensorData> y = testing::run_node(Op::Gelu, {testing::in(x)});
    ASSERT_EQ(y.size(), 1u);
    ASSERT_EQ(y[0].shape(), x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) {
        const double v = x.data<float>()[i];
        EXPECT_NEAR(y[0].data<float>()[i], 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), 1e-6);
    }
}

// Gelu is a graph op only: a model using it at an opset before 20 is rejected by name.
TEST(GeluOp, ImportBeforeOpset20IsAnError) {
    testing::ModelBuilder mb(17, 8);
    mb.input("x", DType::F32, {1, 7}).output("y");
    mb.node("Gelu", {"x"}, {"y"}, "gelu_node");
    try {
        import_onnx_bytes(mb.bytes(), "gelu.onnx");
        ADD_FAILURE() << "expected an error";
    } catch (const UserError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("gelu_node"), std::string::npos) << msg;
        EXPECT_NE(msg.find("20"), std::string::npos) << msg;
    }
}

// A near miss: the GELU constant is not 1/2, so nothing is recognized.
TEST(Simplify, LeavesNearMissGelu) {
    GraphBuilder b;
    ValueId x = b.input("x", {13});
    ValueId e = b.op(Op::Erf, {b.op(Op::Div, {x, b.scalar(1.4142135f)})});
    ValueId y =
        b.op(Op::Mul, {b.op(Op::Mul, {x, b.op(Op::Add, {e, b.scalar(1.0f)})}), b.scalar(0.25f)});
    Graph g = b.finish({y});
    EXPECT_EQ(check_pass(g, simplify_algebra).changes, 0);
    EXPECT_EQ(count_op(g, Op::Gelu), 0);
}

// The shared models: structural expectations on real exporter output, checked before/after on
// random inputs like every other pass test.
std::optional<Graph> shared_model(const std::string& name) {
    const std::string path = TESSERA_SOURCE_DIR "/../shared/models/" + name + "/model.onnx";
    if (!std::filesystem::exists(path))
        return std::nullopt;
    return import_onnx(path);
}

TEST(Simplify, RecognizesLayerNormAndGeluInBert) {
    std::optional<Graph> g = shared_model("bert_emb_op13");
    if (!g)
        GTEST_SKIP() << "shared models not found";
    ASSERT_EQ(count_op(*g, Op::Erf), 4);
    PassResult r = check_pass(*g, simplify_algebra);
    EXPECT_EQ(count_op(*g, Op::LayerNormalization), 8) << r.summary;
    EXPECT_EQ(count_op(*g, Op::Gelu), 4) << r.summary;
    for (Op gone : {Op::Erf, Op::Pow, Op::Sqrt, Op::ReduceMean, Op::Sub, Op::Mul})
        EXPECT_EQ(count_op(*g, gone), 0) << op_name(gone);
    EXPECT_EQ(count_op(*g, Op::Softmax), 4); // already a single op in the export
    EXPECT_EQ(count_op(*g, Op::Div), 4);     // attention scaling stays
}

TEST(Simplify, FoldsEveryBatchNormInConvBnRelu) {
    std::optional<Graph> g = shared_model("conv_bn_relu");
    if (!g)
        GTEST_SKIP() << "shared models not found";
    ASSERT_EQ(count_op(*g, Op::BatchNormalization), 3);
    PassResult r = check_pass(*g, simplify_algebra);
    EXPECT_EQ(r.changes, 3) << r.summary;
    EXPECT_EQ(count_op(*g, Op::BatchNormalization), 0);
    EXPECT_EQ(count_op(*g, Op::Conv), 3);
    EXPECT_EQ(count_op(*g, Op::Mul), 0); // folded into the convs, not left as scale + shift
}

// CSE and folding on a real model change nothing they should not: the outputs agree.
TEST(Simplify, OtherPassesKeepBertOutputs) {
    std::optional<Graph> g = shared_model("bert_emb_op13");
    if (!g)
        GTEST_SKIP() << "shared models not found";
    check_pass(*g, fold_constants);
    EXPECT_EQ(count_op(*g, Op::Shape), 0);
    check_pass(*g, eliminate_common_subexpressions);
    check_pass(*g, eliminate_dead_code);
}

} // namespace
} // namespace tessera::graph
