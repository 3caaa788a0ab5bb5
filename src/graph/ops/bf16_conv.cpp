// The blocked bf16 convolution the precision pass makes from a ConvBlocked on constant f32
// weights (ops.def documents the operands): PackBF16Blocked (the activations rounded to bf16,
// padded and re-blocked once) and ConvBF16Blocked (f32 sums of bf16 products). Types, naive
// evaluators over their definitions and kernels.
#include "bf16_conv.h"

#include "../op_util.h"
#include "blocked_conv_words.h"
#include "blocked_layout.h"
#include "conv_pool.h"
#include "node_kernel.h"
#include "node_types.h"
#include "tessera/te/op_library.h"

namespace tessera::graph::detail {

TensorData pack_bf16_conv_weight_words(const TensorData& w, int64_t block, int64_t in_block,
                                       bool fold_width) {
    TESSERA_CHECK(w.rank() == 4 && w.dtype() == DType::F32 && in_block > 0 &&
                  (in_block % 2 == 0 || fold_width) && block > 0)
        << "bf16 conv weight " << shape_str(w.shape()) << " in blocks of " << in_block;
    const int64_t K = w.shape()[0], C = w.shape()[1], R = w.shape()[2], S = w.shape()[3];
    const int64_t KB = channel_blocks(K, block), CB = channel_blocks(C, in_block);
    const float* src = w.data<float>();
    if (fold_width) {
        // A window row's S pixels of in_block channels as one run of words: element
        // s * in_block + c of the run, half 0 (the low one, first in memory) the even element;
        // past the run's S * in_block elements (odd in_block and S) the weight is 0.
        const int64_t run = (S * in_block + 1) / 2;
        TensorData out(DType::I32, Shape{KB, CB, R, run, block}); // zeroed
        auto* dst = reinterpret_cast<uint16_t*>(out.data<int32_t>());
        for (int64_t k = 0; k < K; ++k)
            for (int64_t c = 0; c < C; ++c)
                for (int64_t r = 0; r < R; ++r)
                    for (int64_t sx = 0; sx < S; ++sx) {
                        const int64_t e = sx * in_block + c % in_block;
                        const int64_t word =
                            (((k / block) * CB + c / in_block) * R + r) * run + e / 2;
                        dst[(word * block + k % block) * 2 + e % 2] =
                            f32_to_bf16_bits(src[((k * C + c) * R + r) * S + sx]);
                    }
        return out;
    }
    const int64_t words = in_block / 2;
    TensorData out(DType::I32, Shape{KB, CB, R, S, words, block}); // zeroed
    auto* dst = reinterpret_cast<uint16_t*>(out.data<int32_t>());
    // Half 0 (the low one, first in memory) holds the even channel.
    for_each_conv_weight_in_words(K, C, R, S, block, in_block, 2, [&](int64_t from, int64_t to) {
        dst[to] = f32_to_bf16_bits(src[from]);
    });
    return out;
}

namespace {

bool merge_width_attr(const Node& n) { return n.attr_int("merge_width", 0) != 0; }

int64_t out_block_attr(const Node& n, const std::string& where) {
    const int64_t b = n.attr_int("out_block", 0);
    if (b <= 0 || (b % 2 != 0 && !merge_width_attr(n)))
        throw UserError() << where << ": out_block " << b
                          << " is not a positive even number (odd ones only with merge_width)";
    return b;
}

// A folded ConvBF16Blocked's channels per pixel (0: not folded).
int64_t pixel_block_attr(const Node& n, const std::string& where) {
    const int64_t b = n.attr_int("pixel_block", 0);
    if (b < 0)
        throw UserError() << where << ": pixel_block " << b << " is negative";
    return b;
}

// ---- types ----

TypeList pack_types(const NodeTypes& t) {
    const Value& x = t.in(0, "X");
    t.dtype(x, kF32, "X");
    t.rank(x, 5, "X");
    const int64_t ob = out_block_attr(t.node(), t.where());
    const Window2d win = window_of(t.node(), {1, 1}, t.where());
    Shape out = {x.shape[0], channel_blocks(x.shape[1] * x.shape[4], ob),
                 x.shape[2] + win.pads[0] + win.pads[2], x.shape[3] + win.pads[1] + win.pads[3],
                 ob};
    if (merge_width_attr(t.node())) {
        out[3] = te::bf16_merged_row_elements(out[3], ob);
        out.pop_back();
    }
    return {{DType::BF16, out}};
}

// The folded form's window width and channels per pixel, or the plain form's (pb 0).
struct ConvForm {
    int64_t s = 1, xb = 1, pw = 1, words = 1;
};
ConvForm conv_form(const Node& n, const Shape& x, const Shape& w, const std::string& where) {
    const int64_t pb = pixel_block_attr(n, where);
    if (pb == 0)
        return {w[3], x[4], x[3], w[4]};
    const std::vector<int64_t> kernel = n.attr_ints("kernel_shape", {});
    if (kernel.size() != 2 || kernel[1] < 1)
        throw UserError() << where << ": a folded conv needs its kernel_shape";
    return {kernel[1], pb, x[3] / pb, w[3]};
}

TypeList conv_types(const NodeTypes& t) {
    const Value& x = t.in(0, "X");
    const Value& w = t.in(1, "W");
    t.dtype(x, {DType::BF16}, "X");
    t.dtype(w, {DType::I32}, "W");
    const bool folded = pixel_block_attr(t.node(), t.where()) > 0;
    t.rank(x, folded ? 4 : 5, "X");
    t.rank(w, folded ? 5 : 6, "W");
    const int64_t block = t.node().attr_int("block", 0);
    const ConvForm f = conv_form(t.node(), x.shape, w.shape, t.where());
    // Folded: rows of whole words, a window row's S * xb elements in ceil(S * xb / 2) of them.
    const bool whole = folded ? x.shape[3] % 2 == 0 && f.words == (f.s * f.xb + 1) / 2
                              : f.xb % 2 == 0 && f.words * 2 == f.xb;
    if (w.shape[1] != x.shape[1] || !whole || w.shape.back() != block)
        t.fail("W " + shape_str(w.shape) + " does not match X " + shape_str(x.shape) +
               " in blocks of " + std::to_string(block));
    if (t.has(2)) {
        const Value& b = t.in(2, "B");
        t.dtype(b, kF32, "B");
        if (b.shape != Shape{w.shape[0], block})
            t.fail("B '" + b.name + "' has shape " + shape_str(b.shape) + ", expected " +
                   shape_str({w.shape[0], block}));
    }
    const Window2d win = window_of(t.node(), {w.shape[2], f.s}, t.where());
    if (win.kernel[0] != w.shape[2] || win.kernel[1] != f.s)
        t.fail("kernel_shape differs from W " + shape_str(w.shape));
    if (win.pads != std::array<int64_t, 4>{0, 0, 0, 0})
        t.fail("pads must be 0: PackBF16Blocked pads the input");
    if (folded && (win.dilation[1] != 1 || win.stride[1] * f.xb % 2 != 0 || f.xb < 2))
        t.fail("a folded conv's column dilation must be 1, its pixel_block at least 2 and its "
               "column stride x pixel_block even (each window row's run starts on a whole word)");
    const std::array<int64_t, 2> extent = {x.shape[2], f.pw};
    Shape out = {x.shape[0], w.shape[0], 0, 0, block};
    for (int d = 0; d < 2; ++d)
        out[2 + d] = window_output_dim(extent[d], win.kernel[d], win.stride[d], win.dilation[d], 0,
                                       0, false, t.where());
    if (folded && (out[3] - 1) * win.stride[1] * f.xb + 2 * f.words > x.shape[3])
        t.fail("the last window row's run of " + std::to_string(f.words) +
               " words ends past X's rows of " + std::to_string(x.shape[3]) + " elements");
    return {{DType::F32, out}};
}

// ---- evaluation ----

EvalOutputs eval_pack(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    require_rank(x, 5, "X", where);
    const Window2d win = window_of(n, {1, 1}, where);
    const int64_t ob = out_block_attr(n, where);
    const int64_t N = x.shape()[0], CB = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
    const int64_t xb = x.shape()[4], C = CB * xb, CBW = channel_blocks(C, ob);
    const int64_t PH = H + win.pads[0] + win.pads[2], PW = W + win.pads[1] + win.pads[3];
    // Zeroed: borders, channels past C and a merged row's tail. Unmerged rows are PW * ob long.
    const bool merged = merge_width_attr(n);
    const int64_t row = merged ? te::bf16_merged_row_elements(PW, ob) : PW * ob;
    TensorData y(DType::BF16, merged ? Shape{N, CBW, PH, row} : Shape{N, CBW, PH, PW, ob});
    const float* px = x.data<float>();
    BFloat16* py = y.data<BFloat16>();
    for (int64_t b = 0; b < N; ++b)
        for (int64_t h = 0; h < H; ++h)
            for (int64_t v = 0; v < W; ++v)
                for (int64_t c = 0; c < C; ++c) {
                    const int64_t oh = h + win.pads[0], ow = v + win.pads[1];
                    py[((b * CBW + c / ob) * PH + oh) * row + ow * ob + c % ob] =
                        BFloat16::from_bits(f32_to_bf16_bits(
                            px[(((b * CB + c / xb) * H + h) * W + v) * xb + c % xb]));
                }
    return {y};
}

EvalOutputs eval_conv(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData &x = require_input(in, 0, where), &w = require_input(in, 1, where);
    const TensorData* bias = in.size() > 2 ? in[2] : nullptr;
    const ConvForm f = conv_form(n, x.shape(), w.shape(), where);
    const Window2d win = window_of(n, {w.shape()[2], f.s}, where);
    const int64_t N = x.shape()[0], CB = x.shape()[1], H = x.shape()[2], W = f.pw;
    const int64_t XB = f.xb, KB = w.shape()[0], R = w.shape()[2], S = f.s;
    const int64_t B = w.shape().back();
    Shape out_shape = {N, KB, 0, 0, B};
    const std::array<int64_t, 2> extent = {H, W};
    for (int d = 0; d < 2; ++d)
        out_shape[2 + d] = window_output_dim(extent[d], win.kernel[d], win.stride[d],
                                             win.dilation[d], 0, 0, false, where);
    const int64_t OH = out_shape[2], OW = out_shape[3];
    TensorData y(DType::F32, out_shape);
    const BFloat16* px = x.data<BFloat16>();
    const int32_t* pw = w.data<int32_t>();
    const float* pb = bias ? bias->data<float>() : nullptr;
    float* py = y.data<float>();
    // Word by word, each word's two products summed first, as dot2_bf16 defines it. Folded, the
    // rows are words side by side and a window row one run of f.words of them from word ow x
    // stride x XB / 2: a 1-wide window of words over a row of words, each one "pixel".
    BlockedConvWords d = {N, CB, H, W, XB / 2, KB, R, S, B, OH, OW};
    Window2d words_win = win;
    if (pixel_block_attr(n, where) > 0) {
        d.W = x.shape()[3] / 2, d.words = 1, d.S = f.words;
        words_win.stride[1] = win.stride[1] * XB / 2;
    }
    for_each_blocked_conv_output(
        d, words_win, 0.0f,
        [&](float acc, int64_t xw, int64_t wi) {
            const BFloat16* pair = px + 2 * xw;
            return acc + dot2_bf16(uint32_t(pair[0].bits) | uint32_t(pair[1].bits) << 16,
                                   static_cast<uint32_t>(pw[wi]));
        },
        [&](float acc, int64_t kbk, int64_t o) { py[o] = pb ? acc + pb[kbk] : acc; });
    return {y};
}

// ---- kernels ----

void pack_kernel(NodeKernel& k) {
    const te::Conv2dParams p = conv2d_params(k.node(), {1, 1}, k.where());
    k.set(te::pack_bf16_nchwc(k.in(0), p, out_block_attr(k.node(), k.where()),
                              merge_width_attr(k.node())));
}

void conv_kernel(NodeKernel& k) {
    const te::Tensor x = k.in(0), w = k.in(1);
    const ConvForm f = conv_form(k.node(), x.shape(), w.shape(), k.where());
    const te::Conv2dParams p = conv2d_params(k.node(), {w.shape()[2], f.s}, k.where());
    k.set(te::bf16_conv2d_nchwc(x, w, p, k.opt_in(2), pixel_block_attr(k.node(), k.where())));
}

} // namespace

} // namespace tessera::graph::detail

namespace tessera::graph::ops {

using namespace detail;

// Made by the precision pass only: no ONNX opset defines them. The pack is its own task: fused
// into the conv that reads it, it would be rounded again for every block of output channels.
const OpDef PackBF16Blocked = pass_made_op(Op::PackBF16Blocked, 1, 1, pack_types, eval_pack,
                                           FusionKind::Opaque, "pack_bf16_nchwc", pack_kernel);
const OpDef ConvBF16Blocked =
    pass_made_op(Op::ConvBF16Blocked, 2, 3, conv_types, eval_conv, FusionKind::OutFusable,
                 "bf16_conv2d_nchwc", conv_kernel);

} // namespace tessera::graph::ops
