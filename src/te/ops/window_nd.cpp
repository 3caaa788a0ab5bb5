// N-D convolution and pooling (window_nd.h): the forms of Conv, MaxPool and AveragePool with a
// number of spatial dims other than two. The structure follows conv2d and the 2-D pools: a
// separate pad stage, then a reduction over the window reading the padded input unguarded.
#include "tessera/te/window_nd.h"

#include <algorithm>

#include "op_util.h"
#include "window_checks.h"

namespace tessera::te {

using namespace detail;

void check_window(const WindowNdParams& p, size_t spatial, bool with_kernel,
                  const std::string& op) {
    auto check = [&](const std::vector<int64_t>& v, size_t n, int64_t lo, const char* what) {
        if (v.size() != n)
            throw UserError() << op << ": " << what << " has " << v.size() << " values, expected "
                              << n;
        for (int64_t x : v)
            if (x < lo)
                throw UserError() << op << ": " << what << " value " << x << " is below " << lo;
    };
    if (with_kernel)
        check(p.kernel, spatial, 1, "kernel");
    check(p.stride, spatial, 1, "stride");
    check(p.dilation, spatial, 1, "dilation");
    check(p.pads, 2 * spatial, 0, "pads");
    if (p.groups < 1)
        throw UserError() << op << ": groups must be positive, got " << p.groups;
}

void check_conv_operands(const Tensor& x, const Tensor& w, const std::string& op) {
    check_defined(x, op, "input");
    check_defined(w, op, "weight");
    check_same_dtype(x, w, op);
    if (x.ndim() < 3)
        throw UserError() << op << ": input '" << x.name() << "' must have rank >= 3, got "
                          << shape_to_string(x.shape());
    check_rank(w, x.ndim(), op, "weight");
}

namespace {

/// Output extent of one spatial dim of a convolution or pool (the ONNX rule).
int64_t window_out(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t pb,
                   int64_t pe, bool ceil_mode, const std::string& op) {
    const int64_t eff = dilation * (kernel - 1) + 1;
    const int64_t span = in + pb + pe - eff;
    if (span < 0)
        throw UserError() << op << ": window " << eff << " larger than the padded extent "
                          << in + pb + pe;
    int64_t out = ceil_mode ? (span + stride - 1) / stride + 1 : span / stride + 1;
    // A window must start inside the input or the begin padding.
    if (ceil_mode && (out - 1) * stride >= in + pb)
        --out;
    return out;
}

/// x padded by `before` / `after` on its spatial dims with `value` (x itself when no pad).
Tensor pad_spatial(const Tensor& x, const std::vector<int64_t>& before,
                   const std::vector<int64_t>& after, Expr value, const std::string& name) {
    const size_t s = before.size();
    std::vector<int64_t> b(2, 0), a(2, 0);
    b.insert(b.end(), before.begin(), before.end());
    a.insert(a.end(), after.begin(), after.end());
    bool any = false;
    for (size_t d = 0; d < s; ++d)
        any = any || before[d] != 0 || after[d] != 0;
    return any ? pad_named(x, b, a, std::move(value), PadMode::Constant, name) : x;
}

/// The pool's output extents and the padded input (end pads widened so that ceil-mode windows
/// stay in bounds).
struct PoolPlan {
    std::vector<int64_t> out_shape;
    Tensor padded;
};

PoolPlan plan_pool(const Tensor& x, const WindowNdParams& p, Expr pad_value,
                   const std::string& op) {
    check_defined(x, op, "input");
    if (x.ndim() < 3)
        throw UserError() << op << ": input '" << x.name() << "' must have rank >= 3, got "
                          << shape_to_string(x.shape());
    const size_t s = x.ndim() - 2;
    check_window(p, s, true, op);
    PoolPlan plan;
    plan.out_shape = {x.shape()[0], x.shape()[1]};
    std::vector<int64_t> before(s), after(s);
    for (size_t d = 0; d < s; ++d) {
        const int64_t dil = p.dilation[d], in = x.shape()[2 + d];
        const int64_t pb = p.pads[d], pe = p.pads[s + d];
        const int64_t o = window_out(in, p.kernel[d], p.stride[d], dil, pb, pe, p.ceil_mode, op);
        plan.out_shape.push_back(o);
        before[d] = pb;
        after[d] = std::max(pe, (o - 1) * p.stride[d] + dil * (p.kernel[d] - 1) + 1 - in - pb);
    }
    plan.padded = pad_spatial(x, before, after, std::move(pad_value), op + "_pad");
    return plan;
}

/// Reduction with `rop` over the pool windows of plan.padded.
Tensor window_reduce(const PoolPlan& plan, const WindowNdParams& p, ir::ReduceOp rop,
                     const std::string& name) {
    const size_t s = p.spatial();
    std::vector<IterVar> r;
    for (size_t d = 0; d < s; ++d)
        r.push_back(reduce_axis(p.kernel[d], "r" + std::to_string(d)));
    return compute(
        plan.out_shape,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> idx = {i[0], i[1]};
            for (size_t d = 0; d < s; ++d)
                idx.push_back(i[2 + d] * Expr(p.stride[d]) + r[d].var * Expr(p.dilation[d]));
            return ir::Reduce::make(rop, plan.padded(idx), r);
        },
        name);
}

} // namespace

