// ONNX Where: a select with numpy broadcasting of the condition and both branches.
#include "op_util.h"
#include "tessera/te/ops_extra.h"

namespace tessera::te {

using namespace detail;

// The indices into a tensor of shape `own` for indices `i` of the broadcast shape: trailing dims
// aligned, extent-1 dims read element 0.
static std::vector<Expr> broadcast_read_index(const std::vector<int64_t>& own,
                                              const std::vector<Var>& i) {
    std::vector<Expr> idx;
    const size_t skip = i.size() - own.size();
    for (size_t d = 0; d < own.size(); ++d)
        idx.push_back(own[d] == 1 ? Expr(int64_t(0)) : Expr(i[skip + d]));
    return idx;
}

Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y) {
    const std::string op = "where";
    check_defined(cond, op, "condition");
    check_defined(x, op, "X");
    check_defined(y, op, "Y");
    if (!cond.dtype().is_bool())
        throw UserError() << op << ": condition '" << cond.name() << "' must be bool, got "
                          << cond.dtype();
    check_same_dtype(x, y, op);
    const std::vector<int64_t> shape =
        broadcast_shapes(broadcast_shapes(cond.shape(), x.shape(), op), y.shape(), op);
    return compute(
        shape,
        [&](const std::vector<Var>& i) {
            return ir::select(cond(broadcast_read_index(cond.shape(), i)),
                              x(broadcast_read_index(x.shape(), i)),
                              y(broadcast_read_index(y.shape(), i)));
        },
        op);
}

} // namespace tessera::te
