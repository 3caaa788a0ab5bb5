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

#include "tessera/schedule/sampling.h"
#include "tessera/schedule/state.h"
#include "tessera/support/error.h"
#include "tessera/support/rng.h"

namespace tessera::sched {

/// Picks a Split step and either moves a divisor factor of one part to another (the extent
/// stays covered, Ansor's MutateTileSize) or, with probability 1 - divisor_probability,
/// resamples one length freely (imperfect tiles). The innermost length stays at most
/// opts.max_innermost_split_factor. Splits that follow it (follow_split) follow, and so do
/// the widths of packed panels (refresh_panel_widths in sampling.h).
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

} // namespace tessera::sched
