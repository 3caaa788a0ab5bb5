// The precision pass (bf16): which matrix products it converts (MatMul and Gemm on constant f32
// weights with an even reduction, MatMuls of two activations with the same batch dimensions)
// and which it leaves, checked by evaluation before and after
// (within bf16 rounding of the operands) and against a reference on bf16-rounded operands
// (within f32 summation); whole builds with --precision bf16 against the evaluator. The fp16
// pass: which weights it stores in f16 (large product weights within f16's range), evaluated
// before and after; fp16 libraries against the evaluator of their graph.
#include <gtest/gtest.h>

#include <cmath>

#include "../../src/graph/ops/bf16_matmul.h"
#include "op_case.h"
#include "passes_util.h"
#include "tessera/graph/pipeline.h"
#include "tessera/support/bfloat16.h"
#include "tessera/support/half.h"

namespace tessera::graph {
namespace {

using testing::ModelBuilder;

/// Each operand's bf16 rounding is relative 2^-9; a sum of products of values in [-1, 1)
/// gets errors up to ~2^-8 of sum |x w|: 1% of the outputs' peak is that with a margin.
constexpr double kBf16ScaleTol = 1e-2;

float bf16_round(float x) { return bf16_bits_to_f32(f32_to_bf16_bits(x)); }

/// y = x W with x and W rounded to bf16 first, summed in double: what MatMulBF16 computes up
/// to f32 summation. x [M, K] row-major, w [K, N].
std::vector<double> rounded_product(const TensorData& x, const TensorData& w) {
    const int64_t K = w.shape()[0], N = w.shape()[1], M = x.numel() / K;
    std::vector<double> y(M * N, 0.0);
    for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n)
            for (int64_t k = 0; k < K; ++k)
                y[m * N + n] += double(bf16_round(x.data<float>()[m * K + k])) *
                                bf16_round(w.data<float>()[k * N + n]);
    return y;
}

// The kernel against the evaluator: MatMulBF16 on a rank-3 bf16 input, odd columns.
std::vector<OpCase> bf16_matmul_op_cases() {
    return {
        {"MatMulBF16OddColumns",
         {Op::MatMulBF16},
         [](Case& c) -> std::vector<ValueId> {
             const TensorData w = testing::random_tensor({38, 29}, 81);
             return {c.op(Op::MatMulBF16,
                          {c.input(testing::random_tensor({2, 5, 38}, 82).cast(DType::BF16)),
                           c.constant(detail::pack_bf16_weight_words(w))})};
         }},
        // One weight matrix per batch (Winograd's products by tile position).
        {"MatMulBF16BatchedWeights",
         {Op::MatMulBF16},
         [](Case& c) -> std::vector<ValueId> {
             const TensorData w = testing::random_tensor({3, 38, 29}, 83);
             return {c.op(Op::MatMulBF16,
                          {c.input(testing::random_tensor({3, 11, 38}, 84).cast(DType::BF16)),
                           c.constant(detail::pack_bf16_weight_words(w))})};
         }},
    };
}
TESSERA_REGISTER_OP_CASES(bf16_matmul_op_cases);

// MatMulBF16NT's kernel against its evaluator: one batch axis and two, odd rows and columns
// (tiles and vectors with remainders), reductions of one word and of several tile steps.
// With kn = 1 (the right-hand side as it is, [..., K, N]) the same shapes, its rows
// interleaved in pairs by the kernel.
std::vector<OpCase> bf16_matmul_nt_op_cases() {
    auto product = [](Shape x, Shape y, uint64_t seed, bool kn = false) {
        return [x, y, seed, kn](Case& c) -> std::vector<ValueId> {
            Attributes a;
            if (kn)
                a["kn"] = Attribute::of_int(1);
            return {c.op(Op::MatMulBF16NT,
                         {c.input(testing::random_tensor(x, seed).cast(DType::BF16)),
                          c.input(testing::random_tensor(y, seed + 1).cast(DType::BF16))},
                         a)};
        };
    };
    return {
        {"MatMulBF16NTOddRowsAndColumns",
         {Op::MatMulBF16NT},
         product({3, 19, 38}, {3, 21, 38}, 91)},
        {"MatMulBF16NTAttentionHeads",
         {Op::MatMulBF16NT},
         product({1, 2, 33, 64}, {1, 2, 40, 64}, 93)},
        {"MatMulBF16NTOneWord", {Op::MatMulBF16NT}, product({5, 2}, {7, 2}, 95)},
        {"MatMulBF16KNOddRowsAndColumns",
         {Op::MatMulBF16NT},
         product({3, 19, 38}, {3, 38, 21}, 97, true)},
        {"MatMulBF16KNAttentionHeads",
         {Op::MatMulBF16NT},
         product({1, 2, 33, 128}, {1, 2, 128, 40}, 99, true)},
        {"MatMulBF16KNOneWord", {Op::MatMulBF16NT}, product({5, 2}, {2, 7}, 101, true)},
    };
}
TESSERA_REGISTER_OP_CASES(bf16_matmul_nt_op_cases);

TEST(PrecisionPass, MatMulsOnConstantWeightsComputeOnBf16Operands) {
    GraphBuilder b;
    const ValueId x = b.input("x", {3, 5, 10});
    const TensorData w1 = testing::random_tensor({10, 7}, 2),
                     w2 = testing::random_tensor({10, 9}, 3);
    const ValueId y1 = b.op(Op::Relu, {b.op(Op::MatMul, {x, b.constant(w1)})});
    const ValueId y2 = b.op(Op::MatMul, {x, b.constant(w2)});
    Graph g = b.finish({y1, y2});
    const PassResult r = check_pass(g, convert_precision_bf16, 7, kBf16ScaleTol);
    EXPECT_EQ(r.changes, 2);
    EXPECT_EQ(count_op(g, Op::MatMulBF16), 2);
    EXPECT_EQ(count_op(g, Op::MatMul), 0);
    EXPECT_EQ(count_op(g, Op::Cast), 1) << "one Cast of x serves both products";
    EXPECT_EQ(g.value(first_node(g, Op::Cast).outputs[0]).dtype, DType::BF16);

    // The second output against a reference on rounded operands: only f32 summation differs.
    const TensorData in = testing::random_tensor({3, 5, 10}, 11);
    const std::vector<TensorData> got = evaluate(g, {in});
    const std::vector<double> want = rounded_product(in, w2);
    for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got[1].data<float>()[i], want[i], 1e-5) << i;
}

