// Random annotation of sketches (Ansor's initial population rules): a sketch (sketch.h) with
// placeholder split lengths becomes a complete schedule by
//   1. tile sizes: the sketch's steps are replayed with every Split step's lengths sampled
//      (imperfect sizes included, biased toward divisors of the split extent);
//   2. compute locations: each stage that is neither tiled nor an output is inlined, put at
//      root or computed at a loop of its single consumer (CPU);
//   3. parallel: the outer spatial loops of each root stage are fused up to about
//      16 x cores iterations (stopping at a loop with attached stages) and run in parallel;
//   4. unroll: a reduction stage gets pragma auto_unroll_max_step from a fixed menu;
//   5. vectorize: the innermost spatial loop (and, in an untiled stage, more inner loops
//      fused with it) up to the vector width is vectorized; in a tiled stage or a cache-read
//      copy, an innermost loop of 2 to 8 whole vectors is split by the vector width, the
//      vector-wide part vectorized and the other unrolled (a register tile of vectors);
//   6. panel widths: a panel layout (pack_panel, weight_blocked_tiling in sketch.h) gets the
//      width of its reader's register tile along the blocked dimension (panel_width_for).
// Every decision is a recorded Step, so the result replays from its step list alone. Given
// the sketch, the options and the Rng's state, the result is deterministic.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/schedule/state.h"
#include "tessera/support/error.h"
#include "tessera/support/rng.h"

namespace tessera::sched {

/// The default menu of SampleOptions::auto_unroll_configs: {0, 16, 64, 512}.
std::vector<int64_t> default_auto_unroll_configs();

/// Options of annotation and mutation, one documented default each. The defaults are fixed
/// (not read from the host) so that results do not depend on the machine; the CLI fills
/// num_cores and max_vectorize_lanes from backend::host_info().
struct SampleOptions {
    /// Cores of the target: parallel loops are fused up to 16 x num_cores iterations.
    int num_cores = 8;
    /// Vectorized loops have at most this many iterations (f32 lanes of the widest vector
    /// register: host vector_bits / 32).
    int64_t max_vectorize_lanes = 16;
    /// The innermost length of a sampled split is at most this.
    int64_t max_innermost_split_factor = 64;
    /// Probability that a sampled split length is a divisor of the extent still to split
    /// (a perfect tile); otherwise any value from 1 to that extent (imperfect tiles).
    double divisor_probability = 0.7;
    /// Probability that a sampled state drops the cache tile of its multi-level tiles: every
    /// spatial split into four parts (S S R S R S) gets a second-innermost part of 1, so that
    /// only the register tile is live across the outer reduce loops and its accumulators can
    /// stay in registers for the whole reduction. Independent sampling reaches that shape
    /// rarely (a factor of 1 on every axis at once), yet it is often the fastest: written by
    /// hand, it ran ResNet-18's 56x56 3x3 convolution 15-20% faster than the best of a
    /// 30-minute search without this rule. mutate_tile_size drops a cache tile with the same
    /// probability.
    double register_resident_probability = 0.25;
    /// The values of pragma auto_unroll_max_step to pick from.
    /// (Built out of line: GCC 12 reports a false -Wdangling-pointer on an inlined
    /// initializer-list member in some callers.)
    std::vector<int64_t> auto_unroll_configs = default_auto_unroll_configs();
    /// Whether annotation changes compute locations of untiled stages (step 2).
    bool change_compute_location = true;
};

/// A complete schedule from a sketch: sketch.steps replayed from make_initial_state
/// (sketch.compute) with sampled split lengths, then the compute location, parallel, unroll
/// and vectorize steps. Throws ScheduleError when a sampled step is illegal (rare: a
/// primitive or bounds inference rejects the combination); the caller samples again.
State sample_initial_state(const State& sketch, Rng& rng, const SampleOptions& opts = {});

/// Lengths for one Split step of `extent` into lengths_count + 1 parts (inner parts, outer
/// to inner, as Step::lengths): sampled innermost first, each a divisor of the extent left
/// to split with probability opts.divisor_probability, otherwise uniform in [1, extent left];
/// the innermost is at most opts.max_innermost_split_factor. Pre: extent >= 1.
std::vector<int64_t> sample_split_lengths(int64_t extent, size_t lengths_count, Rng& rng,
                                          const SampleOptions& opts);

/// The compute locations a stage may move to (Ansor's GetComputeLocationCandidates): loops
/// of its single consumer (looking through inlined stages) outside its inner tiles, and, when
/// that consumer is itself computed at a stage, that stage's loops outside the attach point.
/// Each entry is {stage, iter}. Empty when the stage has no single consumer.
std::vector<std::pair<int, int>> compute_location_candidates(const State& s, int stage);

/// Whether Step `step` (about to be applied to `s`) is a panel layout: a transform_layout of
/// an input, or of a cache-read copy of one, with exactly one dimension split (factor > 1)
/// whose inner part the order puts last while moving another dimension (pack_panel's
/// [N/w][K][w], weight_blocked_tiling's [K/b][C][R][S][b]).
bool is_panel_layout_step(const State& s, const Step& step);

/// The extent that stage r's loops of root axis `axis` (an index into r.axes) cover inside its
/// innermost reduce loop (its register tile's width along that axis; all of its loops when r
/// has no reduce loop).
int64_t register_tile_width(const Stage& r, int axis);

/// The panel width for dimension `dim` of stage `stage` (an input or a copy of one) in `s`:
/// the extent its single reader's loops cover along the reader axis that indexes that
/// dimension, counting only the loops inside the reader's innermost reduce loop (the register
/// tile, which reads one panel row per reduce step; all of them without a reduce loop),
/// clamped to
/// [min(max(max_vectorize_lanes, 2), extent), extent]. Throws ScheduleError when the stage has
/// no single reader that indexes the dimension with one of its axes.
int64_t panel_width_for(const State& s, int stage, int dim, const SampleOptions& opts);
/// The same for a step that is_panel_layout_step accepts (its split dimension).
int64_t panel_width_for(const State& s, const Step& step, const SampleOptions& opts);

/// Replays s.steps from make_initial_state(s.compute), giving every panel layout step the
/// width panel_width_for returns at that point (used after tile sizes change, so the panels
/// follow the register tile). Returns s itself when it has no transform_layout step.
State refresh_panel_widths(const State& s, const SampleOptions& opts);

/// Whether annotation and mutation may move `stage` (steps 2 above): a compute stage, not an
/// output, not inlined, not tiled, not needing multi-level tiling and in its default layout.
bool can_change_compute_location(const State& s, int stage);

} // namespace tessera::sched
