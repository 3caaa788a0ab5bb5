// simplify(), can_prove(), and the simplifier's rules for bindings and statements.
#include "tessera/ir/simplify.h"

#include <memory>

#include "simplify_internal.h"
#include "tessera/ir/op.h"

namespace tessera::ir {

using simplify_detail::is_no_op;
using simplify_detail::no_op;
using simplify_detail::ScopedBound;
using simplify_detail::Simplifier;

namespace {

/// Whether e or s mentions variable v.
struct UsesVar : IRVisitor {
    const Variable* v;
    bool found = false;
    explicit UsesVar(const Variable* var) : v(var) {}
    using IRVisitor::visit;
    void visit(const Variable* op) override { found = found || op == v; }
};
template <typename N> bool uses(const N& n, const Variable* v) {
    UsesVar u(v);
    u.visit(n);
    return u.found;
}

/// Whether e contains a side effect (Call(Prefetch), Call(TileMatmul*)) or a cross-thread
/// reduction (its barriers must run exactly where the lowering put them: never dropped or
/// duplicated).
bool has_side_effect(const Expr& e) {
    return contains_call(e, [](CallOp op) {
        return op == CallOp::Prefetch || is_tile_matmul(op) || is_gpu_block_reduce(op) ||
               op == CallOp::WarpMma;
    });
}

/// Values a Let may be substituted with: nothing is recomputed or duplicated in cost.
bool is_trivial(const Expr& e) {
    return e.as<IntImm>() || e.as<FloatImm>() || e.as<Variable>();
}

/// Interval addition with infinities and overflow to unbounded.
Interval loop_range(const Interval& min, const Interval& extent) {
    Interval r;
    r.has_min = min.has_min;
    r.min = min.min;
    if (min.has_max && extent.has_max) {
        __int128 hi = (__int128)min.max + extent.max - 1;
        if (hi <= INT64_MAX && hi >= INT64_MIN) r.has_max = true, r.max = (int64_t)hi;
    }
    if (r.has_min && r.has_max && r.max < r.min) r.max = r.min; // empty loop: any range is fine
    return r;
}

} // namespace

namespace simplify_detail {

Expr Simplifier::visit(const Variable* op) {
    auto it = subst_.find(op);
    return it != subst_.end() ? it->second : Expr(op);
}

Expr Simplifier::visit(const Let* op) {
    Expr value = mutate(op->value);
    const Variable* v = op->var.get();
    if (is_trivial(value)) {
        subst_[v] = value;
        Expr body = mutate(op->body);
        subst_.erase(v);
        return body;
    }
    std::optional<ScopedBound> bound;
    if (!value.type().is_float()) bound.emplace(bounds_, v, bounds(value));
    Expr body = mutate(op->body);
    if (!uses(body, v)) return body;
    if (value.same_as(op->value) && body.same_as(op->body)) return Expr(op);
    return Let::make(op->var, value, body);
}

Expr Simplifier::visit(const Reduce* op) {
    std::vector<std::unique_ptr<ScopedBound>> scopes;
    for (const IterVar& iv : op->axes)
        scopes.push_back(std::make_unique<ScopedBound>(bounds_, iv.var.get(),
                                                       Interval::range(0, iv.extent - 1)));
    Expr source = mutate(op->source);
    return source.same_as(op->source) ? Expr(op) : Reduce::make(op->op, source, op->axes);
}

Stmt Simplifier::visit(const LetStmt* op) {
    Expr value = mutate(op->value);
    const Variable* v = op->var.get();
    if (is_trivial(value)) {
        subst_[v] = value;
        Stmt body = mutate(op->body);
        subst_.erase(v);
        return body;
    }
    std::optional<ScopedBound> bound;
    if (!value.type().is_float()) bound.emplace(bounds_, v, bounds(value));
    Stmt body = mutate(op->body);
    if (!uses(body, v)) return body;
    if (value.same_as(op->value) && body.same_as(op->body)) return Stmt(op);
    return LetStmt::make(op->var, value, body);
}

Stmt Simplifier::visit(const For* op) {
    Expr min = mutate(op->min), extent = mutate(op->extent);
    Interval ext = bounds(extent);
    if (ext.le(0)) return no_op();
    const Variable* v = op->loop_var.get();
    if (ext.is_single() && ext.min == 1) {
        subst_[v] = min;
        Stmt body = mutate(op->body);
        subst_.erase(v);
        return body;
    }
    Stmt body;
    {
        ScopedBound bound(bounds_, v, loop_range(bounds(min), ext));
        body = mutate(op->body);
    }
    if (is_no_op(body)) return body;
    if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body))
        return Stmt(op);
    return For::make(op->loop_var, min, extent, op->kind, body);
}

void Simplifier::tighten(const Variable* v, Interval with, Undo& undo) {
    auto it = bounds_.find(v);
    Interval cur = it != bounds_.end() ? it->second : bounds_of(Var(v), {});
    Interval next = cur;
    if (with.has_min && (!next.has_min || with.min > next.min))
        next.has_min = true, next.min = with.min;
    if (with.has_max && (!next.has_max || with.max < next.max))
        next.has_max = true, next.max = with.max;
    if (next.bounded() && next.min > next.max) return; // a dead branch: leave it alone
    undo.push_back({v, it != bounds_.end() ? std::optional<Interval>(cur) : std::nullopt});
    bounds_[v] = next;
}