TEST(PrecisionPass, BatchedConstantWeightsGiveOneWordMatrixPerBatch) {
    // x [4, 7, 10] by W [4, 10, 6] (Winograd's form) converts; by W [1, 10, 6], broadcast over
    // the batch, it stays f32.
    GraphBuilder b;
    const ValueId x = b.input("x", {4, 7, 10});
    const TensorData w = testing::random_tensor({4, 10, 6}, 12);
    const ValueId y = b.op(Op::MatMul, {x, b.constant(w)});
    const ValueId broadcast = b.op(Op::MatMul, {x, b.constant_f32({1, 10, 6}, 13)});
    Graph g = b.finish({y, broadcast});
    const PassResult r = check_pass(g, convert_precision_bf16, 7, kBf16ScaleTol);
    EXPECT_EQ(r.changes, 1);
    EXPECT_EQ(count_op(g, Op::MatMulBF16), 1);
    EXPECT_EQ(count_op(g, Op::MatMul), 1);
    EXPECT_EQ(g.value(first_node(g, Op::MatMulBF16).inputs[1]).shape, (Shape{4, 5, 6}));

    // Against a reference on rounded operands, batch by batch.
    const TensorData in = testing::random_tensor({4, 7, 10}, 14);
    const std::vector<TensorData> got = evaluate(g, {in});
    for (int64_t batch = 0; batch < 4; ++batch) {
        const TensorData xb = TensorData::from_vector<float>(
            {7, 10},
            std::vector<float>(in.data<float>() + batch * 70, in.data<float>() + (batch + 1) * 70));
        const TensorData wb = TensorData::from_vector<float>(
            {10, 6},
            std::vector<float>(w.data<float>() + batch * 60, w.data<float>() + (batch + 1) * 60));
        const std::vector<double> want = rounded_product(xb, wb);
        for (size_t i = 0; i < want.size(); ++i)
            EXPECT_NEAR(got[0].data<float>()[batch * 42 + i], want[i], 1e-5) << batch << ", " << i;
    }
}

