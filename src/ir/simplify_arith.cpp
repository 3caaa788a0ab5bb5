// Simplifier rules for arithmetic: + - * through the linear form, floor div/mod by constants
// under known bounds, min/max, and the vector nodes.
#include <numeric>

#include "simplify_internal.h"
#include "tessera/ir/op.h"

namespace tessera::ir::simplify_detail {

namespace {

/// Integer (not bool, not float) element type.
bool is_int(DataType t) { return !t.is_float() && !t.is_bool(); }

} // namespace

Expr Simplifier::ramp(Expr base, Expr stride, int lanes) {
    base = mutate(base);
    stride = mutate(stride);
    if (is_const_int(stride, 0)) return Broadcast::make(base, lanes);
    return Ramp::make(base, stride, lanes);
}

Expr Simplifier::visit(const Add* op) {
    if (is_linear_type(op->type)) return linear_visit(Expr(op));
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr f = fold_constants(IRNodeType::Add, a, b)) return f;
    const Broadcast* ba = a.as<Broadcast>();
    const Broadcast* bb = b.as<Broadcast>();
    if (ba && bb) return Broadcast::make(mutate(Add::make(ba->value, bb->value)), ba->lanes);
    if (is_int(op->type)) {
        if (is_const_int(b, 0)) return a;
        if (is_const_int(a, 0)) return b;
        const Ramp* ra = a.as<Ramp>();
        const Ramp* rb = b.as<Ramp>();
        if (ra && rb)
            return ramp(Add::make(ra->base, rb->base), Add::make(ra->stride, rb->stride),
                             ra->lanes);
        if (ra && bb) return ramp(Add::make(ra->base, bb->value), ra->stride, ra->lanes);
        if (ba && rb) return ramp(Add::make(ba->value, rb->base), rb->stride, rb->lanes);
    }
    if (a.same_as(op->a) && b.same_as(op->b)) return Expr(op);
    return Add::make(a, b);
}

Expr Simplifier::visit(const Sub* op) {
    if (is_linear_type(op->type)) return linear_visit(Expr(op));
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr f = fold_constants(IRNodeType::Sub, a, b)) return f;
    const Broadcast* ba = a.as<Broadcast>();
    const Broadcast* bb = b.as<Broadcast>();
    if (ba && bb) return Broadcast::make(mutate(Sub::make(ba->value, bb->value)), ba->lanes);
    if (is_int(op->type)) {
        if (is_const_int(b, 0)) return a;
        if (same(a, b)) return make_zero(op->type);
        const Ramp* ra = a.as<Ramp>();
        const Ramp* rb = b.as<Ramp>();
        if (ra && rb)
            return ramp(Sub::make(ra->base, rb->base), Sub::make(ra->stride, rb->stride),
                             ra->lanes);
        if (ra && bb) return ramp(Sub::make(ra->base, bb->value), ra->stride, ra->lanes);
        if (ba && rb)
            return ramp(Sub::make(ba->value, rb->base),
                             Sub::make(make_zero(rb->stride.type()), rb->stride), rb->lanes);
    }
    if (a.same_as(op->a) && b.same_as(op->b)) return Expr(op);
    return Sub::make(a, b);
}

Expr Simplifier::visit(const Mul* op) {
    if (is_linear_type(op->type)) return linear_visit(Expr(op));
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr f = fold_constants(IRNodeType::Mul, a, b)) return f;
    const Broadcast* ba = a.as<Broadcast>();
    const Broadcast* bb = b.as<Broadcast>();
    if (ba && bb) return Broadcast::make(mutate(Mul::make(ba->value, bb->value)), ba->lanes);
    if (is_int(op->type)) {
        if (is_const_int(a, 0) || is_const_int(b, 0)) return make_zero(op->type);
        if (is_const_int(b, 1)) return a;
        if (is_const_int(a, 1)) return b;
        const Ramp* ra = a.as<Ramp>();
        const Ramp* rb = b.as<Ramp>();
        if (ra && bb)
            return ramp(Mul::make(ra->base, bb->value), Mul::make(ra->stride, bb->value),
                             ra->lanes);
        if (ba && rb)
            return ramp(Mul::make(rb->base, ba->value), Mul::make(rb->stride, ba->value),
                             rb->lanes);
    }
    if (a.same_as(op->a) && b.same_as(op->b)) return Expr(op);
    return Mul::make(a, b);
}

// ---------------------------------------------------------------------------------------------
// Floor division and modulo. Every rule below is exact for floor semantics: with a = c*Q + R
// (Q, R integer expressions), a / c = Q + R / c and a % c = R % c.

