// Loop partitioning for imperfect tiles.
#include <algorithm>

#include "../internal/partition.h"
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

bool uses_var(const Expr& e, const Variable* v) {
    struct Finder : IRVisitor {
        using IRVisitor::visit;
        const Variable* v;
        bool found = false;
        void visit(const Variable* op) override { found = found || op == v; }
    } f;
    f.v = v;
    f.visit(e);
    return f.found;
}

/// Collects the guards in a loop body that use `var`.
class GuardCollector : public IRVisitor {
  public:
    using IRVisitor::visit;
    GuardCollector(const Variable* var, size_t limit) : var_(var), limit_(limit) {}
    std::vector<Guard> guards;

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
    void visit(const IfThenElse* op) override {
        if (guards.size() < limit_ && uses_var(op->condition, var_))
            guards.push_back({op->condition, inner_});
        visit_children(op);
    }

  private:
    const Variable* var_;
    size_t limit_;
    BoundsMap inner_;
};

class Partitioner : public IRMutator {
  public:
    using IRMutator::visit;

    Stmt visit(const For* op) override {
        const int64_t* mn = as_const_int(op->min);
        const int64_t* ex = as_const_int(op->extent);
        if (!mn || !ex || *ex <= 1)
            return with_range(op, mn, ex);
        const int64_t lo = *mn, ext = *ex;
        GuardCollector gc(op->loop_var.get(), 16);
        gc.visit(op->body);
        int64_t best = ext;
        for (const Guard& g : gc.guards) {
            const int64_t m = provable_prefix(op->loop_var.get(), lo, ext, g);
            if (m > 0 && m < best)
                best = m;
        }
        if (best == ext)
            return with_range(op, mn, ex);
        // Main loop over the full tiles, then the rest as a fresh copy.
        bounds_[op->loop_var.get()] = Interval::range(lo, lo + best - 1);
        Stmt main_body = mutate(op->body);
        bounds_.erase(op->loop_var.get());
        Stmt main = For::make(op->loop_var, op->min, Expr(best), op->kind, main_body);
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

    bool provable(const Variable* v, int64_t lo, int64_t hi, const Guard& g) {
        BoundsMap b = bounds_;
        for (const auto& kv : g.inner)
            b[kv.first] = kv.second;
        b[v] = Interval::range(lo, hi);
        return can_prove(g.cond, b);
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
