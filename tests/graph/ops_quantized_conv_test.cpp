// The 8-bit convolution: QConv's evaluator (dense and depthwise) against a naive int32
// reference, its kernels and those of PackU8Words, QConvBlocked and QDepthwiseBlocked against
// the evaluator (odd shapes, pads, strides,
// weights and zero points over the whole byte range), the quantized-ops pass and the layout
// pass on QDQ graphs checked by evaluation before and after, and a QDQ model built into a
// library at every level.
#include <gtest/gtest.h>

#include <cmath>

#include "../../src/graph/ops/blocked_layout.h"
#include "../../src/graph/ops/quantized_conv.h"
#include "../../src/graph/ops/quantized_matmul.h"
#include "graph_test_util.h"
#include "op_case.h"
#include "tessera/graph/evaluate.h"
#include "tessera/graph/fusion.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/graph/memory_plan.h"

namespace tessera::graph {
namespace {

using detail::dot4_u8s8_reference;
using detail::pack_conv_weight_words;
using detail::pack_matmul_weight_words;
using testing::ModelBuilder;

TensorData u8_image(const Shape& s, uint64_t seed) { return ints(s, seed, 0, 255).cast(DType::U8); }
TensorData s8_weights(const Shape& s, uint64_t seed) {
    return ints(s, seed, -128, 127).cast(DType::I8);
}

TEST(QConvTest, Dot4ReferenceReadsUnsignedTimesSignedBytes) {
    // a = bytes {1, 2, 255, 128}, b = bytes {-1, 3, -128, 127} (little-endian).
    const auto a = static_cast<int32_t>(0x80FF0201u);
    const auto b = static_cast<int32_t>(0x7F8003FFu);
    EXPECT_EQ(dot4_u8s8_reference(a, b), 1 * -1 + 2 * 3 + 255 * -128 + 128 * 127);
}

TEST(QConvTest, EvaluatorMatchesInt32Reference) {
    const int64_t C = 5, H = 7, W = 9, K = 3, R = 3, S = 2;
    const int64_t zp = 131;
    const TensorData x = u8_image({2, C, H, W}, 1);
    const TensorData w = s8_weights({K, C, R, S}, 2);
    const TensorData off = ints({K}, 3, -5000, 5000).cast(DType::I32);
    const TensorData sc = floats({K}, 4, 1e-4f, 1e-3f);
    GraphBuilder b;
    const ValueId y =
        b.op(Op::QConv,
             {b.input("x", x.shape(), DType::U8), b.constant(w), b.constant(off), b.constant(sc)},
             {{"kernel_shape", Attribute::of_ints({R, S})},
              {"strides", Attribute::of_ints({2, 1})},
              {"dilations", Attribute::of_ints({1, 2})},
              {"pads", Attribute::of_ints({1, 0, 2, 1})},
              {"x_zero_point", Attribute::of_int(zp)}});
    const TensorData out = evaluate(b.finish({y}), {x})[0];
    const int64_t OH = (H + 3 - R) / 2 + 1, OW = W + 1 - (2 * (S - 1) + 1) + 1;
    ASSERT_EQ(out.shape(), (Shape{2, K, OH, OW}));
    const uint8_t* px = x.data<uint8_t>();
    const int8_t* pw = w.data<int8_t>();
    for (int64_t n = 0; n < 2; ++n)
        for (int64_t k = 0; k < K; ++k)
            for (int64_t oh = 0; oh < OH; ++oh)
                for (int64_t ow = 0; ow < OW; ++ow) {
                    int64_t acc = 0;
                    for (int64_t c = 0; c < C; ++c)
                        for (int64_t r = 0; r < R; ++r)
                            for (int64_t s = 0; s < S; ++s) {
                                const int64_t h = oh * 2 - 1 + r, v = ow + 2 * s;
                                const int64_t xv = h < 0 || h >= H || v < 0 || v >= W
                                                       ? zp
                                                       : px[((n * C + c) * H + h) * W + v];
                                acc += xv * pw[((k * C + c) * R + r) * S + s];
                            }
                    const float want =
                        static_cast<float>(acc + off.data<int32_t>()[k]) * sc.data<float>()[k];
                    EXPECT_EQ(out.data<float>()[((n * K + k) * OH + oh) * OW + ow], want);
                }
}

TEST(QConvTest, DepthwiseEvaluatorMatchesInt32Reference) {
    // group == C: output channel k reads input channel k only.
    const int64_t C = 5, H = 6, W = 7, R = 3, S = 3, zp = 9;
    const TensorData x = u8_image({1, C, H, W}, 11);
    const TensorData w = s8_weights({C, 1, R, S}, 12);
    const TensorData off = ints({C}, 13, -5000, 5000).cast(DType::I32);
    const TensorData sc = floats({C}, 14, 1e-4f, 1e-3f);
    GraphBuilder b;
    const ValueId y =
        b.op(Op::QConv,
             {b.input("x", x.shape(), DType::U8), b.constant(w), b.constant(off), b.constant(sc)},
             {{"kernel_shape", Attribute::of_ints({R, S})},
              {"strides", Attribute::of_ints({2, 1})},
              {"pads", Attribute::of_ints({1, 1, 1, 0})},
              {"group", Attribute::of_int(C)},
              {"x_zero_point", Attribute::of_int(zp)}});
    const TensorData out = evaluate(b.finish({y}), {x})[0];
    const int64_t OH = (H + 2 - R) / 2 + 1, OW = W + 1 - S + 1;
    ASSERT_EQ(out.shape(), (Shape{1, C, OH, OW}));
    for (int64_t k = 0; k < C; ++k)
        for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t ow = 0; ow < OW; ++ow) {
                int64_t acc = 0;
                for (int64_t r = 0; r < R; ++r)
                    for (int64_t s = 0; s < S; ++s) {
                        const int64_t h = oh * 2 - 1 + r, v = ow - 1 + s;
                        const int64_t xv = h < 0 || h >= H || v < 0 || v >= W
                                               ? zp
                                               : x.data<uint8_t>()[(k * H + h) * W + v];
                        acc += xv * w.data<int8_t>()[(k * R + r) * S + s];
                    }
                EXPECT_EQ(out.data<float>()[(k * OH + oh) * OW + ow],
                          static_cast<float>(acc + off.data<int32_t>()[k]) * sc.data<float>()[k]);
            }
}

TEST(QConvTest, BlockedDepthwiseComputesTheSameValues) {
    // 21 channels in blocks of 8 (the last padded), f32 weights and offsets holding the s8
    // and i32 values: the f32 sums are the integer ones, to the bit.
    const int64_t C = 21, block = 8, zp = 250;
    const TensorData x = u8_image({1, C, 7, 9}, 15);
    const TensorData w = s8_weights({C, 1, 3, 3}, 16);
    const TensorData off = ints({C}, 17, -100000, 100000).cast(DType::I32);
    const TensorData sc = floats({C}, 18, 1e-4f, 1e-3f);
    const Attributes window = {{"kernel_shape", Attribute::of_ints({3, 3})},
                               {"strides", Attribute::of_ints({2, 1})},
                               {"pads", Attribute::of_ints({1, 0, 1, 2})},
                               {"x_zero_point", Attribute::of_int(zp)}};
    GraphBuilder plain;
    Attributes qa = window;
    qa["group"] = Attribute::of_int(C);
    const ValueId y = plain.op(Op::QConv,
                               {plain.input("x", x.shape(), DType::U8), plain.constant(w),
                                plain.constant(off), plain.constant(sc)},
                               qa);
    const TensorData want = evaluate(plain.finish({y}), {x})[0];
    GraphBuilder blocked;
    const ValueId xb = blocked.op(Op::LayoutToBlocked, {blocked.input("x", x.shape(), DType::U8)},
                                  {{"block", Attribute::of_int(block)}});
    Attributes ba = window;
    ba["block"] = Attribute::of_int(block);
    const ValueId yb = blocked.op(
        Op::QDepthwiseBlocked,
        {xb, blocked.constant(detail::block_conv_weight(w.cast(DType::F32), block, true)),
         blocked.constant(detail::block_channel_vector(off.cast(DType::F32), block)),
         blocked.constant(detail::block_channel_vector(sc, block))},
        ba);
    const ValueId back =
        blocked.op(Op::LayoutFromBlocked, {yb},
                   {{"block", Attribute::of_int(block)}, {"channels", Attribute::of_int(C)}});
    EXPECT_EQ(evaluate(blocked.finish({back}), {x})[0].to_vector<float>(), want.to_vector<float>());
}

TEST(QConvTest, BlockedFormsComputeTheSameValues) {
    // 11 input channels in blocks of 8 (the second padded), and an image of 3 channels read as
    // one block of 4; 13 output channels in blocks of 8.
    for (int64_t C : {11, 3}) {
        const int64_t K = 13, block = 8, in_block = C < block ? 4 : block, zp = 77;
        const TensorData x = u8_image({1, C, 6, 7}, 10 + C);
        const TensorData w = s8_weights({K, C, 3, 3}, 20 + C);
        const TensorData off = ints({K}, 30, -900, 900).cast(DType::I32);
        const TensorData sc = floats({K}, 31, 1e-3f, 1e-2f);
        const Attributes window = {{"kernel_shape", Attribute::of_ints({3, 3})},
                                   {"strides", Attribute::of_ints({1, 2})}};
        GraphBuilder plain;
        Attributes qa = window;
        qa["pads"] = Attribute::of_ints({1, 1, 0, 2});
        qa["x_zero_point"] = Attribute::of_int(zp);
        const ValueId y = plain.op(Op::QConv,
                                   {plain.input("x", x.shape(), DType::U8), plain.constant(w),
                                    plain.constant(off), plain.constant(sc)},
                                   qa);
        const TensorData want = evaluate(plain.finish({y}), {x})[0];

        GraphBuilder blocked;
        const ValueId xb =
            blocked.op(Op::LayoutToBlocked, {blocked.input("x", x.shape(), DType::U8)},
                       {{"block", Attribute::of_int(in_block)}});
        const ValueId words = blocked.op(
            Op::PackU8Words, {xb},
            {{"pads", Attribute::of_ints({1, 1, 0, 2})}, {"pad_byte", Attribute::of_int(zp)}});
        Attributes ba = window;
        ba["block"] = Attribute::of_int(block);
        const ValueId yb =
            blocked.op(Op::QConvBlocked,
                       {words, blocked.constant(pack_conv_weight_words(w, block, in_block)),
                        blocked.constant(detail::block_channel_vector(off, block)),
                        blocked.constant(detail::block_channel_vector(sc, block))},
                       ba);
        const ValueId back =
            blocked.op(Op::LayoutFromBlocked, {yb},
                       {{"block", Attribute::of_int(block)}, {"channels", Attribute::of_int(K)}});
        const TensorData got = evaluate(blocked.finish({back}), {x})[0];
        EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>()) << "C=" << C;
    }
}

