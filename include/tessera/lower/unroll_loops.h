// Full unrolling of Unrolled loops.
#pragma once

#include <utility>
#include <vector>

#include "tessera/ir/stmt.h"

namespace tessera::lower {

/// Replaces every For of kind Unrolled whose extent is a constant by a Seq of copies of its
/// body, copy k with loop_var := min + k (inner Unrolled loops first). Every variable and
/// buffer bound inside a copy (Let, LetStmt, For, Allocate) is replaced by a fresh one, so each
/// stays bound once. A non-constant or non-positive extent turns the loop Serial instead.
/// Run simplify afterwards to fold the `min + k` constants.
ir::Stmt unroll_loops(const ir::Stmt& s);

/// s with each variable of `subst` replaced by its expression, and every variable and buffer
/// bound inside s replaced by a fresh copy (same name hint, type and shape). What unrolling
/// and the vectorizer's per-lane scalarization use to duplicate code.
ir::Stmt copy_with_substitution(const ir::Stmt& s,
                                const std::vector<std::pair<ir::Var, ir::Expr>>& subst);

} // namespace tessera::lower
