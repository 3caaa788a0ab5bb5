// Parallelizing a stage's outer loops: shared by random annotation (search_space/annotate.cpp)
// and the rule-based default schedules (default/).
#pragma once

#include <cstdint>

#include "tessera/schedule/state.h"

namespace tessera::sched {

/// Fuses the outer spatial loops of `sid` from `offset` until the product exceeds max_degree, a
/// loop has attached stages or the loop `end` (exclusive; -1: no such limit) is reached, and
/// runs the result in parallel (recorded steps). When that gives no parallelism (all extents
/// 1), the stages attached at the stopping loop and the loops inside it are tried instead, so
/// that a parallel loop is never nested in another.
void parallelize_outer_loops(State& s, int sid, int offset, int64_t max_degree, int end = -1);

} // namespace tessera::sched
