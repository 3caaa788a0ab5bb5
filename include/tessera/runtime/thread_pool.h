// The process-wide thread pool that runs parallel loops of generated code.
//
// One pool per process. A parallel launch splits [0, n) into one contiguous share per thread
// (a static partition), the calling thread runs the first share itself, and the call returns
// when every iteration has run. Each thread runs its share in pieces, in order; one that has
// finished takes the back half of what another has not started, so a thread slowed by the
// system (another process on its CPU, a worker still waking) delays the launch by a piece, not
// by its share. Idle workers spin briefly (so back-to-back kernel launches are cheap)
// and then sleep on a condition variable (so an idle pool costs no CPU). A launch from inside
// a running chunk (a nested parallel loop) runs serially on the calling thread; launches from
// several outside threads at once take turns.
//
// This header has no tessera dependencies: the runtime is linked into built models alone.
#pragma once

#include <cstdint>
#include <functional>

namespace tessera::runtime {

/// Sets the number of threads that run a parallel loop, the calling thread included. n <= 0
/// means one per physical core available to this process. Takes effect for the next launch;
/// must not be called from inside a parallel chunk (it is ignored there).
void set_num_threads(int n);

/// The number of threads a parallel loop uses now (>= 1).
int num_threads();

/// Pins the calling thread and each worker of the pool to a core of its own (one CPU per
/// physical core of this process's affinity mask, the caller on the first, worker w on the
/// (w + 1)-th, in turn when threads outnumber cores), or with `on` false gives them back the
/// mask the caller had before. Unbound, a worker woken on the caller's CPU can share it with the
/// caller for tens of milliseconds before the system moves one (a 2-thread kernel then runs at half
/// speed or worse); bound, each keeps its core. Best effort: a CPU the system refuses leaves
/// the thread where it was. Ignored inside a parallel chunk.
void bind_threads(bool on);

/// One per physical core available to this process (affinity mask and SMT siblings taken
/// into account), at least 1.
int default_num_threads();

/// Runs fn(begin, end) over pieces that together cover [0, n) once, in parallel on at most
/// num_threads() threads (each thread's share of a static partition, in order, unless another
/// thread takes part of it), and returns when all have run. n <= 0 runs nothing. fn must not
/// throw.
void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn);

} // namespace tessera::runtime

extern "C" {

/// A chunk of a parallel loop in generated code: runs iterations [begin, end).
typedef void (*TesseraParallelChunk)(int64_t begin, int64_t end, void* ctx);

/// The entry point generated code calls for a parallel loop: runs chunk(begin, end, ctx) over
/// pieces covering [0, n) on the pool (see parallel_for). Returns 0.
int tessera_parallel_for(int64_t n, TesseraParallelChunk chunk, void* ctx);

} // extern "C"
