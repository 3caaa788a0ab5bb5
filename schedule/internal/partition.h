// Loop partitioning: takes the guards of imperfect tiles off full tiles.
#pragma once

#include "tessera/ir/stmt.h"

namespace tessera::sched {

/// Splits each loop with constant bounds whose guards (IfThenElse conditions that use its
/// variable) hold for a prefix of its range into a main loop over that prefix and a copy of
/// the loop over the rest (with fresh variables and buffers), recursively inside both; the
/// guards in main loops become provably true, so a later simplify removes them. Semantics are
/// unchanged. Guards are assumed monotone in the loop variable (true then false, as imperfect
/// tile guards are); the prefix is verified with ir::can_prove, so other guards only lose the
/// optimization, never correctness.
ir::Stmt partition_loops(const ir::Stmt& s);

} // namespace tessera::sched
