// Mutations of complete schedules (Ansor's evolutionary-search mutation rules). Each takes a
// State made by sample_initial_state (or an earlier mutation), edits one decision in its step
// list and replays the steps from make_initial_state(s.compute), so the result is again a
// plain step list. Each returns the new state or throws ScheduleError when the state has
// nothing to mutate of that kind or the edited steps do not replay. Deterministic given the
// Rng's state.
//
// Tile size and compute location changes resize the loops of attached stages: a vectorized
// loop that grows wider than max(max_vectorize_lanes, max_innermost_split_factor) loses its
// vectorize annotation (the rest of the schedule stays).
#pragma once

#include <optional>

#include "tessera/schedule/gpu_sampling.h"
#include "tessera/schedule/sampling.h"
#include "tessera/schedule/state.h"
#include "tessera/support/error.h"
#include "tessera/support/rng.h"

namespace tessera::sched {

/// Picks a Split step and either moves a divisor factor of one part to another (the extent
/// stays covered, Ansor's MutateTileSize) or, with probability 1 - divisor_probability,
/// resamples one length freely (imperfect tiles). The innermost length stays at most
/// opts.max_innermost_split_factor. With probability opts.register_resident_probability it
/// instead drops the cache tile of one multi-level tiled stage (every four-part spatial split
/// of it gets a second-innermost part of 1, the factor moving outward), when one has a cache
/// tile. Splits that follow it (follow_split) follow, and so do the widths of packed panels
/// (refresh_panel_widths in sampling.h).
State mutate_tile_size(const State& s, Rng& rng, const SampleOptions& opts = {});

/// Gives one pragma auto_unroll_max_step another value of opts.auto_unroll_configs.
State mutate_auto_unroll(const State& s, Rng& rng, const SampleOptions& opts = {});

/// Moves one stage that annotation placed (a compute_at or compute_root step, or a
/// compute_inline of a stage that is not strictly inlinable) to another of its locations:
/// inline, root, or a compute_location_candidates entry. When it becomes inlined, the later
/// steps on it (its parallel and vectorize annotations) are dropped.
State mutate_compute_location(const State& s, Rng& rng, const SampleOptions& opts = {});

/// Changes how many outer loops one parallel loop fuses (Ansor's MutateParallel); later steps
/// on the stage have their iterator ids shifted accordingly.
State mutate_parallel(const State& s, Rng& rng, const SampleOptions& opts = {});

/// Relative weights of the mutations in `mutate` (Ansor's CPU weights).
struct MutationWeights {
    double tile_size = 0.90;
    double auto_unroll = 0.04;
    double compute_location = 0.05;
    double parallel = 0.01;
};

/// Picks a mutation by weight and applies it: the new state, or nullopt when that mutation
/// threw ScheduleError (nothing to mutate, or an illegal result). Deterministic.
std::optional<State> mutate(const State& s, Rng& rng, const SampleOptions& opts = {},
                            const MutationWeights& weights = {});

// ---- GPU mutations (schedule/search_space/mutate_gpu.cpp) -----------------------------------
// For states made by sample_initial_gpu_state, default_schedule with TargetKind::Gpu, or an
// earlier GPU mutation. Like the CPU mutations, each edits one decision, replays the steps
// and throws ScheduleError when there is nothing of its kind to mutate or no edit fits; every
// result fits the limits of `opts` (gpu_limit_violation), so threads per block, vthreads,
// shared copies and register tiles stay within the device's.

/// Whether s binds some loop to GPU hardware (blockIdx, vthread, threadIdx): a GPU state.
bool is_gpu_state(const State& s);

/// s replayed with every cooperative fetch (the one-length Split of a shared copy whose inner
/// part the next step binds to threadIdx.x) re-split by its block's thread count at that point
/// of the replay: what keeps the fetches consistent after the block's thread extent changes.
/// Throws ScheduleError when a step does not replay.
State refresh_cooperative_fetch(const State& s);

/// Picks a multi-level tiling Split (two or more lengths: block, vthread, thread and register
/// levels, or reduce levels) and moves a divisor factor of one part to another, or with
/// probability 0.3 resamples one inner length freely (imperfect tiles); then replays with the
/// cooperative fetches refreshed. Draws again, up to opts.max_tries times, while the result
/// breaks a limit or does not replay.
State mutate_gpu_tile_size(const State& s, Rng& rng, const GpuSampleOptions& opts = {});

/// Gives one pragma auto_unroll_max_step another value of opts.auto_unroll_configs.
State mutate_gpu_auto_unroll(const State& s, Rng& rng, const GpuSampleOptions& opts = {});

/// Gives one root stage another thread count: an untiled stage bound blockIdx.x x threadIdx.x
/// (the one-length Split of its fused loop) a value of opts.elementwise_threads (capped by the
/// loop's extent); a cross-thread reduction (its reduce loop's split) another number of whole
/// warps up to opts.max_reduce_threads.
State mutate_gpu_thread_count(const State& s, Rng& rng, const GpuSampleOptions& opts = {});

/// Relative weights of the GPU mutations (Ansor's GPU weights: tile sizes 0.9, unroll 0.1; the
/// unroll share is split with the thread count of untiled stages).
struct GpuMutationWeights {
    double tile_size = 0.90;
    double auto_unroll = 0.05;
    double thread_count = 0.05;
};

/// Picks by weight among the GPU mutations that have something to mutate in s (an elementwise
/// state only changes thread counts) and applies it: the new state, or nullopt when none
/// applies or the picked one threw ScheduleError. Deterministic given the Rng's state.
std::optional<State> mutate_gpu(const State& s, Rng& rng, const GpuSampleOptions& opts = {},
                                const GpuMutationWeights& weights = {});

} // namespace tessera::sched
