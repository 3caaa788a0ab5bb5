// The blocked bf16 convolution: ConvBF16Blocked's evaluator (plain and folded forms) against an
// f32 convolution of bf16-rounded operands, the kernels of PackBF16Blocked and ConvBF16Blocked
// against the evaluator (odd extents, pads, strides, dilations, channels past a block), the
// precision pass on blocked convs checked by evaluation before and after, and a CNN built with
// --precision bf16 against the evaluator of its graph.
#include <gtest/gtest.h>

#include "../../src/graph/ops/bf16_conv.h"
#include "../../src/graph/ops/blocked_layout.h"
#include "op_case.h"
#include "passes_util.h"
#include "tessera/graph/evaluate.h"
#include "tessera/support/bfloat16.h"
#include "tessera/te/op_library.h"

namespace tessera::graph {
namespace {

using detail::block_conv_weight;
using detail::pack_bf16_conv_weight_words;
using testing::ModelBuilder;

/// Each operand's bf16 rounding is relative 2^-9: 1% of the outputs' peak covers a sum of
/// products with a margin (as in the matmul's tests).
constexpr double kBf16ScaleTol = 1e-2;

TensorData rounded(const TensorData& t) {
    TensorData r = t;
    for (int64_t i = 0; i < r.numel(); ++i)
        r.data<float>()[i] = bf16_bits_to_f32(f32_to_bf16_bits(t.data<float>()[i]));
    return r;
}

Attributes window(std::vector<int64_t> kernel, std::vector<int64_t> strides,
                  std::vector<int64_t> dilations, std::vector<int64_t> pads) {
    return {{"kernel_shape", Attribute::of_ints(std::move(kernel))},
            {"strides", Attribute::of_ints(std::move(strides))},
            {"dilations", Attribute::of_ints(std::move(dilations))},
            {"pads", Attribute::of_ints(std::move(pads))}};
}

// x [N, C, H, W] through LayoutToBlocked (block xb), PackBF16Blocked (pads, out block, merged or
// not) and ConvBF16Blocked (folded when merged) on w [K, C, R, S] and bias [K], to NCHW; against
// Conv on bf16-rounded x and w: the same products, summed in another order.
void expect_matches_rounded_conv(int64_t xb, int64_t out_block, bool fold, const Shape& xs,
                                 const Shape& ws, const Attributes& win, uint64_t seed) {
    const TensorData x = testing::random_tensor(xs, seed);
    const TensorData w = testing::random_tensor(ws, seed + 1);
    const TensorData bias = testing::random_tensor({ws[0]}, seed + 2);
    const int64_t block = 8;

    GraphBuilder ref;
    const ValueId y_ref =
        ref.op(Op::Conv, {ref.input("x", xs), ref.constant(rounded(w)), ref.constant(bias)}, win);
    const TensorData want = evaluate(ref.finish({y_ref}), {rounded(x)})[0];

    GraphBuilder b;
    const ValueId xb_v =
        b.op(Op::LayoutToBlocked, {b.input("x", xs)}, {{"block", Attribute::of_int(xb)}});
    Attributes pack = {{"pads", win.at("pads")}, {"out_block", Attribute::of_int(out_block)}};
    if (fold)
        pack["merge_width"] = Attribute::of_int(1);
    const ValueId packed = b.op(Op::PackBF16Blocked, {xb_v}, pack);
    Attributes conv = {{"kernel_shape", win.at("kernel_shape")},
                       {"strides", win.at("strides")},
                       {"dilations", win.at("dilations")},
                       {"block", Attribute::of_int(block)}};
    if (fold)
        conv["pixel_block"] = Attribute::of_int(out_block);
    const ValueId y =
        b.op(Op::ConvBF16Blocked,
             {packed, b.constant(pack_bf16_conv_weight_words(w, block, out_block, fold)),
              b.constant(detail::block_channel_vector(bias, block))},
             conv);
    const ValueId out =
        b.op(Op::LayoutFromBlocked, {y},
             {{"channels", Attribute::of_int(ws[0])}, {"block", Attribute::of_int(block)}});
    const TensorData got = evaluate(b.finish({out}), {x})[0];
    ASSERT_EQ(got.shape(), want.shape());
    const testing::Closeness c = testing::compare(got, want, 1e-4, 1e-5);
    EXPECT_TRUE(c.ok) << c.message;
}

TEST(Bf16ConvTest, EvaluatorMatchesAConvOfRoundedOperands) {
    // 20 channels in blocks of 4 packed into blocks of 6 (the last one partly past them),
    // asymmetric pads, stride 2 rows, dilation 2 columns.
    expect_matches_rounded_conv(4, 6, false, {2, 20, 7, 9}, {11, 20, 3, 2},
                                window({3, 2}, {2, 1}, {1, 2}, {1, 0, 2, 1}), 1);
    // 32 channels in blocks of 16 as one block of 32 (a tile row), 3x3 pads 1.
    expect_matches_rounded_conv(16, 32, false, {1, 32, 6, 5}, {9, 32, 3, 3},
                                window({3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}), 4);
}

TEST(Bf16ConvTest, FoldedFormMatchesAConvOfRoundedOperands) {
    // An image's 3 channels as one pixel block of 4, a 5x5 window of stride 2 folded into runs
    // of 10 words; dilated rows.
    expect_matches_rounded_conv(3, 4, true, {1, 3, 11, 13}, {10, 3, 5, 5},
                                window({5, 5}, {2, 2}, {2, 1}, {2, 2, 1, 2}), 7);
    // The same 3 channels side by side (pixel block 3): runs of 8 words for 15 values, the last
    // word's high half the next pixel's (weight 0). Its row ends with its last window (no
    // spare column: the run's last half is the row's zero tail).
    expect_matches_rounded_conv(3, 3, true, {1, 3, 11, 13}, {10, 3, 5, 5},
                                window({5, 5}, {2, 2}, {2, 1}, {2, 2, 1, 2}), 8);
    expect_matches_rounded_conv(3, 3, true, {1, 3, 9, 9}, {7, 3, 3, 3},
                                window({3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0}), 9);
}

TEST(Bf16ConvTest, OddPixelBlockRowsEndInWholeWordsOfZeros) {
    // 3 channels of 5 padded pixels: 15 values, then one zero to a whole word and one word more
    // for a run's half past the row's last window.
    EXPECT_EQ(te::bf16_merged_row_elements(5, 3), 16);
    EXPECT_EQ(te::bf16_merged_row_elements(6, 3), 20);
    EXPECT_EQ(te::bf16_merged_row_elements(5, 4), 20); // even blocks: whole words already
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 1, 2, 3, 3});
    const ValueId p = b.op(Op::PackBF16Blocked, {x},
                           {{"pads", Attribute::of_ints({0, 1, 0, 1})},
                            {"out_block", Attribute::of_int(3)},
                            {"merge_width", Attribute::of_int(1)}});
    TensorData in = testing::random_tensor({1, 1, 2, 3, 3}, 5);
    const TensorData got = evaluate(b.finish({p}), {in})[0];
    ASSERT_EQ(got.shape(), (Shape{1, 1, 2, 16}));
    const BFloat16* g = got.data<BFloat16>();
    for (int64_t h = 0; h < 2; ++h)
        for (int64_t e = 0; e < 16; ++e) {
            const int64_t pixel = e / 3 - 1, c = e % 3;
            const float want =
                e < 15 && pixel >= 0 && pixel < 3
                    ? bf16_bits_to_f32(f32_to_bf16_bits(in.data<float>()[(h * 3 + pixel) * 3 + c]))
                    : 0.0f;
            EXPECT_EQ(float(g[h * 16 + e]), want) << "row " << h << " element " << e;
        }
}