TEST(QConvTest, PackedWordsInWiderBlocksHoldConsecutiveChannels) {
    // Two blocks of 8 channels (byte = channel number) as one block of 16 channels: word j
    // holds channels 4j .. 4j + 3, byte i channel 4j + i, across the input blocks.
    TensorData x(DType::U8, {1, 2, 1, 1, 8});
    for (int64_t c = 0; c < 16; ++c)
        x.data<uint8_t>()[c] = static_cast<uint8_t>(c);
    GraphBuilder b;
    const ValueId words = b.op(Op::PackU8Words, {b.input("x", x.shape(), DType::U8)},
                               {{"words_block", Attribute::of_int(16)}});
    const TensorData y = evaluate(b.finish({words}), {x})[0];
    ASSERT_EQ(y.shape(), (Shape{1, 1, 1, 1, 4}));
    for (int64_t j = 0; j < 4; ++j) {
        uint32_t want = 0;
        for (int64_t i = 0; i < 4; ++i)
            want |= uint32_t(4 * j + i) << (8 * i);
        EXPECT_EQ(static_cast<uint32_t>(y.data<int32_t>()[j]), want) << "word " << j;
    }
}

TEST(QConvTest, UnpaddedWordsInTheInputsBlocksAreItsBytesInPlace) {
    // Blocked bytes (from a group of their own) packed twice: without padding, in words of
    // the input's blocks (the same bytes: the pack runs nothing, its operand is a view at
    // offset 0 of its output), and with padding (a copy).
    GraphBuilder b;
    const ValueId x = b.op(Op::LayoutToBlocked, {b.input("x", {1, 32, 5, 7}, DType::U8)},
                           {{"block", Attribute::of_int(16)}});
    const ValueId plain = b.op(Op::PackU8Words, {x}, {{"pad_byte", Attribute::of_int(3)}});
    const ValueId padded =
        b.op(Op::PackU8Words, {x},
             {{"pads", Attribute::of_ints({1, 1, 1, 1})}, {"pad_byte", Attribute::of_int(3)}});
    // A 1x1 conv on the plain words plus a 3x3 conv on the padded ones, 16 outputs each.
    auto conv = [&](ValueId words, int64_t k) {
        const TensorData w = s8_weights({16, 32, k, k}, 90 + k);
        return b.op(
            Op::QConvBlocked,
            {words, b.constant(pack_conv_weight_words(w, 16, 16)),
             b.constant(ints({1, 16}, 91, -100, 100).cast(DType::I32)),
             b.constant(floats({1, 16}, 92, 1e-4f, 1e-3f))},
            {{"kernel_shape", Attribute::of_ints({k, k})}, {"block", Attribute::of_int(16)}});
    };
    const Graph g = b.finish({b.op(Op::Add, {conv(plain, 1), conv(padded, 3)})});
    const std::vector<FusedGroup> groups = fuse_ops(g);
    int in_place = 0;
    for (const FusedGroup& grp : groups) {
        in_place += grp.operands_in_place;
        if (grp.operands_in_place) {
            EXPECT_EQ(grp.outputs.at(0), plain);
        }
    }
    EXPECT_EQ(in_place, 1);
    const MemoryPlan plan = plan_memory(g, groups);
    int views = 0;
    for (const BufferAssignment& a : plan.assignments)
        if (a.view_of >= 0) {
            ++views;
            EXPECT_EQ(a.value, x);
            EXPECT_EQ(a.offset, 0);
            EXPECT_EQ(plan.assignments[static_cast<size_t>(a.view_of)].value, plain);
        }
    EXPECT_EQ(views, 1);
}

TEST(QConvTest, PackedWordsRefuseBlocksThatDoNotTileTheChannels) {
    // 3 blocks of 8 channels: 16 does not divide 24, 12 is no multiple of 8.
    for (int64_t wb : {16, 12}) {
        GraphBuilder b;
        b.op(Op::PackU8Words, {b.input("x", {1, 3, 2, 2, 8}, DType::U8)},
             {{"words_block", Attribute::of_int(wb)}});
        EXPECT_THROW(infer_shapes(b.g), UserError) << "words_block " << wb;
    }
}