TEST(PrecisionPass, GemmTransposedWithBiasBecomesAProductAndAnAdd) {
    GraphBuilder b;
    const ValueId x = b.input("x", {4, 12});
    Attributes a;
    a["transB"] = Attribute::of_int(1);
    const ValueId y =
        b.op(Op::Gemm, {x, b.constant_f32({6, 12}, 5), b.constant_f32({6}, 6)}, std::move(a));
    Graph g = b.finish({y});
    const PassResult r = check_pass(g, convert_precision_bf16, 3, kBf16ScaleTol);
    EXPECT_EQ(r.changes, 1);
    EXPECT_EQ(count_op(g, Op::MatMulBF16), 1);
    EXPECT_EQ(count_op(g, Op::Add), 1);
    EXPECT_EQ(count_op(g, Op::Gemm), 0);
}

TEST(PrecisionPass, LeavesOddReductionsAndMismatchedBatchesInF32) {
    GraphBuilder b;
    const ValueId x = b.input("x", {3, 9});
    const ValueId odd = b.op(Op::MatMul, {x, b.constant_f32({9, 4}, 2)}); // K = 9
    const ValueId w = b.input("w", {9, 6});
    const ValueId computed_odd = b.op(Op::MatMul, {x, w}); // two activations, K = 9
    const ValueId p = b.input("p", {2, 3, 4}), q = b.input("q", {1, 4, 5});
    const ValueId broadcast = b.op(Op::MatMul, {p, q}); // batch 2 against 1
    Graph g = b.finish({odd, computed_odd, broadcast});
    const PassResult r = check_pass(g, convert_precision_bf16);
    EXPECT_EQ(r.changes, 0);
    EXPECT_EQ(count_op(g, Op::MatMul), 3);
    EXPECT_EQ(count_op(g, Op::Cast), 0);
}

/// z = x y^T (kn: x y) per batch with x and y rounded to bf16 first, summed in double: what
/// MatMulBF16NT computes up to f32 summation. x [B, M, K], y [B, N, K] (kn: [B, K, N])
/// row-major.
std::vector<double> rounded_activation_product(const TensorData& x, const TensorData& y,
                                               bool kn = false) {
    const size_t r = x.rank();
    const int64_t M = x.shape()[r - 2], K = x.shape()[r - 1], N = y.shape()[kn ? r - 1 : r - 2];
    const int64_t batches = x.numel() / (M * K);
    std::vector<double> z(batches * M * N, 0.0);
    for (int64_t b = 0; b < batches; ++b)
        for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < N; ++n)
                for (int64_t k = 0; k < K; ++k)
                    z[(b * M + m) * N + n] +=
                        double(bf16_round(x.data<float>()[(b * M + m) * K + k])) *
                        bf16_round(y.data<float>()[kn ? (b * K + k) * N + n : (b * N + n) * K + k]);
    return z;
}