Tensor conv_nd(const Tensor& x, const Tensor& w, const WindowNdParams& p, const Tensor& bias,
               const std::string& name) {
    check_conv_operands(x, w, name);
    const size_t s = x.ndim() - 2;
    check_window(p, s, false, name);
    const int64_t n = x.shape()[0], c = x.shape()[1], m = w.shape()[0], cg = w.shape()[1];
    if (c % p.groups != 0 || m % p.groups != 0 || cg != c / p.groups)
        throw UserError() << name << ": input " << shape_to_string(x.shape()) << " and weight "
                          << shape_to_string(w.shape()) << " do not match groups " << p.groups;
    if (bias.defined()) {
        check_same_dtype(x, bias, name);
        if (bias.shape() != std::vector<int64_t>{m})
            throw UserError() << name << ": bias '" << bias.name() << "' must have shape [" << m
                              << "], got " << shape_to_string(bias.shape());
    }
    std::vector<int64_t> out = {n, m};
    for (size_t d = 0; d < s; ++d)
        out.push_back(window_out(x.shape()[2 + d], w.shape()[2 + d], p.stride[d], p.dilation[d],
                                 p.pads[d], p.pads[s + d], false, name));
    const std::vector<int64_t> before(p.pads.begin(), p.pads.begin() + static_cast<long>(s));
    const std::vector<int64_t> after(p.pads.begin() + static_cast<long>(s), p.pads.end());
    const Tensor in = pad_spatial(x, before, after, constant(x.dtype(), 0.0), name + "_pad");
    std::vector<IterVar> r = {reduce_axis(cg, "rc")};
    for (size_t d = 0; d < s; ++d)
        r.push_back(reduce_axis(w.shape()[2 + d], "r" + std::to_string(d)));
    const int64_t mg = m / p.groups;
    const Tensor y = compute(
        out,
        [&](const std::vector<Var>& i) {
            Expr cin = p.groups == 1 ? Expr(r[0].var) : (i[1] / Expr(mg)) * Expr(cg) + r[0].var;
            std::vector<Expr> xi = {i[0], cin}, wi = {i[1], r[0].var};
            for (size_t d = 0; d < s; ++d) {
                xi.push_back(i[2 + d] * Expr(p.stride[d]) + r[1 + d].var * Expr(p.dilation[d]));
                wi.push_back(r[1 + d].var);
            }
            return sum(in(xi)*w(wi), r);
        },
        name);
    if (!bias.defined())
        return y;
    return compute(
        out, [&](const std::vector<Var>& i) { return y(as_exprs(i)) + bias(i[1]); },
        name + "_bias");
}

Tensor max_pool_nd(const Tensor& x, const WindowNdParams& p, const std::string& name) {
    check_defined(x, name, "input");
    const PoolPlan plan = plan_pool(x, p, ir::lowest_value(x.dtype()), name);
    return window_reduce(plan, p, ir::ReduceOp::Max, name);
}

Tensor avg_pool_nd(const Tensor& x, const WindowNdParams& p, const std::string& name) {
    check_defined(x, name, "input");
    check_float(x, name);
    const PoolPlan plan = plan_pool(x, p, constant(x.dtype(), 0.0), name);
    const Tensor total = window_reduce(plan, p, ir::ReduceOp::Sum, name + "_sum");
    const size_t s = p.spatial();
    const DataType t = x.dtype();
    return compute(
        plan.out_shape,
        [&](const std::vector<Var>& i) {
            // Window positions inside [lo, hi) per dim: the input, or with count_include_pad
            // the explicitly padded input (not the ceil-mode overhang).
            Expr count;
            for (size_t d = 0; d < s; ++d) {
                const int64_t in = x.shape()[2 + d], pb = p.pads[d], pe = p.pads[s + d];
                const int64_t lo = p.count_include_pad ? -pb : 0;
                const int64_t hi = p.count_include_pad ? in + pe : in;
                const Expr start = i[2 + d] * Expr(p.stride[d]) - Expr(pb);
                const int64_t bound =
                    in + pb + pe +
                    (plan.out_shape[2 + d] + p.kernel[d]) * (p.stride[d] + p.dilation[d]);
                Expr c = window_taps_inside(start, p.kernel[d], p.dilation[d], lo, hi, bound);
                count = count.defined() ? count * c : c;
            }
            return total(as_exprs(i)) / ir::cast(t, count);
        },
        name);
}

} // namespace tessera::te
