// Gather along one axis by a tensor of indices (ONNX Gather).
#include "op_util.h"

namespace tessera::te {

using namespace detail;

Tensor gather(const Tensor& data, const Tensor& indices, int64_t axis) {
    const std::string op = "gather";
    check_defined(data, op, "data");
    check_defined(indices, op, "indices");
    if (data.ndim() == 0)
        throw UserError() << op << ": data '" << data.name() << "' must have rank >= 1";
    if (!indices.dtype().is_int())
        throw UserError() << op << ": indices '" << indices.name() << "' must be integers";
    const size_t ax = static_cast<size_t>(normalize_axis(axis, data.ndim(), op));
    const int64_t dim = data.shape()[ax];
    const size_t r = indices.ndim();
    std::vector<int64_t> shape(data.shape().begin(), data.shape().begin() + ax);
    shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
    shape.insert(shape.end(), data.shape().begin() + ax + 1, data.shape().end());
    return compute(
        shape,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> at;
            for (size_t d = 0; d < r; ++d)
                at.push_back(i[ax + d]);
            Expr k = ir::cast(ir::DataType::i64(), indices(at));
            // Negative indices count from the end; the clamp keeps a bad index in bounds (the
            // graph evaluator rejects it, a kernel must not read outside the tensor).
            k = clamp_index(ir::select(k < Expr(int64_t(0)), k + Expr(dim), k), 0, dim - 1);
            std::vector<Expr> idx;
            for (size_t d = 0; d < ax; ++d)
                idx.push_back(i[d]);
            idx.push_back(k);
            for (size_t d = ax + 1; d < data.ndim(); ++d)
                idx.push_back(i[d - 1 + r]);
            return data(idx);
        },
        op);
}

} // namespace tessera::te
