// Matrix products: matmul (numpy semantics), dense (+bias) and batch_matmul.
#include "op_util.h"

namespace tessera::te {

using namespace detail;

/// The product of a and b; with `acc` defined, the operands are converted to it first, so that
/// products and sums are in acc (f16 operands summed in f32).
static Tensor matmul_impl(const Tensor& a, const Tensor& b, const std::string& op,
                          DataType acc = DataType()) {
    check_defined(a, op, "first");
    check_defined(b, op, "second");
    check_same_dtype(a, b, op);
    if (a.ndim() == 0 || b.ndim() == 0)
        throw UserError() << op << ": inputs must have rank >= 1, got "
                          << shape_to_string(a.shape()) << " and " << shape_to_string(b.shape());
    // Promote rank-1 operands to matrices; the promoted dims are dropped from the result.
    bool a_vec = a.ndim() == 1, b_vec = b.ndim() == 1;
    std::vector<int64_t> as = a.shape(), bs = b.shape();
    if (a_vec)
        as.insert(as.begin(), 1);
    if (b_vec)
        bs.push_back(1);
    int64_t m = as[as.size() - 2], k = as.back();
    int64_t kb = bs[bs.size() - 2], n = bs.back();
    if (k != kb)
        throw UserError() << op << ": inner dims differ: '" << a.name() << "' "
                          << shape_to_string(a.shape()) << " has k=" << k << ", '" << b.name()
                          << "' " << shape_to_string(b.shape()) << " has k=" << kb;
    std::vector<int64_t> a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
    std::vector<int64_t> batch = broadcast_shapes(a_batch, b_batch, op + " batch dims");
    std::vector<int64_t> shape = batch;
    if (!a_vec)
        shape.push_back(m);
    if (!b_vec)
        shape.push_back(n);

    size_t nb = batch.size();
    IterVar r = reduce_axis(k, "k");
    return compute(
        shape,
        [&](const std::vector<Var>& i) {
            // Output indices: batch..., [m], [n].
            Expr im = a_vec ? Expr(0) : Expr(i[nb]);
            Expr in = b_vec ? Expr(0) : Expr(i[nb + (a_vec ? 0 : 1)]);
            auto batch_index = [&](const std::vector<int64_t>& own) {
                std::vector<Expr> idx;
                size_t skip = nb - own.size();
                for (size_t d = 0; d < own.size(); ++d)
                    idx.push_back(own[d] == 1 ? Expr(0) : Expr(i[skip + d]));
                return idx;
            };
            std::vector<Expr> ai = batch_index(a_batch), bi = batch_index(b_batch);
            if (!a_vec)
                ai.push_back(im);
            ai.push_back(r.var);
            bi.push_back(r.var);
            if (!b_vec)
                bi.push_back(in);
            if (acc == DataType() || acc == a.dtype())
                return sum(a(ai) * b(bi), {r});
            return sum(ir::cast(acc, a(ai)) * ir::cast(acc, b(bi)), {r});
        },
        op);
}

Tensor matmul(const Tensor& a, const Tensor& b) { return matmul_impl(a, b, "matmul"); }

Tensor matmul_accumulate(const Tensor& a, const Tensor& b, DataType acc) {
    if (!acc.is_float() || !acc.is_scalar())
        throw UserError() << "matmul_accumulate: accumulator type " << ir::to_string(acc)
                          << " is not a scalar float type";
    return matmul_impl(a, b, "matmul", acc);
}

Tensor batch_matmul(const Tensor& a, const Tensor& b) {
    check_defined(a, "batch_matmul", "first");
    check_defined(b, "batch_matmul", "second");
    check_rank(a, 3, "batch_matmul", "input");
    check_rank(b, 3, "batch_matmul", "input");
    return matmul_impl(a, b, "batch_matmul");
}

Tensor dense(const Tensor& x, const Tensor& w, const Tensor& bias) {
    const std::string op = "dense";
    check_defined(x, op, "input");
    check_defined(w, op, "weight");
    check_same_dtype(x, w, op);
    if (x.ndim() == 0)
        throw UserError() << op << ": input '" << x.name() << "' must have rank >= 1";
    check_rank(w, 2, op, "weight");
    int64_t k = x.shape().back(), n = w.shape()[0];
    if (w.shape()[1] != k)
        throw UserError() << op << ": weight '" << w.name() << "' " << shape_to_string(w.shape())
                          << " must be [n, " << k << "] for input " << shape_to_string(x.shape());
    if (bias.defined()) {
        check_same_dtype(x, bias, op);
        if (bias.shape() != std::vector<int64_t>{n})
            throw UserError() << op << ": bias '" << bias.name() << "' must have shape [" << n
                              << "], got " << shape_to_string(bias.shape());
    }
    std::vector<int64_t> shape = x.shape();
    shape.back() = n;
    size_t rank = shape.size();
    IterVar r = reduce_axis(k, "k");
    Tensor y = compute(
        shape,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> xi = as_exprs(i);
            xi.back() = r.var;
            return sum(x(xi) * w(i[rank - 1], r.var), {r});
        },
        op);
    if (!bias.defined())
        return y;
    return compute(
        shape, [&](const std::vector<Var>& i) { return y(as_exprs(i)) + bias(i[rank - 1]); },
        "dense_bias");
}

} // namespace tessera::te
