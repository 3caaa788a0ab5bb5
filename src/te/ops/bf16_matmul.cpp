// bf16 matrix products: bf16 activations times bf16 weights packed as i32 words of two rows, or
// times a second bf16 activation whose rows the kernel packs into such words, accumulated in f32
// with dot2_bf16 (one vdpbf16ps per 16 outputs and 2 steps of the reduction on CPUs with
// AVX512-BF16).
#include <algorithm>
#include <functional>

#include "op_util.h"
#include "tessera/ir/op.h"

namespace tessera::te {

using namespace detail;

namespace {

/// The word of the right operand that an output element (its index) takes at a reduce step.
using RightWord = std::function<Expr(const std::vector<Var>& out, const Expr& step)>;

/// The product all three ops end in: out[..., m, c] = sum over w < words of dot2_bf16(x's
/// word [..., m, w], right(out index, w)), x's rows read as words of two columns; shape x's
/// with the last dimension n.
Tensor sum_of_word_products(const Tensor& x, int64_t n, int64_t words, const std::string& op,
                            const RightWord& right) {
    const Tensor xw = rows_as_words(x, op + "_words");
    std::vector<int64_t> shape = x.shape();
    shape.back() = n;
    IterVar r = reduce_axis(words, "kw");
    return compute(
        shape,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> xi = as_exprs(i);
            xi.back() = r.var;
            return sum(ir::dot2_bf16(xw(xi), right(i, r.var)), {r});
        },
        op);
}

/// The checks of both activation products: x and y bf16 of one rank >= 2 with the same batch
/// dimensions, x's inner dimension even and equal to y's dimension `y_inner` (its last for
/// bf16_matmul_nt, its second to last for bf16_matmul_kn). Throws UserError.
void check_activation_operands(const Tensor& x, const Tensor& y, size_t y_inner,
                               const std::string& op) {
    check_defined(x, op, "input");
    check_defined(y, op, "second input");
    if (x.dtype() != DataType::bf16() || y.dtype() != DataType::bf16())
        throw UserError() << op << ": inputs must be bf16, got " << ir::to_string(x.dtype())
                          << " and " << ir::to_string(y.dtype());
    const size_t rank = x.ndim();
    if (rank < 2 || y.ndim() != rank || x.shape().back() % 2 != 0 ||
        y.shape()[rank - 2 + y_inner] != x.shape().back() ||
        !std::equal(x.shape().begin(), x.shape().end() - 2, y.shape().begin()))
        throw UserError() << op << ": inputs " << shape_to_string(x.shape()) << " and "
                          << shape_to_string(y.shape())
                          << " need rank >= 2, the same batch dimensions and the same even "
                             "inner dimension";
}

} // namespace

Tensor bf16_matmul(const Tensor& x, const Tensor& w) {
    const std::string op = "bf16_matmul";
    check_word_product_operands(x, w, DataType::bf16(), op);
    // Batched weights [B, K / 2, N] go with x [B, M, K], one matrix per batch.
    const bool batched = w.ndim() == 3;
    if (batched) {
        if (x.ndim() != 3 || x.shape()[0] != w.shape()[0])
            throw UserError() << op << ": batched weight " << shape_to_string(w.shape())
                              << " needs an input [" << w.shape()[0] << ", M, K], got "
                              << shape_to_string(x.shape());
    } else {
        check_rank(w, 2, op, "weight");
    }
    const int64_t k = x.shape().back(), words = w.shape()[w.ndim() - 2], n = w.shape().back();
    if (k % 2 != 0 || words != k / 2)
        throw UserError() << op << ": weight " << shape_to_string(w.shape()) << " must have "
                          << k / 2 << " rows of words for " << k
                          << " input columns (an even number)";
    const size_t rank = x.ndim();
    return sum_of_word_products(x, n, words, op, [&](const std::vector<Var>& i, const Expr& r) {
        return batched ? w(i[0], r, i[rank - 1]) : w(r, i[rank - 1]);
    });
}

Tensor bf16_matmul_nt(const Tensor& x, const Tensor& y) {
    const std::string op = "bf16_matmul_nt";
    check_activation_operands(x, y, 1, op);
    const size_t rank = x.ndim();
    const int64_t n = y.shape()[rank - 2];
    // y's rows as words, transposed: word [..., j, c] holds y[..., c, 2j] and y[..., c, 2j + 1],
    // the layout of a weight's words (column c's consecutive pairs of rows).
    std::vector<int64_t> columns_shape = y.shape();
    columns_shape[rank - 2] = y.shape()[rank - 1] / 2;
    columns_shape[rank - 1] = n;
    const Tensor yw = compute(
        columns_shape,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> yi = as_exprs(i);
            yi[rank - 2] = i[rank - 1];
            yi[rank - 1] = i[rank - 2] * Expr(2);
            return ir::bytes_as_word(y(yi));
        },
        op + "_columns");
    return sum_of_word_products(x, n, columns_shape[rank - 2], op,
                                [&](const std::vector<Var>& i, const Expr& r) {
                                    std::vector<Expr> wi = as_exprs(i);
                                    wi[rank - 2] = r;
                                    return yw(wi);
                                });
}

Tensor bf16_matmul_kn(const Tensor& x, const Tensor& y) {
    const std::string op = "bf16_matmul_nt";
    check_activation_operands(x, y, 0, op);
    const size_t rank = x.ndim();
    const int64_t n = y.shape()[rank - 1], k = x.shape().back();
    // Rows 2j and 2j + 1 of y side by side: pair [..., j, c, e] is y[..., 2j + e, c], so that
    // the word at pair [..., j, c, 0] holds column c's elements of both rows.
    std::vector<int64_t> pairs_shape = y.shape();
    pairs_shape[rank - 2] = k / 2;
    pairs_shape.push_back(2);
    const Tensor pairs = compute(
        pairs_shape,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> yi = as_exprs(i);
            yi.pop_back();
            yi[rank - 2] = i[rank - 2] * Expr(2) + i[rank];
            return y(yi);
        },
        op + "_pairs");
    return sum_of_word_products(x, n, k / 2, op, [&](const std::vector<Var>& i, const Expr& r) {
        std::vector<Expr> pi = as_exprs(i);
        pi[rank - 2] = r;
        pi.push_back(Expr(0));
        return ir::bytes_as_word(pairs(pi));
    });
}

} // namespace tessera::te
