// Split: consecutive parts of a tensor along one axis, one stage each.
#include "op_util.h"
#include "tessera/te/ops_extra.h"

namespace tessera::te {

using namespace detail;

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis) {
    const std::string op = "split";
    check_defined(x, op, "input");
    if (x.ndim() == 0)
        throw UserError() << op << ": input '" << x.name() << "' must have rank >= 1";
    const size_t ax = static_cast<size_t>(normalize_axis(axis, x.ndim(), op));
    int64_t total = 0;
    for (int64_t s : sizes) {
        if (s <= 0)
            throw UserError() << op << ": part size " << s << " is not positive";
        total += s;
    }
    if (total != x.shape()[ax])
        throw UserError() << op << ": part sizes " << shape_to_string(sizes) << " sum to " << total
                          << ", but axis " << ax << " of '" << x.name() << "' has extent "
                          << x.shape()[ax];
    std::vector<Tensor> parts;
    int64_t offset = 0;
    for (int64_t s : sizes) {
        std::vector<int64_t> shape = x.shape();
        shape[ax] = s;
        parts.push_back(compute(
            shape,
            [&](const std::vector<Var>& i) {
                std::vector<Expr> idx = as_exprs(i);
                if (offset != 0)
                    idx[ax] = idx[ax] + Expr(offset);
                return x(idx);
            },
            op));
        offset += s;
    }
    return parts;
}

} // namespace tessera::te
