// Rule-based default schedules: what `build` uses for a task without a tuning record, so that
// an untuned model is already fast enough to use (never the naive loop nest).
//
// Built from the sketch rules (sketch.h) without randomness, chosen from the Compute's
// structure (not from op names):
//   - a stage that needs multi-level tiling (conv2d, NCHW[x]c conv, depthwise, dense, matmul,
//     batch matmul): the "SSRSRS" tiling fused into its consumer (or a local cache) at the
//     register-tile level, with fixed lengths: a register tile of 1-4 vectors along the
//     innermost axis (a marked weight's output channels, blocked [K/b]...[b]; else the
//     contiguous axis) by up to 8 rows of the next axis, sized to the register file; channel
//     blocks added when the vector axis is shorter than two vectors (NCHW[x]c); a cache tile
//     of up to 2048 elements around it: a conv's window loops inside the register tile and
//     its rows (an axis the weight leaves out) repeated, or, for a long reduction without a
//     window (matmul, dense, 1x1 conv), rows of the width axis with the reduction cut into
//     chunks of 256; matmul's activation B packed into panels; auto_unroll_max_step 512;
//   - other reductions (pools, softmax, layer norm, reduce ops) and injective stages:
//     strictly inlinable stages inlined, the innermost spatial loop vectorized (split by the
//     vector width when longer), the outer spatial loops fused and parallel;
//   - in every root stage with at least 4096 loop iterations, the outer spatial loops are
//     fused and parallel up to 16 x num_cores iterations.
// Sketches are ranked (blocked weight, fused tile, packed panel; one that re-lays out an
// activation last) and the first that fills and lowers wins; when none does, the default nest
// with inlining and vectors, then without inlining, then with only parallel outer loops, then
// the bare default nest. The result always lowers for a Compute that lower_default handles.
#pragma once

#include <vector>

#include "tessera/schedule/sketch.h"
#include "tessera/schedule/state.h"
#include "tessera/te/compute.h"

namespace tessera::sched {

struct DefaultScheduleOptions {
    TargetKind target = TargetKind::Cpu; ///< Only Cpu so far.
    int num_cores = 8;                   ///< Parallel loops get at least 4 x this many iterations when the extent allows.
    int64_t vector_lanes = 8;            ///< f32 lanes of the widest vector register (8: AVX2, 16: AVX-512).
    /// As SketchOptions::weight_inputs; empty: the Compute's own (te::Compute::weight_inputs).
    std::vector<int> weight_inputs;
};

/// The default schedule of c. Deterministic (no randomness, no host queries: the caller passes
/// the cores and vector width). Post: lower_state of the result succeeds, and the result
/// replays from its steps (steps_to_json / replay). Never throws ScheduleError; throws
/// InternalError for a target other than Cpu.
State default_schedule(const te::Compute& c, const DefaultScheduleOptions& opts = {});

} // namespace tessera::sched
