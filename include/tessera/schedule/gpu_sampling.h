// GPU sketches and their annotation (Ansor's GPU rules): the sketch rule that copies a tiled
// reduction's inputs into shared memory, and the sampling that turns a GPU sketch into a
// complete schedule with blockIdx / vthread / threadIdx bindings, cooperative fetching of the
// shared copies and an unroll pragma, within cheap device limits.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/schedule/sketch.h"
#include "tessera/schedule/state.h"
#include "tessera/support/rng.h"

namespace tessera::sched {

/// An input (or any Global stage) whose single reader is a reduction tiled with the GPU
/// structure gets a cache_read "shared" copy computed at the reader's outer reduce tile loop
/// (gpu_reduce_tile_iter). Apply (the variant without the copy remains).
std::unique_ptr<SketchRule> make_gpu_shared_cache_read_rule(const SketchOptions& opts);
/// An injective stage whose producers are all inputs (a convolution's padding, a cast) and
/// whose single reader is tiled with the GPU structure is computed into a cache_read "shared"
/// copy at the reader's outer reduce tile loop (the stage inlined into the copy), so the
/// reader's window of it comes from shared memory. Apply (always_inline's variant remains);
/// placed before always_inline, which ends the list for such a stage.
std::unique_ptr<SketchRule> make_gpu_shared_computed_read_rule(const SketchOptions& opts);

/// Cross-thread reduction (Ansor's rule of that name): a float reduction at root, untouched,
/// whose reduce loops follow its spatial ones, and which is long relative to its output (a
/// tiled reduction: spatial size < reduce size, as gemv or dense with batch 1; otherwise:
/// reduce size > 32, as softmax's and layer norm's sums, reduce ops, global average pool)
/// gets its reduce loops fused and split once, the inner part bound to threadIdx.x (length a
/// placeholder that annotation draws: GpuSampleOptions::max_reduce_threads). Apply (the
/// variant without it remains). Each such stage is one kernel: its spatial loops fused and
/// bound to blockIdx.x.
std::unique_ptr<SketchRule> make_gpu_cross_thread_reduction_rule(const SketchOptions& opts);

/// The reduce iterator of `stage` bound to threadIdx.x (a cross-thread reduction), or -1.
int cross_thread_reduce_iter(const State& s, int stage);

/// The iterator of `stage` after which its first reduce tile level ends, when the stage is a
/// reduction multi-level tiled by `structure` (e.g. "SSSRRSRS": the last loop of R0); -1
/// otherwise.
int gpu_reduce_tile_iter(const State& s, int stage, const std::string& structure);

/// Device limits the GPU annotation respects (defaults: sm_90). Fixed, not read from a device,
/// so that sampling is deterministic on every machine.
struct GpuSampleOptions {
    int64_t max_threads_per_block = 1024;
    int64_t max_vthread = 8;                   ///< Product of the vthread extents.
    int64_t max_shared_bytes = 48 * 1024;      ///< All shared copies of one block.
    int64_t max_local_bytes = 1024;            ///< One thread's register tile.
    /// Threads per block of an untiled stage are drawn from these (capped by its size).
    std::vector<int64_t> elementwise_threads = {32, 64, 128, 256, 512, 1024};
    std::vector<int64_t> auto_unroll_configs = {0, 16, 64, 512};
    /// Threads of a cross-thread reduction: a multiple of 32 drawn from [32, 1024], at most
    /// the reduce size rounded up to 32.
    int64_t max_reduce_threads = 1024;
    int max_tries = 64; ///< Samples drawn before giving up on a sketch.
};

/// A complete GPU schedule from a GPU sketch (generate_sketches with TargetKind::Gpu):
/// sampled split lengths; every tiled root stage's first three spatial tile levels fused and
/// bound to blockIdx.x, vthread and threadIdx.x; every untiled root stage fused, split by a
/// sampled thread count and bound to blockIdx.x / threadIdx.x; a cross-thread reduction's
/// spatial loops fused and bound to blockIdx.x, its thread count drawn (multiples of 32);
/// shared copies fused, split by their block's thread count and bound to threadIdx.x (half of
/// them with the innermost loop first split by the vector width, 4 or 2 for f16, and
/// vectorized, when the width divides it); tiled reductions get an
/// auto_unroll_max_step. Samples again (up to max_tries) while the threads per block, vthreads,
/// shared or register-tile bytes exceed the limits. Throws ScheduleError when no sample fits.
State sample_initial_gpu_state(const State& sketch, Rng& rng, const GpuSampleOptions& opts = {});

/// Why `s` breaks a limit of `opts` that sample_initial_gpu_state checks (threads per block and
/// vthreads of a root stage, one block's shared copies, one thread's register tile), or ""
/// when it fits. The default schedule and the GPU mutations keep their results within it.
std::string gpu_limit_violation(const State& s, const GpuSampleOptions& opts = {});

} // namespace tessera::sched
