// Simplifier rules for constants, casts, comparisons, logic and select.
#include <cmath>

#include "simplify_internal.h"
#include "tessera/ir/op.h"

namespace tessera::ir::simplify_detail {

Expr fold_constants(IRNodeType op, const Expr& a, const Expr& b) {
    DataType t = a.type();
    if (!t.is_scalar() || t != b.type()) return Expr();
    const IntImm* ia = a.as<IntImm>();
    const IntImm* ib = b.as<IntImm>();
    if (ia && ib) {
        int64_t x = ia->value, y = ib->value;
        uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
        bool u = t.code == DataType::Code::UInt; // values are zero-extended: compare unsigned
        bool less = u ? ux < uy : x < y;
        bool greater = u ? uy < ux : y < x;
        auto make_bool = [](bool v) { return IntImm::make(DataType::boolean(), v); };
        if (op == IRNodeType::EQ) return make_bool(x == y);
        if (op == IRNodeType::NE) return make_bool(x != y);
        if (op == IRNodeType::LT) return make_bool(less);
        if (op == IRNodeType::LE) return make_bool(!greater);
        if (op == IRNodeType::GT) return make_bool(greater);
        if (op == IRNodeType::GE) return make_bool(!less);
        if (op == IRNodeType::Min) return less ? a : b;
        if (op == IRNodeType::Max) return greater ? a : b;
        if (op == IRNodeType::And) return t.is_bool() ? make_bool(x && y) : Expr();
        if (op == IRNodeType::Or) return t.is_bool() ? make_bool(x || y) : Expr();
        if (t.is_bool()) return Expr(); // no arithmetic on bools
        if (op == IRNodeType::Add) return IntImm::make(t, (int64_t)(ux + uy));
        if (op == IRNodeType::Sub) return IntImm::make(t, (int64_t)(ux - uy));
        if (op == IRNodeType::Mul) return IntImm::make(t, (int64_t)(ux * uy));
        if (y == 0) return Expr(); // division by zero is left for run time
        if (op == IRNodeType::Div) return IntImm::make(t, u ? (int64_t)(ux / uy) : floor_div(x, y));
        if (op == IRNodeType::Mod) return IntImm::make(t, u ? (int64_t)(ux % uy) : floor_mod(x, y));
        return Expr();
    }
    const FloatImm* fa = a.as<FloatImm>();
    const FloatImm* fb = b.as<FloatImm>();
    if (!fa || !fb || t.bits == 16) return Expr();
    // Double evaluation of one f32 operation is correctly rounded once rounded back to f32.
    double x = fa->value, y = fb->value;
    auto make_bool = [](bool v) { return IntImm::make(DataType::boolean(), v); };
    if (op == IRNodeType::Add) return FloatImm::make(t, x + y);
    if (op == IRNodeType::Sub) return FloatImm::make(t, x - y);
    if (op == IRNodeType::Mul) return FloatImm::make(t, x * y);
    if (op == IRNodeType::Div) return FloatImm::make(t, x / y);
    if (op == IRNodeType::Min) return FloatImm::make(t, std::fmin(x, y));
    if (op == IRNodeType::Max) return FloatImm::make(t, std::fmax(x, y));
    if (op == IRNodeType::EQ) return make_bool(x == y);
    if (op == IRNodeType::NE) return make_bool(x != y);
    if (op == IRNodeType::LT) return make_bool(x < y);
    if (op == IRNodeType::LE) return make_bool(x <= y);
    if (op == IRNodeType::GT) return make_bool(x > y);
    if (op == IRNodeType::GE) return make_bool(x >= y);
    return Expr(); // float Mod (rounding steps) is not folded
}

Expr fold_cast(DataType t, const Expr& v) {
    DataType s = v.type();
    if (!t.is_scalar() || !s.is_scalar()) return Expr();
    if (const IntImm* imm = v.as<IntImm>()) {
        int64_t x = imm->value;
        if (t.is_bool()) return IntImm::make(t, x != 0);
        if (!t.is_float()) return IntImm::make(t, x); // wraps to t's width
        if (t.bits == 16) return Expr();
        bool huge_unsigned = s.code == DataType::Code::UInt && x < 0;
        if (huge_unsigned || x > (int64_t{1} << 53) || x < -(int64_t{1} << 53)) return Expr();
        return FloatImm::make(t, (double)x);
    }
    const FloatImm* f = v.as<FloatImm>();
    if (!f || std::isnan(f->value)) return Expr();
    double d = f->value;
    if (t.is_float()) return t.bits == 16 ? Expr() : FloatImm::make(t, d);
    if (t.is_bool()) return IntImm::make(t, d != 0);
    double r = std::trunc(d);
    double lo = t.is_int() ? -std::ldexp(1.0, t.bits - 1) : 0.0;
    double hi = t.is_int() ? std::ldexp(1.0, t.bits - 1) : std::ldexp(1.0, t.bits);
    if (!(r >= lo && r < hi)) return Expr(); // out of range: the backend's business
    if (t.is_uint() && t.bits == 64) return IntImm::make(t, (int64_t)(uint64_t)r);
    return IntImm::make(t, (int64_t)r);
}

// ---------------------------------------------------------------------------------------------

Expr Simplifier::visit(const Cast* op) {
    Expr v = mutate(op->value);
    if (v.type() == op->type) return v;
    if (Expr f = fold_cast(op->type, v)) return f;
    if (const Broadcast* b = v.as<Broadcast>())
        return Broadcast::make(mutate(Cast::make(op->type.element_of(), b->value)), b->lanes);
    return v.same_as(op->value) ? Expr(op) : Cast::make(op->type, v);
}

int Simplifier::decide(IRNodeType cmp, const Expr& a, const Expr& b) {
    if (a.type().is_float()) return -1;
    Interval x, y;
    if (a.type() == DataType::i64()) {
        // Compare the canonical difference with 0: `i*4 + 3 < 64` is `i*4 - 61 < 0`.
        x = bounds(rebuild(add(linearize(a, true), linearize(b, true), true)));
        y = Interval::single(0);
    } else {
        x = bounds(a);
        y = bounds(b);
    }
    auto lt = [](const Interval& p, const Interval& q) {
        if (p.has_max && q.has_min && p.max < q.min) return 1;
        if (p.has_min && q.has_max && p.min >= q.max) return 0;
        return -1;
    };
    auto le = [](const Interval& p, const Interval& q) {
        if (p.has_max && q.has_min && p.max <= q.min) return 1;
        if (p.has_min && q.has_max && p.min > q.max) return 0;
        return -1;
    };
    auto eq = [&]() {
        if (x.is_single() && y.is_single()) return x.min == y.min ? 1 : 0;
        if ((x.has_max && y.has_min && x.max < y.min) || (y.has_max && x.has_min && y.max < x.min))
            return 0;
        return -1;
    };
    if (cmp == IRNodeType::LT) return lt(x, y);
    if (cmp == IRNodeType::LE) return le(x, y);
    if (cmp == IRNodeType::GT) return lt(y, x);
    if (cmp == IRNodeType::GE) return le(y, x);
    int r = eq();
    if (cmp == IRNodeType::EQ) return r;
    if (cmp == IRNodeType::NE) return r < 0 ? r : 1 - r;
    return -1;
}

template <typename T> Expr Simplifier::comparison(const T* op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr f = fold_constants(T::kNodeType, a, b)) return f;
    const Broadcast* ba = a.as<Broadcast>();
    const Broadcast* bb = b.as<Broadcast>();
    if (ba && bb) return Broadcast::make(mutate(T::make(ba->value, bb->value)), ba->lanes);
    if (!a.type().is_float()) {
        int known = -1;
        if (same(a, b)) {
            IRNodeType k = T::kNodeType;
            known = k == IRNodeType::EQ || k == IRNodeType::LE || k == IRNodeType::GE;
        } else {
            known = decide(T::kNodeType, a, b);
        }
        if (known >= 0) return make_const(op->type, (int64_t)known);
    }
    if (a.same_as(op->a) && b.same_as(op->b)) return Expr(op);
    return T::make(a, b);
}

