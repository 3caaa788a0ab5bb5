// Randomized check of the simplifier: random integer expressions over bounded variables must
// evaluate the same before and after simplify (guards floor div/mod, bounds and wrap rules).
#include <gtest/gtest.h>

#include <unordered_map>

#include "tessera/ir/op.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/simplify.h"
#include "tessera/support/error.h"
#include "tessera/support/rng.h"

using namespace tessera;
using namespace tessera::ir;

namespace {

/// A tiny evaluator of scalar integer expressions, wrapping to each node's width.
class Eval {
public:
    std::unordered_map<const Variable*, int64_t> env;

    int64_t operator()(const Expr& e) {
        DataType t = e.type();
        if (const IntImm* op = e.as<IntImm>()) return op->value;
        if (const Variable* op = e.as<Variable>()) {
            auto it = env.find(op);
            if (it == env.end()) throw InternalError("free variable " + op->name);
            return it->second;
        }
        auto u = [this](const Expr& x) { return (uint64_t)(*this)(x); };
        if (const Add* op = e.as<Add>()) return wrap(t, u(op->a) + u(op->b));
        if (const Sub* op = e.as<Sub>()) return wrap(t, u(op->a) - u(op->b));
        if (const Mul* op = e.as<Mul>()) return wrap(t, u(op->a) * u(op->b));
        if (const Div* op = e.as<Div>()) {
            int64_t a = (*this)(op->a), b = (*this)(op->b);
            if (b == 0) throw InternalError("division by zero");
            int64_t q = a / b;
            if (a % b != 0 && ((a < 0) != (b < 0))) --q;
            return wrap(t, (uint64_t)q);
        }
        if (const Mod* op = e.as<Mod>()) {
            int64_t a = (*this)(op->a), b = (*this)(op->b);
            if (b == 0) throw InternalError("modulo by zero");
            int64_t r = a % b;
            if (r != 0 && ((r < 0) != (b < 0))) r += b;
            return r;
        }
        if (const Min* op = e.as<Min>()) return std::min((*this)(op->a), (*this)(op->b));
        if (const Max* op = e.as<Max>()) return std::max((*this)(op->a), (*this)(op->b));
        if (const EQ* op = e.as<EQ>()) return (*this)(op->a) == (*this)(op->b);
        if (const NE* op = e.as<NE>()) return (*this)(op->a) != (*this)(op->b);
        if (const LT* op = e.as<LT>()) return (*this)(op->a) < (*this)(op->b);
        if (const LE* op = e.as<LE>()) return (*this)(op->a) <= (*this)(op->b);
        if (const GT* op = e.as<GT>()) return (*this)(op->a) > (*this)(op->b);
        if (const GE* op = e.as<GE>()) return (*this)(op->a) >= (*this)(op->b);
        if (const And* op = e.as<And>()) return (*this)(op->a) && (*this)(op->b);
        if (const Or* op = e.as<Or>()) return (*this)(op->a) || (*this)(op->b);
        if (const Not* op = e.as<Not>()) return !(*this)(op->a);
        if (const Select* op = e.as<Select>()) {
            int64_t c = (*this)(op->condition);
            int64_t x = (*this)(op->true_value), y = (*this)(op->false_value);
            return c ? x : y;
        }
        if (const Let* op = e.as<Let>()) {
            env[op->var.get()] = (*this)(op->value);
            int64_t r = (*this)(op->body);
            env.erase(op->var.get());
            return r;
        }
        throw InternalError("cannot evaluate " + to_string(e));
    }

private:
    static int64_t wrap(DataType t, uint64_t v) {
        if (t.bits >= 64) return (int64_t)v;
        int sh = 64 - t.bits;
        return (int64_t)(v << sh) >> sh;
    }
};

/// Random expression generator over given variables.
class Gen {
public:
    Gen(Rng& rng, DataType t, std::vector<Var> vars, int64_t max_const)
        : rng_(rng), t_(t), vars_(std::move(vars)), max_const_(max_const) {}

