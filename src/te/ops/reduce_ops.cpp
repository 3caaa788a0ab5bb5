// Reductions and normalizations composed from reduction stages and elementwise maps
// (te/reduce_ops.h). A map that only feeds one reduction (|x|, x * x, exp(x - max)) is part of
// the reduction's body rather than a stage of its own, so no intermediate tensor is written.
#include "tessera/te/reduce_ops.h"

#include <functional>
#include <string>

#include "op_util.h"

namespace tessera::te {

using namespace detail;

namespace {

/// f(x value, output index) reduced with `op` over the normalized, sorted `axes`.
Tensor reduce_mapped(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims,
                     ir::ReduceOp op, const ElementMap& f, const std::string& name) {
    return reduce_stage(x, axes, keepdims, op, name, f);
}

/// g(t[i]) elementwise, as stage `name`.
Tensor map_stage(const Tensor& t, const std::function<Expr(Expr)>& g, const std::string& name) {
    return compute(
        t.shape(), [&](const std::vector<Var>& i) { return g(t(as_exprs(i))); }, name);
}

/// The checked, normalized axes of a reduction `op` of x (float only when `float_only`).
std::vector<int64_t> reduction_axes(const Tensor& x, std::vector<int64_t> axes, bool float_only,
                                    const std::string& op) {
    check_defined(x, op, "input");
    if (float_only)
        check_float(x, op);
    if (x.ndim() == 0)
        throw UserError() << op << ": input '" << x.name() << "' must have rank >= 1";
    return normalize_axes(std::move(axes), x.ndim(), op);
}

/// Checks x [N, C, D1, ...] of a spatial op; returns the spatial axes 2, 3, ...
std::vector<int64_t> spatial_axes(const Tensor& x, const std::string& op) {
    check_defined(x, op, "input");
    check_float(x, op);
    if (x.ndim() < 3)
        throw UserError() << op << ": input '" << x.name() << "' must have rank >= 3, got "
                          << shape_to_string(x.shape());
    std::vector<int64_t> axes;
    for (size_t d = 2; d < x.ndim(); ++d)
        axes.push_back(static_cast<int64_t>(d));
    return axes;
}

const ElementMap kIdentity = [](Expr v, const std::vector<Var>&) { return v; };
const ElementMap kSquare = [](Expr v, const std::vector<Var>&) { return v * v; };

} // namespace

Tensor reduce_prod(const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
    const std::string op = "reduce_prod";
    axes = reduction_axes(x, std::move(axes), false, op);
    // Each stage multiplies groups of kFactor neighbours along one axis: log8 stages per axis
    // keep the stage count small, 8 products keep each element's expression small.
    constexpr int64_t kFactor = 8;
    const Expr one = constant(x.dtype(), 1.0);
    Tensor t = x;
    int stage = 0;
    for (int64_t a : axes) {
        const size_t ax = static_cast<size_t>(a);
        while (t.shape()[ax] > 1) {
            const int64_t extent = t.shape()[ax];
            const int64_t groups = (extent + kFactor - 1) / kFactor;
            std::vector<int64_t> shape = t.shape();
            shape[ax] = groups;
            const Tensor src = t;
            t = compute(
                shape,
                [&](const std::vector<Var>& i) {
                    Expr acc;
                    for (int64_t j = 0; j < kFactor && j < extent; ++j) {
                        std::vector<Expr> idx = as_exprs(i);
                        const Expr pos = idx[ax] * kFactor + j;
                        Expr v;
                        if ((groups - 1) * kFactor + j < extent) { // in range for every group
                            idx[ax] = pos;
                            v = src(idx);
                        } else { // past the end in the last group: 1, read clamped
                            idx[ax] = clamp_index(pos, 0, extent - 1);
                            v = ir::select(pos < Expr(extent), src(idx), one);
                        }
                        acc = acc.defined() ? acc * v : v;
                    }
                    return acc;
                },
                op + "_" + std::to_string(stage++));
        }
    }
    // The reduced dims are all 1 now: keep or drop them (and copy x when nothing was reduced,
    // so the result is always a stage of its own).
    std::vector<bool> reduced(x.ndim(), false);
    for (int64_t a : axes)
        reduced[static_cast<size_t>(a)] = true;
    std::vector<int64_t> shape;
    for (size_t d = 0; d < x.ndim(); ++d)
        if (!reduced[d] || keepdims)
            shape.push_back(reduced[d] ? 1 : x.shape()[d]);
    const Tensor kept = t;
    return compute(
        shape,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> idx;
            size_t out = 0;
            for (size_t d = 0; d < x.ndim(); ++d) {
                if (reduced[d] && !keepdims) {
                    idx.push_back(Expr(int64_t{0}));
                } else {
                    idx.push_back(reduced[d] ? Expr(int64_t{0}) : Expr(i[out]));
                    ++out;
                }
            }
            return kept(idx);
        },
        op);
}

Tensor reduce_l1(const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
    const std::string op = "reduce_l1";
    axes = reduction_axes(x, std::move(axes), false, op);
    return reduce_mapped(
        x, axes, keepdims, ir::ReduceOp::Sum,
        [](Expr v, const std::vector<Var>&) { return ir::abs(v); }, op);
}

Tensor reduce_sum_square(const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
    const std::string op = "reduce_sum_square";
    axes = reduction_axes(x, std::move(axes), false, op);
    return reduce_mapped(x, axes, keepdims, ir::ReduceOp::Sum, kSquare, op);
}

