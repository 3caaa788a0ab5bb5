// Layer normalization with its statistics as outputs (ONNX LayerNormalization's Mean and
// InvStdDev), sharing one pair of reduction stages between all three outputs.
#include "layer_norm_stats.h"
#include "tessera/te/ops_extra.h"

namespace tessera::te {

using namespace detail;

LayerNormOutputs layer_norm_with_stats(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                       int64_t axis, double epsilon) {
    const std::string op = "layer_norm";
    // The same statistics stages as te::layer_norm: the sum, then the squared deviations.
    const LayerNormStats st = layer_norm_stats(x, gamma, beta, axis, epsilon, op);
    const size_t ax = st.axis;
    const std::vector<int64_t>& outer = st.outer;
    const DataType t = x.dtype();
    const Tensor total = st.total, var = st.var;
    const Expr count = st.count;
    auto row_index = [&](const std::vector<Var>& i) {
        return std::vector<Expr>(i.begin(), i.begin() + ax);
    };
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
