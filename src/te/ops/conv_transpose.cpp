// Transposed convolution (window_nd.h) as a gather: each output element sums the input elements
// whose scattered kernel window covers it. A gather keeps the op one reduction stage that fuses
// a bias / activation epilogue like a convolution; the scatter form would need an accumulation
// into the output.
#include <algorithm>

#include "op_util.h"
#include "tessera/te/window_nd.h"
#include "window_checks.h"

namespace tessera::te {

using namespace detail;

std::vector<int64_t> conv_transpose_output_dims(const std::vector<int64_t>& in,
                                                const std::vector<int64_t>& kernel,
                                                const WindowNdParams& p) {
    const size_t s = in.size();
    std::vector<int64_t> out(s);
    for (size_t d = 0; d < s; ++d)
        out[d] = p.stride[d] * (in[d] - 1) + p.output_padding[d] + (kernel[d] - 1) * p.dilation[d] +
                 1 - p.pads[d] - p.pads[s + d];
    return out;
}

Tensor conv_transpose_nd(const Tensor& x, const Tensor& w, const WindowNdParams& p,
                         const Tensor& bias, const std::string& name) {
    check_conv_operands(x, w, name);
    const size_t s = x.ndim() - 2;
    check_window(p, s, false, name);
    if (p.output_padding.size() != s ||
        std::any_of(p.output_padding.begin(), p.output_padding.end(),
                    [](int64_t e) { return e < 0; }))
        throw UserError() << name << ": output_padding must have " << s << " values of at least 0";
    const int64_t n = x.shape()[0], c = x.shape()[1], g = p.groups;
    if (g < 1 || c % g != 0 || w.shape()[0] != c)
        throw UserError() << name << ": input " << shape_to_string(x.shape()) << " and weight "
                          << shape_to_string(w.shape()) << " do not match groups " << g;
    const int64_t mg = w.shape()[1], m = mg * g, cg = c / g;
    if (bias.defined()) {
        check_same_dtype(x, bias, name);
        if (bias.shape() != std::vector<int64_t>{m})
            throw UserError() << name << ": bias '" << bias.name() << "' must have shape [" << m
                              << "], got " << shape_to_string(bias.shape());
    }
    const std::vector<int64_t> in(x.shape().begin() + 2, x.shape().end());
    const std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
    std::vector<int64_t> out = {n, m};
    for (int64_t o : conv_transpose_output_dims(in, kernel, p)) {
        if (o < 1)
            throw UserError() << name << ": output extent " << o << " is not positive";
        out.push_back(o);
    }
    std::vector<IterVar> r = {reduce_axis(cg, "rc")};
    for (size_t d = 0; d < s; ++d)
        r.push_back(reduce_axis(kernel[d], "r" + std::to_string(d)));
    const Tensor y = compute(
        out,
        [&](const std::vector<Var>& i) {
            Expr cin = g == 1 ? Expr(r[0].var) : (i[1] / Expr(mg)) * Expr(cg) + r[0].var;
            Expr mo = g == 1 ? Expr(i[1]) : i[1] % Expr(mg);
            std::vector<Expr> xi = {i[0], cin}, wi = {cin, mo};
            Expr valid;
            for (size_t d = 0; d < s; ++d) {
                // Output o reads input (o + pad_begin - k * dilation) / stride when that is an
                // exact quotient in [0, in). The read uses the clamped position so that it stays
                // in bounds where the Select discards it.
                const int64_t last = p.stride[d] * (in[d] - 1);
                Expr t = i[2 + d] + Expr(p.pads[d]) - r[1 + d].var * Expr(p.dilation[d]);
                Expr tc = clamp_index(t, 0, last);
                Expr ok = p.stride[d] == 1
                              ? ir::eq(t, tc)
                              : ir::logical_and(ir::eq(t, tc),
                                                ir::eq(tc % Expr(p.stride[d]), Expr(int64_t{0})));
                valid = valid.defined() ? ir::logical_and(valid, ok) : ok;
                xi.push_back(p.stride[d] == 1 ? tc : tc / Expr(p.stride[d]));
                wi.push_back(r[1 + d].var);
            }
            return sum(ir::select(valid, x(xi) * w(wi), constant(x.dtype(), 0.0)), r);
        },
        name);
    if (!bias.defined())
        return y;
    return compute(
        out, [&](const std::vector<Var>& i) { return y(as_exprs(i)) + bias(i[1]); },
        name + "_bias");
}

} // namespace tessera::te
