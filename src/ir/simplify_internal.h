// Private to src/ir/simplify*.cpp: the Simplifier mutator shared by the files that implement
// its rules (statements and lets in simplify.cpp, linear forms and ordering in
// simplify_linear.cpp, arithmetic in simplify_arith.cpp, constants, comparisons and logic in
// simplify_logic.cpp).
#pragma once

#include <optional>
#include <unordered_map>
#include <vector>

#include "tessera/ir/functor.h"
#include "tessera/ir/simplify.h"

namespace tessera::ir::simplify_detail {

/// coef * atoms[0] * atoms[1] * ...; atoms are sorted and are not Add/Sub/Mul/IntImm (except
/// an opaque product of two sums).
struct Term {
    std::vector<Expr> atoms;
    int64_t coef = 1;
};

/// sum(terms) + constant in the scalar signed integer type `type`, coefficients wrapped to its
/// width.
struct LinearForm {
    DataType type;
    std::vector<Term> terms;
    int64_t constant = 0;
};

/// v wrapped to the width of integer type t (sign-extended for Int, zero-extended for UInt).
int64_t wrap(DataType t, uint64_t v);
/// Floor division and modulo of int64 values. Pre: b != 0.
int64_t floor_div(int64_t a, int64_t b);
int64_t floor_mod(int64_t a, int64_t b);

/// op(a, b) when a and b are scalar immediates and the result is exactly known (integers in
/// the type's width with floor Div/Mod and unsigned order for UInt; f32/f64 IEEE, never f16);
/// otherwise undefined. op is a binary node kind.
Expr fold_constants(IRNodeType op, const Expr& a, const Expr& b);
/// Cast of a scalar immediate v to scalar type t when exactly known; otherwise undefined.
Expr fold_cast(DataType t, const Expr& v);

/// The no-op statement, and whether s is one.
Stmt no_op();
bool is_no_op(const Stmt& s);

class Simplifier : public IRMutator {
public:
    explicit Simplifier(const BoundsMap& bounds) : bounds_(bounds) {}
    /// Numbers the variables, buffers and tensors of the input in order of appearance, the
    /// tie-break of the term order between equal names.
    void number(const Expr& e);
    void number(const Stmt& s);
    /// The number of an object (variable, buffer, tensor), given on first request.
    int order_of(const void* object);

    using IRMutator::mutate;
    using IRMutator::visit;

    Expr visit(const Variable* op) override;
    Expr visit(const Cast* op) override;
    Expr visit(const Add* op) override;
    Expr visit(const Sub* op) override;
    Expr visit(const Mul* op) override;
    Expr visit(const Div* op) override;
    Expr visit(const Mod* op) override;
    Expr visit(const Min* op) override;
    Expr visit(const Max* op) override;
    Expr visit(const EQ* op) override;
    Expr visit(const NE* op) override;
    Expr visit(const LT* op) override;
    Expr visit(const LE* op) override;
    Expr visit(const GT* op) override;
    Expr visit(const GE* op) override;
    Expr visit(const And* op) override;
    Expr visit(const Or* op) override;
    Expr visit(const Not* op) override;
    Expr visit(const Select* op) override;
    Expr visit(const Ramp* op) override;
    Expr visit(const Broadcast* op) override;
    Expr visit(const VectorReduce* op) override;
    Expr visit(const Let* op) override;
    Expr visit(const Reduce* op) override;

    Stmt visit(const LetStmt* op) override;
    Stmt visit(const For* op) override;
    Stmt visit(const IfThenElse* op) override;
    Stmt visit(const Seq* op) override;
    Stmt visit(const Allocate* op) override;
    Stmt visit(const Evaluate* op) override;

