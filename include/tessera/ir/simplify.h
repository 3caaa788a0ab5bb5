// The algebraic simplifier of the loop IR and the constant-interval bounds analysis under it.
//
// simplify() folds constants, brings integer index arithmetic into a canonical sorted linear
// form (`(i*4 + j) - (j + i*4)` -> `0`, `(x + 3) + (x*2 - 1)` -> `(x*3) + 2`), applies the usual
// identities, and uses the bounds of loop variables (and of the caller's BoundsMap) to remove
// min/max/div/mod/comparisons whose outcome is known: inside `for (i, 0, 16)`, `i / 16` is 0
// and `(i*16 + j) % 16` is j when 0 <= j < 16. Statements: For with extent 0 disappears, extent
// 1 becomes its body with loop_var := min; IfThenElse with a known condition becomes a branch;
// Let/LetStmt of a constant or variable is substituted, unused ones dropped.
//
// Semantics are preserved with one stated assumption, as in other tensor compilers: scalar
// i64 index arithmetic never overflows. Narrower integer types wrap and are only rewritten in
// ways that are exact under wrapping (ring identities, constant folding in the type's width,
// bounds that account for overflow). Float expressions only have constants folded (in the
// type's precision; f16 is left alone), never reassociated. Integer division by a zero
// constant is left as is. The no-op statement is `evaluate(0)` (Evaluate of an IntImm).
//
// Deterministic: terms are ordered by node kind, variable name and first appearance, never by
// address. simplify is idempotent on its own output in the cases the tests cover.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "tessera/ir/stmt.h"

namespace tessera::ir {

/// A closed interval of integers [min, max]; a side without has_min/has_max is unbounded.
/// bounds_of() results are sound for every value the expression can take at run time.
struct Interval {
    int64_t min = 0, max = 0;
    bool has_min = false, has_max = false;

    /// The whole line (nothing known).
    static Interval everything() { return {}; }
    static Interval single(int64_t v) { return {v, v, true, true}; }
    /// [lo, hi]. Pre: lo <= hi.
    static Interval range(int64_t lo, int64_t hi) { return {lo, hi, true, true}; }
    bool bounded() const { return has_min && has_max; }
    bool is_single() const { return bounded() && min == max; }
    /// True when every value of the interval is < v (<= v, > v, >= v).
    bool lt(int64_t v) const { return has_max && max < v; }
    bool le(int64_t v) const { return has_max && max <= v; }
    bool gt(int64_t v) const { return has_min && min > v; }
    bool ge(int64_t v) const { return has_min && min >= v; }
    bool contains(int64_t v) const { return (!has_min || min <= v) && (!has_max || v <= max); }
    bool operator==(const Interval& o) const;
};

/// Known ranges of variables, keyed by the variable object (lookup only, never iterated).
using BoundsMap = std::unordered_map<const Variable*, Interval>;

/// The range of an integer or bool expression (lanes of a vector taken together) given the
/// ranges of its variables. Variables not in the map range over their whole type. Loop
/// variables of For nodes are not visible here: pass them in `bounds`. Float expressions give
/// everything(). Simplify first for tight results (`i - i` gives [-15, 15] for i in [0, 15]).
Interval bounds_of(const Expr& e, const BoundsMap& bounds = {});

/// The simplified expression (see above), with `bounds` known of the free variables.
Expr simplify(const Expr& e, const BoundsMap& bounds = {});
/// The simplified statement; loop variables get their ranges from their For.
Stmt simplify(const Stmt& s, const BoundsMap& bounds = {});
/// f with its body simplified.
LoweredFunc simplify(const LoweredFunc& f);

/// True only when cond (a scalar bool) is provably true for all values of the variables within
/// `bounds`: `i*4 + 3 < 64` for i in [0, 15]. False means "not proven", not "false".
bool can_prove(const Expr& cond, const BoundsMap& bounds = {});

} // namespace tessera::ir
