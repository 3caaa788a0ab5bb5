// Vectorized loops to vector IR: the loop variable becomes a Ramp and everything that depends
// on it is widened to the loop's lanes.
#include "tessera/lower/vectorize_loops.h"

#include <unordered_map>
#include <utility>
#include <vector>

#include "tessera/ir/functor.h"
#include "tessera/ir/op.h"
#include "tessera/lower/unroll_loops.h"

namespace tessera::lower {

using namespace ir;

namespace {

/// Wider loops stay serial: the vector types would only slow LLVM down.
constexpr int64_t kMaxLanes = 256;

/// Thrown while widening a loop body that has to stay scalar.
struct CannotVectorize {};

/// True when s already holds a vector expression (an inner loop was vectorized).
bool has_vector_expr(const Stmt& s) {
    struct Find : IRVisitor {
        using IRVisitor::visit;
        bool found = false;
        void visit(const Expr& e) override {
            if (found || !e.defined())
                return;
            if (e.type().lanes > 1)
                found = true;
            else
                IRVisitor::visit(e);
        }
    } f;
    f.visit(s);
    return f.found;
}

/// Widens one loop body: loop_var := Ramp(min, 1, lanes).
class Widen : public IRMutator {
  public:
    using IRMutator::visit;
    Widen(const Var& loop_var, const Expr& min, int lanes)
        : loop_var_(loop_var), min_(min), lanes_(lanes) {
        vars_[loop_var.get()] = Ramp::make(min, make_one(min.type()), lanes);
    }

    Expr visit(const Variable* op) override {
        auto it = vars_.find(op);
        return it == vars_.end() ? Expr(op) : it->second;
    }

    Expr visit(const Cast* op) override {
        Expr v = mutate(op->value);
        if (v.same_as(op->value))
            return Expr(op);
        return Cast::make(op->type.with_lanes(v.type().lanes), v);
    }

    Expr visit(const Add* op) override { return arith(op, &Widen::fold_add); }
    Expr visit(const Sub* op) override { return arith(op, &Widen::fold_sub); }
    Expr visit(const Mul* op) override { return arith(op, &Widen::fold_mul); }

#define TESSERA_WIDEN_BINARY(T)                                                                    \
    Expr visit(const T* op) override { return binary<T>(op); }
    TESSERA_WIDEN_BINARY(Div)
    TESSERA_WIDEN_BINARY(Mod)
    TESSERA_WIDEN_BINARY(Min)
    TESSERA_WIDEN_BINARY(Max)
    TESSERA_WIDEN_BINARY(EQ)
    TESSERA_WIDEN_BINARY(NE)
    TESSERA_WIDEN_BINARY(LT)
    TESSERA_WIDEN_BINARY(LE)
    TESSERA_WIDEN_BINARY(GT)
    TESSERA_WIDEN_BINARY(GE)
    TESSERA_WIDEN_BINARY(And)
    TESSERA_WIDEN_BINARY(Or)
#undef TESSERA_WIDEN_BINARY

    Expr visit(const Not* op) override {
        Expr a = mutate(op->a);
        return a.same_as(op->a) ? Expr(op) : Not::make(a);
    }

    Expr visit(const Select* op) override {
        Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
        if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value))
            return Expr(op);
        if (!is_vec(c) && !is_vec(t) && !is_vec(f))
            return Select::make(c, t, f);
        // A scalar condition may select between vectors as a whole.
        return Select::make(c, widen(t), widen(f));
    }

    Expr visit(const Load* op) override {
        Expr index = mutate(op->index);
        return index.same_as(op->index) ? Expr(op) : Load::make(op->buffer, index);
    }

    // Already-vector nodes mean nested vectorization, which we do not attempt.
    Expr visit(const Ramp*) override { throw CannotVectorize(); }
    Expr visit(const Broadcast*) override { throw CannotVectorize(); }
    Expr visit(const VectorReduce*) override { throw CannotVectorize(); }
    Expr visit(const TensorRead*) override { throw CannotVectorize(); }
    Expr visit(const Reduce*) override { throw CannotVectorize(); }