Expr Simplifier::div_by_const(const Expr& a, int64_t c) {
    DataType t = a.type();
    if (const Div* inner = a.as<Div>()) {
        const int64_t* c1 = as_const_int(inner->b);
        if (c1 && *c1 > 0 && c > 0 && *c1 <= INT64_MAX / c) return div_by_const(inner->a, *c1 * c);
    }
    LinearForm whole = linearize(a, true);
    LinearForm q{t, {}, 0}, r{t, {}, whole.constant};
    for (const Term& term : whole.terms) {
        if (c == -1) q.terms.push_back({term.atoms, wrap(t, 0 - (uint64_t)term.coef)});
        else if (term.coef % c == 0) q.terms.push_back({term.atoms, term.coef / c});
        else r.terms.push_back(term);
    }
    Expr rest = rebuild(r);
    Expr divisor = IntImm::make(t, c);
    Interval rq = bounds(Div::make(rest, divisor));
    if (rq.is_single()) {
        q.constant = rq.min;
        return rebuild(q);
    }
    // The remainder part may simplify further on its own (`((y - x)/12)/4`); it has fewer
    // terms than a whenever it differs, so this recursion ends.
    Expr part = same(rest, a) ? Div::make(rest, divisor) : div_by_const(rest, c);
    if (q.terms.empty()) return part;
    return rebuild(add(q, linearize(part, true)));
}

Expr Simplifier::mod_by_const(const Expr& a, int64_t c) {
    DataType t = a.type();
    if (c == 1 || c == -1) return make_zero(t);
    if (const Mod* inner = a.as<Mod>()) {
        const int64_t* c1 = as_const_int(inner->b);
        if (c1 && *c1 > 0 && c > 0 && *c1 % c == 0) return mod_by_const(inner->a, c);
    }
    LinearForm whole = linearize(a, true);
    // Coefficients and the constant reduced toward zero, which keeps `(i - 1) % 16` readable.
    LinearForm r{t, {}, whole.constant % c};
    for (const Term& term : whole.terms)
        if (term.coef % c != 0) r.terms.push_back({term.atoms, term.coef % c});
    Expr rest = rebuild(r);
    Interval ri = bounds(rest);
    if (ri.bounded() && floor_div(ri.min, c) == floor_div(ri.max, c)) {
        // All values lie in one period: subtract its start (wrapping, like the ring it is).
        r.constant = wrap(t, (uint64_t)r.constant - (uint64_t)floor_div(ri.min, c) * (uint64_t)c);
        return rebuild(r);
    }
    if (!same(rest, a)) return mod_by_const(rest, c); // reduced already: one more step at most
    return Mod::make(rest, IntImm::make(t, c));
}

int64_t Simplifier::mod_max(const Expr& base, const Expr& rem, int64_t c) {
    int64_t best = c - 1;
    const Interval r = bounds(rem);
    if (r.has_max)
        best = std::min(best, r.max);
    const LinearForm f = linearize(base, true);
    int64_t g = c;
    for (const Term& term : f.terms)
        g = std::gcd(g, term.coef);
    if (g > 1)
        best = std::min(best, c - g + floor_mod(f.constant, g));
    return best;
}

namespace {
/// Common shape of the vector rules: ramp(b, s, n) op x(c) for i64 lanes and constant s, c.
struct RampByConst {
    const Ramp* ramp = nullptr;
    int64_t stride = 0, c = 0;
    static RampByConst match(const Expr& a, const Expr& b) {
        RampByConst m;
        const Ramp* r = a.as<Ramp>();
        const int64_t* s = r ? as_const_int(r->stride) : nullptr;
        const int64_t* c = b.as<Broadcast>() ? as_const_int(b) : nullptr;
        if (r && s && c && *c > 0 && r->base.type() == DataType::i64()) m = {r, *s, *c};
        return m;
    }
};
} // namespace

Expr Simplifier::visit(const Div* op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr f = fold_constants(IRNodeType::Div, a, b)) return f;
    const Broadcast* ba = a.as<Broadcast>();
    const Broadcast* bb = b.as<Broadcast>();
    if (ba && bb) return Broadcast::make(mutate(Div::make(ba->value, bb->value)), ba->lanes);
    DataType t = op->type;
    if (is_int(t)) {
        if (is_const_int(b, 1)) return a;
        const int64_t* c = as_const_int(b);
        if (t == DataType::i64() && c && *c != 0) {
            Expr r = div_by_const(a, *c);
            return same(r, Expr(op)) ? Expr(op) : r;
        }
        if (t.is_scalar()) {
            Interval whole = bounds(Div::make(a, b));
            if (whole.is_single()) return IntImm::make(t, whole.min);
        }
        if (RampByConst m = RampByConst::match(a, b); m.ramp) {
            Expr divisor = IntImm::make(DataType::i64(), m.c);
            int n = m.ramp->lanes;
            if (m.stride % m.c == 0)
                return ramp(Div::make(m.ramp->base, divisor),
                                 IntImm::make(DataType::i64(), m.stride / m.c), n);
            const Expr rem = mutate(Mod::make(m.ramp->base, divisor));
            if (m.stride >= 0 &&
                (__int128)mod_max(m.ramp->base, rem, m.c) + (__int128)m.stride * (n - 1) < m.c)
                return Broadcast::make(mutate(Div::make(m.ramp->base, divisor)), n);
        }
    }
    if (a.same_as(op->a) && b.same_as(op->b)) return Expr(op);
    return Div::make(a, b);
}

