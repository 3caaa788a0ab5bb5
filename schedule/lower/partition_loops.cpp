// Loop partitioning for imperfect tiles.
#include <algorithm>
#include <optional>

#include "../internal/body_util.h"
#include "../internal/partition.h"
#include "tessera/ir/equality.h"
#include "tessera/ir/functor.h"
#include "tessera/ir/op.h"
#include "tessera/ir/simplify.h"
#include "tessera/lower/unroll_loops.h"

namespace tessera::sched {

using namespace ir;

namespace {

/// A guard inside a loop body, with the ranges of the loops between the loop and the guard.
struct Guard {
    Expr cond;
    BoundsMap inner;
};

/// A visitor that knows the ranges of the constant-bounded loops it is inside (inner_).
class LoopRangeVisitor : public IRVisitor {
  public:
    using IRVisitor::visit;
    void visit(const For* op) override {
        const int64_t* mn = as_const_int(op->min);
        const int64_t* ex = as_const_int(op->extent);
        const bool known = mn && ex && *ex > 0;
        if (known)
            inner_[op->loop_var.get()] = Interval::range(*mn, *mn + *ex - 1);
        visit(op->body);
        if (known)
            inner_.erase(op->loop_var.get());
    }

  protected:
    BoundsMap inner_;
};

/// Collects the guards in a loop body that use `var`.
class GuardCollector : public LoopRangeVisitor {
  public:
    using LoopRangeVisitor::visit;
    GuardCollector(const Variable* var, size_t limit) : var_(var), limit_(limit) {}
    std::vector<Guard> guards;        ///< Conditions of IfThenElse statements.
    std::vector<Guard> select_guards; ///< Conjuncts of select conditions (for middle ranges).

    void visit(const IfThenElse* op) override {
        if (guards.size() < limit_ && uses_any(op->condition, {var_}))
            guards.push_back({op->condition, inner_});
        visit_children(op);
    }
    /// A select's condition guards a middle range (a padding stage's `select(inside, x[...],
    /// 0)`): where it provably holds, the select and the clamps of its index fold away. Its
    /// conjuncts count one by one: a padding select tests rows and columns at once, and the
    /// column's test holds in the interior of a column loop whatever the row.
    void visit(const Select* op) override {
        add_conjuncts(op->condition);
        IRVisitor::visit(op);
    }

  private:
    void add_conjuncts(const Expr& c) {
        if (const And* both = c.as<And>()) {
            add_conjuncts(both->a);
            add_conjuncts(both->b);
        } else if (select_guards.size() < limit_ && uses_any(c, {var_})) {
            select_guards.push_back({c, inner_});
        }
    }

    const Variable* var_;
    size_t limit_;
};

/// The side effects in a loop body (stores, and calls other than prefetch), each with the
/// conditions around it inside the body (a then-branch's condition, an else-branch's negation)
/// and the ranges of the loops between the loop and it. Stops after `limit` effects.
class EffectCollector : public LoopRangeVisitor {
  public:
    using LoopRangeVisitor::visit;
    struct Effect {
        std::vector<Expr> conds;
        BoundsMap inner;
    };
    explicit EffectCollector(size_t limit) : limit_(limit) {}
    std::vector<Effect> effects;
    bool overflow = false;

    void visit(const IfThenElse* op) override {
        conds_.push_back(op->condition);
        visit(op->then_case);
        conds_.pop_back();
        if (op->else_case.defined()) {
            conds_.push_back(Not::make(op->condition));
            visit(op->else_case);
            conds_.pop_back();
        }
    }
    void visit(const Store* op) override { add(); }
    void visit(const Evaluate* op) override {
        const auto* call = op->value.as<Call>();
        if (!call || call->op != CallOp::Prefetch)
            add();
    }

  private:
    void add() {
        if (effects.size() >= limit_)
            overflow = true;
        else
            effects.push_back({conds_, inner_});
    }
    size_t limit_;
    std::vector<Expr> conds_;
};

/// The loop and let variables bound inside a statement.
class BoundVars : public IRVisitor {
  public:
    using IRVisitor::visit;
    std::vector<const Variable*> vars;
    void visit(const For* op) override {
        vars.push_back(op->loop_var.get());
        IRVisitor::visit(op);
    }
    void visit(const LetStmt* op) override {
        vars.push_back(op->var.get());
        IRVisitor::visit(op);
    }
};

/// The first guard (in program order) inside a body whose condition uses `v` and none of
/// `bound` (the variables bound inside the body): a condition fixed for one iteration of v's
/// loop.
class InvariantGuardFinder : public IRVisitor {
  public:
    using IRVisitor::visit;
    InvariantGuardFinder(const Variable* v, const std::vector<const Variable*>& bound)
        : v_(v), bound_(bound) {}
    std::optional<Expr> found;

