// Inference batch normalization: a per-channel affine map of the input.
#include "op_util.h"
#include "tessera/te/ops_extra.h"

namespace tessera::te {

using namespace detail;

Tensor batch_norm_inference(const Tensor& x, const Tensor& scale, const Tensor& shift,
                            const Tensor& mean, const Tensor& var, double epsilon) {
    const std::string op = "batch_norm";
    check_defined(x, op, "input");
    check_float(x, op);
    if (x.ndim() < 2)
        throw UserError() << op << ": input '" << x.name() << "' must have rank >= 2, got shape "
                          << shape_to_string(x.shape());
    if (!(epsilon >= 0))
        throw UserError() << op << ": epsilon must be non-negative, got " << epsilon;
    const int64_t channels = x.shape()[1];
    for (const Tensor* t : {&scale, &shift, &mean, &var}) {
        check_defined(*t, op, "parameter");
        check_same_dtype(x, *t, op);
        if (t->shape() != std::vector<int64_t>{channels})
            throw UserError() << op << ": '" << t->name() << "' must have shape [" << channels
                              << "], got " << shape_to_string(t->shape());
    }
    const DataType t = x.dtype();
    return compute(
        x.shape(),
        [&](const std::vector<Var>& i) {
            const Expr c = i[1];
            return (x(as_exprs(i)) - mean(c)) * scale(c) / ir::sqrt(var(c) + constant(t, epsilon)) +
                   shift(c);
        },
        op);
}

} // namespace tessera::te
