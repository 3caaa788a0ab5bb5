// Loop partitioning: takes the guards of imperfect tiles off full tiles.
#pragma once

#include "tessera/ir/stmt.h"

namespace tessera::sched {

/// Splits each loop with constant bounds whose guards (IfThenElse conditions that use its
/// variable) hold for a prefix of its range into a main loop over that prefix and a copy of
/// the loop over the rest (with fresh variables and buffers), recursively inside both; the
/// guards in main loops become provably true, so a later simplify removes them. A Parallel
/// loop is not split in two (the rest would run after a join, on as few threads as it has
/// iterations): its body branches, `if (v < lo + prefix) main else rest`, and a rest of one
/// iteration gets the loop variable substituted by its value; a longer rest branches at its
/// top on up to two guards whose conditions name v and no variable bound inside it (a fused
/// tile index's partial tile), into copies with those guards folded. Before that, iterations
/// at the end of a loop in which every effect (store, or call other than prefetch) is under a
/// condition that provably fails are dropped (the empty tiles past the end of a partial
/// block). Semantics are unchanged. Guards are assumed monotone in the loop variable (true
/// then false, as imperfect tile guards are); prefixes and dead tails are verified with
/// ir::can_prove, so other guards only lose the optimization, never correctness.
ir::Stmt partition_loops(const ir::Stmt& s);

} // namespace tessera::sched
