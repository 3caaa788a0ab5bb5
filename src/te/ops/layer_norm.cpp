// Layer normalization over the trailing dims, two-pass (mean, then variance around the mean).
#include "op_util.h"

namespace tessera::te {

using namespace detail;

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, int64_t axis,
                  double epsilon) {
    const std::string op = "layer_norm";
    check_defined(x, op, "input");
    check_float(x, op);
    if (x.ndim() == 0)
        throw UserError() << op << ": input '" << x.name() << "' must have rank >= 1";
    if (!(epsilon >= 0))
        throw UserError() << op << ": epsilon must be non-negative, got " << epsilon;
    size_t ax = static_cast<size_t>(normalize_axis(axis, x.ndim(), op));
    std::vector<int64_t> outer(x.shape().begin(), x.shape().begin() + ax);
    std::vector<int64_t> inner(x.shape().begin() + ax, x.shape().end());
    for (const Tensor* t : {&gamma, &beta}) {
        if (!t->defined())
            continue;
        check_same_dtype(x, *t, op);
        if (t->shape() != inner)
            throw UserError() << op << ": '" << t->name() << "' must have the normalized shape "
                              << shape_to_string(inner) << ", got " << shape_to_string(t->shape());
    }
    DataType t = x.dtype();
    Expr count = constant(t, static_cast<double>(num_elements(inner)));

    auto reduce_axes = [&]() {
        std::vector<IterVar> r;
        for (size_t d = 0; d < inner.size(); ++d)
            r.push_back(reduce_axis(inner[d], "r" + std::to_string(d)));
        return r;
    };
    auto full_index = [&](const std::vector<Var>& i, const std::vector<IterVar>& r) {
        std::vector<Expr> idx(i.begin(), i.end());
        for (const auto& iv : r)
            idx.push_back(iv.var);
        return idx;
    };
    auto outer_index = [&](const std::vector<Var>& i) {
        return std::vector<Expr>(i.begin(), i.begin() + ax);
    };

    // Normalizing over every dim gives rank-0 (one-element) statistics stages.
    std::vector<IterVar> r1 = reduce_axes();
    Tensor total = compute(
        outer, [&](const std::vector<Var>& i) { return sum(x(full_index(i, r1)), r1); },
        op + "_sum");
    std::vector<IterVar> r2 = reduce_axes();
    Tensor var = compute(
        outer,
        [&](const std::vector<Var>& i) {
            Expr d = x(full_index(i, r2)) - total(as_exprs(i)) / count;
            return sum(d * d, r2);
        },
        op + "_var");
    return compute(
        x.shape(),
        [&](const std::vector<Var>& i) {
            std::vector<Expr> o = outer_index(i);
            std::vector<Expr> in(i.begin() + ax, i.end());
            Expr mean = total(o) / count;
            Expr y = (x(as_exprs(i)) - mean) / ir::sqrt(var(o) / count + constant(t, epsilon));
            if (gamma.defined())
                y = y * gamma(in);
            if (beta.defined())
                y = y + beta(in);
            return y;
        },
        op);
}

} // namespace tessera::te