// QMatMulActivations of u8 operands x and y (seeded) with zero points zx and zy.
std::function<std::vector<ValueId>(Case&)> qmatmul_activations_case(Shape x, Shape y, int64_t zx,
                                                                    int64_t zy, uint64_t seed) {
    return [=](Case& c) -> std::vector<ValueId> {
        return {c.op(
            Op::QMatMulActivations,
            {c.input(u8_image(x, seed)), c.input(u8_image(y, seed + 1)),
             c.constant(TensorData::from_vector<float>({1}, {3.7e-5f}))},
            {{"x_zero_point", Attribute::of_int(zx)}, {"y_zero_point", Attribute::of_int(zy)}})};
    };
}

std::vector<OpCase> quantized_conv_op_cases() {
    return {
        {"QConvNchw",
         {Op::QConv},
         [](Case& c) -> std::vector<ValueId> {
             return {c.op(Op::QConv,
                          {c.input(u8_image({1, 5, 7, 9}, 41)),
                           c.constant(s8_weights({6, 5, 3, 3}, 42)),
                           c.constant(ints({6}, 43, -3000, 3000).cast(DType::I32)),
                           c.constant(floats({6}, 44, 1e-4f, 1e-3f))},
                          {{"kernel_shape", Is({3, 3})},
                           {"strides", Is({2, 1})},
                           {"pads", Is({1, 1, 1, 0})},
                           {"x_zero_point", I(200)}})};
         }},
        {"QConvNchwDepthwise",
         {Op::QConv},
         [](Case& c) -> std::vector<ValueId> {
             return {c.op(Op::QConv,
                          {c.input(u8_image({1, 6, 7, 9}, 45)),
                           c.constant(s8_weights({6, 1, 3, 3}, 46)),
                           c.constant(ints({6}, 47, -3000, 3000).cast(DType::I32)),
                           c.constant(floats({6}, 48, 1e-4f, 1e-3f))},
                          {{"kernel_shape", Is({3, 3})},
                           {"pads", Is({1, 1, 1, 1})},
                           {"group", I(6)},
                           {"x_zero_point", I(33)}})};
         }},
        {"QDepthwiseBlocked",
         {Op::QDepthwiseBlocked},
         [](Case& c) -> std::vector<ValueId> {
             // 3 blocks of 16 channels, odd extents, stride 2, uneven pads.
             const TensorData w = s8_weights({48, 1, 3, 3}, 49).cast(DType::F32);
             return {c.op(Op::QDepthwiseBlocked,
                          {c.input(u8_image({1, 3, 9, 11, 16}, 50)),
                           c.constant(detail::block_conv_weight(w, 16, true)),
                           c.constant(ints({3, 16}, 60, -90000, 90000).cast(DType::F32)),
                           c.constant(floats({3, 16}, 69, 1e-4f, 1e-3f))},
                          {{"kernel_shape", Is({3, 3})},
                           {"strides", Is({2, 2})},
                           {"pads", Is({1, 0, 2, 1})},
                           {"x_zero_point", I(140)},
                           {"block", I(16)}})};
         }},
        {"QConvBlockedOnPackedWords",
         {Op::PackU8Words, Op::QConvBlocked},
         [](Case& c) -> std::vector<ValueId> {
             // 2 blocks of 16 input channels (4 words each), 3 blocks of 16 outputs.
             const ValueId words = c.op(Op::PackU8Words, {c.input(u8_image({1, 2, 5, 9, 16}, 51))},
                                        {{"pads", Is({1, 1, 1, 1})}, {"pad_byte", I(255)}});
             const TensorData w = s8_weights({48, 32, 3, 3}, 52);
             return {c.op(Op::QConvBlocked,
                          {words, c.constant(pack_conv_weight_words(w, 16, 16)),
                           c.constant(ints({3, 16}, 53, -3000, 3000).cast(DType::I32)),
                           c.constant(floats({3, 16}, 54, 1e-4f, 1e-3f))},
                          {{"kernel_shape", Is({3, 3})}, {"block", I(16)}})};
         }},
        {"PackU8WordsInBlocksOf32",
         {Op::PackU8Words},
         [](Case& c) -> std::vector<ValueId> {
             // 4 blocks of 16 channels as 2 blocks of 32 (8 words each), odd extents, pads.
             return {
                 c.op(Op::PackU8Words, {c.input(u8_image({2, 4, 5, 7, 16}, 55))},
                      {{"pads", Is({1, 2, 0, 1})}, {"pad_byte", I(77)}, {"words_block", I(32)}})};
         }},
        // An NCHW image's planes as one word per pixel: 3 channels (byte 3 zero) with pads, and
        // 4 (byte 3 entering signed) without.
        {"PackU8WordsFromThreePlanes",
         {Op::PackU8Words},
         [](Case& c) -> std::vector<ValueId> {
             return {c.op(Op::PackU8Words, {c.input(u8_image({2, 3, 5, 19}, 56))},
                          {{"pads", Is({3, 2, 1, 3})}, {"pad_byte", I(119)}})};
         }},
        {"PackU8WordsFromFourPlanes",
         {Op::PackU8Words},
         [](Case& c) -> std::vector<ValueId> {
             return {c.op(Op::PackU8Words, {c.input(u8_image({1, 4, 7, 17}, 57))})};
         }},
        {"QConvBlockedOnWordBlocksOf64",
         {Op::PackU8Words, Op::QConvBlocked},
         [](Case& c) -> std::vector<ValueId> {
             // 128 channels in blocks of 16 as 2 blocks of 64 (16 words each), 2 blocks of 16
             // outputs.
             const ValueId words =
                 c.op(Op::PackU8Words, {c.input(u8_image({1, 8, 5, 7, 16}, 56))},
                      {{"pads", Is({1, 1, 1, 1})}, {"pad_byte", I(9)}, {"words_block", I(64)}});
             const TensorData w = s8_weights({32, 128, 3, 3}, 57);
             return {c.op(Op::QConvBlocked,
                          {words, c.constant(pack_conv_weight_words(w, 16, 64)),
                           c.constant(ints({2, 16}, 58, -3000, 3000).cast(DType::I32)),
                           c.constant(floats({2, 16}, 59, 1e-4f, 1e-3f))},
                          {{"kernel_shape", Is({3, 3})}, {"block", I(16)}})};
         }},
        {"QConvBlockedOnWordBlocksOf64Strided",
         {Op::PackU8Words, Op::QConvBlocked},
         [](Case& c) -> std::vector<ValueId> {
             // 64 channels in blocks of 16 as one block of 64, stride 2 over odd extents.
             const ValueId words =
                 c.op(Op::PackU8Words, {c.input(u8_image({1, 4, 9, 7, 16}, 65))},
                      {{"pads", Is({0, 1, 1, 0})}, {"pad_byte", I(200)}, {"words_block", I(64)}});
             const TensorData w = s8_weights({16, 64, 3, 3}, 66);
             return {
                 c.op(Op::QConvBlocked,
                      {words, c.constant(pack_conv_weight_words(w, 16, 64)),
                       c.constant(ints({1, 16}, 67, -3000, 3000).cast(DType::I32)),
                       c.constant(floats({1, 16}, 68, 1e-4f, 1e-3f))},
                      {{"kernel_shape", Is({3, 3})}, {"strides", Is({2, 2})}, {"block", I(16)}})};
         }},
        {"QConvBlockedOneByOneStrided",
         {Op::QConvBlocked},
         [](Case& c) -> std::vector<ValueId> {
             // Words straight from an input (any i32 is four bytes), 1x1 stride 2, block 8.
             const TensorData w = s8_weights({8, 12, 1, 1}, 62);
             return {
                 c.op(Op::QConvBlocked,
                      {c.input(ints({1, 1, 7, 7, 3}, 61, INT32_MIN, INT32_MAX).cast(DType::I32)),
                       c.constant(pack_conv_weight_words(w, 8, 12)),
                       c.constant(ints({1, 8}, 63, -100, 100).cast(DType::I32)),
                       c.constant(floats({1, 8}, 64, 1e-4f, 1e-3f))},
                      {{"kernel_shape", Is({1, 1})}, {"strides", Is({2, 2})}, {"block", I(8)}})};
         }},
        {"QMatMulOddColumns",
         {Op::QMatMul},
         [](Case& c) -> std::vector<ValueId> {
             // 13 columns: the last word holds one of them and three zero bytes.
             const TensorData w = s8_weights({13, 37}, 72);
             return {c.op(Op::QMatMul, {c.input(u8_image({2, 5, 13}, 71)),
                                        c.constant(detail::pack_matmul_weight_words(w)),
                                        c.constant(ints({37}, 73, -3000, 3000).cast(DType::I32)),
                                        c.constant(floats({37}, 74, 1e-4f, 1e-3f))})};
         }},
        // Two computed operands: attention heads with both zero points' corrections; odd rows
        // and columns with the zero points that drop them (0 and 128, a softmax's and a
        // centred value's); one word of the reduction at the zero points' extremes.
        {"QMatMulActivationsAttentionHeads",
         {Op::QMatMulActivations},
         qmatmul_activations_case({1, 2, 33, 64}, {1, 2, 64, 40}, 131, 119, 75)},
        {"QMatMulActivationsOddRowsAndColumns",
         {Op::QMatMulActivations},
         qmatmul_activations_case({3, 21, 8}, {3, 8, 19}, 0, 128, 76)},
        {"QMatMulActivationsOneWord",
         {Op::QMatMulActivations},
         qmatmul_activations_case({5, 4}, {4, 7}, 255, 0, 77)},
    };
}
TESSERA_REGISTER_OP_CASES(quantized_conv_op_cases);