TEST(PrecisionPass, AttentionProductsComputeOnBf16OperandsWithoutATranspose) {
    // Scores Q K^T with K^T a Transpose of K (the pass reads K itself), then probabilities P
    // times V (the pass reads V as it is, kn = 1), per head: 7 queries of 6 features, 8 keys.
    GraphBuilder b;
    const ValueId q = b.input("q", {1, 2, 7, 6}), k = b.input("k", {1, 2, 8, 6});
    const ValueId v = b.input("v", {1, 2, 8, 10});
    Attributes perm;
    perm["perm"] = Attribute::of_ints({0, 1, 3, 2});
    const ValueId kt = b.op(Op::Transpose, {k}, perm);
    const ValueId scores = b.op(Op::MatMul, {q, kt});
    Attributes axis;
    axis["axis"] = Attribute::of_int(-1);
    const ValueId probs = b.op(Op::Softmax, {scores}, axis);
    const ValueId out = b.op(Op::MatMul, {probs, v});
    Graph g = b.finish({scores, out});
    const PassResult r = check_pass(g, convert_precision_bf16, 7, kBf16ScaleTol);
    EXPECT_EQ(r.changes, 2);
    EXPECT_EQ(count_op(g, Op::MatMulBF16NT), 2);
    EXPECT_EQ(count_op(g, Op::MatMul), 0);
    int casts_of_k = 0;
    for (NodeId id : g.node_ids())
        casts_of_k += g.node(id).op == Op::Cast && g.node(id).inputs[0] == k;
    EXPECT_EQ(casts_of_k, 1) << "K^T's product reads K's rows, not a transposed copy";
    EXPECT_EQ(count_op(g, Op::Transpose), 1) << "K^T (now dead); V needs none";
    int kn_products = 0;
    for (NodeId id : g.node_ids())
        kn_products += g.node(id).op == Op::MatMulBF16NT && g.node(id).attr_int("kn", 0) == 1;
    EXPECT_EQ(kn_products, 1);

    // The scores against a reference on rounded operands: only f32 summation differs.
    const std::vector<TensorData> in = {testing::random_tensor({1, 2, 7, 6}, 31),
                                        testing::random_tensor({1, 2, 8, 6}, 32),
                                        testing::random_tensor({1, 2, 8, 10}, 33)};
    const std::vector<TensorData> got = evaluate(g, in);
    const std::vector<double> want = rounded_activation_product(in[0], in[1]);
    ASSERT_EQ(got[0].numel(), static_cast<int64_t>(want.size()));
    for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got[0].data<float>()[i], want[i], 1e-5) << i;
}

TEST(PrecisionPass, HeadsTransposedForAProductGiveItTheirColumnsWithoutAGather) {
    // BERT's keys: the heads' Reshape, then a Transpose straight to K^T [b, h, d, s] (perm
    // 0 2 3 1). The product's columns as rows are K [b, h, s, d]: the pass makes them with
    // the perm 0 2 1 3 (the innermost axis stays innermost, the same copy as the queries'),
    // not a product on K^T as it is. The values before and after agree, and after the whole
    // pipeline no dead Transpose is left to split a fused group.
    GraphBuilder b;
    const ValueId q = b.input("q", {1, 2, 7, 6});
    const ValueId k = b.input("k", {1, 9, 2, 6}); // [b, s, h, d]
    Attributes perm;
    perm["perm"] = Attribute::of_ints({0, 2, 3, 1});
    const ValueId kt = b.op(Op::Transpose, {k}, perm);
    Graph g = b.finish({b.op(Op::MatMul, {q, kt})});
    Graph whole = g;
    check_pass(g, convert_precision_bf16, 7, kBf16ScaleTol);
    int kn = 0, columns = 0;
    for (NodeId id : g.node_ids()) {
        const Node& n = g.node(id);
        kn += n.op == Op::MatMulBF16NT && n.attr_int("kn", 0) == 1;
        columns += n.op == Op::Transpose && n.inputs[0] == k &&
                   n.attr_ints("perm", {}) == std::vector<int64_t>{0, 2, 1, 3};
    }
    EXPECT_EQ(kn, 0);
    EXPECT_EQ(columns, 1);
    PipelineOptions po;
    po.level = 0;
    po.precision = Precision::BF16;
    optimize(whole, po);
    for (NodeId id : whole.node_ids()) {
        if (whole.node(id).op == Op::Transpose) {
            EXPECT_EQ(whole.node(id).attr_ints("perm", {}), (std::vector<int64_t>{0, 2, 1, 3}))
                << "the product's dead K^T is gone";
        }
    }
}