TEST(Bf16ConvTest, FoldedWeightRunsHoldOddPixelsSideBySide) {
    // 2 output channels, 3 input channels, a 1x3 window: runs of 5 words for 9 values.
    TensorData w(DType::F32, {2, 3, 1, 3});
    for (int64_t i = 0; i < 18; ++i)
        w.data<float>()[i] = float(i + 1);
    const TensorData words = pack_bf16_conv_weight_words(w, 2, 3, true);
    ASSERT_EQ(words.shape(), (Shape{1, 1, 1, 5, 2}));
    const auto* p = reinterpret_cast<const uint16_t*>(words.data<int32_t>());
    for (int64_t k = 0; k < 2; ++k)
        for (int64_t e = 0; e < 10; ++e) {
            // Element e of the run: tap e / 3, channel e % 3; OIHW index (k * 3 + c) * 3 + tap.
            const float want = e < 9 ? float((k * 3 + e % 3) * 3 + e / 3 + 1) : 0.0f;
            EXPECT_EQ(bf16_bits_to_f32(p[((e / 2) * 2 + k) * 2 + e % 2]), want)
                << "output " << k << " element " << e;
        }
}

TEST(Bf16ConvTest, WeightWordsHoldChannelPairsLowHalfFirst) {
    TensorData w(DType::F32, {1, 3, 1, 1});
    w.data<float>()[0] = 1.0f, w.data<float>()[1] = -2.0f, w.data<float>()[2] = 0.5f;
    const TensorData words = pack_bf16_conv_weight_words(w, 1, 4);
    ASSERT_EQ(words.shape(), (Shape{1, 1, 1, 1, 2, 1}));
    const auto* p = words.data<int32_t>();
    EXPECT_EQ(static_cast<uint32_t>(p[0]), 0xC0003F80u); // -2 (high), 1 (low)
    EXPECT_EQ(static_cast<uint32_t>(p[1]), 0x00003F00u); // channel 3 past C is 0
}