TEST(QMatMulTest, EvaluatorMatchesInt32Reference) {
    const int64_t M = 3, K = 10, N = 7;
    const TensorData x = u8_image({M, K}, 81);
    const TensorData w = s8_weights({K, N}, 82);
    const TensorData off = ints({N}, 83, -500, 500).cast(DType::I32);
    const TensorData sc = floats({N}, 84, 1e-3f, 1e-2f);
    GraphBuilder b;
    const ValueId y = b.op(Op::QMatMul, {b.input("x", x.shape(), DType::U8),
                                         b.constant(detail::pack_matmul_weight_words(w)),
                                         b.constant(off), b.constant(sc)});
    const TensorData out = evaluate(b.finish({y}), {x})[0];
    for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
            int64_t acc = 0;
            for (int64_t k = 0; k < K; ++k)
                acc += int64_t(x.data<uint8_t>()[m * K + k]) * w.data<int8_t>()[k * N + n];
            EXPECT_EQ(out.data<float>()[m * N + n],
                      static_cast<float>(acc + off.data<int32_t>()[n]) * sc.data<float>()[n]);
        }
}

// A QDQ residual block as static quantization writes it: u8 activations per tensor, s8
// weights per output channel, i32 biases dequantized by x_scale * w_scale.
struct QdqBlock {
    ModelBuilder m{13};
    testing::NodeRef conv(const std::string& x, const std::string& y, int64_t C, int64_t K,
                          uint64_t seed, int64_t kernel, int64_t stride) {
        const TensorData ws = floats({K}, seed + 1, 0.002f, 0.01f);
        m.initializer(y + "_w", s8_weights({K, C, kernel, kernel}, seed));
        m.initializer(y + "_ws", ws).initializer(y + "_wz", TensorData(DType::I8, {K}));
        TensorData bs(DType::F32, {K});
        for (int64_t k = 0; k < K; ++k)
            bs.data<float>()[k] = 0.05f * ws.data<float>()[k];
        m.initializer(y + "_b", ints({K}, seed + 2, -4000, 4000).cast(DType::I32));
        m.initializer(y + "_bs", bs).initializer(y + "_bz", TensorData(DType::I32, {K}));
        m.node("DequantizeLinear", {y + "_w", y + "_ws", y + "_wz"}, {y + "_wd"}).i("axis", 0);
        m.node("DequantizeLinear", {y + "_b", y + "_bs", y + "_bz"}, {y + "_bd"}).i("axis", 0);
        return m.node("Conv", {x, y + "_wd", y + "_bd"}, {y})
            .ints("pads", std::vector<int64_t>(4, kernel / 2))
            .ints("strides", {stride, stride});
    }
    void qdq(const std::string& x, const std::string& y) {
        m.node("QuantizeLinear", {x, "as", "az"}, {y + "_q"});
        m.node("DequantizeLinear", {y + "_q", "as", "az"}, {y});
    }
    std::string bytes(int64_t C, int64_t K) {
        m.input("x", DType::F32, {1, C, 9, 11});
        m.initializer("as", TensorData::scalar(0.05f));
        m.initializer("az", TensorData::from_vector<uint8_t>({}, {120}, DType::U8));
        qdq("x", "xd");
        conv("xd", "c1", C, K, 100, 3, 2);
        m.node("Relu", {"c1"}, {"r1"});
        qdq("r1", "r1d");
        conv("r1d", "c2", K, K, 200, 3, 1);
        m.node("Add", {"c2", "r1d"}, {"s"});
        m.node("Relu", {"s"}, {"r2"});
        qdq("r2", "r2d");
        conv("r2d", "c3", K, K, 300, 1, 1);
        m.output("c3", DType::F32);
        return m.bytes();
    }
    /// A MobileNetV2 block: a 1x1 conv to K channels, ReLU, a depthwise 3x3 conv (stride
    /// `stride`), ReLU, each requantized, and a 1x1 conv back to C.
    std::string inverted_residual(int64_t C, int64_t K, int64_t stride, int64_t kernel = 3) {
        m.input("x", DType::F32, {1, C, 9, 11});
        m.initializer("as", TensorData::scalar(0.05f));
        m.initializer("az", TensorData::from_vector<uint8_t>({}, {120}, DType::U8));
        qdq("x", "xd");
        conv("xd", "c1", C, K, 100, 1, 1);
        m.node("Relu", {"c1"}, {"r1"});
        qdq("r1", "r1d");
        conv("r1d", "c2", 1, K, 200, kernel, stride).i("group", K);
        m.node("Relu", {"c2"}, {"r2"});
        qdq("r2", "r2d");
        conv("r2d", "c3", K, C, 300, 1, 1);
        m.output("c3", DType::F32);
        return m.bytes();
    }
    /// A conv, a 3x3 stride-2 MaxPool between QuantizeLinear/DequantizeLinear pairs of the same
    /// parameters (as quantizers write them), and a conv on the pooled bytes.
    std::string pooled(int64_t C, int64_t K) {
        m.input("x", DType::F32, {1, C, 9, 11});
        m.initializer("as", TensorData::scalar(0.05f));
        m.initializer("az", TensorData::from_vector<uint8_t>({}, {120}, DType::U8));
        qdq("x", "xd");
        conv("xd", "c1", C, K, 100, 3, 1);
        qdq("c1", "c1d");
        m.node("MaxPool", {"c1d"}, {"p"})
            .ints("kernel_shape", {3, 3})
            .ints("strides", {2, 2})
            .ints("pads", {1, 1, 1, 1});
        qdq("p", "pd");
        conv("pd", "c2", K, K, 200, 3, 1);
        m.output("c2", DType::F32);
        return m.bytes();
    }
    /// Conv `conv`'s output quantized and dequantized by (cs, cz) into `conv` + "d".
    void requantized(const std::string& conv) {
        m.node("QuantizeLinear", {conv, "cs", "cz"}, {conv + "_q"});
        m.node("DequantizeLinear", {conv + "_q", "cs", "cz"}, {conv + "d"});
    }
    /// The residual blocks below up to their Add: the input x [1, C, 9, 11] quantized by (as,
    /// az) into xd, and (cs, cz) for the convs' requantized outputs, cz a byte of `type`.
    void residual_inputs(int64_t C, DType type, int zero_point) {
        m.input("x", DType::F32, {1, C, 9, 11});
        m.initializer("as", TensorData::scalar(0.05f));
        m.initializer("az", TensorData::from_vector<uint8_t>({}, {120}, DType::U8));
        m.initializer("cs", TensorData::scalar(0.03f));
        m.initializer("cz", type == DType::U8
                                ? TensorData::from_vector<uint8_t>({}, {uint8_t(zero_point)}, type)
                                : TensorData::scalar<int8_t>(int8_t(zero_point)));
        qdq("x", "xd");
    }
    /// After the Add of `a` and `b` (K channels): ReLU, quantized again for a last 1x1 conv.
    std::string residual_end(const std::string& a, const std::string& b, int64_t K) {
        m.node("Add", {a, b}, {"s"});
        m.node("Relu", {"s"}, {"r"});
        qdq("r", "rd");
        conv("rd", "c2", K, K, 200, 1, 1);
        m.output("c2", DType::F32);
        return m.bytes();
    }
    /// A ResNet block with a downsampling shortcut, the shortcut conv first (as ONNX exports
    /// of torchvision's ResNets order it): a 1x1 stride-2 conv of the input, requantized,
    /// added to the main path's 3x3 stride-2 conv, also requantized.
    std::string downsampled(int64_t C, int64_t K) {
        residual_inputs(C, DType::U8, 125);
        conv("xd", "d", C, K, 400, 1, 2);
        requantized("d");
        conv("xd", "c1", C, K, 100, 3, 2);
        requantized("c1");
        return residual_end("c1d", "dd", K);
    }
    /// A ResNet basic block's end as static quantization writes it: the second conv's output
    /// quantized and dequantized (zero point `zero_point`, a byte of `type`), added to the
    /// block's dequantized input, ReLU, quantized again for the next conv.
    std::string residual(int64_t C, DType type, int zero_point) {
        residual_inputs(C, type, zero_point);
        conv("xd", "c1", C, C, 100, 3, 1);
        requantized("c1");
        return residual_end("c1d", "xd", C);
    }
};

