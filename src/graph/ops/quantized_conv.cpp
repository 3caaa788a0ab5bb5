// 8-bit convolution (ops.def documents the operands): QConv in NCHW, made by the quantized-ops
// pass from a QDQ model's DequantizeLinear -> Conv, and its blocked forms made by the layout
// pass: PackU8Words and QConvBlocked, or QDepthwiseBlocked for a depthwise one. The evaluators are
// naive loops over the integer definition, independent of the kernels' word packing tricks except
// where the operands are words themselves.
#include "quantized_conv.h"

#include <cstring>

#include "../op_util.h"
#include "blocked_conv_words.h"
#include "blocked_layout.h"
#include "conv_pool.h"
#include "node_kernel.h"
#include "node_types.h"
#include "tessera/te/op_library.h"

namespace tessera::graph::detail {

int32_t dot4_u8s8_reference(int32_t a, int32_t b) {
    int32_t sum = 0;
    for (int j = 0; j < 4; ++j) {
        const auto ua = static_cast<uint8_t>(static_cast<uint32_t>(a) >> (8 * j));
        const auto sb =
            static_cast<int8_t>(static_cast<uint8_t>(static_cast<uint32_t>(b) >> (8 * j)));
        sum += int32_t(ua) * int32_t(sb);
    }
    return sum;
}

TensorData pack_conv_weight_words(const TensorData& w, int64_t block, int64_t in_block) {
    TESSERA_CHECK(w.rank() == 4 && w.dtype() == DType::I8 && in_block % 4 == 0 && block > 0)
        << "8-bit conv weight " << shape_str(w.shape()) << " in blocks of " << in_block;
    const int64_t K = w.shape()[0], C = w.shape()[1], R = w.shape()[2], S = w.shape()[3];
    const int64_t KB = channel_blocks(K, block), CB = channel_blocks(C, in_block);
    const int64_t words = in_block / 4;
    TensorData out(DType::I32, {KB, CB, R, S, words, block});
    const int8_t* src = w.data<int8_t>();
    // Byte j of a word is input channel 4 * word + j, in memory order (little-endian).
    auto* dst = reinterpret_cast<uint8_t*>(out.data<int32_t>());
    std::memset(dst, 0, static_cast<size_t>(out.numel()) * 4);
    for_each_conv_weight_in_words(K, C, R, S, block, in_block, 4, [&](int64_t from, int64_t to) {
        dst[to] = static_cast<uint8_t>(src[from]);
    });
    return out;
}

int64_t zero_point_attr(const Node& n, const char* key, const std::string& where) {
    const int64_t zp = n.attr_int(key, 0);
    if (zp < 0 || zp > 255)
        throw UserError() << where << ": " << key << " " << zp << " is not a u8";
    return zp;
}

namespace {

using K = Attribute::Kind;

// PackU8Words's channels per block of output words: the `words_block` attribute, by default
// the input's block xb. A multiple of xb that divides the input's CB * xb channels, so that
// every block of words is full and each word's four channels lie in one input block.
int64_t words_block_attr(const Node& n, int64_t cb, int64_t xb, const std::string& where) {
    const int64_t wb = n.attr_int("words_block", xb);
    if (xb <= 0 || wb <= 0 || wb % xb != 0 || (cb * xb) % wb != 0)
        throw UserError() << where << ": words_block " << wb << " must be a multiple of the "
                          << "input's channel block " << xb << " that divides its " << cb * xb
                          << " channels";
    return wb;
}

// ---- types ----

void require_channel_vector(const NodeTypes& t, size_t i, const char* what, DType dtype,
                            const Shape& shape) {
    const Value& v = t.in(i, what);
    t.dtype(v, {dtype}, what);
    if (v.shape != shape)
        t.fail(std::string(what) + " '" + v.name + "' has shape " + shape_str(v.shape) +
               ", expected " + shape_str(shape));
}

Shape window_output(const NodeTypes& t, const Shape& x, int64_t r, int64_t s, int64_t n_out,
                    int64_t block) {
    Window2d win = window_of(t.node(), {r, s}, t.where());
    if (win.kernel[0] != r || win.kernel[1] != s)
        t.fail("kernel_shape differs from the weight's " + std::to_string(r) + "x" +
               std::to_string(s));
    Shape out = {x[0], n_out, 0, 0};
    for (int d = 0; d < 2; ++d)
        out[2 + d] = window_output_dim(x[2 + d], win.kernel[d], win.stride[d], win.dilation[d],
                                       win.pads[d], win.pads[2 + d], false, t.where());
    if (block > 0)
        out.push_back(block);
    return out;
}

TypeList qconv_types(const NodeTypes& t) {
    const Value& x = t.in(0, "X");
    const Value& w = t.in(1, "W");
    t.dtype(x, {DType::U8}, "X");
    t.dtype(w, {DType::I8}, "W");
    t.rank(x, 4, "X");
    t.rank(w, 4, "W");
    zero_point_attr(t.node(), "x_zero_point", t.where());
    const int64_t group = t.node().attr_int("group", 1);
    if (group < 1 || x.shape[1] % group != 0 || w.shape[0] % group != 0 ||
        w.shape[1] != x.shape[1] / group)
        t.fail("W " + shape_str(w.shape) + " does not match X " + shape_str(x.shape) + " in " +
               std::to_string(group) + " groups");
    require_channel_vector(t, 2, "Offset", DType::I32, {w.shape[0]});
    require_channel_vector(t, 3, "Scale", DType::F32, {w.shape[0]});
    return {{DType::F32, window_output(t, x.shape, w.shape[2], w.shape[3], w.shape[0], 0)}};
}

TypeList pack_words_types(const NodeTypes& t) {
    const Value& x = t.in(0, "X");
    t.dtype(x, {DType::U8}, "X");
    zero_point_attr(t.node(), "pad_byte", t.where());
    // An NCHW image of at most 4 channels makes one word per pixel; blocked input, wb / 4
    // words per pixel in CB * xb / wb blocks.
    int64_t blocks = 1, words = 1;
    if (x.shape.size() == 4) {
        if (x.shape[1] > 4)
            t.fail("X " + shape_str(x.shape) + ": an NCHW input has at most 4 channels");
    } else {
        t.rank(x, 5, "X");
        if (x.shape[4] % 4 != 0)
            t.fail("X " + shape_str(x.shape) + ": the channel block is not a multiple of 4");
        const int64_t wb = words_block_attr(t.node(), x.shape[1], x.shape[4], t.where());
        blocks = x.shape[1] * x.shape[4] / wb;
        words = wb / 4;
    }
    const Window2d win = window_of(t.node(), {1, 1}, t.where());
    return {{DType::I32,
             {x.shape[0], blocks, x.shape[2] + win.pads[0] + win.pads[2],
              x.shape[3] + win.pads[1] + win.pads[3], words}}};
}

TypeList qconv_blocked_types(const NodeTypes& t) {
    const Value& x = t.in(0, "X");
    const Value& w = t.in(1, "W");
    t.dtype(x, {DType::I32}, "X");
    t.dtype(w, {DType::I32}, "W");
    t.rank(x, 5, "X");
    t.rank(w, 6, "W");
    const int64_t block = t.node().attr_int("block", 0);
    if (w.shape[1] != x.shape[1] || w.shape[4] != x.shape[4] || w.shape[5] != block)
        t.fail("W " + shape_str(w.shape) + " does not match X " + shape_str(x.shape) +
               " in blocks of " + std::to_string(block));
    require_channel_vector(t, 2, "Offset", DType::I32, {w.shape[0], block});
    require_channel_vector(t, 3, "Scale", DType::F32, {w.shape[0], block});
    const Window2d win = window_of(t.node(), {w.shape[2], w.shape[3]}, t.where());
    if (win.pads != std::array<int64_t, 4>{0, 0, 0, 0})
        t.fail("pads must be 0: the packed words hold the padding");
    return {{DType::F32, window_output(t, x.shape, w.shape[2], w.shape[3], w.shape[0], block)}};
}

TypeList qdepthwise_blocked_types(const NodeTypes& t) {
    const Value& x = t.in(0, "X");
    const Value& w = t.in(1, "W");
    t.dtype(x, {DType::U8}, "X");
    t.dtype(w, {DType::F32}, "W");
    t.rank(x, 5, "X");
    t.rank(w, 6, "W");
    zero_point_attr(t.node(), "x_zero_point", t.where());
    const int64_t block = t.node().attr_int("block", 0);
    if (w.shape[0] != x.shape[1] || w.shape[1] != 1 || w.shape[4] != 1 || w.shape[5] != block ||
        x.shape[4] != block)
        t.fail("W " + shape_str(w.shape) + " does not match X " + shape_str(x.shape) +
               " depthwise in blocks of " + std::to_string(block));
    require_channel_vector(t, 2, "Offset", DType::F32, {w.shape[0], block});
    require_channel_vector(t, 3, "Scale", DType::F32, {w.shape[0], block});
    return {{DType::F32, window_output(t, x.shape, w.shape[2], w.shape[3], x.shape[1], block)}};
}

// ---- evaluation ----

// The integer sum over the R x S window of output (oh, ow) of read_x(h, v) * read_w(r, s),
// pad_value where the window leaves the H x W image.
template <typename ReadX, typename ReadW>
int64_t window_sum(const Window2d& win, int64_t oh, int64_t ow, int64_t H, int64_t W, int64_t R,
                   int64_t S, int64_t pad_value, ReadX read_x, ReadW read_w) {
    int64_t acc = 0;
    for (int64_t r = 0; r < R; ++r)
        for (int64_t s = 0; s < S; ++s) {
            const int64_t h = oh * win.stride[0] - win.pads[0] + r * win.dilation[0];
            const int64_t v = ow * win.stride[1] - win.pads[1] + s * win.dilation[1];
            const int64_t xv =
                h >= 0 && h < H && v >= 0 && v < W ? static_cast<int64_t>(read_x(h, v)) : pad_value;
            acc += xv * static_cast<int64_t>(read_w(r, s));
        }
    return acc;
}

EvalOutputs eval_qconv(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData &x = require_input(in, 0, where), &w = require_input(in, 1, where),
                     &off = require_input(in, 2, where), &sc = require_input(in, 3, where);
    const Window2d win = window_of(n, {w.shape()[2], w.shape()[3]}, where);
    const int64_t zp = zero_point_attr(n, "x_zero_point", where);
    const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
    const int64_t Kc = w.shape()[0], R = w.shape()[2], S = w.shape()[3];
    const int64_t group = n.attr_int("group", 1), Cg = C / group, Kg = Kc / group;
    Shape out_shape = {N, Kc, 0, 0};
    for (int d = 0; d < 2; ++d)
        out_shape[2 + d] =
            window_output_dim(x.shape()[2 + d], win.kernel[d], win.stride[d], win.dilation[d],
                              win.pads[d], win.pads[2 + d], false, where);
    TensorData y(DType::F32, out_shape);
    const uint8_t* px = x.data<uint8_t>();
    const int8_t* pw = w.data<int8_t>();
    const int32_t* po = off.data<int32_t>();
    const float* ps = sc.data<float>();
    float* py = y.data<float>();
    const int64_t OH = out_shape[2], OW = out_shape[3];
    for (int64_t b = 0; b < N; ++b)
        for (int64_t k = 0; k < Kc; ++k)
            for (int64_t oh = 0; oh < OH; ++oh)
                for (int64_t ow = 0; ow < OW; ++ow) {
                    int64_t acc = 0;
                    for (int64_t cg = 0; cg < Cg; ++cg) {
                        const int64_t c = k / Kg * Cg + cg;
                        acc += window_sum(
                            win, oh, ow, H, W, R, S, zp,
                            [&](int64_t h, int64_t v) { return px[((b * C + c) * H + h) * W + v]; },
                            [&](int64_t r, int64_t s) {
                                return pw[((k * Cg + cg) * R + r) * S + s];
                            });
                    }
                    // i32 arithmetic, as the kernel computes it.
                    const auto sum = static_cast<int32_t>(static_cast<uint32_t>(acc) +
                                                          static_cast<uint32_t>(po[k]));
                    py[((b * Kc + k) * OH + oh) * OW + ow] = static_cast<float>(sum) * ps[k];
                }
    return {y};
}

EvalOutputs eval_pack_words(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    const Window2d win = window_of(n, {1, 1}, where);
    const auto pad = static_cast<uint8_t>(zero_point_attr(n, "pad_byte", where));
    const bool planes = x.rank() == 4; // NCHW, at most 4 channels: one word per pixel
    if (!planes)
        require_rank(x, 5, "X", where);
    const int64_t N = x.shape()[0], CB = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
    const int64_t xb = planes ? 1 : x.shape()[4];
    const int64_t wb = planes ? 4 : words_block_attr(n, CB, xb, where);
    const int64_t CBW = planes ? 1 : CB * xb / wb;
    const int64_t PH = H + win.pads[0] + win.pads[2], PW = W + win.pads[1] + win.pads[3];
    TensorData y(DType::I32, {N, CBW, PH, PW, wb / 4});
    const uint8_t* px = x.data<uint8_t>();
    auto* py = reinterpret_cast<uint8_t*>(y.data<int32_t>());
    // Channel c of pixel (ih, iw): in input block c / xb at lane c % xb (a plane per channel
    // for NCHW, 0 past its channels).
    auto channel = [&](int64_t b, int64_t c, int64_t ih, int64_t iw) -> uint8_t {
        if (planes)
            return c < CB ? px[((b * CB + c) * H + ih) * W + iw] : uint8_t(0);
        return px[(((b * CB + c / xb) * H + ih) * W + iw) * xb + c % xb];
    };
    // Byte i of word j of output block cbw is channel cbw * wb + 4j + i, in memory order.
    for (int64_t b = 0; b < N; ++b)
        for (int64_t cbw = 0; cbw < CBW; ++cbw)
            for (int64_t h = 0; h < PH; ++h)
                for (int64_t v = 0; v < PW; ++v) {
                    const int64_t ih = h - win.pads[0], iw = v - win.pads[1];
                    const bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
                    for (int64_t ci = 0; ci < wb; ++ci)
                        py[(((b * CBW + cbw) * PH + h) * PW + v) * wb + ci] =
                            inside ? channel(b, cbw * wb + ci, ih, iw) : pad;
                }
    return {y};
}

EvalOutputs eval_qconv_blocked(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData &x = require_input(in, 0, where), &w = require_input(in, 1, where),
                     &off = require_input(in, 2, where), &sc = require_input(in, 3, where);
    const Window2d win = window_of(n, {w.shape()[2], w.shape()[3]}, where);
    const int64_t N = x.shape()[0], CB = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
    const int64_t XW = x.shape()[4];
    const int64_t KB = w.shape()[0], R = w.shape()[2], S = w.shape()[3], B = w.shape()[5];
    Shape out_shape = {N, KB, 0, 0, B};
    for (int d = 0; d < 2; ++d)
        out_shape[2 + d] = window_output_dim(x.shape()[2 + d], win.kernel[d], win.stride[d],
                                             win.dilation[d], 0, 0, false, where);
    const int64_t OH = out_shape[2], OW = out_shape[3];
    TensorData y(DType::F32, out_shape);
    const int32_t* px = x.data<int32_t>();
    const int32_t* pw = w.data<int32_t>();
    const int32_t* po = off.data<int32_t>();
    const float* ps = sc.data<float>();
    float* py = y.data<float>();
    // i32 arithmetic, wrapping as the kernel's.
    for_each_blocked_conv_output(
        {N, CB, H, W, XW, KB, R, S, B, OH, OW}, win, uint32_t(0),
        [&](uint32_t acc, int64_t xw, int64_t wi) {
            return acc + static_cast<uint32_t>(dot4_u8s8_reference(px[xw], pw[wi]));
        },
        [&](uint32_t acc, int64_t kbk, int64_t o) {
            acc += static_cast<uint32_t>(po[kbk]);
            py[o] = static_cast<float>(static_cast<int32_t>(acc)) * ps[kbk];
        });
    return {y};
}

// The sum in i64 from the f32 weights' integer values, then rounded once to f32 with the
// offset: what the kernel's exact f32 sum gives (the layout pass makes this op only then).
EvalOutputs eval_qdepthwise_blocked(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData &x = require_input(in, 0, where), &w = require_input(in, 1, where),
                     &off = require_input(in, 2, where), &sc = require_input(in, 3, where);
    const Window2d win = window_of(n, {w.shape()[2], w.shape()[3]}, where);
    const int64_t zp = zero_point_attr(n, "x_zero_point", where);
    const int64_t N = x.shape()[0], CB = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
    const int64_t B = x.shape()[4], R = w.shape()[2], S = w.shape()[3];
    Shape out_shape = {N, CB, 0, 0, B};
    for (int d = 0; d < 2; ++d)
        out_shape[2 + d] =
            window_output_dim(x.shape()[2 + d], win.kernel[d], win.stride[d], win.dilation[d],
                              win.pads[d], win.pads[2 + d], false, where);
    const int64_t OH = out_shape[2], OW = out_shape[3];
    TensorData y(DType::F32, out_shape);
    const uint8_t* px = x.data<uint8_t>();
    const float* pw = w.data<float>();
    const float* po = off.data<float>();
    const float* ps = sc.data<float>();
    float* py = y.data<float>();
    for (int64_t b = 0; b < N; ++b)
        for (int64_t cb = 0; cb < CB; ++cb)
            for (int64_t oh = 0; oh < OH; ++oh)
                for (int64_t ow = 0; ow < OW; ++ow)
                    for (int64_t k = 0; k < B; ++k) {
                        const int64_t acc = window_sum(
                            win, oh, ow, H, W, R, S, zp,
                            [&](int64_t h, int64_t v) {
                                return px[(((b * CB + cb) * H + h) * W + v) * B + k];
                            },
                            [&](int64_t r, int64_t s) {
                                return static_cast<int64_t>(pw[((cb * R + r) * S + s) * B + k]);
                            });
                        const float sum =
                            static_cast<float>(acc + static_cast<int64_t>(po[cb * B + k]));
                        py[(((b * CB + cb) * OH + oh) * OW + ow) * B + k] = sum * ps[cb * B + k];
                    }
    return {y};
}

// ---- kernels ----

void qconv_kernel(NodeKernel& k) {
    const te::Tensor w = k.in(1);
    te::Conv2dParams p = conv2d_params(k.node(), {w.shape()[2], w.shape()[3]}, k.where());
    k.set(te::qconv2d(k.in(0), w, k.in(2), k.in(3), p,
                      zero_point_attr(k.node(), "x_zero_point", k.where())));
}

void pack_words_kernel(NodeKernel& k) {
    te::Conv2dParams p = conv2d_params(k.node(), {1, 1}, k.where());
    const te::Tensor x = k.in(0);
    if (x.ndim() == 4) {
        k.set(te::pack_u8_planes(x, p, zero_point_attr(k.node(), "pad_byte", k.where())));
        return;
    }
    const int64_t wb = words_block_attr(k.node(), x.shape()[1], x.shape()[4], k.where());
    k.set(te::pack_u8_words(x, p, zero_point_attr(k.node(), "pad_byte", k.where()), wb));
}

void qconv_blocked_kernel(NodeKernel& k) {
    const te::Tensor w = k.in(1);
    te::Conv2dParams p = conv2d_params(k.node(), {w.shape()[2], w.shape()[3]}, k.where());
    k.set(te::qconv2d_nchwc(k.in(0), w, k.in(2), k.in(3), p));
}

void qdepthwise_blocked_kernel(NodeKernel& k) {
    const te::Tensor w = k.in(1);
    te::Conv2dParams p = conv2d_params(k.node(), {w.shape()[2], w.shape()[3]}, k.where());
    k.set(te::qdepthwise_conv2d_nchwc(k.in(0), w, k.in(2), k.in(3), p,
                                      zero_point_attr(k.node(), "x_zero_point", k.where())));
}

} // namespace

} // namespace tessera::graph::detail

namespace tessera::graph::ops {

using namespace detail;

const OpDef QConv = pass_made_op(Op::QConv, 4, 4, qconv_types, eval_qconv, FusionKind::OutFusable,
                                 "qconv2d", qconv_kernel);
// Its own task: fused into the conv that reads it, the words would be packed again for every
// output channel block.
const OpDef PackU8Words = pass_made_op(Op::PackU8Words, 1, 1, pack_words_types, eval_pack_words,
                                       FusionKind::Opaque, "pack_u8_words", pack_words_kernel);
const OpDef QConvBlocked =
    pass_made_op(Op::QConvBlocked, 4, 4, qconv_blocked_types, eval_qconv_blocked,
                 FusionKind::OutFusable, "qconv2d_nchwc", qconv_blocked_kernel);

const OpDef QDepthwiseBlocked =
    pass_made_op(Op::QDepthwiseBlocked, 4, 4, qdepthwise_blocked_types, eval_qdepthwise_blocked,
                 FusionKind::OutFusable, "qdepthwise_conv2d_nchwc", qdepthwise_blocked_kernel);

} // namespace tessera::graph::ops