TEST(Bf16ConvTest, ShapeErrorsNameTheNode) {
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 1, 5, 5, 4}, DType::BF16);
    // Weights of 3 words per pixel for a block of 4 channels (2 words).
    b.op(Op::ConvBF16Blocked, {x, b.constant(ints({1, 1, 3, 3, 3, 8}, 1, -9, 9).cast(DType::I32))},
         {{"kernel_shape", Attribute::of_ints({3, 3})}, {"block", Attribute::of_int(8)}});
    try {
        b.finish({});
        FAIL() << "expected a shape error";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("ConvBF16Blocked"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("does not match X"), std::string::npos) << e.what();
    }
}

// The kernels against the evaluator.
std::vector<OpCase> bf16_conv_op_cases() {
    return {
        {"PackBF16BlockedPaddedIntoWiderBlocks",
         {Op::PackBF16Blocked},
         [](Case& c) -> std::vector<ValueId> {
             // 3 blocks of 8 channels as blocks of 16 (the second half past them), odd extents.
             return {c.op(Op::PackBF16Blocked, {c.input(floats({2, 3, 5, 7, 8}, 91))},
                          {{"pads", Is({1, 2, 0, 1})}, {"out_block", I(16)}})};
         }},
        {"PackBF16BlockedMergedWidth",
         {Op::PackBF16Blocked},
         [](Case& c) -> std::vector<ValueId> {
             return {
                 c.op(Op::PackBF16Blocked, {c.input(floats({1, 1, 6, 5, 3}, 92))},
                      {{"pads", Is({3, 3, 2, 2})}, {"out_block", I(4)}, {"merge_width", I(1)}})};
         }},
        {"ConvBF16BlockedStridedWithBias",
         {Op::PackBF16Blocked, Op::ConvBF16Blocked},
         [](Case& c) -> std::vector<ValueId> {
             c.atol = 1e-4; // f32 sums of 288 products in another order
             const ValueId packed =
                 c.op(Op::PackBF16Blocked, {c.input(floats({1, 2, 9, 7, 16}, 93))},
                      {{"pads", Is({1, 1, 1, 1})}, {"out_block", I(32)}});
             const TensorData w = floats({48, 32, 3, 3}, 94);
             return {
                 c.op(Op::ConvBF16Blocked,
                      {packed, c.constant(pack_bf16_conv_weight_words(w, 16, 32)),
                       c.constant(floats({3, 16}, 95))},
                      {{"kernel_shape", Is({3, 3})}, {"strides", Is({2, 2})}, {"block", I(16)}})};
         }},
        {"ConvBF16BlockedDilatedNoBias",
         {Op::ConvBF16Blocked},
         [](Case& c) -> std::vector<ValueId> {
             c.atol = 1e-4;
             const TensorData w = floats({8, 12, 2, 3}, 96); // 2 blocks of 6 channels
             return {
                 c.op(Op::ConvBF16Blocked,
                      {c.input(floats({1, 2, 7, 9, 6}, 97).cast(DType::BF16)),
                       c.constant(pack_bf16_conv_weight_words(w, 8, 6))},
                      {{"kernel_shape", Is({2, 3})}, {"dilations", Is({2, 2})}, {"block", I(8)}})};
         }},
        {"ConvBF16BlockedFolded",
         {Op::PackBF16Blocked, Op::ConvBF16Blocked},
         [](Case& c) -> std::vector<ValueId> {
             // An image's 3 channels, a 7x7 window of stride 2 as runs of 14 words: the stem.
             c.atol = 1e-4;
             const ValueId packed =
                 c.op(Op::PackBF16Blocked, {c.input(floats({1, 1, 21, 19, 3}, 98))},
                      {{"pads", Is({3, 3, 3, 3})}, {"out_block", I(4)}, {"merge_width", I(1)}});
             const TensorData w = floats({32, 3, 7, 7}, 99);
             return {c.op(Op::ConvBF16Blocked,
                          {packed, c.constant(pack_bf16_conv_weight_words(w, 16, 4, true)),
                           c.constant(floats({2, 16}, 100))},
                          {{"kernel_shape", Is({7, 7})},
                           {"strides", Is({2, 2})},
                           {"block", I(16)},
                           {"pixel_block", I(4)}})};
         }},
        {"ConvBF16BlockedFoldedOddPixels",
         {Op::PackBF16Blocked, Op::ConvBF16Blocked},
         [](Case& c) -> std::vector<ValueId> {
             // The stem with its 3 channels side by side: runs of 11 words for 21 values.
             c.atol = 1e-4;
             const ValueId packed =
                 c.op(Op::PackBF16Blocked, {c.input(floats({1, 1, 21, 19, 3}, 101))},
                      {{"pads", Is({3, 3, 3, 3})}, {"out_block", I(3)}, {"merge_width", I(1)}});
             const TensorData w = floats({32, 3, 7, 7}, 102);
             return {c.op(Op::ConvBF16Blocked,
                          {packed, c.constant(pack_bf16_conv_weight_words(w, 16, 3, true)),
                           c.constant(floats({2, 16}, 103))},
                          {{"kernel_shape", Is({7, 7})},
                           {"strides", Is({2, 2})},
                           {"block", I(16)},
                           {"pixel_block", I(3)}})};
         }},
    };
}
TESSERA_REGISTER_OP_CASES(bf16_conv_op_cases);