    void visit(const IfThenElse* op) override {
        if (found)
            return;
        if (uses_any(op->condition, {v_}) && !uses_any(op->condition, bound_)) {
            found = op->condition;
            return;
        }
        visit_children(op);
    }

  private:
    const Variable* v_;
    const std::vector<const Variable*>& bound_;
};

/// `body` with every guard whose condition equals `cond` replaced by the branch it takes when
/// cond is `value`.
class GuardFixer : public IRMutator {
  public:
    using IRMutator::visit;
    GuardFixer(const Expr& cond, bool value) : cond_(cond), value_(value) {}
    Stmt visit(const IfThenElse* op) override {
        if (!structural_equal(op->condition, cond_))
            return IRMutator::visit(op);
        if (value_)
            return mutate(op->then_case);
        return op->else_case.defined() ? mutate(op->else_case) : Evaluate::make(Expr(0));
    }

  private:
    Expr cond_;
    bool value_;
};

/// How many guards fixed per iteration a parallel body has moved to its top (2^n copies).
constexpr int kMaxUnswitchedGuards = 2;

/// A parallel loop's body (or its rest after the full-tile prefix) with the guards fixed for
/// each iteration moved to its top: `if (c) body[c := true] else body[c := false]`, for at most
/// `depth` conditions. Guards of a tile axis fused inside the parallel loop with axes outside
/// it (MobileNetV2's 3 output-channel blocks in tiles of 2, fused after the row halves) are not
/// monotone in the fused index, so no prefix takes them off: every rest iteration tested them
/// inside its reduction loop and split its register tile into two halves that each reloaded
/// the broadcast inputs.
Stmt unswitch_invariant_guards(const Stmt& body, const Variable* v, const BoundsMap& bounds,
                               int depth = kMaxUnswitchedGuards) {
    // Simplified first: the partitioning inside leaves loops of one iteration (the last
    // block of a partial tile) whose variables the guards still name.
    const Stmt simple = simplify(body, bounds);
    if (depth == 0)
        return simple;
    BoundVars bound;
    bound.visit(simple);
    InvariantGuardFinder finder(v, bound.vars);
    finder.visit(simple);
    if (!finder.found)
        return simple;
    const Expr cond = *finder.found;
    const Stmt on = GuardFixer(cond, true).mutate(simple);
    const Stmt off = GuardFixer(cond, false).mutate(lower::copy_with_substitution(simple, {}));
    return IfThenElse::make(cond, unswitch_invariant_guards(on, v, bounds, depth - 1),
                            unswitch_invariant_guards(off, v, bounds, depth - 1));
}

class Partitioner : public IRMutator {
  public:
    using IRMutator::visit;

