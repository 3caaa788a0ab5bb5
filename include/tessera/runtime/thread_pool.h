// The process-wide thread pool that runs parallel loops of generated code.
//
// One pool per process. In a parallel launch the calling thread and the workers claim
// contiguous chunks of [0, n) from a shared counter, each claim half of an even share of what
// is left (guided self-scheduling: large chunks first, single indices last), and the call
// returns when every index is done; a thread the host stalls leaves its unclaimed share to the
// others. Idle workers spin briefly (so back-to-back kernel launches are cheap)
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

/// One per physical core available to this process (affinity mask and SMT siblings taken
/// into account), at least 1.
int default_num_threads();

/// Runs fn(begin, end) over disjoint contiguous chunks that cover [0, n), on at most
/// num_threads() threads in parallel, and returns when all are done. A thread may run several
/// chunks; no chunk is longer than max(1, n / (2 * num_threads())) unless one thread runs all.
/// n <= 0 runs nothing. fn must not throw.
void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn);

} // namespace tessera::runtime

extern "C" {

/// A chunk of a parallel loop in generated code: runs iterations [begin, end).
typedef void (*TesseraParallelChunk)(int64_t begin, int64_t end, void* ctx);

/// The entry point generated code calls for a parallel loop: runs chunk(begin, end, ctx) over
/// chunks that cover [0, n) on the pool (see parallel_for). Returns 0.
int tessera_parallel_for(int64_t n, TesseraParallelChunk chunk, void* ctx);

} // extern "C"