TEST(QuantizedOpsPass, FoldsDequantizedConvsAndKeepsValues) {
    for (int64_t C : {3, 20}) {
        Graph g = import_onnx_bytes(QdqBlock().bytes(C, 24), "qdq.onnx");
        const PassResult r = check_pass(g, fold_quantized_ops);
        // The three convs, and the three QuantizeLinears of their inputs by a reciprocal.
        EXPECT_EQ(r.changes, 6) << r.summary;
        int qconvs = 0, convs = 0;
        for (NodeId id : g.node_ids()) {
            qconvs += g.node(id).op == Op::QConv;
            convs += g.node(id).op == Op::Conv;
        }
        EXPECT_EQ(qconvs, 3);
        EXPECT_EQ(convs, 0);
        // Then blocked: QConvBlocked on packed words, values unchanged to the bit.
        for (int64_t block : {8, 16}) {
            Graph b = g;
            const Graph before = b;
            convert_layout_nchwc(b, block);
            int qb = 0;
            for (NodeId id : b.node_ids())
                qb += b.node(id).op == Op::QConvBlocked;
            EXPECT_EQ(qb, 3) << "C=" << C << " block " << block;
            const std::vector<TensorData> in = {floats({1, C, 9, 11}, 5, -3, 3)};
            EXPECT_EQ(evaluate(b, in)[0].to_vector<float>(),
                      evaluate(before, in)[0].to_vector<float>());
        }
    }
}

TEST(QuantizedOpsPass, DepthwiseConvsFoldAndSumBytesInTheBlockedLayout) {
    for (int64_t stride : {1, 2}) {
        const std::string model = QdqBlock().inverted_residual(5, 36, stride);
        Graph g = import_onnx_bytes(model, "qdw.onnx");
        check_pass(g, fold_quantized_ops);
        int depthwise = 0;
        for (NodeId id : g.node_ids())
            depthwise += g.node(id).op == Op::QConv && g.node(id).attr_int("group", 1) == 36;
        EXPECT_EQ(depthwise, 1);
        // Blocked: the depthwise conv reads the bytes the 1x1 conv's requantization writes
        // (no DequantizeLinear left between them), values unchanged to the bit.
        for (int64_t block : {8, 16}) {
            Graph b = g;
            const Graph before = b;
            check_pass(b, [block](Graph& gr) { return convert_layout_nchwc(gr, block); });
            int blocked = 0;
            for (NodeId id : b.node_ids()) {
                const Node& n = b.node(id);
                if (n.op != Op::QDepthwiseBlocked)
                    continue;
                ++blocked;
                EXPECT_EQ(b.value(n.inputs[0]).dtype, DType::U8);
            }
            EXPECT_EQ(blocked, 1) << "stride " << stride << " block " << block;
            const std::vector<TensorData> in = {floats({1, 5, 9, 11}, 7, -3, 3)};
            EXPECT_EQ(evaluate(b, in)[0].to_vector<float>(),
                      evaluate(before, in)[0].to_vector<float>());
        }
        for (int level : {0, 1, 3})
            expect_library_matches_evaluator(model, {floats({1, 5, 9, 11}, 8, -3, 3)}, level, 1e-4,
                                             0.07);
    }
    // 23x23 taps: a sum could pass 2^24, where f32 stops being exact; it stays a f32 conv.
    Graph big = import_onnx_bytes(QdqBlock().inverted_residual(5, 16, 1, 23), "qdw23.onnx");
    check_pass(big, fold_quantized_ops);
    for (NodeId id : big.node_ids())
        EXPECT_FALSE(big.node(id).op == Op::QConv && big.node(id).attr_int("group", 1) != 1);
}