    Stmt visit(const For* op) override {
        const int64_t* mn = as_const_int(op->min);
        const int64_t* ex = as_const_int(op->extent);
        if (!mn || !ex || *ex <= 1)
            return with_range(op, mn, ex);
        const int64_t lo = *mn, ext = *ex;
        const int64_t live = live_prefix(op->loop_var.get(), lo, ext, op->body);
        if (live < ext) {
            // The last iterations do nothing (every effect is under a guard that fails there,
            // as in the empty tiles past the end of a partial block): drop them.
            Stmt trimmed = For::make(op->loop_var, op->min, Expr(live), op->kind, op->body);
            return live == 0 ? trimmed : mutate(trimmed);
        }
        GuardCollector gc(op->loop_var.get(), 16);
        gc.visit(op->body);
        int64_t best = ext;
        for (const Guard& g : gc.guards) {
            const int64_t m = provable_prefix(op->loop_var.get(), lo, ext, g);
            if (m > 0 && m < best)
                best = m;
        }
        if (best == ext) {
            // No guard holds from the first iteration: one may hold in a middle range (the
            // interior of a padded axis), split off as head, main and tail.
            std::vector<Guard> all = gc.guards;
            all.insert(all.end(), gc.select_guards.begin(), gc.select_guards.end());
            const auto [first, last] = provable_middle(op->loop_var.get(), lo, ext, all);
            // Only a range that is most of the loop pays for the copies of the body (a padded
            // axis' interior; not one row of a fused loop over rows of many channels).
            if (first > lo && last >= first && 2 * (last - first + 1) >= ext)
                return split_middle(op, lo, ext, first, last);
            return with_range(op, mn, ex);
        }
        if (op->kind == ForKind::Parallel) {
            bounds_[op->loop_var.get()] = Interval::range(lo, lo + best - 1);
            Stmt main_body = mutate(op->body);
            bounds_.erase(op->loop_var.get());
            // One parallel loop whose iterations branch between the full-tile body and the
            // rest: two parallel loops would run the rest after a join, on as many threads as
            // it has iterations (one for a single partial block), while the others wait.
            // A single remaining iteration is substituted, so its guards fold to constants.
            std::vector<std::pair<Var, Expr>> subst;
            if (ext - best == 1)
                subst.emplace_back(op->loop_var, Expr(lo + best));
            bounds_[op->loop_var.get()] = Interval::range(lo + best, lo + ext - 1);
            Stmt rest_body = mutate(lower::copy_with_substitution(op->body, subst));
            if (subst.empty())
                rest_body = unswitch_invariant_guards(rest_body, op->loop_var.get(), bounds_);
            bounds_.erase(op->loop_var.get());
            return For::make(
                op->loop_var, op->min, op->extent, op->kind,
                IfThenElse::make(Expr(op->loop_var) < Expr(lo + best), main_body, rest_body));
        }
        // Main loop over the full tiles (partitioned again: a guard that fails in its first
        // iterations, as a padded axis', may hold in a middle range), then the rest as a fresh
        // copy.
        Stmt main = mutate(For::make(op->loop_var, op->min, Expr(best), op->kind, op->body));
        Stmt rest = lower::copy_with_substitution(
            For::make(op->loop_var, Expr(lo + best), Expr(ext - best), op->kind, op->body), {});
        return Seq::make({main, mutate(rest)});
    }

  private:
    Stmt with_range(const For* op, const int64_t* mn, const int64_t* ex) {
        const bool known = mn && ex && *ex > 0;
        if (known)
            bounds_[op->loop_var.get()] = Interval::range(*mn, *mn + *ex - 1);
        Stmt body = mutate(op->body);
        if (known)
            bounds_.erase(op->loop_var.get());
        if (body.same_as(op->body))
            return Stmt(op);
        return For::make(op->loop_var, op->min, op->extent, op->kind, body);
    }

    /// The number of leading iterations of a loop over [lo, lo + ext) that may have an effect:
    /// the rest have every store under a condition that provably fails there.
    int64_t live_prefix(const Variable* v, int64_t lo, int64_t ext, const Stmt& body) {
        EffectCollector ec(64);
        ec.visit(body);
        if (ec.overflow || ec.effects.empty())
            return ext;
        // True when iterations [lo + m, lo + ext) have no effect.
        auto dead_from = [&](int64_t m) {
            for (const EffectCollector::Effect& e : ec.effects) {
                bool off = false;
                for (const Expr& c : e.conds)
                    if (provable(v, lo + m, lo + ext - 1, Guard{Not::make(c), e.inner})) {
                        off = true;
                        break;
                    }
                if (!off)
                    return false;
            }
            return true;
        };
        if (!dead_from(ext - 1))
            return ext;
        int64_t dead = ext - 1, alive = -1; // dead_from(dead) holds; alive: not, or before 0
        while (dead - alive > 1) {
            const int64_t mid = alive + (dead - alive) / 2;
            if (dead_from(mid))
                dead = mid;
            else
                alive = mid;
        }
        return dead;
    }

    bool provable(const Variable* v, int64_t lo, int64_t hi, const Guard& g) {
        // The guard's variables are set in bounds_ for the query and put back after it: the
        // binary searches ask this many times per loop, and copying the map each time cost a
        // fifth of the time the search spends sampling, lowering and scoring a state.
        std::vector<std::pair<const Variable*, std::optional<Interval>>> saved;
        auto set = [&](const Variable* key, const Interval& value) {
            auto it = bounds_.find(key);
            saved.emplace_back(key, it == bounds_.end() ? std::nullopt
                                                        : std::optional<Interval>(it->second));
            bounds_[key] = value;
        };
        for (const auto& kv : g.inner)
            set(kv.first, kv.second);
        set(v, Interval::range(lo, hi));
        const bool proved = can_prove(g.cond, bounds_);
        for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
            if (it->second)
                bounds_[it->first] = *it->second;
            else
                bounds_.erase(it->first);
        }
        return proved;
    }

