// General matrix multiply with the ONNX Gemm operands: alpha * op(A) op(B) + beta * C.
#include "op_util.h"

namespace tessera::te {

using namespace detail;

Tensor gemm(const Tensor& a, const Tensor& b, const Tensor& c, double alpha, double beta,
            bool trans_a, bool trans_b) {
    const std::string op = "gemm";
    check_defined(a, op, "A");
    check_defined(b, op, "B");
    check_same_dtype(a, b, op);
    check_rank(a, 2, op, "A");
    check_rank(b, 2, op, "B");
    check_float(a, op);
    const int64_t m = trans_a ? a.shape()[1] : a.shape()[0];
    const int64_t k = trans_a ? a.shape()[0] : a.shape()[1];
    const int64_t kb = trans_b ? b.shape()[1] : b.shape()[0];
    const int64_t n = trans_b ? b.shape()[0] : b.shape()[1];
    if (k != kb)
        throw UserError() << op << ": inner dims differ: A " << shape_to_string(a.shape())
                          << (trans_a ? " (transposed)" : "") << ", B "
                          << shape_to_string(b.shape()) << (trans_b ? " (transposed)" : "");
    if (c.defined()) {
        check_same_dtype(a, c, op);
        if (c.ndim() > 2 || broadcast_shapes(c.shape(), {m, n}, op) != std::vector<int64_t>{m, n})
            throw UserError() << op << ": C " << shape_to_string(c.shape())
                              << " does not broadcast to [" << m << ", " << n << "]";
    }
    IterVar r = reduce_axis(k, "k");
    Tensor y = compute(
        {m, n},
        [&](const std::vector<Var>& i) {
            Expr av = trans_a ? a(r.var, i[0]) : a(i[0], r.var);
            Expr bv = trans_b ? b(i[1], r.var) : b(r.var, i[1]);
            return sum(av * bv, {r});
        },
        op, {"m", "n"});
    const bool scaled = alpha != 1.0;
    const bool with_c = c.defined() && beta != 0.0;
    if (!scaled && !with_c)
        return y;
    return compute(
        {m, n},
        [&](const std::vector<Var>& i) {
            Expr v = y(i[0], i[1]);
            if (scaled)
                v = constant(a.dtype(), alpha) * v;
            if (!with_c)
                return v;
            // C broadcasts against [m, n] from the right.
            std::vector<Expr> idx;
            const auto& cs = c.shape();
            for (size_t d = 0; d < cs.size(); ++d) {
                const Var& axis = i[2 - cs.size() + d];
                idx.push_back(cs[d] == 1 ? Expr(0) : Expr(axis));
            }
            Expr cv = c(idx);
            if (beta != 1.0)
                cv = constant(a.dtype(), beta) * cv;
            return v + cv;
        },
        op + "_bias", {"m", "n"});
}

} // namespace tessera::te