TEST(QuantizedOpsPass, MaxPoolsBetweenQuantizationsPoolTheBytes) {
    Graph g = import_onnx_bytes(QdqBlock().pooled(5, 32), "qpool.onnx");
    const PassResult r = check_pass(g, fold_quantized_ops);
    // Two convs, the pool, the first conv's requantization (only its QuantizeLinear reads
    // it; the second conv's output is the graph's) and the input's quantization by a
    // reciprocal.
    EXPECT_EQ(r.changes, 5) << r.summary;
    int byte_pools = 0;
    for (NodeId id : g.node_ids())
        byte_pools += g.node(id).op == Op::MaxPool &&
                      g.value(g.node(id).inputs[0]).dtype == DType::U8 &&
                      g.value(g.node(id).outputs[0]).dtype == DType::U8;
    EXPECT_EQ(byte_pools, 1);
    // Blocked: the pool of blocked bytes, values unchanged to the bit.
    for (int64_t block : {8, 16}) {
        Graph b = g;
        const Graph before = b;
        convert_layout_nchwc(b, block);
        int blocked = 0;
        for (NodeId id : b.node_ids())
            blocked += b.node(id).op == Op::MaxPoolBlocked &&
                       b.value(b.node(id).outputs[0]).dtype == DType::U8;
        EXPECT_EQ(blocked, 1) << "block " << block;
        const std::vector<TensorData> in = {floats({1, 5, 9, 11}, 6, -3, 3)};
        EXPECT_EQ(evaluate(b, in)[0].to_vector<float>(),
                  evaluate(before, in)[0].to_vector<float>());
    }
    // Another scale after the pool: left alone.
    const std::string model = QdqBlock().pooled(5, 32);
    Graph h = import_onnx_bytes(model, "qpool.onnx");
    const ValueId other_scale = h.add_constant("other_scale", TensorData::scalar(0.07f));
    for (NodeId id : h.node_ids())
        if (h.node(id).op == Op::QuantizeLinear && h.value(h.node(id).inputs[0]).name == "p")
            h.node(id).inputs[1] = other_scale;
    // The convs, a requantization, the input's and the pool's quantizations by a reciprocal,
    // and the first conv's requantized bytes, which only the pool's dequantization reads, kept
    // in f32.
    const PassResult other = check_pass(h, fold_quantized_ops);
    EXPECT_EQ(other.changes, 6) << other.summary;
    // Built at every level, against the evaluator of the dequantized graph.
    for (int level : {0, 1, 3})
        expect_library_matches_evaluator(model, {floats({1, 5, 9, 11}, 10, -3, 3)}, level, 1e-4,
                                         0.07);
}

TEST(QuantizedOpsPass, AQuantizeDequantizePairReadByNoProductStaysInF32) {
    // Bytes read only by their dequantization become Clip(Round(.), lo - z, hi - z) * s, exact
    // to the bit: a unit-scale quantize (what the folds leave) on values past both ends of the
    // range, for u8 and s8 bytes and zero points at both ends.
    for (const auto& [type, zero_point] : std::vector<std::pair<DType, int>>{{DType::U8, 128},
                                                                             {DType::U8, 0},
                                                                             {DType::U8, 255},
                                                                             {DType::I8, -128},
                                                                             {DType::I8, 5}}) {
        SCOPED_TRACE(std::string(dtype_name(type)) + " zero point " + std::to_string(zero_point));
        ModelBuilder m(13);
        m.input("x", DType::F32, {3, 37});
        m.initializer("one", TensorData::scalar(1.0f)).initializer("s", TensorData::scalar(0.03f));
        m.initializer("z", type == DType::U8
                               ? TensorData::from_vector<uint8_t>({}, {uint8_t(zero_point)}, type)
                               : TensorData::scalar<int8_t>(int8_t(zero_point)));
        m.node("QuantizeLinear", {"x", "one", "z"}, {"q"});
        m.node("DequantizeLinear", {"q", "s", "z"}, {"d"});
        m.node("Relu", {"d"}, {"y"});
        m.output("y", DType::F32);
        Graph g = import_onnx_bytes(m.bytes(), "qdq_pair.onnx");
        const Graph before = g;
        EXPECT_EQ(fold_quantized_ops(g).changes, 1);
        eliminate_dead_code(g);
        EXPECT_EQ(count_op(g, Op::QuantizeLinear) + count_op(g, Op::DequantizeLinear), 0);
        EXPECT_EQ(count_op(g, Op::Round), 1);
        for (NodeId id : g.node_ids())
            if (g.node(id).op == Op::Clip) {
                const Value& lo = g.value(g.node(id).inputs[1]);
                const Value& hi = g.value(g.node(id).inputs[2]);
                ASSERT_TRUE(lo.is_constant() && hi.is_constant());
                EXPECT_EQ(lo.constant->to_vector<float>(),
                          std::vector<float>{float((type == DType::U8 ? 0 : -128) - zero_point)});
                EXPECT_EQ(hi.constant->to_vector<float>(),
                          std::vector<float>{float((type == DType::U8 ? 255 : 127) - zero_point)});
            }
        for (uint64_t seed : {3, 4}) {
            const std::vector<TensorData> in = {floats({3, 37}, seed, -300, 300)};
            EXPECT_EQ(evaluate(g, in)[0].to_vector<float>(),
                      evaluate(before, in)[0].to_vector<float>());
        }
    }
    // In a residual block the conv's requantized bytes, read only for the Add, stay in f32
    // inside the conv's kernel; the bytes the next conv reads stay bytes.
    const std::string model = QdqBlock().residual(6, DType::U8, 125);
    Graph g = import_onnx_bytes(model, "qres.onnx");
    const PassResult r = check_pass(g, fold_quantized_ops);
    EXPECT_NE(r.summary.find("1 quantize-dequantize pairs in f32"), std::string::npos) << r.summary;
    EXPECT_EQ(count_op(g, Op::QConv), 2);
    expect_library_matches_evaluator(model, {floats({1, 6, 9, 11}, 9, -3, 3)}, 3, 1e-4, 0.07);
}

TEST(QuantizedOpsPass, APairReadWithALaterValueStaysBytes) {
    // The shortcut conv's pair is read by an Add that also reads the main path's conv, computed
    // later: its bytes cross from one kernel to the next, so they stay a quantize and a
    // dequantize (a quarter of the f32). The main path's pair, read with earlier values only,
    // folds into f32 inside its conv's kernel. check_pass: values as before.
    const std::string model = QdqBlock().downsampled(6, 16);
    Graph g = import_onnx_bytes(model, "qdown.onnx");
    const PassResult r = check_pass(g, fold_quantized_ops);
    EXPECT_NE(r.summary.find("1 quantize-dequantize pairs in f32"), std::string::npos) << r.summary;
    int shortcut_pairs = 0;
    for (NodeId id : g.node_ids())
        if (g.node(id).op == Op::DequantizeLinear)
            shortcut_pairs += g.value(g.node(id).inputs[0]).name == "d_q";
    EXPECT_EQ(shortcut_pairs, 1);
    expect_library_matches_evaluator(model, {floats({1, 6, 9, 11}, 9, -3, 3)}, 3, 1e-4, 0.07);
}

TEST(QuantizedOpsPass, RequantizationMovesIntoTheProductsScale) {
    // conv c1 -> QuantizeLinear(scale 0.05) alone: the QConv's per-channel scale, 0.05 (its
    // input's) x the weight scale, becomes that over 0.05, and the quantize's scale 1 (its
    // kernel then does not divide). check_pass: values as before, within 1e-4 relative.
    Graph g = import_onnx_bytes(QdqBlock().pooled(5, 32), "qpool.onnx");
    std::vector<float> w_scale;
    for (size_t v = 0; v < g.num_values(); ++v)
        if (g.value(static_cast<ValueId>(v)).name == "c1_ws")
            w_scale = g.value(static_cast<ValueId>(v)).constant->to_vector<float>();
    ASSERT_EQ(w_scale.size(), 32u);
    check_pass(g, fold_quantized_ops);
    int unit_quantizes = 0;
    for (NodeId id : g.node_ids()) {
        const Node& n = g.node(id);
        const Value& s = g.value(n.inputs.size() > 1 ? n.inputs[1] : n.inputs[0]);
        if (n.op != Op::QuantizeLinear || !s.is_constant() || s.constant->data<float>()[0] != 1.0f)
            continue;
        const Node& p = g.node(g.value(n.inputs[0]).producer);
        if (p.op == Op::Mul) // the input's and the pool's quantizations by a reciprocal
            continue;
        ++unit_quantizes;
        ASSERT_EQ(p.op, Op::QConv);
        const Value& rs = g.value(p.inputs[3]);
        ASSERT_TRUE(rs.is_constant());
        ASSERT_EQ(rs.constant->numel(), 32);
        for (int64_t o = 0; o < 32; ++o)
            EXPECT_EQ(rs.constant->data<float>()[o],
                      static_cast<float>(static_cast<double>(0.05f * w_scale[o]) / 0.05f))
                << o;
    }
    EXPECT_EQ(unit_quantizes, 1); // c2's output is the graph's: its scale stays
}

