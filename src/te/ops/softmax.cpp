// Softmax along one axis, numerically stable: max, exp(x - max), sum, divide.
#include "op_util.h"

namespace tessera::te {

using namespace detail;

Tensor softmax(const Tensor& x, int64_t axis) {
    const std::string op = "softmax";
    check_defined(x, op, "input");
    check_float(x, op);
    if (x.ndim() == 0)
        throw UserError() << op << ": input '" << x.name() << "' must have rank >= 1";
    size_t ax = static_cast<size_t>(normalize_axis(axis, x.ndim(), op));
    int64_t len = x.shape()[ax];
    std::vector<int64_t> reduced = x.shape();
    reduced.erase(reduced.begin() + ax);

    // Index helpers: the full index with `v` at the axis, and the index without the axis.
    auto with_axis = [&](const std::vector<Var>& i, Expr v) {
        std::vector<Expr> idx(i.begin(), i.end());
        idx.insert(idx.begin() + ax, std::move(v));
        return idx;
    };
    auto without_axis = [&](const std::vector<Var>& i) {
        std::vector<Expr> idx(i.begin(), i.end());
        idx.erase(idx.begin() + ax);
        return idx;
    };

    IterVar k1 = reduce_axis(len, "k");
    Tensor mx = compute(
        reduced,
        [&](const std::vector<Var>& i) { return reduce_max(x(with_axis(i, k1.var)), {k1}); },
        op + "_max");
    Tensor e = compute(
        x.shape(),
        [&](const std::vector<Var>& i) { return ir::exp(x(as_exprs(i)) - mx(without_axis(i))); },
        op + "_exp");
    IterVar k2 = reduce_axis(len, "k");
    Tensor s = compute(
        reduced, [&](const std::vector<Var>& i) { return sum(e(with_axis(i, k2.var)), {k2}); },
        op + "_sum");
    return compute(
        x.shape(), [&](const std::vector<Var>& i) { return e(as_exprs(i)) / s(without_axis(i)); },
        op);
}

} // namespace tessera::te