TEST(PrecisionPass, Bf16KNProductEvaluatesTheRoundedProduct) {
    // MatMulBF16NT with kn = 1 evaluates x y on bf16-rounded operands (odd M and N, two batch
    // axes): only f32 summation differs.
    const TensorData x = testing::random_tensor({2, 3, 5, 12}, 41);
    const TensorData y = testing::random_tensor({2, 3, 12, 7}, 42);
    GraphBuilder b;
    const ValueId z =
        b.op(Op::MatMulBF16NT,
             {b.input("x", x.shape(), DType::BF16), b.input("y", y.shape(), DType::BF16)},
             {{"kn", Attribute::of_int(1)}});
    const Graph g = b.finish({z});
    const TensorData got = evaluate(g, {x.cast(DType::BF16), y.cast(DType::BF16)})[0];
    EXPECT_EQ(got.shape(), (Shape{2, 3, 5, 7}));
    const std::vector<double> want = rounded_activation_product(x, y, true);
    ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
    for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got.data<float>()[i], want[i], 1e-5) << i;
}

TEST(PrecisionPass, Bf16NTProductRefusesMismatchedOperandsNamingTheNode) {
    GraphBuilder b;
    const ValueId x = b.input("x", {2, 3, 8}, DType::BF16);
    const ValueId y = b.input("y", {2, 5, 6}, DType::BF16); // 6 columns against 8
    const ValueId z = b.op(Op::MatMulBF16NT, {x, y});
    try {
        b.finish({z});
        FAIL() << "no error";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("MatMulBF16NT"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("same even inner dimension"), std::string::npos)
            << e.what();
    }
}

TEST(PrecisionPass, ParsesItsNamesAndRefusesOthers) {
    EXPECT_EQ(parse_precision("bf16"), Precision::BF16);
    EXPECT_EQ(parse_precision("fp32"), Precision::FP32);
    EXPECT_EQ(parse_precision("fp16"), Precision::FP16);
    EXPECT_STREQ(precision_name(Precision::FP16), "fp16");
    EXPECT_THROW(parse_precision("fp8"), UserError);
    EXPECT_STREQ(precision_name(Precision::BF16), "bf16");
}

TEST(PrecisionPass, PipelineRunsItOnlyWhenAsked) {
    GraphBuilder b;
    const ValueId x = b.input("x", {2, 8});
    Graph g = b.finish({b.op(Op::MatMul, {x, b.constant_f32({8, 3}, 4)})});
    Graph f32 = g;
    optimize(f32, {});
    EXPECT_EQ(count_op(f32, Op::MatMulBF16), 0);
    PipelineOptions po;
    po.level = 0;
    po.precision = Precision::BF16;
    optimize(g, po);
    EXPECT_EQ(count_op(g, Op::MatMulBF16), 1);
}

// Two Gemm layers (transB, bias) around a Relu and a MatMul on their output: an MLP.
std::string mlp_model() {
    ModelBuilder m(13);
    m.input("x", DType::F32, {5, 24});
    m.initializer("W1", testing::random_tensor({32, 24}, 21, -0.3f, 0.3f));
    m.initializer("B1", testing::random_tensor({32}, 22));
    m.initializer("W2", testing::random_tensor({32, 18}, 23, -0.3f, 0.3f));
    m.node("Gemm", {"x", "W1", "B1"}, {"h"}).i("transB", 1);
    m.node("Relu", {"h"}, {"r"});
    m.node("MatMul", {"r", "W2"}, {"y"});
    m.output("y", DType::F32);
    return m.bytes();
}

