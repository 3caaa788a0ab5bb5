// bf16 convolution in the blocked layout: the activations rounded to bf16 and padded once
// (pack_bf16_nchwc), then summed in f32 with dot2_bf16 over words of two input channels (one
// vdpbf16ps per vector on CPUs with AVX512-BF16, AMX-BF16 tiles where the CPU has them).
#include "op_util.h"
#include "tessera/ir/op.h"

namespace tessera::te {

using namespace detail;

int64_t bf16_merged_row_elements(int64_t padded_width, int64_t out_block) {
    const int64_t pixels = padded_width * out_block;
    return out_block % 2 == 0 ? pixels : (pixels + 2) / 2 * 2;
}

Tensor pack_bf16_nchwc(const Tensor& x, const Conv2dParams& p, int64_t out_block,
                       bool merge_width) {
    const std::string op = "pack_bf16_nchwc";
    check_dtype(x, DataType::f32(), op, "input");
    check_rank(x, 5, op, "input");
    check_conv_window(p, op);
    const auto& xs = x.shape();
    const int64_t cb = xs[1], h = xs[2], wd = xs[3], xb = xs[4], channels = cb * xb;
    if (out_block <= 0 || (out_block % 2 != 0 && !merge_width))
        throw UserError() << op << ": output block " << out_block << " is not a positive even "
                          << "number (odd ones only with merged width)";
    const int64_t cbw = (channels + out_block - 1) / out_block;
    const int64_t ph = h + p.pad_top + p.pad_bottom, pw = wd + p.pad_left + p.pad_right;
    const DataType bf16 = DataType::bf16();
    // in_row: false in a merged row's tail past its pixels (0 there).
    const auto element = [&](const std::vector<Expr>& i, Expr in_row = Expr()) {
        Expr c = i[1] * Expr(out_block) + i[4];
        Expr y = i[2] - Expr(p.pad_top), xx = i[3] - Expr(p.pad_left);
        // Input block and lane of channel c: plain indices when whole input blocks make
        // an output block (the vector loads stay dense).
        Expr block_of, lane;
        const bool whole = channels % out_block == 0 && out_block % xb == 0;
        if (whole && out_block == xb) {
            block_of = i[1], lane = i[4];
        } else if (whole) {
            block_of = i[1] * Expr(out_block / xb) + i[4] / Expr(xb), lane = i[4] % Expr(xb);
        } else {
            Expr cc = clamp_index(c, 0, channels - 1);
            block_of = cc / Expr(xb), lane = cc % Expr(xb);
        }
        Expr value = x(i[0], block_of, clamp_index(y, 0, h - 1), clamp_index(xx, 0, wd - 1), lane);
        const bool padded = p.pad_top || p.pad_left || p.pad_bottom || p.pad_right;
        if (channels % out_block == 0 && !padded && !in_row.defined())
            return ir::cast(bf16, value);
        // Channels past the input's, the border and a merged row's tail are 0.
        Expr inside = c < Expr(channels);
        if (padded)
            inside = ir::logical_and(
                inside, ir::logical_and(ir::logical_and(y >= Expr(int64_t(0)), y < Expr(h)),
                                        ir::logical_and(xx >= Expr(int64_t(0)), xx < Expr(wd))));
        if (in_row.defined())
            inside = ir::logical_and(inside, in_row);
        return ir::cast(bf16, ir::select(inside, value, constant(DataType::f32(), 0.0)));
    };
    if (merge_width) {
        const int64_t row = bf16_merged_row_elements(pw, out_block);
        return compute({xs[0], cbw, ph, row},
                       [&](const std::vector<Var>& i) {
                           return element(
                               {i[0], i[1], i[2], i[3] / Expr(out_block), i[3] % Expr(out_block)},
                               row > pw * out_block ? Expr(i[3] < Expr(pw * out_block)) : Expr());
                       },
                       op, {"n", "cb", "h", "wc"});
    }
    return compute({xs[0], cbw, ph, pw, out_block},
                   [&](const std::vector<Var>& i) { return element(as_exprs(i)); }, op,
                   {"n", "cb", "h", "w", "c"});
}

Tensor bf16_conv2d_nchwc(const Tensor& x, const Tensor& w, const Conv2dParams& p,
                         const Tensor& bias, int64_t pixel_block) {
    const std::string op = "bf16_conv2d_nchwc";
    check_dtype(x, DataType::bf16(), op, "input");
    check_dtype(w, DataType::i32(), op, "weight");
    const bool folded = pixel_block > 0;
    check_rank(x, folded ? 4 : 5, op, "input");
    check_rank(w, folded ? 5 : 6, op, "weight");
    check_conv_window(p, op);
    if (p.pad_top || p.pad_left || p.pad_bottom || p.pad_right)
        throw UserError() << op << ": the input is padded already (pads must be 0)";
    // A pixel block of 1 is refused: its run of ceil(S / 2) words would not tell S from S + 1.
    if (folded && (pixel_block < 2 || x.shape()[3] % 2 != 0 || p.stride_w * pixel_block % 2 != 0 ||
                   p.dilation_w != 1))
        throw UserError() << op << ": a folded input's rows must be whole words, each window "
                          << "row's run starting on one (stride x " << pixel_block
                          << " channels even, at least 2 channels), read without column dilation";
    const auto& xs = x.shape();
    const auto& ws = w.shape();
    const int64_t n = xs[0], cb = xs[1], xb = folded ? pixel_block : xs[4];
    const int64_t pw = folded ? xs[3] / pixel_block : xs[3];
    const int64_t kb = ws[0], r = ws[2], words = folded ? ws[3] : ws[4], block = ws.back();
    // Folded, a window row's pixels lie side by side: its S * xb channels are one run of words,
    // the last one's high half past the window when S * xb is odd.
    const int64_t s = folded ? words * 2 / xb : ws[3];
    if (ws[1] != cb || (folded ? (s * xb + 1) / 2 != words : xb % 2 != 0 || words * 2 != xb))
        throw UserError() << op << ": weight " << shape_to_string(ws) << " does not match input "
                          << shape_to_string(xs) << " (words of two of its channel block)";
    const int64_t oh = conv_window_out(xs[2], r, p.stride_h, p.dilation_h, op);
    const int64_t ow = conv_window_out(pw, s, p.stride_w, p.dilation_w, op);
    if (folded && (ow - 1) * p.stride_w * xb + 2 * words > xs[3])
        throw UserError() << op << ": the last window row's run of " << words << " words ends "
                          << "past the input's rows of " << xs[3] << " elements";
    IterVar rcb = reduce_axis(cb, "rcb"), ry = reduce_axis(r, "ry"), rj = reduce_axis(words, "rj");
    const std::vector<std::string> names = {"n", "kb", "oh", "ow", "k"};
    Tensor y;
    if (folded) {
        y = compute(
            {n, kb, oh, ow, block},
            [&](const std::vector<Var>& i) {
                Expr yy = i[2] * Expr(p.stride_h) + ry.var * Expr(p.dilation_h);
                Expr first = i[3] * Expr(p.stride_w * xb) + rj.var * Expr(int64_t(2));
                Expr pair = ir::bytes_as_word(x(i[0], rcb.var, yy, first));
                return sum(ir::dot2_bf16(pair, w(i[1], rcb.var, ry.var, rj.var, i[4])),
                           {rcb, ry, rj});
            },
            op, names);
    } else {
        IterVar rx = reduce_axis(s, "rx");
        y = compute(
            {n, kb, oh, ow, block},
            [&](const std::vector<Var>& i) {
                Expr yy = i[2] * Expr(p.stride_h) + ry.var * Expr(p.dilation_h);
                Expr xx = i[3] * Expr(p.stride_w) + rx.var * Expr(p.dilation_w);
                // The input's two channels of word rj, its bits reinterpreted.
                Expr pair = ir::bytes_as_word(x(i[0], rcb.var, yy, xx, rj.var * Expr(int64_t(2))));
                return sum(ir::dot2_bf16(pair, w(i[1], rcb.var, ry.var, rx.var, rj.var, i[4])),
                           {rcb, ry, rx, rj});
            },
            op, names);
    }
    if (!bias.defined())
        return y;
    check_dtype(bias, DataType::f32(), op, "bias");
    if (bias.shape() != std::vector<int64_t>{kb, block})
        throw UserError() << op << ": bias must have shape [" << kb << ", " << block << "], got "
                          << shape_to_string(bias.shape());
    return compute(
        {n, kb, oh, ow, block},
        [&](const std::vector<Var>& i) {
            return y(i[0], i[1], i[2], i[3], i[4]) + bias(i[1], i[4]);
        },
        op + "_bias", names);
}

} // namespace tessera::te