TEST(QuantizedOpsPass, LayoutPacksWordsInBlocksOf64WhenTheyTileTheChannels) {
    // 64 input channels everywhere but the first conv's 3 (an image, packed from its NCHW
    // planes, one word per pixel): the others' words come in one block of 64 channels,
    // whatever the layout's block.
    for (int64_t C : {64, 3}) {
        Graph g = import_onnx_bytes(QdqBlock().bytes(C, 64), "qdq.onnx");
        check_pass(g, fold_quantized_ops);
        for (int64_t block : {8, 16}) {
            Graph b = g;
            const Graph before = b;
            check_pass(b, [block](Graph& gr) { return convert_layout_nchwc(gr, block); });
            int wide = 0, narrow = 0;
            for (NodeId id : b.node_ids()) {
                const Node& n = b.node(id);
                if (n.op != Op::PackU8Words)
                    continue;
                const Value& words = b.value(n.outputs[0]);
                if (n.attr_int("words_block", 0) == 64) {
                    ++wide;
                    EXPECT_EQ(words.shape[1], 1);
                    EXPECT_EQ(words.shape[4], 16);
                } else {
                    ++narrow;
                    EXPECT_FALSE(n.has_attr("words_block"));
                    EXPECT_EQ(b.value(n.inputs[0]).shape, (Shape{1, 3, 9, 11})); // the planes
                    EXPECT_EQ(words.shape[4], 1);
                }
            }
            EXPECT_EQ(wide, C == 64 ? 3 : 2) << "C=" << C << " block " << block;
            EXPECT_EQ(narrow, C == 64 ? 0 : 1) << "C=" << C << " block " << block;
            const std::vector<TensorData> in = {floats({1, C, 9, 11}, 6, -3, 3)};
            EXPECT_EQ(evaluate(b, in)[0].to_vector<float>(),
                      evaluate(before, in)[0].to_vector<float>())
                << "C=" << C << " block " << block;
        }
    }
    // Built: the kernels on the 64-channel word blocks, within LibraryMatchesEvaluator's bound.
    expect_library_matches_evaluator(QdqBlock().bytes(64, 64), {floats({1, 64, 9, 11}, 9, -3, 3)},
                                     3, 1e-4, 0.07);
}

// x -> Q -> DQ -> MatMul(DQ(W per column)) -> Add(bias), as static quantization writes a
// transformer's projections.
std::string qdq_matmul_model(int64_t K, int64_t N) {
    ModelBuilder m(13);
    m.input("x", DType::F32, {1, 6, K});
    m.initializer("as", TensorData::scalar(0.04f));
    m.initializer("az", TensorData::from_vector<uint8_t>({}, {131}, DType::U8));
    m.initializer("w", s8_weights({K, N}, 91)).initializer("ws", floats({N}, 92, 0.002f, 0.01f));
    m.initializer("wz", TensorData(DType::I8, {N})).initializer("b", floats({N}, 93));
    m.node("QuantizeLinear", {"x", "as", "az"}, {"xq"});
    m.node("DequantizeLinear", {"xq", "as", "az"}, {"xd"});
    m.node("DequantizeLinear", {"w", "ws", "wz"}, {"wd"}).i("axis", 1);
    m.node("MatMul", {"xd", "wd"}, {"mm"});
    m.node("Add", {"mm", "b"}, {"y"});
    m.output("y", DType::F32);
    return m.bytes();
}

TEST(QuantizedOpsPass, FoldsDequantizedMatMulsAndKeepsValues) {
    Graph g = import_onnx_bytes(qdq_matmul_model(23, 33), "qmm.onnx");
    const PassResult r = check_pass(g, fold_quantized_ops);
    EXPECT_EQ(r.changes, 2) << r.summary; // and the input's quantization by a reciprocal
    int qmm = 0;
    for (NodeId id : g.node_ids())
        qmm += g.node(id).op == Op::QMatMul;
    EXPECT_EQ(qmm, 1);
    for (int level : {0, 2, 3})
        expect_library_matches_evaluator(qdq_matmul_model(23, 33), {floats({1, 6, 23}, 5, -3, 3)},
                                         level, 1e-4, 1e-4);
}

// Attention's products in a QDQ model: x [1, 2, 9, 12] times y [1, 2, 12, 13], both computed
// and quantized per tensor, then the product quantized again.
std::string qdq_attention_model(int64_t x_zero_point, int64_t y_zero_point) {
    ModelBuilder m(13);
    m.input("x", DType::F32, {1, 2, 9, 12}).input("y", DType::F32, {1, 2, 12, 13});
    m.initializer("xs", TensorData::scalar(0.031f)).initializer("ys", TensorData::scalar(0.027f));
    m.initializer("xz", TensorData::from_vector<uint8_t>({}, {uint8_t(x_zero_point)}, DType::U8));
    m.initializer("yz", TensorData::from_vector<uint8_t>({}, {uint8_t(y_zero_point)}, DType::U8));
    m.initializer("zs", TensorData::scalar(0.05f));
    m.initializer("zz", TensorData::from_vector<uint8_t>({}, {117}, DType::U8));
    m.node("QuantizeLinear", {"x", "xs", "xz"}, {"xq"});
    m.node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"});
    m.node("QuantizeLinear", {"y", "ys", "yz"}, {"yq"});
    m.node("DequantizeLinear", {"yq", "ys", "yz"}, {"yd"});
    m.node("MatMul", {"xd", "yd"}, {"p"});
    m.node("QuantizeLinear", {"p", "zs", "zz"}, {"pq"});
    m.node("DequantizeLinear", {"pq", "zs", "zz"}, {"z"});
    m.output("z", DType::F32);
    return m.bytes();
}