    Expr visit(const Call* op) override {
        if (op->op == CallOp::Prefetch) {
            // A hint: prefetch the first lane's address (or nothing when there is none).
            const Load* l = op->args[0].as<Load>();
            Expr index = mutate(l->index);
            if (index.same_as(l->index))
                return Expr(op);
            if (!is_vec(index))
                return Call::make(CallOp::Prefetch, {Load::make(l->buffer, index)});
            if (const Ramp* r = index.as<Ramp>())
                index = r->base;
            else if (const Broadcast* b = index.as<Broadcast>())
                index = b->value;
            else
                return make_zero(op->type);
            return Call::make(CallOp::Prefetch, {Load::make(l->buffer, index)});
        }
        std::vector<Expr> args;
        bool changed = false, vector = false;
        for (const Expr& a : op->args) {
            args.push_back(mutate(a));
            changed = changed || !args.back().same_as(a);
            vector = vector || is_vec(args.back());
        }
        if (!changed)
            return Expr(op);
        if (vector)
            for (Expr& a : args)
                a = widen(a);
        return Call::make(op->op, std::move(args));
    }

    Expr visit(const Let* op) override {
        Expr value = mutate(op->value);
        Var var = bind(op->var, op->value, value);
        Expr body = mutate(op->body);
        unbind(op->var, var);
        if (var.same_as(op->var) && value.same_as(op->value) && body.same_as(op->body))
            return Expr(op);
        return Let::make(var, value, body);
    }

    Stmt visit(const LetStmt* op) override {
        Expr value = mutate(op->value);
        Var var = bind(op->var, op->value, value);
        Stmt body = mutate(op->body);
        unbind(op->var, var);
        if (var.same_as(op->var) && value.same_as(op->value) && body.same_as(op->body))
            return Stmt(op);
        return LetStmt::make(var, value, body);
    }

    Stmt visit(const Store* op) override {
        Expr value = mutate(op->value), index = mutate(op->index);
        if (value.same_as(op->value) && index.same_as(op->index))
            return Stmt(op);
        // Every lane writing one address: the scalar loop's last write would win, the vector
        // one is not defined the same way.
        if (!is_vec(index) && is_vec(value))
            throw CannotVectorize();
        if (is_vec(index))
            value = widen(value);
        return Store::make(op->buffer, value, index);
    }