void Simplifier::learn(const Expr& cond, bool truth, Undo& undo) {
    if (const Not* n = cond.as<Not>()) return learn(n->a, !truth, undo);
    if (const And* a = cond.as<And>(); a && truth) {
        learn(a->a, true, undo);
        return learn(a->b, true, undo);
    }
    if (const Or* o = cond.as<Or>(); o && !truth) {
        learn(o->a, false, undo);
        return learn(o->b, false, undo);
    }
    // v < e, v <= e, e < v, e <= v (GT/GE are the same with sides swapped) for an i64 variable.
    Expr a, b;
    bool strict = false;
    if (const LT* c = cond.as<LT>()) a = c->a, b = c->b, strict = true;
    else if (const LE* c = cond.as<LE>()) a = c->a, b = c->b;
    else if (const GT* c = cond.as<GT>()) a = c->b, b = c->a, strict = true;
    else if (const GE* c = cond.as<GE>()) a = c->b, b = c->a;
    else return;
    if (a.type() != DataType::i64()) return;
    if (!truth) { // !(a < b) is b <= a; !(a <= b) is b < a
        std::swap(a, b);
        strict = !strict;
    }
    // Now a < b (strict) or a <= b holds.
    int64_t gap = strict ? 1 : 0;
    if (const Variable* v = a.as<Variable>()) {
        Interval ib = bounds(b);
        if (ib.has_max && ib.max > INT64_MIN + 1) tighten(v, {0, ib.max - gap, false, true}, undo);
    }
    if (const Variable* v = b.as<Variable>()) {
        Interval ia = bounds(a);
        if (ia.has_min && ia.min < INT64_MAX - 1) tighten(v, {ia.min + gap, 0, true, false}, undo);
    }
}

Stmt Simplifier::visit(const IfThenElse* op) {
    Expr cond = mutate(op->condition);
    if (const int64_t* c = as_const_int(cond)) {
        if (*c) return mutate(op->then_case);
        return op->else_case.defined() ? mutate(op->else_case) : no_op();
    }
    auto branch = [&](const Stmt& s, bool truth) {
        if (!s.defined()) return s;
        Undo undo;
        learn(cond, truth, undo);
        Stmt r = mutate(s);
        for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
            if (it->second) bounds_[it->first] = *it->second;
            else bounds_.erase(it->first);
        }
        return r;
    };
    Stmt then_case = branch(op->then_case, true);
    Stmt else_case = branch(op->else_case, false);
    if (else_case.defined() && is_no_op(else_case)) else_case = Stmt();
    if (is_no_op(then_case)) {
        if (!else_case.defined()) return then_case;
        return IfThenElse::make(mutate(Not::make(cond)), else_case);
    }
    if (cond.same_as(op->condition) && then_case.same_as(op->then_case) &&
        else_case.same_as(op->else_case))
        return Stmt(op);
    return IfThenElse::make(cond, then_case, else_case);
}

Stmt Simplifier::visit(const Seq* op) {
    std::vector<Stmt> kept;
    bool changed = false;
    for (const Stmt& s : op->stmts) {
        Stmt r = mutate(s);
        changed = changed || !r.same_as(s);
        if (is_no_op(r)) changed = true;
        else kept.push_back(r);
    }
    if (!changed) return Stmt(op);
    if (kept.empty()) return no_op();
    return Seq::make(std::move(kept));
}

Stmt Simplifier::visit(const Allocate* op) {
    Stmt body = mutate(op->body);
    if (is_no_op(body)) return body;
    return body.same_as(op->body) ? Stmt(op) : Allocate::make(op->buffer, op->scope, body);
}

Stmt Simplifier::visit(const Evaluate* op) {
    Expr v = mutate(op->value);
    if (!has_side_effect(v)) return v.as<IntImm>() && v.same_as(op->value) ? Stmt(op) : no_op();
    return v.same_as(op->value) ? Stmt(op) : Evaluate::make(v);
}

} // namespace simplify_detail

// ---------------------------------------------------------------------------------------------

Expr simplify(const Expr& e, const BoundsMap& bounds) {
    if (!e.defined()) return e;
    Simplifier s(bounds);
    s.number(e);
    return s.mutate(e);
}

Stmt simplify(const Stmt& st, const BoundsMap& bounds) {
    if (!st.defined()) return st;
    Simplifier s(bounds);
    s.number(st);
    return s.mutate(st);
}

LoweredFunc simplify(const LoweredFunc& f) {
    LoweredFunc r = f;
    r.body = simplify(f.body);
    return r;
}

bool can_prove(const Expr& cond, const BoundsMap& bounds) {
    if (!cond.defined() || !cond.type().is_bool()) return false;
    return is_const_int(simplify(cond, bounds), 1);
}

} // namespace tessera::ir
