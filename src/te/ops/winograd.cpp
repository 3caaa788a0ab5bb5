// Winograd F(m x m, r x r) convolution in the blocked layout NCHW[x]c, as two transforms around
// a batched matrix product (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks").
// Each 2-D transform is two products with the 1-D transform's table (Bt, At), rows then columns,
// not per-element formulas: a table entry indexed by loop variables needs no select over tile
// positions, and the tables are ordinary weight inputs, so the transforms are Computes like any
// other that sketches tile and vectorize along channels. Separable, F(4x4)'s input transform
// does 2 x 6 multiply-adds per output instead of the Kronecker table's 36.
#include "op_util.h"

namespace tessera::te {

using namespace detail;

Tensor winograd_input_nchwc(const Tensor& x, const Tensor& table, const WinogradTile& t) {
    const std::string op = "winograd_input";
    check_defined(x, op, "input");
    check_defined(table, op, "table");
    check_same_dtype(x, table, op);
    check_rank(x, 5, op, "input");
    check_rank(table, 2, op, "table");
    const int64_t alpha = table.shape()[0];
    if (table.shape()[1] != alpha || t.m < 1 || alpha <= t.m)
        throw UserError() << op << ": table " << shape_to_string(table.shape())
                          << " does not fit output tiles of " << t.m;
    const auto& xs = x.shape();
    const int64_t n = xs[0], cb = xs[1], block = xs[4];
    const int64_t th = t.tiles_h(), tw = t.tiles_w();
    // The tiles read rows pad_top above the image to th * m + alpha - m rows in all; rows past
    // the image (the conv's bottom padding and a partial last tile) read 0.
    const int64_t rows = th * t.m + alpha - t.m, cols = tw * t.m + alpha - t.m;
    const int64_t below = rows - xs[2] - t.pad_top, right = cols - xs[3] - t.pad_left;
    if (t.pad_top < 0 || t.pad_left < 0 || below < 0 || right < 0)
        throw UserError() << op << ": pads and output " << t.out_h << "x" << t.out_w
                          << " do not fit input " << shape_to_string(xs);
    // The padded image is read in place (0 outside x), not copied into a padded buffer first:
    // that copy's parallel split (by channel block) differs from the row stage's (by tile
    // row), so half of what each thread read came from the other's cache.
    auto in = [&](Expr img, Expr cblock, Expr row, Expr col, Expr lane) {
        Expr h = row - Expr(t.pad_top), w = col - Expr(t.pad_left);
        Expr inside = ir::logical_and(ir::logical_and(h >= Expr(0), h < Expr(xs[2])),
                                      ir::logical_and(w >= Expr(0), w < Expr(xs[3])));
        return ir::select(
            inside,
            x(img, cblock, clamp_index(h, 0, xs[2] - 1), clamp_index(w, 0, xs[3] - 1), lane),
            constant(x.dtype(), 0.0));
    };
    // Bt d: each tile row's alpha image rows, transformed over whole image rows, so that
    // horizontally adjacent tiles share the columns they overlap in. Tile row first: the
    // threads split it as they split the column stage's tiles, and mostly read their own rows.
    IterVar i = reduce_axis(alpha, "i");
    Tensor by_rows =
        compute({n * th, alpha, cols, cb * block},
                [&](const std::vector<Var>& v) {
                    Expr r = v[0], c = v[3];
                    Expr img = r / Expr(th), ty = r % Expr(th);
                    return sum(table(v[1], i.var) * in(img, c / Expr(block), ty * Expr(t.m) + i.var,
                                                       v[2], c % Expr(block)),
                               {i});
                },
                op + "_rows", {"r", "a", "w", "c"});
    // (Bt d) B: each tile's alpha columns. Tile p = (img * th + ty) * tw + tx.
    IterVar j = reduce_axis(alpha, "j");
    return compute({alpha * alpha, n * th * tw, cb * block},
                   [&](const std::vector<Var>& v) {
                       Expr a = v[0] / Expr(alpha), b = v[0] % Expr(alpha);
                       Expr p = v[1];
                       return sum(table(b, j.var) * by_rows(p / Expr(tw), a,
                                                            p % Expr(tw) * Expr(t.m) + j.var, v[2]),
                                  {j});
                   },
                   op, {"e", "p", "c"});
}

Tensor winograd_output_nchwc(const Tensor& m, const Tensor& table, const Tensor& bias,
                             const WinogradTile& t, int64_t block) {
    const std::string op = "winograd_output";
    check_defined(m, op, "input");
    check_defined(table, op, "table");
    check_same_dtype(m, table, op);
    check_rank(m, 3, op, "input");
    check_rank(table, 2, op, "table");
    const int64_t e = m.shape()[0], p = m.shape()[1], k = m.shape()[2];
    if (t.m < 1 || t.out_h < 1 || t.out_w < 1)
        throw UserError() << op << ": tile " << t.m << " and output " << t.out_h << "x" << t.out_w
                          << " must be positive";
    const int64_t th = t.tiles_h(), tw = t.tiles_w(), alpha = table.shape()[1];
    if (block < 1 || k % block != 0 || p % (th * tw) != 0 || table.shape()[0] != t.m ||
        alpha * alpha != e)
        throw UserError() << op << ": input " << shape_to_string(m.shape()) << " and table "
                          << shape_to_string(table.shape()) << " do not make " << t.out_h << "x"
                          << t.out_w << " outputs in tiles of " << t.m << ", blocks of " << block;
    const int64_t n = p / (th * tw), kb = k / block;
    if (bias.defined()) {
        check_same_dtype(m, bias, op);
        if (bias.shape() != std::vector<int64_t>{kb, block})
            throw UserError() << op << ": bias must have shape [" << kb << ", " << block
                              << "], got " << shape_to_string(bias.shape());
    }
    // M A: each tile's m output columns from its alpha x alpha products.
    IterVar b = reduce_axis(alpha, "b");
    Tensor by_cols = compute(
        {alpha, p, t.m, k},
        [&](const std::vector<Var>& v) {
            return sum(table(v[2], b.var) * m(Expr(v[0]) * Expr(alpha) + b.var, v[1], v[3]), {b});
        },
        op + "_cols", {"a", "p", "s", "k"});
    // At (M A): its m output rows.
    IterVar a = reduce_axis(alpha, "a");
    Tensor y = compute(
        {n, kb, t.out_h, t.out_w, block},
        [&](const std::vector<Var>& i) {
            Expr h = i[2], w = i[3];
            Expr tile = (Expr(i[0]) * Expr(th) + h / Expr(t.m)) * Expr(tw) + w / Expr(t.m);
            return sum(table(h % Expr(t.m), a.var) *
                           by_cols(a.var, tile, w % Expr(t.m), Expr(i[1]) * Expr(block) + i[4]),
                       {a});
        },
        op, {"n", "kb", "oh", "ow", "k"});
    if (!bias.defined())
        return y;
    return compute({n, kb, t.out_h, t.out_w, block},
                   [&](const std::vector<Var>& i) {
                       return y(i[0], i[1], i[2], i[3], i[4]) + bias(i[1], i[4]);
                   },
                   op + "_bias", {"n", "kb", "oh", "ow", "k"});
}

} // namespace tessera::te