// Conv (image of 3 channels, 7x7 stride 2) -> Relu -> Conv 3x3 (32 channels) -> Add the first's
// output: a stem and a residual block.
Graph stem_and_block() {
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 3, 17, 15});
    const ValueId stem = b.op(
        Op::Relu, {b.op(Op::Conv, {x, b.constant_f32({32, 3, 7, 7}, 2), b.constant_f32({32}, 3)},
                        window({7, 7}, {2, 2}, {1, 1}, {3, 3, 3, 3}))});
    const ValueId conv = b.op(Op::Conv, {stem, b.constant_f32({32, 32, 3, 3}, 4)},
                              window({3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}));
    return b.finish({b.op(Op::Add, {conv, stem})});
}

TEST(PrecisionPass, BlockedConvsComputeOnBf16Operands) {
    Graph g = stem_and_block();
    convert_layout_nchwc(g, 16);
    ASSERT_EQ(count_op(g, Op::ConvBlocked), 2);
    const PassResult r = check_pass(g, convert_precision_bf16, 5, kBf16ScaleTol);
    EXPECT_EQ(r.changes, 2);
    EXPECT_EQ(count_op(g, Op::ConvBlocked), 0);
    EXPECT_EQ(count_op(g, Op::ConvBF16Blocked), 2);
    EXPECT_EQ(count_op(g, Op::PackBF16Blocked), 2);
    int folded = 0;
    for (NodeId id : g.node_ids())
        if (g.node(id).op == Op::ConvBF16Blocked)
            folded += g.node(id).attr_int("pixel_block", 0) == 3;
    EXPECT_EQ(folded, 1) << "the image's conv reads window rows of its 3 channels as runs of words";
}

