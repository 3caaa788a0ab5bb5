// 8-bit integer convolution: u8 activations (with a zero point) times s8 weights, accumulated
// in i32, dequantized per output channel into f32. The blocked form reads the activations as
// i32 words of four channels and multiplies them with dot4_u8s8 (one vpdpbusd per vector on
// CPUs with VNNI); the NCHW form is the plain loop nest of the same sum.
#include "op_util.h"
#include "tessera/ir/op.h"

namespace tessera::te {

using namespace detail;

namespace {

void check_channel_vector(const Tensor& t, const std::vector<int64_t>& shape, DataType want,
                          const std::string& op, const char* role) {
    check_dtype(t, want, op, role);
    if (t.shape() != shape)
        throw UserError() << op << ": " << role << " must have shape " << shape_to_string(shape)
                          << ", got " << shape_to_string(t.shape());
}

void check_u8_zero_point(int64_t x_zero_point, const std::string& op) {
    if (x_zero_point < 0 || x_zero_point > 255)
        throw UserError() << op << ": zero point " << x_zero_point << " is not a u8";
}

} // namespace

Tensor qconv2d(const Tensor& x, const Tensor& w, const Tensor& offset, const Tensor& scale,
               const Conv2dParams& p, int64_t x_zero_point) {
    const std::string op = "qconv2d";
    check_dtype(x, DataType::u8(), op, "input");
    check_dtype(w, DataType(DataType::Code::Int, 8), op, "weight");
    check_rank(x, 4, op, "input");
    check_rank(w, 4, op, "weight");
    check_conv_window(p, op);
    check_u8_zero_point(x_zero_point, op);
    const auto& xs = x.shape();
    const auto& ws = w.shape();
    const int64_t n = xs[0], c = xs[1], k = ws[0], r = ws[2], s = ws[3];
    const int64_t groups = p.groups;
    if (groups < 1 || c % groups != 0 || k % groups != 0 || ws[1] != c / groups)
        throw UserError() << op << ": weight " << shape_to_string(ws) << " does not match " << c
                          << " input channels in " << groups << " groups";
    const int64_t cg = c / groups, kg = k / groups;
    check_channel_vector(offset, {k}, DataType::i32(), op, "offset");
    check_channel_vector(scale, {k}, DataType::f32(), op, "scale");
    const int64_t oh =
        conv_window_out(xs[2] + p.pad_top + p.pad_bottom, r, p.stride_h, p.dilation_h, op);
    const int64_t ow =
        conv_window_out(xs[3] + p.pad_left + p.pad_right, s, p.stride_w, p.dilation_w, op);
    // Padding holds the zero point: the real value 0, as in the dequantized convolution.
    const bool padded = p.pad_top || p.pad_left || p.pad_bottom || p.pad_right;
    Tensor in =
        padded
            ? pad_named(x, {0, 0, p.pad_top, p.pad_left}, {0, 0, p.pad_bottom, p.pad_right},
                        constant(x.dtype(), double(x_zero_point)), PadMode::Constant, op + "_pad")
            : x;
    const DataType i32 = DataType::i32();
    IterVar rc = reduce_axis(cg, "rc"), ry = reduce_axis(r, "ry"), rx = reduce_axis(s, "rx");
    Tensor acc = compute({n, k, oh, ow},
                         [&](const std::vector<Var>& i) {
                             Expr yy = i[2] * Expr(p.stride_h) + ry.var * Expr(p.dilation_h);
                             Expr xx = i[3] * Expr(p.stride_w) + rx.var * Expr(p.dilation_w);
                             Expr cin =
                                 groups == 1 ? Expr(rc.var) : (i[1] / Expr(kg)) * Expr(cg) + rc.var;
                             return sum(ir::cast(i32, in(i[0], cin, yy, xx)) *
                                            ir::cast(i32, w(i[1], rc.var, ry.var, rx.var)),
                                        {rc, ry, rx});
                         },
                         op, {"n", "k", "oh", "ow"});
    return compute({n, k, oh, ow},
                   [&](const std::vector<Var>& i) {
                       return ir::cast(DataType::f32(),
                                       acc(i[0], i[1], i[2], i[3]) + offset(i[1])) *
                              scale(i[1]);
                   },
                   op + "_dequantize", {"n", "k", "oh", "ow"});
}

namespace {
void check_pad_byte(int64_t pad_byte, const std::string& op) {
    if (pad_byte < 0 || pad_byte > 255)
        throw UserError() << op << ": padding byte " << pad_byte << " is not a u8";
}

/// `word` where image row y and column x (unpadded coordinates) lie in the h x w image, else
/// the word of four pad_byte bytes; `word` itself when p pads nothing.
Expr padded_word(Expr word, Expr y, Expr x, int64_t h, int64_t w, const Conv2dParams& p,
                 int64_t pad_byte) {
    if (!(p.pad_top || p.pad_left || p.pad_bottom || p.pad_right))
        return word;
    const int64_t pad_word = static_cast<int32_t>(static_cast<uint32_t>(pad_byte) * 0x01010101u);
    Expr inside = ir::logical_and(ir::logical_and(y >= Expr(int64_t(0)), y < Expr(h)),
                                  ir::logical_and(x >= Expr(int64_t(0)), x < Expr(w)));
    return ir::select(inside, word, constant(DataType::i32(), double(pad_word)));
}
} // namespace

Tensor pack_u8_words(const Tensor& x, const Conv2dParams& p, int64_t pad_byte,
                     int64_t words_block) {
    const std::string op = "pack_u8_words";
    check_dtype(x, DataType::u8(), op, "input");
    check_rank(x, 5, op, "input");
    check_conv_window(p, op);
    check_pad_byte(pad_byte, op);
    const auto& xs = x.shape();
    const int64_t xb = xs[4];
    if (xb <= 0 || xb % 4 != 0)
        throw UserError() << op << ": channel block " << xb << " is not a multiple of 4";
    const int64_t wb = words_block == 0 ? xb : words_block;
    if (wb <= 0 || wb % xb != 0 || (xs[1] * xb) % wb != 0)
        throw UserError() << op << ": words block " << wb << " must be a multiple of the channel "
                          << "block " << xb << " that divides the " << xs[1] * xb << " channels";
    const int64_t h = xs[2], wd = xs[3];
    const int64_t ph = h + p.pad_top + p.pad_bottom, pw = wd + p.pad_left + p.pad_right;
    // The word's bytes are the channels in memory order (little-endian): 4 consecutive bytes of
    // the input reinterpreted (one load each, a dense vector load along a block).
    // Word j of output block cbw is word cbw * wb / 4 + j of the image's channels: in input
    // block cbw * (wb / xb) + j / (xb / 4), at lanes 4 * (j % (xb / 4)) + 0 .. 3.
    const int64_t xw = xb / 4, ratio = wb / xb;
    return compute({xs[0], xs[1] / ratio, ph, pw, wb / 4},
                   [&](const std::vector<Var>& i) {
                       Expr y = i[2] - Expr(p.pad_top), xx = i[3] - Expr(p.pad_left);
                       Expr yc = clamp_index(y, 0, h - 1), xc = clamp_index(xx, 0, wd - 1);
                       Expr cb = ratio == 1 ? Expr(i[1]) : i[1] * Expr(ratio) + i[4] / Expr(xw);
                       Expr lane_word = ratio == 1 ? Expr(i[4]) : i[4] % Expr(xw);
                       Expr word =
                           ir::bytes_as_word(x(i[0], cb, yc, xc, lane_word * Expr(int64_t(4))));
                       return padded_word(word, y, xx, h, wd, p, pad_byte);
                   },
                   op, {"n", "cb", "h", "w", "j"});
}

Tensor pack_u8_planes(const Tensor& x, const Conv2dParams& p, int64_t pad_byte) {
    const std::string op = "pack_u8_planes";
    check_dtype(x, DataType::u8(), op, "input");
    check_rank(x, 4, op, "input");
    check_conv_window(p, op);
    check_pad_byte(pad_byte, op);
    const auto& xs = x.shape();
    const int64_t c = xs[1], h = xs[2], wd = xs[3];
    if (c < 1 || c > 4)
        throw UserError() << op << ": " << c << " channels; at most 4 make one word";
    const int64_t ph = h + p.pad_top + p.pad_bottom, pw = wd + p.pad_left + p.pad_right;
    return compute({xs[0], 1, ph, pw, 1},
                   [&](const std::vector<Var>& i) {
                       Expr y = i[2] - Expr(p.pad_top), xx = i[3] - Expr(p.pad_left);
                       Expr yc = clamp_index(y, 0, h - 1), xc = clamp_index(xx, 0, wd - 1);
                       std::vector<Expr> bytes;
                       for (int64_t b = 0; b < c; ++b) {
                           const Expr byte = x(i[0], Expr(b), yc, xc);
                           bytes.push_back(b == 3 ? signed_byte(byte)
                                                  : ir::cast(DataType::i32(), byte));
                       }
                       return padded_word(word_of_bytes(bytes), y, xx, h, wd, p, pad_byte);
                   },
                   op, {"n", "cb", "h", "w", "j"});
}

Tensor qconv2d_nchwc(const Tensor& x, const Tensor& w, const Tensor& offset, const Tensor& scale,
                     const Conv2dParams& p) {
    const std::string op = "qconv2d_nchwc";
    check_dtype(x, DataType::i32(), op, "input");
    check_dtype(w, DataType::i32(), op, "weight");
    check_rank(x, 5, op, "input");
    check_rank(w, 6, op, "weight");
    check_conv_window(p, op);
    if (p.pad_top || p.pad_left || p.pad_bottom || p.pad_right)
        throw UserError() << op << ": the input words are padded already (pads must be 0)";
    const auto& xs = x.shape();
    const auto& ws = w.shape();
    const int64_t n = xs[0], cb = xs[1], words = xs[4];
    const int64_t kb = ws[0], r = ws[2], s = ws[3], block = ws[5];
    if (ws[1] != cb || ws[4] != words)
        throw UserError() << op << ": weight " << shape_to_string(ws) << " does not match input "
                          << shape_to_string(xs);
    check_channel_vector(offset, {kb, block}, DataType::i32(), op, "offset");
    check_channel_vector(scale, {kb, block}, DataType::f32(), op, "scale");
    const int64_t oh = conv_window_out(xs[2], r, p.stride_h, p.dilation_h, op);
    const int64_t ow = conv_window_out(xs[3], s, p.stride_w, p.dilation_w, op);
    IterVar rcb = reduce_axis(cb, "rcb"), ry = reduce_axis(r, "ry"), rx = reduce_axis(s, "rx"),
            rj = reduce_axis(words, "rj");
    Tensor acc =
        compute({n, kb, oh, ow, block},
                [&](const std::vector<Var>& i) {
                    Expr yy = i[2] * Expr(p.stride_h) + ry.var * Expr(p.dilation_h);
                    Expr xx = i[3] * Expr(p.stride_w) + rx.var * Expr(p.dilation_w);
                    return sum(ir::dot4_u8s8(x(i[0], rcb.var, yy, xx, rj.var),
                                             w(i[1], rcb.var, ry.var, rx.var, rj.var, i[4])),
                               {rcb, ry, rx, rj});
                },
                op, {"n", "kb", "oh", "ow", "k"});
    return compute({n, kb, oh, ow, block},
                   [&](const std::vector<Var>& i) {
                       return ir::cast(DataType::f32(),
                                       acc(i[0], i[1], i[2], i[3], i[4]) + offset(i[1], i[4])) *
                              scale(i[1], i[4]);
                   },
                   op + "_dequantize", {"n", "kb", "oh", "ow", "k"});
}

Tensor qdepthwise_conv2d_nchwc(const Tensor& x, const Tensor& w, const Tensor& offset,
                               const Tensor& scale, const Conv2dParams& p, int64_t x_zero_point) {
    const std::string op = "qdepthwise_conv2d_nchwc";
    const DataType f32 = DataType::f32();
    check_dtype(x, DataType::u8(), op, "input");
    check_dtype(w, f32, op, "weight");
    check_rank(x, 5, op, "input");
    check_rank(w, 6, op, "weight");
    check_conv_window(p, op);
    check_u8_zero_point(x_zero_point, op);
    const auto& xs = x.shape();
    const auto& ws = w.shape();
    const int64_t n = xs[0], cb = xs[1], block = xs[4], r = ws[2], s = ws[3];
    if (ws[0] != cb || ws[1] != 1 || ws[4] != 1 || ws[5] != block)
        throw UserError() << op << ": weight " << shape_to_string(ws) << " does not match input "
                          << shape_to_string(xs) << " (depthwise)";
    check_channel_vector(offset, {cb, block}, f32, op, "offset");
    check_channel_vector(scale, {cb, block}, f32, op, "scale");
    const int64_t oh =
        conv_window_out(xs[2] + p.pad_top + p.pad_bottom, r, p.stride_h, p.dilation_h, op);
    const int64_t ow =
        conv_window_out(xs[3] + p.pad_left + p.pad_right, s, p.stride_w, p.dilation_w, op);
    const bool padded = p.pad_top || p.pad_left || p.pad_bottom || p.pad_right;
    Tensor in =
        padded
            ? pad_named(x, {0, 0, p.pad_top, p.pad_left, 0}, {0, 0, p.pad_bottom, p.pad_right, 0},
                        constant(x.dtype(), double(x_zero_point)), PadMode::Constant, op + "_pad")
            : x;
    IterVar ry = reduce_axis(r, "ry"), rx = reduce_axis(s, "rx");
    Tensor acc = compute({n, cb, oh, ow, block},
                         [&](const std::vector<Var>& i) {
                             Expr yy = i[2] * Expr(p.stride_h) + ry.var * Expr(p.dilation_h);
                             Expr xx = i[3] * Expr(p.stride_w) + rx.var * Expr(p.dilation_w);
                             return sum(ir::cast(f32, in(i[0], i[1], yy, xx, i[4])) *
                                            w(i[1], 0, ry.var, rx.var, 0, i[4]),
                                        {ry, rx});
                         },
                         op, {"n", "kb", "oh", "ow", "k"});
    return compute({n, cb, oh, ow, block},
                   [&](const std::vector<Var>& i) {
                       return (acc(i[0], i[1], i[2], i[3], i[4]) + offset(i[1], i[4])) *
                              scale(i[1], i[4]);
                   },
                   op + "_dequantize", {"n", "kb", "oh", "ow", "k"});
}

} // namespace tessera::te