Tensor reduce_l2(const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
    const std::string op = "reduce_l2";
    axes = reduction_axes(x, std::move(axes), true, op);
    const Tensor s = reduce_mapped(x, axes, keepdims, ir::ReduceOp::Sum, kSquare, op + "_sum");
    return map_stage(
        s, [](Expr v) { return ir::sqrt(v); }, op);
}

Tensor reduce_log_sum(const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
    const std::string op = "reduce_log_sum";
    axes = reduction_axes(x, std::move(axes), true, op);
    const Tensor s = reduce_mapped(x, axes, keepdims, ir::ReduceOp::Sum, kIdentity, op + "_sum");
    return map_stage(
        s, [](Expr v) { return ir::log(v); }, op);
}

Tensor reduce_log_sum_exp(const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
    const std::string op = "reduce_log_sum_exp";
    axes = reduction_axes(x, std::move(axes), true, op);
    const DataType t = x.dtype();
    const Tensor mx = reduce_mapped(x, axes, keepdims, ir::ReduceOp::Max, kIdentity, op + "_max");
    // The shift: the max where finite, else 0 (exp(-inf - -inf) would be NaN).
    auto shift = [&](const std::vector<Var>& i) {
        const Expr m = mx(as_exprs(i));
        return ir::select(ir::abs(m) < ir::highest_value(t), m, constant(t, 0.0));
    };
    const Tensor s = reduce_mapped(
        x, axes, keepdims, ir::ReduceOp::Sum,
        [&](Expr v, const std::vector<Var>& i) { return ir::exp(v - shift(i)); }, op + "_sum");
    return compute(
        s.shape(), [&](const std::vector<Var>& i) { return ir::log(s(as_exprs(i))) + shift(i); },
        op);
}

Tensor log_softmax(const Tensor& x, int64_t axis) {
    const std::string op = "log_softmax";
    check_defined(x, op, "input");
    check_float(x, op);
    if (x.ndim() == 0)
        throw UserError() << op << ": input '" << x.name() << "' must have rank >= 1";
    const int64_t ax = normalize_axis(axis, x.ndim(), op);
    const Tensor mx = reduce_mapped(x, {ax}, true, ir::ReduceOp::Max, kIdentity, op + "_max");
    const Tensor s = reduce_mapped(
        x, {ax}, true, ir::ReduceOp::Sum,
        [&](Expr v, const std::vector<Var>& i) { return ir::exp(v - mx(as_exprs(i))); },
        op + "_sum");
    return compute(
        x.shape(),
        [&](const std::vector<Var>& i) {
            std::vector<Expr> r = as_exprs(i);
            r[static_cast<size_t>(ax)] = Expr(int64_t{0});
            return x(as_exprs(i)) - mx(r) - ir::log(s(r));
        },
        op);
}

Tensor instance_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, double epsilon) {
    const std::string op = "instance_norm";
    const std::vector<int64_t> axes = spatial_axes(x, op);
    if (!(epsilon >= 0))
        throw UserError() << op << ": epsilon must be non-negative, got " << epsilon;
    const std::vector<int64_t> channels = {x.shape()[1]};
    for (const Tensor* p : {&scale, &bias}) {
        check_defined(*p, op, p == &scale ? "scale" : "bias");
        check_same_dtype(x, *p, op);
        if (p->shape() != channels)
            throw UserError() << op << ": '" << p->name() << "' must have shape "
                              << shape_to_string(channels) << ", got "
                              << shape_to_string(p->shape());
    }
    const DataType t = x.dtype();
    int64_t count = 1;
    for (int64_t a : axes)
        count *= x.shape()[static_cast<size_t>(a)];
    const Expr n = constant(t, static_cast<double>(count));
    // Statistics are [N, C, 1, ...]: index them with the spatial dims at 0.
    auto stat_index = [&](const std::vector<Var>& i) {
        std::vector<Expr> s = as_exprs(i);
        for (size_t d = 2; d < s.size(); ++d)
            s[d] = Expr(int64_t{0});
        return s;
    };
    const Tensor total = reduce_mapped(x, axes, true, ir::ReduceOp::Sum, kIdentity, op + "_sum");
    const Tensor var = reduce_mapped(
        x, axes, true, ir::ReduceOp::Sum,
        [&](Expr v, const std::vector<Var>& i) {
            const Expr d = v - total(as_exprs(i)) / n;
            return d * d;
        },
        op + "_var");
    return compute(
        x.shape(),
        [&](const std::vector<Var>& i) {
            const std::vector<Expr> s = stat_index(i);
            const Expr y =
                (x(as_exprs(i)) - total(s) / n) / ir::sqrt(var(s) / n + constant(t, epsilon));
            return y * scale({i[1]}) + bias({i[1]});
        },
        op);
}

Tensor global_lp_pool(const Tensor& x, int64_t p) {
    const std::string op = "global_lp_pool";
    const std::vector<int64_t> axes = spatial_axes(x, op);
    if (p < 1)
        throw UserError() << op << ": p must be >= 1, got " << p;
    const DataType t = x.dtype();
    const Expr pe = constant(t, static_cast<double>(p));
    const Tensor s = reduce_mapped(
        x, axes, true, ir::ReduceOp::Sum,
        [&](Expr v, const std::vector<Var>&) {
            return p == 1 ? ir::abs(v) : p == 2 ? v * v : ir::pow(ir::abs(v), pe);
        },
        p == 1 ? op : op + "_sum");
    if (p == 1)
        return s;
    if (p == 2)
        return map_stage(
            s, [](Expr v) { return ir::sqrt(v); }, op);
    const Expr inv = constant(t, 1.0 / static_cast<double>(p));
    return map_stage(
        s, [&](Expr v) { return ir::pow(v, inv); }, op);
}

} // namespace tessera::te
