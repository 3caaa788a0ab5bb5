// bf16 matrix product: bf16 activations times bf16 weights packed as i32 words of two rows,
// accumulated in f32 with dot2_bf16 (one vdpbf16ps per 16 outputs and 2 steps of the reduction
// on CPUs with AVX512-BF16).
#include "op_util.h"
#include "tessera/ir/op.h"

namespace tessera::te {

using namespace detail;

Tensor bf16_matmul(const Tensor& x, const Tensor& w) {
    const std::string op = "bf16_matmul";
    check_defined(x, op, "input");
    check_defined(w, op, "weight");
    if (x.dtype() != DataType::bf16() || w.dtype() != DataType::i32())
        throw UserError() << op << ": input must be bf16 and weight i32 words, got "
                          << ir::to_string(x.dtype()) << " and " << ir::to_string(w.dtype());
    if (x.ndim() == 0)
        throw UserError() << op << ": input '" << x.name() << "' must have rank >= 1";
    check_rank(w, 2, op, "weight");
    const int64_t k = x.shape().back(), words = w.shape()[0], n = w.shape()[1];
    if (k % 2 != 0 || words != k / 2)
        throw UserError() << op << ": weight " << shape_to_string(w.shape()) << " must have "
                          << k / 2 << " rows of words for " << k
                          << " input columns (an even number)";
    const size_t rank = x.ndim();
    // Each row as words of two columns: the row's bf16 bits reinterpreted.
    const Tensor xw = rows_as_words(x, op + "_words");
    std::vector<int64_t> shape = x.shape();
    shape.back() = n;
    IterVar r = reduce_axis(words, "kw");
    return compute(
        shape,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> xi = as_exprs(i);
            xi.back() = r.var;
            return sum(ir::dot2_bf16(xw(xi), w(r.var, i[rank - 1])), {r});
        },
        op);
}

} // namespace tessera::te