TEST(PrecisionPass, AOneChannelImageKeepsItsZeroChannelWhenFolded) {
    // One channel at stride 2: side by side, a 3-wide window row would be a run of 2 words,
    // as a 4-wide one's; the pixels get a zero second channel instead (pixel block 2).
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 1, 11, 12});
    Graph g = b.finish({b.op(Op::Conv, {x, b.constant_f32({16, 1, 3, 3}, 2)},
                             window({3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}))});
    convert_layout_nchwc(g, 16);
    EXPECT_EQ(check_pass(g, convert_precision_bf16, 5, kBf16ScaleTol).changes, 1);
    for (NodeId id : g.node_ids()) {
        if (g.node(id).op == Op::ConvBF16Blocked) {
            EXPECT_EQ(g.node(id).attr_int("pixel_block", 0), 2);
        }
    }
}

TEST(PrecisionPass, AnImageConvOfColumnStrideOneFoldsWholeWordsPerPixel) {
    // Stride 1 x 3 channels is odd: runs would start inside words, so the pixels get a zero
    // fourth channel (2 words each).
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 3, 9, 8});
    Graph g = b.finish({b.op(Op::Conv, {x, b.constant_f32({16, 3, 3, 3}, 2)},
                             window({3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}))});
    convert_layout_nchwc(g, 16);
    EXPECT_EQ(check_pass(g, convert_precision_bf16, 5, kBf16ScaleTol).changes, 1);
    for (NodeId id : g.node_ids()) {
        if (g.node(id).op == Op::ConvBF16Blocked) {
            EXPECT_EQ(g.node(id).attr_int("pixel_block", 0), 4);
        }
    }
}

TEST(PrecisionPass, DepthwiseConvsStayF32) {
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 16, 9, 9});
    Attributes a = window({3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1});
    a["group"] = Attribute::of_int(16);
    Graph g = b.finish({b.op(Op::Conv, {x, b.constant_f32({16, 1, 3, 3}, 2)}, a)});
    convert_layout_nchwc(g, 16);
    ASSERT_EQ(count_op(g, Op::ConvBlocked), 1);
    EXPECT_EQ(check_pass(g, convert_precision_bf16).changes, 0);
}

std::string cnn_model() {
    ModelBuilder m(13);
    m.input("x", DType::F32, {1, 3, 19, 17});
    m.initializer("W1", testing::random_tensor({16, 3, 5, 5}, 31, -0.3f, 0.3f));
    m.initializer("B1", testing::random_tensor({16}, 32));
    m.initializer("W2", testing::random_tensor({32, 16, 3, 3}, 33, -0.2f, 0.2f));
    m.node("Conv", {"x", "W1", "B1"}, {"c1"})
        .ints("kernel_shape", {5, 5})
        .ints("strides", {2, 2})
        .ints("pads", {2, 2, 2, 2});
    m.node("Relu", {"c1"}, {"r1"});
    m.node("Conv", {"r1", "W2"}, {"c2"}).ints("kernel_shape", {3, 3}).ints("pads", {1, 1, 1, 1});
    m.node("Relu", {"c2"}, {"y"});
    m.output("y", DType::F32);
    return m.bytes();
}

TEST(PrecisionPass, Bf16CnnLibraryMatchesTheEvaluatorOfItsGraph) {
    const Graph built =
        expect_library_matches_evaluator(cnn_model(), {testing::random_tensor({1, 3, 19, 17}, 9)},
                                         3, 1e-4, 1e-4, {}, Precision::BF16);
    EXPECT_EQ(count_op(built, Op::ConvBF16Blocked), 2);
}

} // namespace
} // namespace tessera::graph
