// The blocked channel layout NCHW[x]c: conversions to and from it and the blocked 2-D
// convolution (channel c of NCHW lives at [n, c / x, h, w, c % x]; padding channels are 0).
#include "op_util.h"

namespace tessera::te {

using namespace detail;

Tensor layout_to_nchwc(const Tensor& x, int64_t block) {
    const std::string op = "layout_to_nchwc";
    check_defined(x, op, "input");
    check_rank(x, 4, op, "input");
    if (block < 1)
        throw UserError() << op << ": block " << block << " must be positive";
    const auto& s = x.shape();
    const int64_t c = s[1], cb = (c + block - 1) / block;
    return compute(
        {s[0], cb, s[2], s[3], block},
        [&](const std::vector<Var>& i) {
            // One block: the channel is the block index itself, a plain axis read that a
            // consumer can inline (a conv's padding stage reading the image directly).
            Expr ch = cb == 1 ? Expr(i[4]) : i[1] * Expr(block) + i[4];
            if (c % block == 0)
                return x(i[0], ch, i[2], i[3]);
            // Padding channels: a clamped (in-bounds) read, replaced by 0.
            return ir::select(ch < Expr(c), x(i[0], clamp_index(ch, 0, c - 1), i[2], i[3]),
                              constant(x.dtype(), 0.0));
        },
        op, {"n", "cb", "h", "w", "c"});
}

Tensor layout_from_nchwc(const Tensor& x, int64_t channels) {
    const std::string op = "layout_from_nchwc";
    check_defined(x, op, "input");
    check_rank(x, 5, op, "input");
    const auto& s = x.shape();
    const int64_t block = s[4];
    if (channels < 1 || channels > s[1] * block || (channels + block - 1) / block != s[1])
        throw UserError() << op << ": " << shape_to_string(s) << " does not hold " << channels
                          << " channels";
    return compute(
        {s[0], channels, s[2], s[3]},
        [&](const std::vector<Var>& i) {
            return x(i[0], i[1] / Expr(block), i[2], i[3], i[1] % Expr(block));
        },
        op, {"n", "c", "h", "w"});
}

Tensor conv2d_nchwc(const Tensor& x, const Tensor& w, const Conv2dParams& p, const Tensor& bias,
                    bool depthwise) {
    const std::string op = "conv2d_nchwc";
    check_defined(x, op, "input");
    check_defined(w, op, "weight");
    check_same_dtype(x, w, op);
    check_rank(x, 5, op, "input");
    check_rank(w, 6, op, "weight");
    if (p.stride_h < 1 || p.stride_w < 1 || p.dilation_h < 1 || p.dilation_w < 1 ||
        p.pad_top < 0 || p.pad_left < 0 || p.pad_bottom < 0 || p.pad_right < 0)
        throw UserError() << op << ": strides and dilations must be positive and pads "
                          << "non-negative";
    const auto& xs = x.shape();
    const auto& ws = w.shape();
    // The input block (xs[4]) and the output block (ws[5]) agree except where a conv reads
    // a few channels (an image's RGB) as one block of them and writes full blocks.
    const int64_t n = xs[0], cb = xs[1], h = xs[2], wd = xs[3], in_block = xs[4];
    const int64_t kb = ws[0], r = ws[2], s = ws[3], block = ws[5];
    // Grouped (not depthwise): each of p.groups groups reads ws[1] whole input blocks and
    // writes kb / groups output blocks.
    const int64_t groups = depthwise ? 1 : p.groups;
    const bool ok =
        depthwise ? (kb == cb && ws[1] == 1 && ws[4] == 1 && in_block == block)
                  : (groups >= 1 && ws[1] * groups == cb && kb % groups == 0 && ws[4] == in_block);
    if (!ok)
        throw UserError() << op << ": weight " << shape_to_string(ws) << " does not match input "
                          << shape_to_string(xs)
                          << (depthwise     ? " (depthwise)"
                              : groups != 1 ? " in " + std::to_string(groups) + " groups"
                                            : std::string());
    const int64_t ph = h + p.pad_top + p.pad_bottom, pw = wd + p.pad_left + p.pad_right;
    if (ph - p.dilation_h * (r - 1) - 1 < 0 || pw - p.dilation_w * (s - 1) - 1 < 0)
        throw UserError() << op << ": kernel " << r << "x" << s << " larger than the padded input "
                          << ph << "x" << pw;
    const int64_t oh = (ph - p.dilation_h * (r - 1) - 1) / p.stride_h + 1;
    const int64_t ow = (pw - p.dilation_w * (s - 1) - 1) / p.stride_w + 1;
    if (bias.defined()) {
        check_same_dtype(x, bias, op);
        if (bias.shape() != std::vector<int64_t>{kb, block})
            throw UserError() << op << ": bias must have shape [" << kb << ", " << block
                              << "], got " << shape_to_string(bias.shape());
    }
    const bool padded = p.pad_top || p.pad_left || p.pad_bottom || p.pad_right;
    Tensor in = padded ? pad_named(x, {0, 0, p.pad_top, p.pad_left, 0},
                                   {0, 0, p.pad_bottom, p.pad_right, 0}, constant(x.dtype(), 0.0),
                                   PadMode::Constant, op + "_pad")
                       : x;
    IterVar ry = reduce_axis(r, "ry"), rx = reduce_axis(s, "rx");
    // What an output element [n, kb, oh, ow, k] reads besides its window: the input block, the
    // channel in it, the weight's input block and channel, and the reduce axes. Depthwise:
    // channel k of block kb. Grouped with one input block per group: the group's block, named
    // by the output block (no reduce loop over blocks, so that no index adds a reduce variable
    // to the block axis). Otherwise every input block of the output block's group.
    const int64_t group_blocks = ws[1], out_group_blocks = kb / groups;
    const bool one_block_groups = !depthwise && groups > 1 && group_blocks == 1;
    IterVar rc = reduce_axis(depthwise ? 1 : in_block, "rc");
    IterVar rcb = reduce_axis(group_blocks, "rcb");
    std::vector<IterVar> reduce = depthwise          ? std::vector<IterVar>{ry, rx}
                                  : one_block_groups ? std::vector<IterVar>{ry, rx, rc}
                                                     : std::vector<IterVar>{rcb, ry, rx, rc};
    Tensor y = compute(
        {n, kb, oh, ow, block},
        [&](const std::vector<Var>& i) {
            Expr yy = i[2] * Expr(p.stride_h) + ry.var * Expr(p.dilation_h);
            Expr xx = i[3] * Expr(p.stride_w) + rx.var * Expr(p.dilation_w);
            if (depthwise)
                return sum(in(i[0], i[1], yy, xx, i[4]) * w(i[1], 0, ry.var, rx.var, 0, i[4]),
                           reduce);
            if (one_block_groups) {
                Expr group = out_group_blocks == 1 ? Expr(i[1]) : i[1] / Expr(out_group_blocks);
                return sum(in(i[0], group, yy, xx, rc.var) *
                               w(i[1], 0, ry.var, rx.var, rc.var, i[4]),
                           reduce);
            }
            Expr xb = groups == 1 ? Expr(rcb.var)
                                  : i[1] / Expr(out_group_blocks) * Expr(group_blocks) + rcb.var;
            return sum(in(i[0], xb, yy, xx, rc.var) *
                           w(i[1], rcb.var, ry.var, rx.var, rc.var, i[4]),
                       reduce);
        },
        op, {"n", "kb", "oh", "ow", "k"});
    if (!bias.defined())
        return y;
    return compute(
        {n, kb, oh, ow, block},
        [&](const std::vector<Var>& i) {
            return y(i[0], i[1], i[2], i[3], i[4]) + bias(i[1], i[4]);
        },
        op + "_bias", {"n", "kb", "oh", "ow", "k"});
}

} // namespace tessera::te