TEST(PrecisionPass, Bf16LibraryMatchesTheEvaluatorOfItsGraph) {
    const std::vector<TensorData> feeds = {testing::random_tensor({5, 24}, 9)};
    for (int level : {0, 3}) {
        // The sums of f32 products in another order: f32 rounding of sums of ~30 terms.
        const Graph built = expect_library_matches_evaluator(mlp_model(), feeds, level, 1e-4, 1e-5,
                                                             {}, Precision::BF16);
        EXPECT_EQ(count_op(built, Op::MatMulBF16), 2) << "-O" << level;
    }
}

// A 3x3 conv of `channels` channels: at -O3 in bf16, from 128 channels Winograd F(2x2) with
// its batched product in bf16 (the transforms in f32), below F(4x4) all in f32.
std::string wide_conv_model(int64_t channels = 128, int64_t h = 13, int64_t w = 11) {
    ModelBuilder m(13);
    m.input("x", DType::F32, {1, channels, h, w});
    m.initializer("W", testing::random_tensor({channels, channels, 3, 3}, 41, -0.05f, 0.05f));
    m.initializer("B", testing::random_tensor({channels}, 42));
    m.node("Conv", {"x", "W", "B"}, {"c"}).ints("kernel_shape", {3, 3}).ints("pads", {1, 1, 1, 1});
    m.node("Relu", {"c"}, {"y"});
    m.output("y", DType::F32);
    return m.bytes();
}

TEST(PrecisionPass, Bf16WinogradLibraryMatchesTheEvaluatorOfItsGraph) {
    const Graph built = expect_library_matches_evaluator(
        wide_conv_model(), {testing::random_tensor({1, 128, 13, 11}, 9)}, 3, 1e-4, 1e-4, {},
        Precision::BF16);
    EXPECT_EQ(count_op(built, Op::WinogradInput), 1);
    ASSERT_EQ(count_op(built, Op::MatMulBF16), 1);
    EXPECT_EQ(built.value(first_node(built, Op::WinogradInput).inputs[1]).shape, (Shape{4, 4}))
        << "F(2x2) only in bf16";
    EXPECT_EQ(count_op(built, Op::ConvBF16Blocked), 0);

    // 64 channels, 7x6 tiles of 4x4: F(4x4), whose product stays f32.
    const Graph f4 = expect_library_matches_evaluator(wide_conv_model(64, 27, 23),
                                                      {testing::random_tensor({1, 64, 27, 23}, 9)},
                                                      3, 1e-4, 1e-4, {}, Precision::BF16);
    ASSERT_EQ(count_op(f4, Op::WinogradInput), 1);
    EXPECT_EQ(f4.value(first_node(f4, Op::WinogradInput).inputs[1]).shape, (Shape{6, 6}));
    EXPECT_EQ(count_op(f4, Op::MatMul), 1);
    EXPECT_EQ(count_op(f4, Op::MatMulBF16), 0);
}

