// Winograd F(m x m, r x r) convolution in the blocked layout NCHW[x]c, as two transforms around
// a batched matrix product (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks").
// Each transform is written as a small product with a constant table (the Kronecker product of
// the 1-D transform with itself), not as per-element formulas: a table entry indexed by loop
// variables needs no select over tile positions, and the tables are ordinary weight inputs, so
// the transforms are Computes like any other that sketches tile and vectorize along channels.
#include "op_util.h"

namespace tessera::te {

using namespace detail;

namespace {

/// alpha = sqrt(table columns) for an input table [alpha^2, alpha^2]; throws unless square.
int64_t tile_span(const Tensor& table, const std::string& op) {
    check_rank(table, 2, op, "table");
    const int64_t e = table.shape()[0];
    int64_t alpha = 1;
    while (alpha * alpha < e)
        ++alpha;
    if (alpha * alpha != e)
        throw UserError() << op << ": table " << shape_to_string(table.shape())
                          << " does not have alpha^2 rows";
    return alpha;
}

} // namespace

Tensor winograd_input_nchwc(const Tensor& x, const Tensor& table, const WinogradTile& t) {
    const std::string op = "winograd_input";
    check_defined(x, op, "input");
    check_defined(table, op, "table");
    check_same_dtype(x, table, op);
    check_rank(x, 5, op, "input");
    const int64_t alpha = tile_span(table, op);
    if (table.shape()[1] != alpha * alpha || t.m < 1 || alpha <= t.m)
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
    Tensor in = pad_named(x, {0, 0, t.pad_top, t.pad_left, 0}, {0, 0, below, right, 0},
                          constant(x.dtype(), 0.0), PadMode::Constant, op + "_pad");
    IterVar q = reduce_axis(alpha * alpha, "q");
    return compute({alpha * alpha, n * th * tw, cb * block},
                   [&](const std::vector<Var>& i) {
                       Expr p = i[1];
                       Expr img = p / Expr(th * tw), ty = p / Expr(tw) % Expr(th),
                            tx = p % Expr(tw);
                       Expr c = i[2];
                       Expr v = in(img, c / Expr(block), ty * Expr(t.m) + q.var / Expr(alpha),
                                   tx * Expr(t.m) + q.var % Expr(alpha), c % Expr(block));
                       return sum(table(i[0], q.var) * v, {q});
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
    const int64_t th = t.tiles_h(), tw = t.tiles_w();
    if (block < 1 || k % block != 0 || p % (th * tw) != 0 ||
        table.shape() != std::vector<int64_t>{t.m * t.m, e})
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
    IterVar r = reduce_axis(e, "e");
    Tensor y = compute(
        {n, kb, t.out_h, t.out_w, block},
        [&](const std::vector<Var>& i) {
            Expr h = i[2], w = i[3];
            Expr tile = (Expr(i[0]) * Expr(th) + h / Expr(t.m)) * Expr(tw) + w / Expr(t.m);
            Expr pos = h % Expr(t.m) * Expr(t.m) + w % Expr(t.m);
            return sum(table(pos, r.var) * m(r.var, tile, Expr(i[1]) * Expr(block) + i[4]), {r});
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
