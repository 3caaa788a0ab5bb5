// 8-bit matrix products: u8 activations times s8 weights packed as i32 words of four rows, or
// times a second u8 activation whose columns the kernel packs into such words, accumulated in
// i32 with dot4_u8s8 (one vpdpbusd per 16 outputs and 4 steps of the reduction on CPUs with
// VNNI), dequantized into f32.
#include <algorithm>

#include "op_util.h"
#include "tessera/ir/op.h"

namespace tessera::te {

using namespace detail;

Tensor qmatmul(const Tensor& x, const Tensor& w, const Tensor& offset, const Tensor& scale) {
    const std::string op = "qmatmul";
    check_word_product_operands(x, w, DataType::u8(), op);
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
        std::vector<Expr> bytes;
        for (int b = 0; b < 4; ++b) {
            std::vector<Expr> xi = as_exprs(i);
            Expr col = i[rank - 1] * Expr(int64_t(4)) + Expr(int64_t(b));
            xi.back() = clamp_index(col, 0, k - 1);
            Expr v = b == 3 ? signed_byte(x(xi)) : ir::cast(i32, x(xi));
            if ((words - 1) * 4 + b >= k) // only the last word reaches past the row
                v = ir::select(col < Expr(k), v, constant(i32, 0));
            bytes.push_back(v);
        }
        return word_of_bytes(bytes);
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

Tensor qmatmul_activations(const Tensor& x, const Tensor& y, const Tensor& scale,
                           int64_t x_zero_point, int64_t y_zero_point) {
    const std::string op = "qmatmul_activations";
    check_defined(x, op, "input");
    check_defined(y, op, "second input");
    check_defined(scale, op, "scale");
    if (x.dtype() != DataType::u8() || y.dtype() != DataType::u8() ||
        scale.dtype() != DataType::f32() || scale.shape() != std::vector<int64_t>{1})
        throw UserError() << op << ": inputs must be u8 and the scale f32 [1], got "
                          << ir::to_string(x.dtype()) << ", " << ir::to_string(y.dtype()) << " and "
                          << ir::to_string(scale.dtype()) << " " << shape_to_string(scale.shape());
    const size_t rank = x.ndim();
    const int64_t k = rank >= 2 ? x.shape()[rank - 1] : 0;
    if (rank < 2 || y.ndim() != rank || k % 4 != 0 || y.shape()[rank - 2] != k ||
        !std::equal(x.shape().begin(), x.shape().end() - 2, y.shape().begin()))
        throw UserError() << op << ": inputs " << shape_to_string(x.shape()) << " and "
                          << shape_to_string(y.shape())
                          << " need rank >= 2, the same batch dimensions and a shared inner "
                             "dimension that is a multiple of 4";
    for (int64_t zp : {x_zero_point, y_zero_point})
        if (zp < 0 || zp > 255)
            throw UserError() << op << ": zero point " << zp << " is not a u8";
    const DataType i32 = DataType::i32();
    const int64_t n = y.shape()[rank - 1], words = k / 4;
    const Tensor xw = rows_as_words(x, op + "_words");
    // Word [..., j, c]: y[..., 4j + b, c] - 128 as s8 in byte b. The low three bytes enter as
    // their unsigned codes ((y + 128) mod 256), the top one signed, so that the i32 sum is the
    // word's bits.
    std::vector<int64_t> columns_shape = y.shape();
    columns_shape[rank - 2] = words;
    const Tensor yw = compute(
        columns_shape,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> codes;
            for (int b = 0; b < 4; ++b) {
                std::vector<Expr> yi = as_exprs(i);
                yi[rank - 2] = i[rank - 2] * Expr(int64_t(4)) + Expr(int64_t(b));
                const Expr v = ir::cast(i32, y(yi));
                codes.push_back(b == 3 ? v - constant(i32, 128)
                                       : ir::select(v >= constant(i32, 128), v - constant(i32, 128),
                                                    v + constant(i32, 128)));
            }
            return word_of_bytes(codes);
        },
        op + "_columns");
    const Expr ones = constant(i32, double(0x01010101)); // four unsigned (or signed) 1 bytes
    std::vector<int64_t> rows_shape(x.shape().begin(), x.shape().end() - 1);
    IterVar rr = reduce_axis(words, "kw");
    const Tensor row_sums = compute(
        rows_shape,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> xi = as_exprs(i);
            xi.push_back(rr.var);
            return sum(ir::dot4_u8s8(xw(xi), ones), {rr});
        },
        op + "_row_sums");
    std::vector<int64_t> cols_shape(y.shape().begin(), y.shape().end() - 2);
    cols_shape.push_back(n);
    IterVar rc = reduce_axis(words, "kw");
    const Tensor column_sums = compute( // sums of y - 128
        cols_shape,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> yi = as_exprs(i);
            yi.insert(yi.end() - 1, rc.var);
            return sum(ir::dot4_u8s8(ones, yw(yi)), {rc});
        },
        op + "_column_sums");
    std::vector<int64_t> shape = x.shape();
    shape.back() = n;
    IterVar r = reduce_axis(words, "kw");
    const Tensor acc = compute(
        shape,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> xi = as_exprs(i), wi = as_exprs(i);
            xi.back() = r.var;
            wi[rank - 2] = r.var;
            return sum(ir::dot4_u8s8(xw(xi), yw(wi)), {r});
        },
        op);
    // sum (x - zx)(y - zy) = acc + (128 - zy) * rows - zx * columns + K * zx * (zy - 128), with
    // acc = sum x (y - 128), rows = sum x and columns = sum (y - 128).
    return compute(
        shape,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> ri(i.begin(), i.end() - 1), ci(i.begin(), i.end() - 2);
            ci.push_back(i[rank - 1]);
            Expr total = acc(as_exprs(i));
            if (y_zero_point != 128)
                total = total + row_sums(ri) * constant(i32, double(128 - y_zero_point));
            if (x_zero_point != 0)
                total = total - column_sums(ci) * constant(i32, double(x_zero_point)) +
                        constant(i32, double(k * x_zero_point * (y_zero_point - 128)));
            return ir::cast(DataType::f32(), total) * scale(Expr(int64_t(0)));
        },
        op + "_dequantize");
}

} // namespace tessera::te