    // ---- ordering and linear forms (simplify_linear.cpp)
    /// A deterministic total order on expressions: kind, type, then fields; free variables,
    /// buffers and tensors by name, then by number; variables bound inside a and b (Let,
    /// Reduce) by binding depth. 0 exactly when a and b compute the same value: the same free
    /// variables and buffers, bound ones up to renaming.
    int compare(const Expr& a, const Expr& b);
    bool same(const Expr& a, const Expr& b) { return compare(a, b) == 0; }
    /// Scalar signed integers get the linear canonical form.
    static bool is_linear_type(DataType t) { return t.is_int() && t.is_scalar(); }
    /// e as a linear form. simplified: e's atoms are already simplified (else they are).
    LinearForm linearize(const Expr& e, bool simplified);
    /// Sorts and merges terms, drops zero coefficients.
    void normalize(LinearForm& f);
    /// Replaces k*c*(x / c) + k*(y % c) in f by k*x when y is x or congruent to it modulo c
    /// (normalize calls it).
    void recombine_div_mod(LinearForm& f);
    /// Whether x - y is linear with every coefficient and the constant multiples of c.
    bool congruent_mod(const Expr& x, const Expr& y, int64_t c);
    /// The canonical expression of f: positive terms, then subtracted ones, then the constant.
    Expr rebuild(LinearForm f);
    LinearForm add(LinearForm a, const LinearForm& b, bool negate_b = false);
    LinearForm mul(const LinearForm& a, const LinearForm& b);
    LinearForm scale(LinearForm a, int64_t c);

    // ---- bounds
    Interval bounds(const Expr& e) { return bounds_of(e, bounds_); }

private:
    BoundsMap bounds_;
    std::unordered_map<const Variable*, Expr> subst_;
    std::unordered_map<const void*, int> order_;
    /// Variables bound by the nodes compare() is inside, paired left/right by binding depth.
    std::vector<std::pair<const Variable*, const Variable*>> binders_;

    template <typename T> int compare_node(const T* a, const T* b);
    /// Depth of v among the left (right) binders_, or -1 when v is free.
    int binder_depth(const Variable* v, bool left) const;
    int compare_terms(const Term& a, const Term& b);

    // Helpers of the rule files.
    /// A ramp of the simplified parts; stride 0 gives a broadcast.
    Expr ramp(Expr base, Expr stride, int lanes);
    Expr linear_visit(const Expr& e);
    Expr div_by_const(const Expr& a, int64_t c);
    Expr mod_by_const(const Expr& a, int64_t c);
    /// The largest value `base % c` can take (floor modulo, c > 0), from the bounds of `rem`
    /// (base % c, simplified) and base's alignment: when every coefficient of base's linear
    /// form is a multiple of g, which divides c, base % c is congruent to base's constant
    /// modulo g, so it is at most c - g + (constant mod g). A vector of n lanes ramp(base, s,
    /// n) then stays within one period of c when that maximum plus s * (n - 1) is below c.
    int64_t mod_max(const Expr& base, const Expr& rem, int64_t c);
    template <typename T> Expr min_max(const T* op);
    template <typename T> Expr comparison(const T* op);
    /// 1: provably true, 0: provably false, -1: unknown, for a and b already simplified.
    int decide(IRNodeType cmp, const Expr& a, const Expr& b);
    /// Old entries of bounds_ to restore when a branch ends.
    using Undo = std::vector<std::pair<const Variable*, std::optional<Interval>>>;
    /// Tightens bounds_ with what `cond == truth` implies (for comparisons of i64 variables),
    /// recording old entries in undo.
    void learn(const Expr& cond, bool truth, Undo& undo);
    void tighten(const Variable* v, Interval with, Undo& undo);
};

/// Binds v's range in bounds_ for a scope and restores the old entry afterwards.
class ScopedBound {
public:
    ScopedBound(BoundsMap& m, const Variable* v, Interval i) : m_(m), v_(v) {
        auto it = m.find(v);
        if (it != m.end()) old_ = it->second;
        m[v] = i;
    }
    ~ScopedBound() {
        if (old_) m_[v_] = *old_;
        else m_.erase(v_);
    }
    ScopedBound(const ScopedBound&) = delete;
    ScopedBound& operator=(const ScopedBound&) = delete;

private:
    BoundsMap& m_;
    const Variable* v_;
    std::optional<Interval> old_;
};

} // namespace tessera::ir::simplify_detail
