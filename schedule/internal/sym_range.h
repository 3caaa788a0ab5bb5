// Ranges of index expressions with a symbolic base: value in [base + lo, base + hi], where
// base uses only variables fixed during the iteration of interest and lo, hi come from the
// ranges of the variables that vary. Used by bounds inference.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "tessera/ir/expr.h"

namespace tessera::sched {

struct SymRange {
    ir::Expr base; ///< Undefined means 0.
    int64_t lo = 0, hi = 0;
    bool ok = true; ///< False when the expression is not understood (the caller widens).
};

/// Ranges [lo, hi] of the variables that vary.
using VaryingMap = std::unordered_map<const ir::Variable*, std::pair<int64_t, int64_t>>;

/// The range of integer expression e (simplify first) given the varying variables.
SymRange sym_range(const ir::Expr& e, const VaryingMap& varying);

/// The union of two ranges when their bases differ by a constant; ok = false otherwise.
SymRange sym_union(const SymRange& a, const SymRange& b);

} // namespace tessera::sched
