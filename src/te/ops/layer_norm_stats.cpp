// The statistics stages of layer normalization (layer_norm_stats.h).
#include "layer_norm_stats.h"

namespace tessera::te::detail {

LayerNormStats layer_norm_stats(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                int64_t axis, double epsilon, const std::string& op) {
    check_defined(x, op, "input");
    check_float(x, op);
    if (x.ndim() == 0)
        throw UserError() << op << ": input '" << x.name() << "' must have rank >= 1";
    if (!(epsilon >= 0))
        throw UserError() << op << ": epsilon must be non-negative, got " << epsilon;
    LayerNormStats s;
    s.axis = static_cast<size_t>(normalize_axis(axis, x.ndim(), op));
    const size_t ax = s.axis;
    s.outer.assign(x.shape().begin(), x.shape().begin() + ax);
    const std::vector<int64_t> inner(x.shape().begin() + ax, x.shape().end());
    for (const Tensor* t : {&gamma, &beta}) {
        if (!t->defined())
            continue;
        check_same_dtype(x, *t, op);
        if (t->shape() != inner)
            throw UserError() << op << ": '" << t->name() << "' must have the normalized shape "
                              << shape_to_string(inner) << ", got " << shape_to_string(t->shape());
    }
    s.count = constant(x.dtype(), static_cast<double>(num_elements(inner)));

    auto reduce_axes = [&]() {
        std::vector<IterVar> r;
        for (size_t d = 0; d < inner.size(); ++d)
            r.push_back(reduce_axis(inner[d], "r" + std::to_string(d)));
        return r;
    };
    auto row_element = [&](const std::vector<Var>& i, const std::vector<IterVar>& r) {
        std::vector<Expr> idx(i.begin(), i.begin() + ax);
        for (const auto& iv : r)
            idx.push_back(iv.var);
        return x(idx);
    };
    // Normalizing over every dim gives rank-0 (one-element) statistics stages.
    const std::vector<IterVar> r1 = reduce_axes();
    s.total = compute(
        s.outer, [&](const std::vector<Var>& i) { return sum(row_element(i, r1), r1); },
        op + "_sum");
    const std::vector<IterVar> r2 = reduce_axes();
    const Tensor total = s.total;
    const Expr count = s.count;
    s.var = compute(
        s.outer,
        [&](const std::vector<Var>& i) {
            Expr d = row_element(i, r2) - total(as_exprs(i)) / count;
            return sum(d * d, r2);
        },
        op + "_var");
    return s;
}

} // namespace tessera::te::detail