Expr Simplifier::visit(const Mod* op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr f = fold_constants(IRNodeType::Mod, a, b)) return f;
    const Broadcast* ba = a.as<Broadcast>();
    const Broadcast* bb = b.as<Broadcast>();
    if (ba && bb) return Broadcast::make(mutate(Mod::make(ba->value, bb->value)), ba->lanes);
    DataType t = op->type;
    if (is_int(t)) {
        if (is_const_int(b, 1)) return make_zero(t);
        const int64_t* c = as_const_int(b);
        if (t == DataType::i64() && c && *c != 0) {
            Expr r = mod_by_const(a, *c);
            return same(r, Expr(op)) ? Expr(op) : r;
        }
        Interval ia = bounds(a), ib = bounds(b);
        if (ia.ge(0) && ib.gt(0) && ia.has_max && ia.max < ib.min) return a;
        if (t.is_scalar()) {
            Interval whole = bounds(Mod::make(a, b));
            if (whole.is_single()) return IntImm::make(t, whole.min);
        }
        if (RampByConst m = RampByConst::match(a, b); m.ramp) {
            Expr divisor = IntImm::make(DataType::i64(), m.c);
            int n = m.ramp->lanes;
            Expr rem = mutate(Mod::make(m.ramp->base, divisor));
            if (m.stride % m.c == 0) return Broadcast::make(rem, n);
            if (m.stride >= 0 &&
                (__int128)mod_max(m.ramp->base, rem, m.c) + (__int128)m.stride * (n - 1) < m.c)
                return ramp(rem, m.ramp->stride, n);
        }
    }
    if (a.same_as(op->a) && b.same_as(op->b)) return Expr(op);
    return Mod::make(a, b);
}

// ---------------------------------------------------------------------------------------------

template <typename T> Expr Simplifier::min_max(const T* op) {
    constexpr bool is_min = std::is_same_v<T, Min>;
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr f = fold_constants(T::kNodeType, a, b)) return f;
    const Broadcast* ba = a.as<Broadcast>();
    const Broadcast* bb = b.as<Broadcast>();
    if (ba && bb) return Broadcast::make(mutate(T::make(ba->value, bb->value)), ba->lanes);
    if (same(a, b)) return a;
    DataType t = op->type;
    if (!t.is_float()) {
        Interval ia = bounds(a), ib = bounds(b);
        bool a_le_b = ia.has_max && ib.has_min && ia.max <= ib.min;
        bool b_le_a = ib.has_max && ia.has_min && ib.max <= ia.min;
        if (t == DataType::i64() && !a_le_b && !b_le_a) {
            // The canonical difference knows more: min(x + 1, x) is x.
            Interval d = bounds(rebuild(add(linearize(a, true), linearize(b, true), true)));
            a_le_b = d.le(0);
            b_le_a = d.ge(0);
        }
        if (a_le_b) return is_min ? a : b;
        if (b_le_a) return is_min ? b : a;
        if (as_const_int(a) && !as_const_int(b)) std::swap(a, b); // constant on the right
        const T* inner = a.as<T>();
        if (inner && t.is_scalar() && as_const_int(inner->b) && as_const_int(b))
            return T::make(inner->a, fold_constants(T::kNodeType, inner->b, b));
    }
    if (a.same_as(op->a) && b.same_as(op->b)) return Expr(op);
    return T::make(a, b);
}

Expr Simplifier::visit(const Min* op) { return min_max(op); }
Expr Simplifier::visit(const Max* op) { return min_max(op); }

Expr Simplifier::visit(const Ramp* op) {
    Expr r = ramp(op->base, op->stride, op->lanes);
    const Ramp* ramp = r.as<Ramp>();
    if (ramp && ramp->base.same_as(op->base) && ramp->stride.same_as(op->stride)) return Expr(op);
    return r;
}

Expr Simplifier::visit(const Broadcast* op) {
    Expr v = mutate(op->value);
    return v.same_as(op->value) ? Expr(op) : Broadcast::make(v, op->lanes);
}

Expr Simplifier::visit(const VectorReduce* op) {
    Expr v = mutate(op->value);
    if (v.type().lanes == op->lanes) return v; // groups of one lane
    if (const Broadcast* b = v.as<Broadcast>(); b && op->op != ReduceOp::Sum)
        return op->lanes == 1 ? b->value : Broadcast::make(b->value, op->lanes);
    return v.same_as(op->value) ? Expr(op) : VectorReduce::make(op->op, v, op->lanes);
}

} // namespace tessera::ir::simplify_detail