TEST(QuantizedOpsPass, ProductsOfTwoComputedOperandsRunOnTheBytes) {
    for (const auto& [zx, zy] : std::vector<std::pair<int64_t, int64_t>>{{131, 119}, {0, 128}}) {
        SCOPED_TRACE("zero points " + std::to_string(zx) + " and " + std::to_string(zy));
        Graph g = import_onnx_bytes(qdq_attention_model(zx, zy), "qattn.onnx");
        const PassResult r = check_pass(g, fold_quantized_ops);
        EXPECT_NE(r.summary.find("1 to QMatMulActivations"), std::string::npos) << r.summary;
        ASSERT_EQ(count_op(g, Op::QMatMulActivations), 1);
        EXPECT_EQ(count_op(g, Op::MatMul), 0);
        const Node& p = first_node(g, Op::QMatMulActivations);
        EXPECT_EQ(g.value(p.inputs[0]).dtype, DType::U8);
        EXPECT_EQ(p.attr_int("x_zero_point", -1), zx);
        EXPECT_EQ(p.attr_int("y_zero_point", -1), zy);
        // x_scale * y_scale, over the scale of the QuantizeLinear that alone reads the product
        // (its own scale now 1).
        EXPECT_EQ(g.value(p.inputs[2]).constant->data<float>()[0],
                  static_cast<float>(static_cast<double>(0.031f * 0.027f) / 0.05f));
        int requantized = 0;
        for (NodeId id : g.node_ids()) {
            const Node& q = g.node(id);
            if (q.op == Op::QuantizeLinear && q.inputs[0] == p.outputs[0]) {
                EXPECT_EQ(g.value(q.inputs[1]).constant->data<float>()[0], 1.0f);
                ++requantized;
            }
        }
        EXPECT_EQ(requantized, 1);
        // The library against the evaluator of the dequantized graph: equal up to f32
        // rounding of the sums, which the last quantization may turn into one step (0.05).
        for (int level : {0, 1, 3})
            expect_library_matches_evaluator(
                qdq_attention_model(zx, zy),
                {floats({1, 2, 9, 12}, 21, -3, 4), floats({1, 2, 12, 13}, 22, -3.5f, 3)}, level,
                1e-4, 0.051);
    }
    // An inner dimension that is not a multiple of 4 stays an f32 MatMul.
    ModelBuilder m(13);
    m.input("x", DType::F32, {2, 5, 6}).input("y", DType::F32, {2, 6, 3});
    m.initializer("s", TensorData::scalar(0.03f));
    m.initializer("z", TensorData::from_vector<uint8_t>({}, {128}, DType::U8));
    for (const char* v : {"x", "y"}) {
        m.node("QuantizeLinear", {v, "s", "z"}, {std::string(v) + "q"});
        m.node("DequantizeLinear", {std::string(v) + "q", "s", "z"}, {std::string(v) + "d"});
    }
    m.node("MatMul", {"xd", "yd"}, {"p"});
    m.output("p", DType::F32);
    Graph odd = import_onnx_bytes(m.bytes(), "qodd.onnx");
    check_pass(odd, fold_quantized_ops);
    EXPECT_EQ(count_op(odd, Op::QMatMulActivations), 0);
    EXPECT_EQ(count_op(odd, Op::MatMul), 1);
}

TEST(QuantizedOpsPass, LeavesWhatItCannotRepresent) {
    // Weights with a nonzero zero point, and an s8 activation: both stay f32 convs.
    ModelBuilder m(13);
    m.input("x", DType::F32, {1, 4, 5, 5});
    m.initializer("as", TensorData::scalar(0.05f));
    m.initializer("az", TensorData::scalar<int8_t>(3));
    m.initializer("w", s8_weights({4, 4, 1, 1}, 1)).initializer("ws", TensorData::scalar(0.01f));
    m.initializer("wz", TensorData::scalar<int8_t>(1));
    m.node("QuantizeLinear", {"x", "as", "az"}, {"xq"});
    m.node("DequantizeLinear", {"xq", "as", "az"}, {"xd"});
    m.node("DequantizeLinear", {"w", "ws", "wz"}, {"wd"});
    m.node("Conv", {"xd", "wd"}, {"y"});
    m.output("y", DType::F32);
    Graph g = import_onnx_bytes(m.bytes(), "q.onnx");
    // Only the quantization by a reciprocal, and that quantize-dequantize pair in f32.
    EXPECT_EQ(fold_quantized_ops(g).changes, 2);
    EXPECT_EQ(count_op(g, Op::Conv), 1);
    EXPECT_EQ(count_op(g, Op::QConv), 0);
}

// QuantizeLinear(x, s) becomes QuantizeLinear(x * RN(1/s), 1): the bytes are those of the
// division except where x / s lies within an ulp or two of a half step, one step away there.
TEST(QuantizedOpsPass, QuantizationsByAConstantScaleMultiplyByItsReciprocal) {
    const float s = 0.0137f;
    const int64_t n = 4099;
    ModelBuilder m(13);
    m.input("x", DType::F32, {n});
    m.initializer("s", TensorData::scalar(s));
    m.initializer("z", TensorData::from_vector<uint8_t>({}, {121}, DType::U8));
    m.node("QuantizeLinear", {"x", "s", "z"}, {"q"});
    m.output("q", DType::U8);
    const Graph before = import_onnx_bytes(m.bytes(), "q.onnx");
    Graph g = before;
    EXPECT_EQ(check_pass(g, fold_quantized_ops).changes, 1);
    int quantizes = 0;
    for (NodeId id : g.node_ids()) {
        const Node& q = g.node(id);
        if (q.op != Op::QuantizeLinear)
            continue;
        ++quantizes;
        EXPECT_EQ(g.value(q.inputs[1]).constant->data<float>()[0], 1.0f);
        const Node& mul = g.node(g.value(q.inputs[0]).producer);
        ASSERT_EQ(mul.op, Op::Mul);
        EXPECT_EQ(g.value(mul.inputs[1]).constant->data<float>()[0], 1.0f / s);
    }
    EXPECT_EQ(quantizes, 1);
    auto quantized = [&](const Graph& graph, const std::vector<float>& x) {
        return evaluate(graph, {TensorData::from_vector<float>({n}, x)})[0].to_vector<uint8_t>();
    };
    // Random values (seeded): the same bytes.
    const std::vector<float> random = floats({n}, 11, -1.9f, 1.9f).to_vector<float>();
    EXPECT_EQ(quantized(g, random), quantized(before, random));
    // The 16 floats around each half step (k + 1/2) * s of the range: some move, one step.
    std::vector<float> x(static_cast<size_t>(n), 0.5f);
    const int64_t half_steps = n / 16;
    for (int64_t k = 0; k < half_steps; ++k) {
        float h = (static_cast<float>(k) - 121.5f) * s;
        for (int i = 0; i < 8; ++i)
            h = std::nextafter(h, -1.0f);
        for (int i = 0; i < 16; ++i, h = std::nextafter(h, 1.0f))
            x[static_cast<size_t>(16 * k + i)] = h;
    }
    const std::vector<uint8_t> want = quantized(before, x), got = quantized(g, x);
    int moved = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        if (got[i] == want[i])
            continue;
        ++moved;
        EXPECT_EQ(std::abs(int(got[i]) - int(want[i])), 1) << "x = " << x[i];
        const float steps = x[i] / s - std::floor(x[i] / s);
        EXPECT_NEAR(steps, 0.5f, 1e-4f) << "x = " << x[i] << " is not next to a half step";
    }
    // 56 of the 4096 with this scale; at most two per half step.
    EXPECT_GT(moved, 0);
    EXPECT_LE(moved, 2 * half_steps);
}

TEST(QuantizedOpsPass, LibraryMatchesEvaluatorAtEveryLevel) {
    const std::string model = QdqBlock().bytes(3, 24);
    // The evaluator runs the dequantized f32 graph; the library the 8-bit convs from -O1 on:
    // equal up to f32 rounding of the conv sums, which a QuantizeLinear may turn into one
    // quantization step (0.05) of an intermediate, 0.05 * 127 * 0.01 at most in the last sum.
    for (int level : {0, 1, 3})
        expect_library_matches_evaluator(model, {floats({1, 3, 9, 11}, 9, -3, 3)}, level, 1e-4,
                                         0.07);
}

} // namespace
} // namespace tessera::graph
