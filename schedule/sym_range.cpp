// Symbolic-base ranges of index expressions (bounds inference for compute_at).
#include "internal/sym_range.h"

#include <algorithm>

#include "tessera/ir/equality.h"
#include "tessera/ir/functor.h"
#include "tessera/ir/op.h"
#include "tessera/ir/simplify.h"

namespace tessera::sched {

using namespace ir;

namespace {
bool uses_varying(const Expr& e, const VaryingMap& varying) {
    struct Finder : IRVisitor {
        using IRVisitor::visit;
        const VaryingMap& m;
        bool found = false;
        explicit Finder(const VaryingMap& m) : m(m) {}
        void visit(const Variable* op) override {
            if (m.count(op))
                found = true;
        }
    } f(varying);
    f.visit(e);
    return f.found;
}

SymRange fail() {
    SymRange r;
    r.ok = false;
    return r;
}

int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

Expr add_base(const Expr& a, const Expr& b) {
    if (!a.defined())
        return b;
    if (!b.defined())
        return a;
    return a + b;
}

/// True when the (defined) base is a known multiple of k.
bool base_multiple_of(const Expr& base, int64_t k) {
    return is_const_int(simplify(base % Expr(k)), 0);
}

/// Range arithmetic limits: offsets stay far from overflow.
constexpr int64_t kLimit = int64_t{1} << 40;
bool in_limits(const SymRange& r) { return r.lo > -kLimit && r.hi < kLimit; }

SymRange eval(const Expr& e, const VaryingMap& varying) {
    if (!uses_varying(e, varying)) {
        if (const int64_t* c = as_const_int(e))
            return {Expr(), *c, *c, true};
        return {e, 0, 0, true};
    }
    if (const auto* v = e.as<Variable>()) {
        const auto& r = varying.at(v);
        return {Expr(), r.first, r.second, true};
    }
    if (const auto* op = e.as<Add>()) {
        SymRange a = eval(op->a, varying), b = eval(op->b, varying);
        if (!a.ok || !b.ok)
            return fail();
        SymRange r{add_base(a.base, b.base), a.lo + b.lo, a.hi + b.hi, true};
        return in_limits(r) ? r : fail();
    }
    if (const auto* op = e.as<Sub>()) {
        SymRange a = eval(op->a, varying), b = eval(op->b, varying);
        if (!a.ok || !b.ok)
            return fail();
        Expr base = a.base;
        if (b.base.defined())
            base = base.defined() ? base - b.base : Expr(0) - b.base;
        SymRange r{base, a.lo - b.hi, a.hi - b.lo, true};
        return in_limits(r) ? r : fail();
    }
    if (const auto* op = e.as<Mul>()) {
        const int64_t* ka = as_const_int(op->a);
        const int64_t* kb = as_const_int(op->b);
        if (!ka && !kb)
            return fail();
        const int64_t k = kb ? *kb : *ka;
        SymRange x = eval(kb ? op->a : op->b, varying);
        if (!x.ok || k > kLimit || k < -kLimit)
            return fail();
        Expr base = x.base.defined() ? x.base * Expr(k) : Expr();
        int64_t a = 0, b = 0;
        if (__builtin_mul_overflow(x.lo, k, &a) || __builtin_mul_overflow(x.hi, k, &b))
            return fail();
        SymRange r = k >= 0 ? SymRange{base, a, b, true} : SymRange{base, b, a, true};
        return in_limits(r) ? r : fail();
    }
    if (const auto* op = e.as<Div>()) {
        const int64_t* k = as_const_int(op->b);
        if (!k || *k <= 0)
            return fail();
        SymRange x = eval(op->a, varying);
        if (!x.ok)
            return fail();
        if (!x.base.defined())
            return {Expr(), floor_div(x.lo, *k), floor_div(x.hi, *k), true};
        if (base_multiple_of(x.base, *k))
            return {simplify(x.base / Expr(*k)), floor_div(x.lo, *k), floor_div(x.hi, *k), true};
        // floor((B + hi) / k) - floor((B + lo) / k) <= floor((hi - lo) / k) + 1.
        return {simplify((x.base + Expr(x.lo)) / Expr(*k)), 0, floor_div(x.hi - x.lo, *k) + 1,
                true};
    }
    if (const auto* op = e.as<Mod>()) {
        const int64_t* k = as_const_int(op->b);
        if (!k || *k <= 0)
            return fail();
        SymRange x = eval(op->a, varying);
        if (!x.ok)
            return fail();
        if (!x.base.defined() || base_multiple_of(x.base, *k)) {
            if (floor_div(x.lo, *k) == floor_div(x.hi, *k))
                return {Expr(), floor_mod(x.lo, *k), floor_mod(x.hi, *k), true};
        }
        return {Expr(), 0, *k - 1, true};
    }
    if (e.as<Min>() || e.as<Max>()) {
        const bool is_min = e.as<Min>() != nullptr;
        const Expr& ea = is_min ? e.as<Min>()->a : e.as<Max>()->a;
        const Expr& eb = is_min ? e.as<Min>()->b : e.as<Max>()->b;
        SymRange a = eval(ea, varying), b = eval(eb, varying);
        if (!a.ok || !b.ok)
            return fail();
        const bool same =
            (!a.base.defined() && !b.base.defined()) ||
            (a.base.defined() && b.base.defined() && structural_equal(a.base, b.base));
        if (!same) {
            // min(x, c) <= x and max(x, c) >= x: one side is a sound bound only with the
            // other's, so give up unless one side is fully constant and the other has no base.
            return fail();
        }
        return is_min ? SymRange{a.base, std::min(a.lo, b.lo), std::min(a.hi, b.hi), true}
                      : SymRange{a.base, std::max(a.lo, b.lo), std::max(a.hi, b.hi), true};
    }
    return fail();
}
} // namespace

SymRange sym_range(const Expr& e, const VaryingMap& varying) { return eval(e, varying); }

SymRange sym_union(const SymRange& a, const SymRange& b) {
    if (!a.ok || !b.ok)
        return fail();
    int64_t shift = 0;
    if (a.base.defined() || b.base.defined()) {
        Expr diff =
            simplify((b.base.defined() ? b.base : Expr(0)) - (a.base.defined() ? a.base : Expr(0)));
        const int64_t* c = as_const_int(diff);
        if (!c)
            return fail();
        shift = *c;
    }
    SymRange r{a.base, std::min(a.lo, b.lo + shift), std::max(a.hi, b.hi + shift), true};
    return in_limits(r) ? r : fail();
}

} // namespace tessera::sched