Expr Simplifier::visit(const EQ* op) { return comparison(op); }
Expr Simplifier::visit(const NE* op) { return comparison(op); }
Expr Simplifier::visit(const LT* op) { return comparison(op); }
Expr Simplifier::visit(const LE* op) { return comparison(op); }
Expr Simplifier::visit(const GT* op) { return comparison(op); }
Expr Simplifier::visit(const GE* op) { return comparison(op); }

Expr Simplifier::visit(const And* op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr f = fold_constants(IRNodeType::And, a, b)) return f;
    if (is_const_int(a, 0) || is_const_int(b, 1)) return a;
    if (is_const_int(b, 0) || is_const_int(a, 1)) return b;
    if (same(a, b)) return a;
    const Broadcast* ba = a.as<Broadcast>();
    const Broadcast* bb = b.as<Broadcast>();
    if (ba && bb) return Broadcast::make(mutate(And::make(ba->value, bb->value)), ba->lanes);
    if (a.same_as(op->a) && b.same_as(op->b)) return Expr(op);
    return And::make(a, b);
}

Expr Simplifier::visit(const Or* op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr f = fold_constants(IRNodeType::Or, a, b)) return f;
    if (is_const_int(a, 1) || is_const_int(b, 0)) return a;
    if (is_const_int(b, 1) || is_const_int(a, 0)) return b;
    if (same(a, b)) return a;
    const Broadcast* ba = a.as<Broadcast>();
    const Broadcast* bb = b.as<Broadcast>();
    if (ba && bb) return Broadcast::make(mutate(Or::make(ba->value, bb->value)), ba->lanes);
    if (a.same_as(op->a) && b.same_as(op->b)) return Expr(op);
    return Or::make(a, b);
}

Expr Simplifier::visit(const Not* op) {
    Expr a = mutate(op->a);
    if (const int64_t* c = as_const_int(a)) return make_const(a.type(), (int64_t)(*c == 0));
    if (const Not* n = a.as<Not>()) return n->a;
    // Negated integer comparisons flip (not for floats: NaN compares false both ways).
    auto is_int = [](const Expr& x) { return !x.type().is_float(); };
    if (const LT* c = a.as<LT>(); c && is_int(c->a)) return LE::make(c->b, c->a);
    if (const LE* c = a.as<LE>(); c && is_int(c->a)) return LT::make(c->b, c->a);
    if (const GT* c = a.as<GT>(); c && is_int(c->a)) return LE::make(c->a, c->b);
    if (const GE* c = a.as<GE>(); c && is_int(c->a)) return LT::make(c->a, c->b);
    if (const EQ* c = a.as<EQ>(); c && is_int(c->a)) return NE::make(c->a, c->b);
    if (const NE* c = a.as<NE>(); c && is_int(c->a)) return EQ::make(c->a, c->b);
    return a.same_as(op->a) ? Expr(op) : Not::make(a);
}

Expr Simplifier::visit(const Select* op) {
    Expr c = mutate(op->condition);
    Expr t = mutate(op->true_value);
    Expr f = mutate(op->false_value);
    if (const int64_t* k = as_const_int(c)) return *k ? t : f;
    if (same(t, f)) return t;
    if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value))
        return Expr(op);
    return Select::make(c, t, f);
}

} // namespace tessera::ir::simplify_detail
