// Layer normalization with its statistics as outputs (ONNX LayerNormalization's Mean and
// InvStdDev), sharing one pair of reduction stages between all three outputs.
#include "op_util.h"
#include "tessera/te/ops_extra.h"

namespace tessera::te {

using namespace detail;

LayerNormOutputs layer_norm_with_stats(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                       int64_t axis, double epsilon) {
    const std::string op = "layer_norm";
    check_defined(x, op, "input");
    check_float(x, op);
    if (x.ndim() == 0)
        throw UserError() << op << ": input '" << x.name() << "' must have rank >= 1";
    if (!(epsilon >= 0))
        throw UserError() << op << ": epsilon must be non-negative, got " << epsilon;
    const size_t ax = static_cast<size_t>(normalize_axis(axis, x.ndim(), op));
    const std::vector<int64_t> outer(x.shape().begin(), x.shape().begin() + ax);
    const std::vector<int64_t> inner(x.shape().begin() + ax, x.shape().end());
    for (const Tensor* t : {&gamma, &beta}) {
        if (!t->defined())
            continue;
        check_same_dtype(x, *t, op);
        if (t->shape() != inner)
            throw UserError() << op << ": '" << t->name() << "' must have the normalized shape "
                              << shape_to_string(inner) << ", got " << shape_to_string(t->shape());
    }
    const DataType t = x.dtype();
    const Expr count = constant(t, static_cast<double>(num_elements(inner)));
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
    auto row_index = [&](const std::vector<Var>& i) {
        return std::vector<Expr>(i.begin(), i.begin() + ax);
    };

    // Two passes, as te::layer_norm: the sum, then the squared deviations from the mean.
    const std::vector<IterVar> r1 = reduce_axes();
    const Tensor total = compute(
        outer, [&](const std::vector<Var>& i) { return sum(row_element(i, r1), r1); }, op + "_sum");
    const std::vector<IterVar> r2 = reduce_axes();
    const Tensor var = compute(
        outer,
        [&](const std::vector<Var>& i) {
            Expr d = row_element(i, r2) - total(as_exprs(i)) / count;
            return sum(d * d, r2);
        },
        op + "_var");
    auto inv_std = [&](const std::vector<Expr>& row) {
        return constant(t, 1.0) / ir::sqrt(var(row) / count + constant(t, epsilon));
    };

    LayerNormOutputs out;
    out.y = compute(
        x.shape(),
        [&](const std::vector<Var>& i) {
            const std::vector<Expr> row = row_index(i);
            const std::vector<Expr> in(i.begin() + ax, i.end());
            Expr y = (x(as_exprs(i)) - total(row) / count) * inv_std(row);
            if (gamma.defined())
                y = y * gamma(in);
            if (beta.defined())
                y = y + beta(in);
            return y;
        },
        op);
    // The statistics keep x's rank, with extent 1 along the normalized dims.
    std::vector<int64_t> stat_shape = outer;
    stat_shape.resize(x.ndim(), 1);
    out.mean = compute(
        stat_shape, [&](const std::vector<Var>& i) { return total(row_index(i)) / count; },
        op + "_mean");
    out.inv_std_dev = compute(
        stat_shape, [&](const std::vector<Var>& i) { return inv_std(row_index(i)); },
        op + "_inv_std_dev");
    return out;
}

} // namespace tessera::te