    Stmt visit(const For* op) override {
        Expr min = mutate(op->min), extent = mutate(op->extent);
        if (is_vec(min) || is_vec(extent))
            throw CannotVectorize();
        Stmt body = mutate(op->body);
        if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body))
            return Stmt(op);
        return For::make(op->loop_var, min, extent, op->kind, body);
    }

    Stmt visit(const IfThenElse* op) override {
        Expr c = mutate(op->condition);
        if (is_vec(c))
            return scalarize(op);
        Stmt t = mutate(op->then_case), e = mutate(op->else_case);
        if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case))
            return Stmt(op);
        return IfThenElse::make(c, t, e);
    }

    Stmt visit(const Evaluate* op) override {
        Expr v = mutate(op->value);
        return v.same_as(op->value) ? Stmt(op) : Evaluate::make(v);
    }

  private:
    static bool is_vec(const Expr& e) { return e.defined() && e.type().lanes > 1; }

    /// A scalar broadcast to the loop's lanes; a vector as is.
    Expr widen(const Expr& e) const { return is_vec(e) ? e : Broadcast::make(e, lanes_); }

    template <typename T> Expr binary(const T* op) {
        Expr a = mutate(op->a), b = mutate(op->b);
        if (a.same_as(op->a) && b.same_as(op->b))
            return Expr(op);
        if (!is_vec(a) && !is_vec(b))
            return T::make(a, b);
        return T::make(widen(a), widen(b));
    }

    template <typename T> Expr arith(const T* op, Expr (Widen::*fold)(const Expr&, const Expr&)) {
        Expr a = mutate(op->a), b = mutate(op->b);
        if (a.same_as(op->a) && b.same_as(op->b))
            return Expr(op);
        if (!is_vec(a) && !is_vec(b))
            return T::make(a, b);
        return (this->*fold)(widen(a), widen(b));
    }

    // Index arithmetic stays in Ramp form so that dense accesses remain recognizable. Only
    // integers: for floats the rewrites would change rounding.
    Expr fold_add(const Expr& a, const Expr& b) {
        const Ramp *ra = a.as<Ramp>(), *rb = b.as<Ramp>();
        const Broadcast *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
        if (ba && bb)
            return Broadcast::make(Add::make(ba->value, bb->value), lanes_);
        if (!a.type().is_float()) {
            if (ra && bb)
                return Ramp::make(Add::make(ra->base, bb->value), ra->stride, lanes_);
            if (ba && rb)
                return Ramp::make(Add::make(ba->value, rb->base), rb->stride, lanes_);
            if (ra && rb)
                return Ramp::make(Add::make(ra->base, rb->base), Add::make(ra->stride, rb->stride),
                                  lanes_);
        }
        return Add::make(a, b);
    }
    Expr fold_sub(const Expr& a, const Expr& b) {
        const Ramp *ra = a.as<Ramp>(), *rb = b.as<Ramp>();
        const Broadcast *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
        if (ba && bb)
            return Broadcast::make(Sub::make(ba->value, bb->value), lanes_);
        if (!a.type().is_float()) {
            if (ra && bb)
                return Ramp::make(Sub::make(ra->base, bb->value), ra->stride, lanes_);
            if (ba && rb)
                return Ramp::make(Sub::make(ba->value, rb->base),
                                  Sub::make(make_zero(rb->stride.type()), rb->stride), lanes_);
            if (ra && rb)
                return Ramp::make(Sub::make(ra->base, rb->base), Sub::make(ra->stride, rb->stride),
                                  lanes_);
        }
        return Sub::make(a, b);
    }
    Expr fold_mul(const Expr& a, const Expr& b) {
        const Ramp *ra = a.as<Ramp>(), *rb = b.as<Ramp>();
        const Broadcast *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
        if (ba && bb)
            return Broadcast::make(Mul::make(ba->value, bb->value), lanes_);
        if (!a.type().is_float()) {
            if (ra && bb)
                return Ramp::make(Mul::make(ra->base, bb->value), Mul::make(ra->stride, bb->value),
                                  lanes_);
            if (ba && rb)
                return Ramp::make(Mul::make(ba->value, rb->base), Mul::make(ba->value, rb->stride),
                                  lanes_);
        }
        return Mul::make(a, b);
    }

    /// Binds the widened form of `let var = value`; returns the variable to bind.
    Var bind(const Var& var, const Expr& scalar_value, const Expr& value) {
        if (!is_vec(value))
            return var;
        Var vec(var.name(), value.type());
        vars_[var.get()] = vec;
        widened_lets_.emplace_back(var, scalar_value);
        return vec;
    }
    void unbind(const Var& var, const Var& bound) {
        if (bound.same_as(var))
            return;
        vars_.erase(var.get());
        widened_lets_.pop_back();
    }

    /// One scalar copy of the original statement per lane, each under the scalar forms of the
    /// widened Lets around it, with fresh inner variables.
    Stmt scalarize(const IfThenElse* op) {
        std::vector<Stmt> lanes;
        for (int l = 0; l < lanes_; ++l) {
            Stmt s(op);
            for (auto it = widened_lets_.rbegin(); it != widened_lets_.rend(); ++it)
                s = LetStmt::make(it->first, it->second, s);
            Expr lane = is_const_int(min_, 0) ? Expr(l) : min_ + Expr(l);
            lanes.push_back(copy_with_substitution(s, {{loop_var_, lane}}));
        }
        return Seq::make(std::move(lanes));
    }

    Var loop_var_;
    Expr min_;
    int lanes_;
    std::unordered_map<const Variable*, Expr> vars_;
    /// Lets in scope whose values were widened: (original variable, original scalar value).
    std::vector<std::pair<Var, Expr>> widened_lets_;
};

class VectorizeLoops : public IRMutator {
  public:
    using IRMutator::visit;
    Stmt visit(const For* op) override {
        Stmt body = mutate(op->body); // inner loops first
        if (op->kind != ForKind::Vectorized) {
            if (body.same_as(op->body))
                return Stmt(op);
            return For::make(op->loop_var, op->min, op->extent, op->kind, body);
        }
        auto serial = [&] {
            return For::make(op->loop_var, op->min, op->extent, ForKind::Serial, body);
        };
        const int64_t* extent = as_const_int(op->extent);
        if (!extent || *extent < 1 || *extent > kMaxLanes)
            return serial();
        if (*extent == 1)
            return copy_with_substitution(body, {{op->loop_var, op->min}});
        if (has_vector_expr(body))
            return serial();
        try {
            return Widen(op->loop_var, op->min, static_cast<int>(*extent)).mutate(body);
        } catch (const CannotVectorize&) {
            return serial();
        }
    }
};

} // namespace

Stmt vectorize_loops(const Stmt& s) { return VectorizeLoops()(s); }

} // namespace tessera::lower
