// lower_tile_matmuls: a `tile_matmul` loop nest matched to one TileMatmul by the coefficients of
// its loop variables in the three indices of its store.
#include "tessera/lower/tile_matmul.h"

#include "perfect_nest.h"

#include "tessera/ir/functor.h"
#include "tessera/ir/op.h"
#include "tessera/ir/simplify.h"
#include "tessera/ir/substitute.h"
#include "tessera/ir/tile_matmul.h"
#include "tessera/support/error.h"

namespace tessera::lower {

using namespace ir;

namespace {

[[noreturn]] void fail(const std::string& what) { throw ScheduleError("tile_matmul: " + what); }

using Loop = detail::NestLoop;

bool is_word_product(CallOp op) { return op == CallOp::Dot4U8S8 || op == CallOp::Dot2BF16; }

/// The loads of `acc + dot(x, y)` (either order; dot4_u8s8 or dot2_bf16, which goes into
/// `product`) when value has that form.
bool match_update(const Expr& value, const Load*& acc, const Load*& x, const Load*& y,
                  CallOp& product) {
    const Add* add = value.as<Add>();
    if (!add)
        return false;
    for (const auto& [l, r] : {std::pair(add->a, add->b), std::pair(add->b, add->a)}) {
        const Call* dot = r.as<Call>();
        acc = l.as<Load>();
        if (acc && dot && is_word_product(dot->op)) {
            product = dot->op;
            // A's words may be its elements reinterpreted (bytes_as_word of a u8 or bf16 Load).
            const Call* bytes = dot->args[0].as<Call>();
            x = bytes && bytes->op == CallOp::BytesAsWord ? bytes->args[0].as<Load>()
                                                          : dot->args[0].as<Load>();
            y = dot->args[1].as<Load>();
            return x && y;
        }
    }
    return false;
}

Stmt lower_nest(const For* root) {
    detail::PerfectNest nest = detail::perfect_nest(root, "tile_matmul");
    Substituter& subs = nest.subs; // Lets and loops of one iteration, into the indices
    std::vector<Loop>& loops = nest.loops;
    const Stmt& s = nest.body;
    const Store* st = s.as<Store>();
    const Load *acc = nullptr, *x = nullptr, *y = nullptr;
    CallOp product = CallOp::Dot4U8S8;
    // The accumulators' initialization shares the annotated loop (a spatial one) with the
    // product: it stays a plain nest.
    if (st && !contains_call(st->value, is_word_product))
        return For::make(root->loop_var, root->min, root->extent, ForKind::Serial, root->body);
    if (!st || !match_update(st->value, acc, x, y, product))
        fail("the nest under '" + root->loop_var.name() +
             "' is not one store of acc + dot4_u8s8(x, y) or dot2_bf16(x, y)");
    const DataType acc_type = product == CallOp::Dot2BF16 ? DataType::f32() : DataType::i32();
    if (st->value.type() != acc_type || acc->buffer.get() != st->buffer.get())
        fail("the store under '" + root->loop_var.name() + "' is not a scalar " +
             to_string(acc_type) + " update");
    const Expr ic = simplify(subs.mutate(st->index));
    if (!is_const_int(simplify(subs.mutate(acc->index) - ic), 0))
        fail("the accumulator under '" + root->loop_var.name() + "' is read elsewhere");
    const Expr ia = simplify(subs.mutate(x->index));
    const Expr ib = simplify(subs.mutate(y->index));

    // Coefficients, then the role of each loop.
    detail::set_coefficients(loops, ic, ia, ib, "tile_matmul");
    const Loop* k_loop = nullptr;
    std::vector<const Loop*> reduce, rows, columns;
    const int64_t a_per_word =
        x->type == DataType::i32() ? 1 : product == CallOp::Dot2BF16 ? 2 : 4;
    for (const Loop& l : loops) {
        if (l.c == 0) {
            if (l.a == a_per_word && l.b != 0 && l.extent <= TileMatmul::kMaxColumnWords)
                k_loop = &l; // the innermost such loop wins
            reduce.push_back(&l);
        } else if (l.b == 0 && l.a != 0) {
            rows.push_back(&l);
        } else if (l.a == 0 && l.b != 0) {
            columns.push_back(&l);
        } else {
            fail("loop '" + l.var.name() + "' is neither a reduce, row nor column loop");
        }
    }
    TileMatmul t;
    t.product = product;
    // Rows: the longer of at most two row loops that fits a tile; the other counts row tiles.
    if (rows.empty() || rows.size() > 2)
        fail(std::to_string(rows.size()) + " row loops under '" + root->loop_var.name() + "'");
    const Loop* row = rows.back();
    if (rows.size() == 2 && rows[0]->extent > row->extent &&
        rows[0]->extent <= TileMatmul::kMaxRows)
        row = rows[0];
    if (row->extent > TileMatmul::kMaxRows)
        fail("row loop '" + row->var.name() + "' of " + std::to_string(row->extent) + " rows");
    t.m = row->extent;
    t.ldc = row->c;
    t.lda = row->a;
    for (const Loop* l : rows)
        if (l != row) {
            t.m_tiles = l->extent;
            t.c_m_tile = l->c;
            t.a_m_tile = l->a;
        }
    // Columns: the loop with unit strides in C and B; another one counts column tiles.
    const Loop* column = nullptr;
    for (const Loop* l : columns)
        if (l->c == 1 && l->b == 1 && l->extent <= TileMatmul::kMaxColumnWords && !column)
            column = l;
    if (!column || columns.size() > 2)
        fail("no loop of at most 16 contiguous columns under '" + root->loop_var.name() + "'");
    t.n = column->extent;
    for (const Loop* l : columns)
        if (l != column) {
            t.n_tiles = l->extent;
            t.c_n_tile = l->c;
            t.b_n_tile = l->b;
        }
    // Words: the k loop (a single word per step without one); the rest accumulate in tiles.
    t.k = k_loop ? k_loop->extent : 1;
    if (!k_loop && a_per_word != 1)
        fail("no words loop over the bytes under '" + root->loop_var.name() + "'");
    t.ldb = k_loop ? k_loop->b : 1;
    for (const Loop* l : reduce)
        if (l != k_loop)
            t.loops.push_back({l->extent, l->a, l->b});
    if (t.tile_registers() > TileMatmul::kTileRegisters)
        fail(std::to_string(t.m_tiles) + "x" + std::to_string(t.n_tiles) +
             " tiles need more than 8 tile registers");

    // The first elements: every loop variable at 0.
    Substituter zero;
    for (const Loop& l : loops)
        zero.values[l.var.get()] = Expr(int64_t(0));
    t.c = Load::make(st->buffer, simplify(zero.mutate(ic)));
    t.a = Load::make(x->buffer, simplify(zero.mutate(ia)));
    t.b = Load::make(y->buffer, simplify(zero.mutate(ib)));
    return t.to_stmt();
}

class TileMatmulLowering : public IRMutator {
  public:
    using IRMutator::visit;
    Stmt visit(const For* op) override {
        if (op->kind == ForKind::TileMatmul)
            return lower_nest(op);
        return IRMutator::visit(op);
    }
};

} // namespace

Stmt lower_tile_matmuls(const Stmt& s) { return TileMatmulLowering().mutate(s); }

} // namespace tessera::lower
