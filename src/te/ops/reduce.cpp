// Reductions over chosen axes: sum, mean, max, min, with or without the reduced dims kept.
#include "op_util.h"

namespace tessera::te {

using namespace detail;

namespace detail {

Tensor reduce_stage(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims,
                    ir::ReduceOp op, const std::string& name, const ElementMap& f) {
    size_t rank = x.ndim();
    std::vector<bool> reduced(rank, false);
    for (int64_t a : axes)
        reduced[static_cast<size_t>(a)] = true;
    std::vector<int64_t> shape;
    for (size_t d = 0; d < rank; ++d) {
        if (!reduced[d])
            shape.push_back(x.shape()[d]);
        else if (keepdims)
            shape.push_back(1);
    }
    std::vector<IterVar> r;
    for (int64_t a : axes)
        r.push_back(reduce_axis(x.shape()[static_cast<size_t>(a)], "r" + std::to_string(a)));
    return compute(
        shape,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> idx;
            size_t out = 0, red = 0;
            for (size_t d = 0; d < rank; ++d) {
                if (reduced[d]) {
                    idx.push_back(r[red++].var);
                    if (keepdims)
                        ++out;
                } else {
                    idx.push_back(i[out++]);
                }
            }
            return ir::Reduce::make(op, f ? f(x(idx), i) : x(idx), r);
        },
        name);
}

Tensor mean_stages(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims,
                   const std::string& name) {
    Tensor total = reduce_stage(x, axes, keepdims, ir::ReduceOp::Sum, name + "_sum");
    int64_t count = 1;
    for (int64_t a : axes)
        count *= x.shape()[static_cast<size_t>(a)];
    Expr n = constant(x.dtype(), static_cast<double>(count));
    return compute(
        total.shape(), [&](const std::vector<Var>& i) { return total(as_exprs(i)) / n; }, name);
}

} // namespace detail

static Tensor reduce_public(const Tensor& x, std::vector<int64_t> axes, bool keepdims,
                            ir::ReduceOp op, const std::string& name) {
    check_defined(x, name, "input");
    if (x.ndim() == 0)
        throw UserError() << name << ": input '" << x.name() << "' must have rank >= 1";
    return reduce_stage(x, normalize_axes(std::move(axes), x.ndim(), name), keepdims, op, name);
}

Tensor reduce_sum(const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
    return reduce_public(x, std::move(axes), keepdims, ir::ReduceOp::Sum, "reduce_sum");
}
Tensor reduce_max(const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
    return reduce_public(x, std::move(axes), keepdims, ir::ReduceOp::Max, "reduce_max");
}
Tensor reduce_min(const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
    return reduce_public(x, std::move(axes), keepdims, ir::ReduceOp::Min, "reduce_min");
}
Tensor reduce_mean(const Tensor& x, std::vector<int64_t> axes, bool keepdims) {
    const std::string op = "reduce_mean";
    check_defined(x, op, "input");
    check_float(x, op);
    if (x.ndim() == 0)
        throw UserError() << op << ": input '" << x.name() << "' must have rank >= 1";
    return mean_stages(x, normalize_axes(std::move(axes), x.ndim(), op), keepdims, op);
}

} // namespace tessera::te
