// Lowering of `pipeline` loops (ForKind::Pipelined, GPU code): the shared-memory copies made in
// each iteration are loaded from global memory one iteration ahead, into registers, so that the
// loads' latency overlaps the iteration's computation (register double buffering).
#pragma once

#include "tessera/ir/stmt.h"

namespace tessera::lower {

/// s with every loop of kind Pipelined made a Serial loop, its shared-memory fetches moved one
/// iteration ahead:
///
///   for k < N:                       fetch(k = 0)
///     alloc S1.. (Shared):           for k < N:
///       fetch_1(k) .. fetch_f(k)       if (k + 1 < N) regs_i = global part of fetch_i(k + 1)
///       rest(k)                        rest(k)
///                                      if (k + 1 < N) S_i = regs_i
///
/// with the Shared allocations and one Local register array per fetch hoisted around the loop.
/// A fetch is a statement of the loop body's Seq (after its Shared Allocates) that stores one
/// of those buffers and loads none; it is a nest of constant loops from 0 (those bound to
/// threads index nothing per thread), Lets and guards around one Store, and its register array
/// holds one element per iteration of its per-thread loops. The CUDA backend's barriers (placed
/// around each statement that stores a shared buffer another reads) then separate the stores
/// from the reads of the iteration before and after. A Pipelined loop without fetches becomes a
/// plain Serial loop.
/// Throws ScheduleError when the loop's extent is not constant or a fetch is not such a nest.
ir::Stmt pipeline_fetches(const ir::Stmt& s);

} // namespace tessera::lower