    Expr expr(int depth) {
        if (depth == 0 || rng_.uniform_int(0, 4) == 0) return leaf();
        switch (rng_.uniform_int(0, 10)) {
        case 0: return Add::make(expr(depth - 1), expr(depth - 1));
        case 1: return Sub::make(expr(depth - 1), expr(depth - 1));
        case 2: return Mul::make(expr(depth - 1), small_or_any(depth - 1));
        case 3: return Div::make(expr(depth - 1), divisor());
        case 4: return Mod::make(expr(depth - 1), divisor());
        case 5: return Min::make(expr(depth - 1), expr(depth - 1));
        case 6: return Max::make(expr(depth - 1), expr(depth - 1));
        case 7: return Select::make(cond(depth - 1), expr(depth - 1), expr(depth - 1));
        case 8: {
            if (t_.bits != 64) return Add::make(expr(depth - 1), leaf());
            Var v("t");
            Expr value = expr(depth - 1);
            vars_.push_back(v);
            Expr body = expr(depth - 1);
            vars_.pop_back();
            return Let::make(v, value, body);
        }
        default: return Add::make(Mul::make(expr(depth - 1), constant(8)), expr(depth - 1));
        }
    }

private:
    Rng& rng_;
    DataType t_;
    std::vector<Var> vars_;
    int64_t max_const_;

    Expr constant(int64_t m) { return IntImm::make(t_, rng_.uniform_int(-m, m)); }
    Expr leaf() {
        if (rng_.uniform_int(0, 9) < 6) return vars_[rng_.uniform_int(0, vars_.size() - 1)];
        return constant(rng_.uniform_int(0, 3) == 0 ? max_const_ : 9);
    }
    Expr small_or_any(int depth) { return rng_.uniform_int(0, 2) ? constant(6) : expr(depth); }
    Expr divisor() {
        int64_t d = 0;
        while (d == 0) d = rng_.uniform_int(-4, 17);
        return IntImm::make(t_, d);
    }
    Expr cond(int depth) {
        Expr a = expr(depth), b = expr(depth);
        switch (rng_.uniform_int(0, 7)) {
        case 0: return LT::make(a, b);
        case 1: return LE::make(a, b);
        case 2: return GT::make(a, b);
        case 3: return GE::make(a, b);
        case 4: return EQ::make(a, b);
        case 5: return NE::make(a, b);
        case 6: return And::make(LT::make(a, b), GE::make(b, leaf()));
        default: return Not::make(Or::make(EQ::make(a, b), LT::make(leaf(), a)));
        }
    }
};

struct Case {
    Var var;
    int64_t lo, hi;
};

/// Generates n expressions; each must agree with its simplified form at random points and be
/// a fixed point of simplify.
void check_random(uint64_t seed, DataType t, int64_t max_const, int n, int depth) {
    Rng rng(seed);
    std::vector<Case> cases = {{Var("x", t), 0, 7}, {Var("y", t), -5, 5}, {Var("z", t), 0, 20}};
    BoundsMap bounds;
    std::vector<Var> vars;
    for (const Case& c : cases) {
        bounds[c.var.get()] = Interval::range(c.lo, c.hi);
        vars.push_back(c.var);
    }
    Gen gen(rng, t, vars, max_const);
    int changed = 0;
    for (int iter = 0; iter < n; ++iter) {
        Expr e = gen.expr(depth);
        Expr s = simplify(e, bounds);
        changed += to_string(s) != to_string(e);
        Expr s2 = simplify(s, bounds);
        EXPECT_EQ(to_string(s2), to_string(s)) << "not idempotent: " << to_string(e);
        for (int p = 0; p < 12; ++p) {
            Eval ev;
            for (const Case& c : cases) ev.env[c.var.get()] = rng.uniform_int(c.lo, c.hi);
            int64_t want = ev(e);
            int64_t got = ev(s);
            if (want != got) {
                std::string point;
                for (const Case& c : cases)
                    point += " " + c.var.name() + "=" + std::to_string(ev.env[c.var.get()]);
                ADD_FAILURE() << "simplify changed the value at" << point << "\n  input:  "
                              << to_string(e) << " = " << want << "\n  output: " << to_string(s)
                              << " = " << got;
                return;
            }
        }
    }
    EXPECT_GT(changed, n / 4); // the test exercises rewrites, not just the identity
}

} // namespace

TEST(SimplifyRandom, I64ExpressionsKeepTheirValues) {
    check_random(0x5eed, DataType::i64(), 40, 3000, 4);
}

TEST(SimplifyRandom, DeepI64ExpressionsKeepTheirValues) {
    check_random(0xdeeb, DataType::i64(), 100, 600, 6);
}

TEST(SimplifyRandom, I32ExpressionsWrapLikeTheHardware) {
    // Constants near 2^30 make products and sums wrap in 32 bits.
    check_random(0x1332, DataType::i32(), int64_t{1} << 30, 2000, 4);
}
