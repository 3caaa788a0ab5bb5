// Constant-interval bounds analysis of integer expressions (bounds_of).
//
// Intervals are computed in 128-bit arithmetic with explicit infinities. A result that leaves
// the expression type's range means the run-time value may wrap: for types narrower than 64
// bits the answer is then the whole type range; for i64 the side becomes unbounded (i64 index
// arithmetic is assumed not to overflow, see simplify.h).
#include "tessera/ir/simplify.h"

#include <algorithm>
#include <optional>

#include "tessera/support/error.h"

namespace tessera::ir {

bool Interval::operator==(const Interval& o) const {
    return has_min == o.has_min && has_max == o.has_max && (!has_min || min == o.min) &&
           (!has_max || max == o.max);
}

namespace {

using i128 = __int128;

/// One end of an interval: a finite value or -inf / +inf.
struct End {
    int inf = 0; ///< -1: -inf, 0: finite, +1: +inf.
    i128 v = 0;
    static End finite(i128 x) { return {0, x}; }
    int sign() const { return inf ? inf : (v > 0) - (v < 0); }
};

bool less(const End& a, const End& b) {
    if (a.inf != b.inf) return a.inf < b.inf;
    return a.inf == 0 && a.v < b.v;
}
End min_end(const End& a, const End& b) { return less(b, a) ? b : a; }
End max_end(const End& a, const End& b) { return less(a, b) ? b : a; }

i128 floor_div(i128 a, i128 b) {
    i128 q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}
i128 floor_mod(i128 a, i128 b) { return a - floor_div(a, b) * b; }

End mul(const End& a, const End& b) {
    if ((!a.inf && a.v == 0) || (!b.inf && b.v == 0)) return End::finite(0);
    if (a.inf || b.inf) return {a.sign() * b.sign(), 0};
    return End::finite(a.v * b.v);
}

/// floor(a / b) for b a nonzero finite value or an infinity (as a limit).
End div(const End& a, const End& b) {
    if (a.inf) return {a.inf * b.sign(), 0};
    if (b.inf) return End::finite((a.v == 0 || (a.v > 0) == (b.inf > 0)) ? 0 : -1);
    return End::finite(floor_div(a.v, b.v));
}

struct Ext {
    End lo, hi;
};

Ext ext(const Interval& i) {
    return {i.has_min ? End::finite(i.min) : End{-1, 0},
            i.has_max ? End::finite(i.max) : End{1, 0}};
}

/// The values an expression of type t can have at all.
Interval type_range(DataType t) {
    if (t.is_bool()) return Interval::range(0, 1);
    if (t.is_float()) return Interval::everything();
    if (t.is_int()) {
        if (t.bits >= 64) return Interval::everything();
        int64_t half = int64_t{1} << (t.bits - 1);
        return Interval::range(-half, half - 1);
    }
    if (t.bits >= 64) return {0, 0, true, false};
    return Interval::range(0, (int64_t{1} << t.bits) - 1);
}

/// Back to an Interval of type t, accounting for wrap-around (see the file comment).
Interval fit(const Ext& e, DataType t) {
    Interval r = type_range(t);
    bool wide_int = t.is_int() && t.bits >= 64;
    i128 lo_limit = r.has_min ? (i128)r.min : (i128)INT64_MIN;
    i128 hi_limit = r.has_max ? (i128)r.max : (i128)INT64_MAX;
    bool lo_ok = !e.lo.inf && e.lo.v >= lo_limit && e.lo.v <= hi_limit;
    bool hi_ok = !e.hi.inf && e.hi.v >= lo_limit && e.hi.v <= hi_limit;
    if (wide_int) {
        Interval out;
        if (lo_ok) out.has_min = true, out.min = (int64_t)e.lo.v;
        if (hi_ok) out.has_max = true, out.max = (int64_t)e.hi.v;
        return out;
    }
    if (!lo_ok || !hi_ok) return r;
    return Interval::range((int64_t)e.lo.v, (int64_t)e.hi.v);
}

Ext hull4(End a, End b, End c, End d) {
    return {min_end(min_end(a, b), min_end(c, d)), max_end(max_end(a, b), max_end(c, d))};
}

class Bounds {
public:
    explicit Bounds(const BoundsMap& m) : outer_(m) {}