TEST(PrecisionPass, Fp16StoresLargeProductWeightsInHalfAndLeavesTheRest) {
    GraphBuilder b;
    const ValueId x = b.input("x", {3, 40});
    TensorData w_big = testing::random_tensor({40, 30}, 5); // 4800 bytes: stored
    TensorData w_wide = testing::random_tensor({30, 20}, 6, -1.0f, 1.0f);
    w_wide.data<float>()[7] = 1.0e5f;                              // beyond f16: stays f32
    const TensorData w_small = testing::random_tensor({20, 5}, 7); // 400 bytes: stays f32
    const TensorData bias = testing::random_tensor({40, 30}, 8);   // read by an Add: stays
    const ValueId big = b.constant(w_big), wide = b.constant(w_wide), small = b.constant(w_small),
                  shift = b.constant(bias);
    const ValueId h = b.op(Op::Relu, {b.op(Op::MatMul, {x, big})});
    const ValueId y = b.op(Op::MatMul, {b.op(Op::MatMul, {h, wide}), small});
    const ValueId z = b.op(Op::Add, {shift, shift});
    Graph g = b.finish({y, z});
    const Graph before = g;
    // f16 rounding of the weights: relative 2^-11 each, sums of 40 products.
    const PassResult r = check_pass(
        g, [](Graph& gr) { return convert_precision_fp16(gr, 1000); }, 7, 2e-3);
    EXPECT_EQ(r.changes, 1);
    EXPECT_TRUE(g.value(big).stored_f16);
    EXPECT_FALSE(g.value(wide).stored_f16);
    EXPECT_FALSE(g.value(small).stored_f16);
    EXPECT_FALSE(g.value(shift).stored_f16);
    EXPECT_EQ(g.num_nodes(), before.num_nodes()) << "the graph keeps its ops";
    // The stored values are the f16 nearest to the weights, so the graph computes exactly
    // what the f32 graph computes on f16-rounded weights.
    const float* stored = g.value(big).constant->data<float>();
    for (int64_t i = 0; i < w_big.numel(); ++i) {
        const float want = f16_bits_to_f32(f32_to_f16_bits(w_big.data<float>()[i]));
        ASSERT_EQ(stored[i], want) << i;
        w_big.data<float>()[i] = want;
    }
    Graph rounded = before;
    rounded.value(big).constant = std::make_shared<const TensorData>(w_big);
    const std::vector<TensorData> in = {testing::random_tensor({3, 40}, 12)};
    EXPECT_EQ(evaluate(g, in)[0], evaluate(rounded, in)[0]);
    // Run again, nothing is left to store.
    EXPECT_EQ(convert_precision_fp16(g, 1000).changes, 0);
}

// A dense layer and a 256-channel 3x3 conv whose weights (2.1 and 2.4 MB in f32) exceed a
// core's L2 cache, so that an fp16 build stores them in f16 on any host.
std::string fp16_model() {
    ModelBuilder m(13);
    m.input("x", DType::F32, {1, 256, 9, 7});
    m.input("v", DType::F32, {5, 1030});
    m.initializer("W", testing::random_tensor({256, 256, 3, 3}, 51, -0.05f, 0.05f));
    m.initializer("B", testing::random_tensor({256}, 52));
    m.initializer("D", testing::random_tensor({1030, 520}, 53, -0.1f, 0.1f));
    m.node("Conv", {"x", "W", "B"}, {"c"}).ints("kernel_shape", {3, 3}).ints("pads", {1, 1, 1, 1});
    m.node("Relu", {"c"}, {"y"});
    m.node("MatMul", {"v", "D"}, {"d"});
    m.output("y", DType::F32);
    m.output("d", DType::F32);
    return m.bytes();
}

TEST(PrecisionPass, Fp16LibraryReadsItsHalfWeightsAsTheEvaluatorOfItsGraph) {
    const std::vector<TensorData> feeds = {testing::random_tensor({1, 256, 9, 7}, 61),
                                           testing::random_tensor({5, 1030}, 62)};
    for (int level : {0, 3}) {
        // The same products in another order: f32 rounding of sums of ~2300 terms.
        const Graph built = expect_library_matches_evaluator(fp16_model(), feeds, level, 1e-4, 1e-4,
                                                             {}, Precision::FP16);
        int stored = 0;
        for (size_t v = 0; v < built.num_values(); ++v)
            stored += built.value(static_cast<ValueId>(v)).stored_f16;
        // The conv's weights (at -O3 its Winograd transform) and the dense layer's.
        EXPECT_EQ(stored, 2) << "-O" << level;
    }
}

} // namespace
} // namespace tessera::graph
