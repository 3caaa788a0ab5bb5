// STABLE API (S2 builds on it).
//
// Lowering a schedule State to loop IR.
//
// - Each root stage is a loop nest over its iterators (outer to inner); the original axes are
//   recovered through the split/fuse relations (split: parent = sum(part * stride); fuse:
//   div/mod of the fused index).
// - Imperfect splits are guarded by IfThenElse on the recovered axis (`axis < extent`), placed
//   around the innermost code that needs them; then loop partitioning splits each loop whose
//   guards hold on a prefix of its range into a main loop over full tiles (guards removed) and
//   a remainder loop (guards kept), recursively for nested tiles; a parallel loop stays one
//   loop whose body branches between the two, and trailing iterations that provably do
//   nothing are dropped.
// - A stage computed at a loop of another is placed inside that loop, before the loops inside
//   it; it computes the region its readers need for one iteration (bounds inference: exact for
//   affine indices, the whole dimension otherwise) into an Allocate sized by the region (Stack
//   when at most `stack_limit_bytes`, Heap otherwise) indexed relative to the region's minimum.
// - Inlined stages are substituted into their readers.
// - A reduction stores the identity before its outermost reduce loop (so a register tile is
//   initialized inside its attach loop), then accumulates; a long float sum in a local tile
//   accumulates blocks of its outermost reduce loop into a second tile first
//   (LowerOptions::partial_sums).
// - Annotations become ForKind Parallel / Vectorized / Unrolled (GPU bindings: Serial, or the
//   GPU For kinds with LowerOptions::gpu; there a reduce loop bound to threadIdx.x lowers to a
//   cross-thread reduction, docs/CUDA.md); the auto_unroll_max_step pragma unrolls inner loops
//   with a small total trip count.
// The result passes ir::verify and lower::prepare_for_codegen.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/ir/stmt.h"
#include "tessera/schedule/state.h"

namespace tessera::sched {

struct LowerOptions {
    /// Attached and local buffers up to this size use MemoryScope::Stack; larger ones Heap.
    int64_t stack_limit_bytes = 16 * 1024;
    /// Split loops into guard-free full tiles and a guarded remainder.
    bool partition_loops = true;
    /// Simplify the result (constant folding, bounds-based guard removal).
    bool simplify = true;
    /// Lower for a GPU (the CUDA backend): BlockX..ThreadZ and VThread annotations become the
    /// GPU For kinds (Parallel becomes Serial); cache_read "shared" stages get
    /// MemoryScope::Shared and other attached or "local" stages MemoryScope::Local; root
    /// temporaries stay Heap (device memory). Loops are not partitioned: a thread-bound loop
    /// is one hardware index, so its imperfect tail stays a guard. Off: CPU lowering, unchanged.
    bool gpu = false;
    /// CPU: a float sum over 1024 terms or more, accumulated in a local (register) tile, adds
    /// its terms in blocks of at least 256, each summed from zero into a second tile and then
    /// added to the first: the rounding of a long sum grows about as sqrt(n b + n^2 / b) for
    /// blocks of b instead of as n. Off: one running sum (tests compare the two).
    bool partial_sums = true;
};

/// The loop IR of s. Parameters as lower::lower_default: s.compute.inputs in order, then
/// s.compute.outputs, one Buffer each with the tensor's name and dtype; an input with a
/// layout transform has the packed shape (pass data packed by layout.h pack_layout).
/// Throws ScheduleError when the state cannot be lowered: a vectorized loop wider than 64
/// lanes, unrolling that makes more than 4096 copies of a body, or a layout that pads an
/// attached region too much. Deterministic: the same state gives structurally equal IR.
ir::LoweredFunc lower_state(const State& s, const std::string& name, const LowerOptions& opts = {});

} // namespace tessera::sched