    /// The range [first, last] around the middle iteration of [lo, lo + ext) where every guard
    /// that holds at the middle holds throughout (their conditions, affine in v, hold on one
    /// range each); {lo, lo - 1} when no guard holds at the middle.
    std::pair<int64_t, int64_t> provable_middle(const Variable* v, int64_t lo, int64_t ext,
                                                const std::vector<Guard>& guards) {
        const int64_t mid = lo + ext / 2, end = lo + ext - 1;
        int64_t first = lo, last = end;
        bool any = false;
        for (const Guard& g : guards) {
            if (!provable(v, mid, mid, g))
                continue;
            any = true;
            int64_t no = first - 1, yes = mid; // [yes, mid] holds; no: not, or before first
            while (yes - no > 1) {
                const int64_t m = no + (yes - no) / 2;
                (provable(v, m, mid, g) ? yes : no) = m;
            }
            first = yes;
            int64_t good = mid, bad = last + 1; // [mid, good] holds; bad: not, or past last
            while (bad - good > 1) {
                const int64_t m = good + (bad - good) / 2;
                (provable(v, mid, m, g) ? good : bad) = m;
            }
            last = good;
        }
        return any ? std::make_pair(first, last) : std::make_pair(lo, lo - 1);
    }

    /// The loop split into [lo, first) and (last, lo + ext), each a fresh copy of the body with
    /// its own range, around [first, last], whose body knows its range (its guards fold). A
    /// parallel loop stays one loop whose iterations branch between the three.
    Stmt split_middle(const For* op, int64_t lo, int64_t ext, int64_t first, int64_t last) {
        const Variable* v = op->loop_var.get();
        const int64_t end = lo + ext - 1;
        auto part = [&](int64_t a, int64_t b, bool copy) {
            bounds_[v] = Interval::range(a, b);
            Stmt body = mutate(copy ? lower::copy_with_substitution(op->body, {}) : op->body);
            bounds_.erase(v);
            return body;
        };
        Stmt head = part(lo, first - 1, true);
        Stmt main = part(first, last, false);
        std::optional<Stmt> tail;
        if (last < end)
            tail = part(last + 1, end, true);
        if (op->kind == ForKind::Parallel) {
            Stmt rest = tail ? IfThenElse::make(Expr(op->loop_var) <= Expr(last), main, *tail)
                             : main;
            return For::make(op->loop_var, op->min, op->extent, op->kind,
                             IfThenElse::make(Expr(op->loop_var) < Expr(first), head, rest));
        }
        // The head and the tail are loops of their own variables (fresh copies of the body
        // were made above; the loop variable is renamed by a copy of each whole loop).
        std::vector<Stmt> parts;
        parts.push_back(lower::copy_with_substitution(
            For::make(op->loop_var, Expr(lo), Expr(first - lo), op->kind, head), {}));
        parts.push_back(For::make(op->loop_var, Expr(first), Expr(last - first + 1), op->kind, main));
        if (tail)
            parts.push_back(lower::copy_with_substitution(
                For::make(op->loop_var, Expr(last + 1), Expr(end - last), op->kind, *tail), {}));
        return Seq::make(parts);
    }

    /// The largest m such that g holds whenever v is in [lo, lo + m - 1] (0 when none).
    int64_t provable_prefix(const Variable* v, int64_t lo, int64_t ext, const Guard& g) {
        if (!provable(v, lo, lo, g))
            return 0;
        int64_t good = 1, bad = ext + 1; // good holds, bad fails or is past the end
        if (provable(v, lo, lo + ext - 1, g))
            return ext;
        bad = ext;
        while (bad - good > 1) {
            const int64_t mid = good + (bad - good) / 2;
            if (provable(v, lo, lo + mid - 1, g))
                good = mid;
            else
                bad = mid;
        }
        return good;
    }

    BoundsMap bounds_;
};

} // namespace

Stmt partition_loops(const Stmt& s) { return Partitioner().mutate(s); }

} // namespace tessera::sched
