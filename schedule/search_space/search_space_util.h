// Internal helpers of annotation and mutation: divisors, weighted picks, step-list edits,
// split-length mutation, and the GPU bindings that the GPU annotation, the GPU mutations and
// the GPU default schedule (schedule/default) share.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/schedule/gpu_sampling.h"
#include "tessera/schedule/state.h"
#include "tessera/support/rng.h"

namespace tessera::sched::detail {

/// The divisors of n (n >= 1), ascending.
std::vector<int64_t> divisors(int64_t n);

/// A uniformly chosen element. Pre: !v.empty().
template <typename T> const T& pick(const std::vector<T>& v, Rng& rng) {
    return v[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(v.size()) - 1))];
}

/// The state after the first n steps (replayed from make_initial_state(c)).
State replay_prefix(const te::Compute& c, const std::vector<Step>& steps, size_t n);

/// Applies steps[from...] to `s` (which holds the state after steps[0, from)).
State replay_rest(State s, const std::vector<Step>& steps, size_t from);

/// replay_rest, then: when a vectorized loop of the result is wider than max_lanes (a tile or
/// a region that a mutation made larger than the sampler ever vectorizes), the Annotate
/// (Vectorize) steps from `from` on of that loop's stage are dropped and the rest replayed
/// again.
State replay_rest_limiting_vectors(const State& s, std::vector<Step> steps, size_t from,
                                   int64_t max_lanes);

/// New inner lengths for a split of `extent` into `lengths` (the inner parts; the outer part
/// is the ceiling of what they leave), for the tile-size mutations. With probability
/// `divisor_probability` a divisor factor d > 1 of one part (position 0 is the outer part) is
/// moved to another part, so a perfect tile stays perfect; otherwise one inner length is
/// resampled freely, keeping the product within about the extent. May return `lengths`
/// unchanged (when no part has a factor to move). Pre: !lengths.empty(), all lengths >= 1.
std::vector<int64_t> mutate_split_lengths(int64_t extent, std::vector<int64_t> lengths,
                                          double divisor_probability, Rng& rng);

/// Removes steps[idx]; follow_split sources after it are renumbered. Throws ScheduleError when
/// a later follow_split follows the removed step.
void erase_step(std::vector<Step>& steps, size_t idx);

/// Inserts `st` before steps[idx]; follow_split sources at or after idx are renumbered.
void insert_step(std::vector<Step>& steps, size_t idx, Step st);

/// The root stage whose loops contain stage sid (sid itself when at root). Pre: sid is a
/// stage of s.
int root_stage(const State& s, int sid);

/// Product of the extents of a stage's iterators annotated `a` (1 when none).
int64_t annotated_product(const Stage& st, IterAnnotation a);

/// The thread count of the block that runs stage sid: the product of the threadIdx.x extents
/// of its root stage (1 when none).
int64_t block_threads(const State& s, int sid);

/// The most whole warps a cross-thread reduction over `extent` iterations may use: up to
/// opts.max_reduce_threads (at least one warp) and to the extent rounded up to a warp; >= 1.
int64_t max_reduce_warps(int64_t extent, const GpuSampleOptions& opts);

/// Fuses the iterators [first, first + count) of stage sid (count >= 1); returns the fused
/// iterator's id (`first` itself when count is 1).
int fuse_run(State& s, int sid, int first, int count);

/// Whether steps[i], about to be applied to `s`, is the split of a cross-thread reduction
/// (gpu_cross_thread_reduction): one length, of a reduce iterator, its inner part bound to
/// threadIdx.x by the next step. False for a step naming a missing stage or iterator.
bool is_cross_thread_split(const State& s, const std::vector<Step>& steps, size_t i);

/// Binds a tiled root stage: its first three spatial tile levels become blockIdx.x, vthread
/// and threadIdx.x (one fused loop each). Throws ScheduleError when the stage does not start
/// with three spatial tile levels.
void bind_tiled(State& s, int sid);

/// Binds a cross-thread reduction at root: its spatial loops (all before the reduce ones)
/// fused and bound to blockIdx.x, one block per output element; the reduce part is already
/// bound to threadIdx.x by the sketch.
void bind_cross_thread(State& s, int sid);

/// Cooperative fetching of a shared copy (stage sid) by the `threads` threads of its block:
/// its loops fused, split by `threads`, the inner part bound to threadIdx.x. With
/// vector_width > 0 (pre: it divides the innermost loop's extent) the innermost loop is first
/// split by that width and its inner part vectorized, so that each thread and step copies one
/// vector.
void bind_cooperative_fetch(State& s, int sid, int64_t threads, int64_t vector_width);

} // namespace tessera::sched::detail
