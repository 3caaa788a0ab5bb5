// 8-bit matrix product: u8 activations times s8 weights packed as i32 words of four rows,
// accumulated in i32 with dot4_u8s8 (one vpdpbusd per 16 outputs and 4 steps of the reduction
// on CPUs with VNNI), dequantized per output column into f32.
#include "op_util.h"
#include "tessera/ir/op.h"

namespace tessera::te {

using namespace detail;

Tensor qmatmul(const Tensor& x, const Tensor& w, const Tensor& offset, const Tensor& scale) {
    const std::string op = "qmatmul";
    check_defined(x, op, "input");
    check_defined(w, op, "weight");
    if (x.dtype() != DataType::u8() || w.dtype() != DataType::i32())
        throw UserError() << op << ": input must be u8 and weight i32 words, got "
                          << ir::to_string(x.dtype()) << " and " << ir::to_string(w.dtype());
    if (x.ndim() == 0)
        throw UserError() << op << ": input '" << x.name() << "' must have rank >= 1";
    check_rank(w, 2, op, "weight");
    const int64_t k = x.shape().back(), words = w.shape()[0], n = w.shape()[1];
    if (words != (k + 3) / 4)
        throw UserError() << op << ": weight " << shape_to_string(w.shape()) << " must have "
                          << (k + 3) / 4 << " rows of words for " << k << " input columns";
    for (const Tensor* t : {&offset, &scale}) {
        check_defined(*t, op, "dequantization");
        if (t->shape() != std::vector<int64_t>{n})
            throw UserError() << op << ": offset and scale must have shape [" << n << "], got "
                              << shape_to_string(t->shape());
    }
    if (offset.dtype() != DataType::i32() || scale.dtype() != DataType::f32())
        throw UserError() << op << ": offset must be i32 and scale f32";
    const DataType i32 = DataType::i32();
    const size_t rank = x.ndim();
    // Each row as words of four columns (byte j = column 4w + j; columns past k are 0): whole
    // words are the row's bytes reinterpreted; otherwise the top byte enters signed so that
    // the sum stays in the i32 range.
    std::vector<int64_t> word_shape = x.shape();
    word_shape.back() = words;
    auto partial_words = [&](const std::vector<Var>& i) {
        Expr word;
        for (int b = 0; b < 4; ++b) {
            std::vector<Expr> xi = as_exprs(i);
            Expr col = i[rank - 1] * Expr(int64_t(4)) + Expr(int64_t(b));
            xi.back() = clamp_index(col, 0, k - 1);
            Expr byte = x(xi);
            Expr v = b == 3 ? ir::cast(i32, ir::cast(DataType(DataType::Code::Int, 8), byte))
                            : ir::cast(i32, byte);
            if (b > 0)
                v = v * constant(i32, double(int64_t(1) << (8 * b)));
            if ((words - 1) * 4 + b >= k) // only the last word reaches past the row
                v = ir::select(col < Expr(k), v, constant(i32, 0));
            word = b == 0 ? v : word + v;
        }
        return word;
    };
    const Tensor xw = k % 4 == 0 ? rows_as_words(x, op + "_words")
                                 : compute(word_shape, partial_words, op + "_words");
    std::vector<int64_t> shape = x.shape();
    shape.back() = n;
    IterVar r = reduce_axis(words, "kw");
    Tensor acc = compute(
        shape,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> xi = as_exprs(i);
            xi.back() = r.var;
            return sum(ir::dot4_u8s8(xw(xi), w(r.var, i[rank - 1])), {r});
        },
        op);
    return compute(
        shape,
        [&](const std::vector<Var>& i) {
            return ir::cast(DataType::f32(), acc(as_exprs(i)) + offset(i[rank - 1])) *
                   scale(i[rank - 1]);
        },
        op + "_dequantize");
}

} // namespace tessera::te
