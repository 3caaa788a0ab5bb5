// Layer normalization over the trailing dims, two-pass (mean, then variance around the mean).
#include "layer_norm_stats.h"

namespace tessera::te {

using namespace detail;

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, int64_t axis,
                  double epsilon) {
    const std::string op = "layer_norm";
    const LayerNormStats st = layer_norm_stats(x, gamma, beta, axis, epsilon, op);
    const size_t ax = st.axis;
    const DataType t = x.dtype();
    const Tensor total = st.total, var = st.var;
    const Expr count = st.count;
    auto outer_index = [&](const std::vector<Var>& i) {
        return std::vector<Expr>(i.begin(), i.begin() + ax);
    };
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
