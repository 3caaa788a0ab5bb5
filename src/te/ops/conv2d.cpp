// 2-D convolution, NCHW / OIHW, with stride, padding, dilation and groups (depthwise included).
#include "op_util.h"

namespace tessera::te {

using namespace detail;

Conv2dParams Conv2dParams::make(int64_t stride, int64_t pad, int64_t dilation, int64_t groups) {
    Conv2dParams p;
    p.stride_h = p.stride_w = stride;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = pad;
    p.dilation_h = p.dilation_w = dilation;
    p.groups = groups;
    return p;
}

static Tensor conv2d_impl(const Tensor& x, const Tensor& w, const Conv2dParams& p,
                          const Tensor& bias, const std::string& op) {
    check_defined(x, op, "input");
    check_defined(w, op, "weight");
    check_same_dtype(x, w, op);
    check_rank(x, 4, op, "input");
    check_rank(w, 4, op, "weight");
    if (p.stride_h < 1 || p.stride_w < 1)
        throw UserError() << op << ": strides must be positive, got " << p.stride_h << "x"
                          << p.stride_w;
    if (p.dilation_h < 1 || p.dilation_w < 1)
        throw UserError() << op << ": dilations must be positive, got " << p.dilation_h << "x"
                          << p.dilation_w;
    if (p.pad_top < 0 || p.pad_left < 0 || p.pad_bottom < 0 || p.pad_right < 0)
        throw UserError() << op << ": pads must be non-negative, got " << p.pad_top << ","
                          << p.pad_left << "," << p.pad_bottom << "," << p.pad_right;
    if (p.groups < 1)
        throw UserError() << op << ": groups must be positive, got " << p.groups;
    const auto& xs = x.shape();
    const auto& ws = w.shape();
    int64_t n = xs[0], c = xs[1], h = xs[2], wd = xs[3];
    int64_t k = ws[0], cg = ws[1], r = ws[2], s = ws[3];
    if (c % p.groups != 0)
        throw UserError() << op << ": input channels " << c << " not divisible by groups "
                          << p.groups;
    if (k % p.groups != 0)
        throw UserError() << op << ": output channels " << k << " not divisible by groups "
                          << p.groups;
    if (cg != c / p.groups)
        throw UserError() << op << ": weight '" << w.name() << "' " << shape_to_string(ws)
                          << " must have " << c / p.groups << " input channels (c=" << c
                          << ", groups=" << p.groups << ")";
    int64_t ph = h + p.pad_top + p.pad_bottom, pw = wd + p.pad_left + p.pad_right;
    int64_t oh = (ph - p.dilation_h * (r - 1) - 1) / p.stride_h + 1;
    int64_t ow = (pw - p.dilation_w * (s - 1) - 1) / p.stride_w + 1;
    if (ph - p.dilation_h * (r - 1) - 1 < 0 || pw - p.dilation_w * (s - 1) - 1 < 0)
        throw UserError() << op << ": kernel " << r << "x" << s << " (dilation " << p.dilation_h
                          << "x" << p.dilation_w << ") larger than the padded input " << ph << "x"
                          << pw;
    if (bias.defined()) {
        check_same_dtype(x, bias, op);
        if (bias.shape() != std::vector<int64_t>{k})
            throw UserError() << op << ": bias '" << bias.name() << "' must have shape [" << k
                              << "], got " << shape_to_string(bias.shape());
    }

    bool padded = p.pad_top || p.pad_left || p.pad_bottom || p.pad_right;
    Tensor in = padded
                    ? pad_named(x, {0, 0, p.pad_top, p.pad_left}, {0, 0, p.pad_bottom, p.pad_right},
                                constant(x.dtype(), 0.0), PadMode::Constant, op + "_pad")
                    : x;
    IterVar rc = reduce_axis(cg, "rc"), ry = reduce_axis(r, "ry"), rx = reduce_axis(s, "rx");
    int64_t kg = k / p.groups;
    Tensor y = compute(
        {n, k, oh, ow},
        [&](const std::vector<Var>& i) {
            Expr cin = p.groups == 1 ? Expr(rc.var) : (i[1] / Expr(kg)) * Expr(cg) + rc.var;
            Expr yy = i[2] * Expr(p.stride_h) + ry.var * Expr(p.dilation_h);
            Expr xx = i[3] * Expr(p.stride_w) + rx.var * Expr(p.dilation_w);
            return sum(in(i[0], cin, yy, xx) * w(i[1], rc.var, ry.var, rx.var), {rc, ry, rx});
        },
        op, {"n", "k", "oh", "ow"});
    if (!bias.defined())
        return y;
    return compute(
        {n, k, oh, ow},
        [&](const std::vector<Var>& i) { return y(i[0], i[1], i[2], i[3]) + bias(i[1]); },
        op + "_bias", {"n", "k", "oh", "ow"});
}

Tensor conv2d(const Tensor& x, const Tensor& w, const Conv2dParams& p, const Tensor& bias) {
    return conv2d_impl(x, w, p, bias, "conv2d");
}

Tensor depthwise_conv2d(const Tensor& x, const Tensor& w, const Conv2dParams& p,
                        const Tensor& bias) {
    const std::string op = "depthwise_conv2d";
    check_defined(x, op, "input");
    check_defined(w, op, "weight");
    check_rank(x, 4, op, "input");
    check_rank(w, 4, op, "weight");
    int64_t c = x.shape()[1];
    if (w.shape()[1] != 1 || w.shape()[0] % c != 0)
        throw UserError() << op << ": weight '" << w.name() << "' " << shape_to_string(w.shape())
                          << " must be [" << c << " * multiplier, 1, r, s]";
    Conv2dParams q = p;
    q.groups = c;
    return conv2d_impl(x, w, q, bias, op);
}

} // namespace tessera::te
