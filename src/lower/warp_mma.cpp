// lower_warp_mmas: a `warp_mma` loop nest matched to one WarpMma by the coefficients of its loop
// variables in the three indices of its store and by the lane dependence of its loads.
#include "tessera/lower/warp_mma.h"

#include "perfect_nest.h"

#include "tessera/ir/functor.h"
#include "tessera/ir/op.h"
#include "tessera/ir/simplify.h"
#include "tessera/ir/substitute.h"
#include "tessera/ir/warp_mma.h"
#include "tessera/support/error.h"

namespace tessera::lower {

using namespace ir;

namespace {

[[noreturn]] void fail(const std::string& what) { throw ScheduleError("warp_mma: " + what); }

/// The Load under x: x itself or the value of a Cast to f32.
const Load* operand_load(const Expr& x) {
    if (const Load* l = x.as<Load>())
        return l;
    if (const Cast* c = x.as<Cast>())
        return c->type == DataType::f32() ? c->value.as<Load>() : nullptr;
    return nullptr;
}

using Loop = detail::NestLoop;

Expr with(const Expr& e, std::initializer_list<std::pair<const Var*, Expr>> values) {
    Substituter s;
    for (const auto& [v, x] : values)
        s.values[v->get()] = x;
    return simplify(s.mutate(e));
}

bool equal_for_all(const Expr& a, const Expr& b) { return is_const_int(simplify(a - b), 0); }

Stmt lower_nest(const For* root, const Var& lane) {
    const std::string name = "'" + root->loop_var.name() + "'";
    detail::PerfectNest nest = detail::perfect_nest(root, "warp_mma");
    Substituter& subs = nest.subs; // Lets and loops of one iteration, into the indices
    std::vector<Loop>& loops = nest.loops;
    const Stmt& s = nest.body;
    const Store* st = s.as<Store>();
    const Add* add = st ? st->value.as<Add>() : nullptr;
    const Load *acc = nullptr, *x = nullptr, *y = nullptr;
    for (const auto& [l, r] :
         add ? std::vector<std::pair<Expr, Expr>>{{add->a, add->b}, {add->b, add->a}}
             : std::vector<std::pair<Expr, Expr>>{}) {
        const Mul* mul = r.as<Mul>();
        if (l.as<Load>() && mul && operand_load(mul->a) && operand_load(mul->b)) {
            acc = l.as<Load>();
            x = operand_load(mul->a);
            y = operand_load(mul->b);
            break;
        }
    }
    if (!acc || st->value.type() != DataType::f32() || acc->buffer.get() != st->buffer.get())
        fail("the nest under " + name + " is not one f32 store of acc + x * y");
    if (x->type != y->type || (x->type != DataType::f16() && x->type != DataType::f32()))
        fail("the operands under " + name + " are " + to_string(x->type) + " and " +
             to_string(y->type) + " (both f16, or both f32 for TF32)");
    const MmaKind kind = x->type == DataType::f16() ? MmaKind::F16 : MmaKind::TF32;
    const Expr ic = simplify(subs.mutate(st->index));
    if (!is_const_int(simplify(subs.mutate(acc->index) - ic), 0))
        fail("the accumulator under " + name + " is read elsewhere");
    Expr ia = simplify(subs.mutate(x->index));
    Expr ib = simplify(subs.mutate(y->index));

    // The three loops by their coefficients. A and B may come in either order.
    const Loop *k = nullptr, *h = nullptr, *c = nullptr;
    detail::set_coefficients(loops, ic, ia, ib, "warp_mma");
    for (int swap = 0; swap < 2 && !(k && h && c); ++swap) {
        if (swap) {
            std::swap(x, y);
            std::swap(ia, ib);
            for (Loop& l : loops)
                std::swap(l.a, l.b);
        }
        k = h = c = nullptr;
        for (const Loop& l : loops) {
            if (l.c == 0 && !k)
                k = &l;
            else if (l.extent == 2 && l.c != 0 && l.a != 0 && l.b == 0 && !h)
                h = &l;
            else if (l.extent == 2 && l.c != 0 && l.b != 0 && l.a == 0 && !c)
                c = &l;
        }
    }
    if (loops.size() != 3 || !k || !h || !c)
        fail("the nest under " + name + " is not a k loop and row and column halves of 2");
    if (k->extent != WarpMma::k_of(kind))
        fail("k loop '" + k->var.name() + "' of " + std::to_string(k->extent) + " (a " +
             to_string(kind) + " product takes " + std::to_string(WarpMma::k_of(kind)) + ")");

    // Each lane's rows depend on its group g = L / 4 only, its columns on t = L % 4 only.
    const Expr l64 = lane;
    for (int64_t l = 0; l < WarpMma::kLanes; ++l) {
        if (!equal_for_all(with(ia, {{&lane, Expr(l)}}), with(ia, {{&lane, Expr(l / 4 * 4)}})))
            fail("the A index under " + name + " differs between lanes of one row group (" +
                 std::to_string(l) + " and " + std::to_string(l / 4 * 4) + ")");
        if (!equal_for_all(with(ib, {{&lane, Expr(l)}}), with(ib, {{&lane, Expr(l % 4)}})))
            fail("the B index under " + name + " differs between lanes of one column group (" +
                 std::to_string(l) + " and " + std::to_string(l % 4) + ")");
    }

    WarpMma w;
    w.kind = kind;
    const Expr four(int64_t(4)), zero(int64_t(0));
    const Expr t = Mod::make(l64, four); // floor semantics; lanes are non-negative
    const Expr g = Div::make(l64, four);
    auto k_at = [&](int64_t offset) { return t * Expr(WarpMma::k_per_t(kind)) + Expr(offset); };
    for (int q = 0; q < 4; ++q)
        w.c.push_back(Load::make(st->buffer, with(ic, {{&h->var, Expr(int64_t(q >> 1))},
                                                       {&c->var, Expr(int64_t(q & 1))},
                                                       {&k->var, zero}})));
    // A's tile row g + 8h is the row this lane reads at h (ia does not depend on t).
    for (int q = 0; q < WarpMma::a_elements(kind); ++q)
        w.a.push_back(
            Load::make(x->buffer, with(ia, {{&h->var, Expr(WarpMma::a_row_half(kind, q))},
                                            {&c->var, zero},
                                            {&k->var, k_at(WarpMma::a_k_offset(kind, q))}})));
    // B's tile column n = g is the column the lanes with t = n / 2 read at c = n % 2 (ib
    // depends on the lane through t only: the lane n / 2 stands for them).
    for (int q = 0; q < WarpMma::b_elements(kind); ++q)
        w.b.push_back(
            Load::make(y->buffer, with(ib, {{&lane, Div::make(g, Expr(int64_t(2)))},
                                            {&c->var, Mod::make(g, Expr(int64_t(2)))},
                                            {&h->var, zero},
                                            {&k->var, k_at(WarpMma::b_k_offset(kind, q))}})));
    return w.to_stmt();
}

class WarpMmaLowering : public IRMutator {
  public:
    using IRMutator::visit;
    Stmt visit(const For* op) override {
        if (op->kind == ForKind::WarpMma) {
            if (!lane_)
                fail("loop '" + op->loop_var.name() + "' is not inside a threadIdx.x loop");
            if (lane_extent_ != WarpMma::kLanes)
                fail("loop '" + op->loop_var.name() + "' is inside a threadIdx.x loop of " +
                     std::to_string(lane_extent_) + " (the 32 lanes of one warp needed)");
            return lower_nest(op, Var(lane_));
        }
        if (op->kind != ForKind::GpuThreadX)
            return IRMutator::visit(op);
        const Variable* outer = lane_;
        const int64_t outer_extent = lane_extent_;
        const IntImm* ext = op->extent.as<IntImm>();
        lane_ = op->loop_var.get();
        lane_extent_ = ext ? ext->value : -1;
        Stmt out = IRMutator::visit(op);
        lane_ = outer;
        lane_extent_ = outer_extent;
        return out;
    }

  private:
    const Variable* lane_ = nullptr;
    int64_t lane_extent_ = 0;
};

} // namespace

Stmt lower_warp_mmas(const Stmt& s) { return WarpMmaLowering().mutate(s); }

} // namespace tessera::lower