    Interval of(const Expr& e) {
        if (!e.defined()) return Interval::everything();
        DataType t = e.type();
        if (t.is_float()) return Interval::everything();
        if (const IntImm* imm = e.as<IntImm>()) {
            if (t.is_uint() && imm->value < 0) return type_range(t); // u64 above INT64_MAX
            return Interval::single(imm->value);
        }
        if (const Variable* v = e.as<Variable>()) {
            auto it = lets_.find(v);
            if (it != lets_.end()) return it->second;
            auto jt = outer_.find(v);
            return jt != outer_.end() ? jt->second : type_range(t);
        }
        if (const Add* op = e.as<Add>()) {
            Ext a = ext(of(op->a)), b = ext(of(op->b));
            End lo = (a.lo.inf || b.lo.inf) ? End{-1, 0} : End::finite(a.lo.v + b.lo.v);
            End hi = (a.hi.inf || b.hi.inf) ? End{1, 0} : End::finite(a.hi.v + b.hi.v);
            return fit({lo, hi}, t);
        }
        if (const Sub* op = e.as<Sub>()) {
            Ext a = ext(of(op->a)), b = ext(of(op->b));
            End lo = (a.lo.inf || b.hi.inf) ? End{-1, 0} : End::finite(a.lo.v - b.hi.v);
            End hi = (a.hi.inf || b.lo.inf) ? End{1, 0} : End::finite(a.hi.v - b.lo.v);
            return fit({lo, hi}, t);
        }
        if (const Mul* op = e.as<Mul>()) {
            Ext a = ext(of(op->a)), b = ext(of(op->b));
            return fit(hull4(mul(a.lo, b.lo), mul(a.lo, b.hi), mul(a.hi, b.lo), mul(a.hi, b.hi)),
                       t);
        }
        if (const Div* op = e.as<Div>()) return fit(divide(of(op->a), of(op->b)), t);
        if (const Mod* op = e.as<Mod>()) return fit(modulo(of(op->a), of(op->b)), t);
        if (const Min* op = e.as<Min>()) {
            Ext a = ext(of(op->a)), b = ext(of(op->b));
            return fit({min_end(a.lo, b.lo), min_end(a.hi, b.hi)}, t);
        }
        if (const Max* op = e.as<Max>()) {
            Ext a = ext(of(op->a)), b = ext(of(op->b));
            return fit({max_end(a.lo, b.lo), max_end(a.hi, b.hi)}, t);
        }
        if (const Select* op = e.as<Select>()) {
            Ext a = ext(of(op->true_value)), b = ext(of(op->false_value));
            return fit({min_end(a.lo, b.lo), max_end(a.hi, b.hi)}, t);
        }
        if (const Cast* op = e.as<Cast>()) return cast(op, t);
        if (const Broadcast* op = e.as<Broadcast>()) return of(op->value);
        if (const Ramp* op = e.as<Ramp>()) {
            Ext base = ext(of(op->base)), stride = ext(of(op->stride));
            End last = End::finite(op->lanes - 1);
            End zero = End::finite(0);
            Ext step = hull4(mul(stride.lo, zero), mul(stride.lo, last), mul(stride.hi, zero),
                             mul(stride.hi, last));
            End lo = (base.lo.inf || step.lo.inf) ? End{-1, 0} : End::finite(base.lo.v + step.lo.v);
            End hi = (base.hi.inf || step.hi.inf) ? End{1, 0} : End::finite(base.hi.v + step.hi.v);
            return fit({lo, hi}, t);
        }
        if (const VectorReduce* op = e.as<VectorReduce>()) {
            Ext v = ext(of(op->value));
            if (op->op != ReduceOp::Sum) return fit(v, t);
            End n = End::finite(op->value.type().lanes / op->lanes);
            return fit({mul(v.lo, n), mul(v.hi, n)}, t);
        }
        if (const Let* op = e.as<Let>()) {
            Interval value = of(op->value);
            auto saved = lets_.find(op->var.get()) != lets_.end()
                             ? std::optional<Interval>(lets_[op->var.get()])
                             : std::nullopt;
            lets_[op->var.get()] = value;
            Interval body = of(op->body);
            if (saved) lets_[op->var.get()] = *saved;
            else lets_.erase(op->var.get());
            return body;
        }
        // Loads, calls, comparisons and tensor nodes: anything the type allows.
        return type_range(t);
    }

private:
    const BoundsMap& outer_;
    BoundsMap lets_;

    static Ext divide(const Interval& ai, const Interval& bi) {
        Ext a = ext(ai), b = ext(bi);
        if (bi.is_single() && bi.min != 0) {
            End c = End::finite(bi.min);
            if (bi.min > 0) return {div(a.lo, c), div(a.hi, c)};
            return {div(a.hi, c), div(a.lo, c)};
        }
        if (bi.gt(0) || bi.lt(0))
            return hull4(div(a.lo, b.lo), div(a.lo, b.hi), div(a.hi, b.lo), div(a.hi, b.hi));
        return {End{-1, 0}, End{1, 0}};
    }

    static Ext modulo(const Interval& a, const Interval& b) {
        if (b.is_single() && b.min != 0) {
            i128 c = b.min;
            if (a.bounded() && floor_div(a.min, c) == floor_div(a.max, c))
                return {End::finite(floor_mod(a.min, c)), End::finite(floor_mod(a.max, c))};
            if (c > 0) {
                bool small = a.ge(0) && a.has_max && a.max < c - 1;
                return {End::finite(0), End::finite(small ? (i128)a.max : c - 1)};
            }
            return {End::finite(c + 1), End::finite(0)};
        }
        if (b.gt(0)) {
            End hi = b.has_max ? End::finite((i128)b.max - 1) : End{1, 0};
            if (a.ge(0) && a.has_max) hi = min_end(hi, End::finite(a.max));
            return {End::finite(0), hi};
        }
        if (b.lt(0)) {
            End lo = b.has_min ? End::finite((i128)b.min + 1) : End{-1, 0};
            if (a.le(0) && a.has_min) lo = max_end(lo, End::finite(a.min));
            return {lo, End::finite(0)};
        }
        return {End{-1, 0}, End{1, 0}};
    }

    Interval cast(const Cast* op, DataType t) {
        DataType from = op->value.type();
        if (from.is_float()) return type_range(t);
        Interval v = of(op->value);
        if (t.is_bool()) {
            if (v.is_single()) return Interval::single(v.min != 0);
            if (!v.contains(0)) return Interval::single(1);
            return Interval::range(0, 1);
        }
        return fit(ext(v), t);
    }
};

} // namespace

Interval bounds_of(const Expr& e, const BoundsMap& bounds) { return Bounds(bounds).of(e); }

} // namespace tessera::ir
