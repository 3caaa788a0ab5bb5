// STABLE API (S2 builds on it).
//
// A schedule step as plain data, and the versioned JSON form of a step list (what the tuning
// database stores and `build` replays). A Step names stages and iterators by index at the time
// it is applied (see state.h). Applying steps is schedule.h's job; this header only holds the
// data and its serialization.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::sched {

/// The annotation of one loop. GPU bindings (Block*, VThread, Thread*) are recorded and kept
/// by every step; the CPU lowering runs them as serial loops.
enum class IterAnnotation : uint8_t {
    None,
    Parallel,
    Vectorize,
    Unroll,
    BlockX,
    BlockY,
    BlockZ,
    VThread,
    ThreadX,
    ThreadY,
    ThreadZ,
    /// The root of a loop nest of 8-bit products that the CPU runs on matrix tiles (AMX):
    /// the loops inside it (reduce loops, then rows, columns and words of the tiles) become
    /// one TileMatmul (ir/tile_matmul.h); a nest that does not fit is a ScheduleError.
    TileMatmul,
    /// GPU only: the root of a loop nest of one warp's tensor-core product (the k step, then
    /// the accumulator's row and column halves, inside a threadIdx.x loop of 32 lanes): it
    /// becomes one WarpMma (ir/warp_mma.h); a nest that does not fit is a ScheduleError.
    WarpMma,
    /// GPU only: a serial loop (the outer reduce loop where shared copies are attached) whose
    /// copies are loaded from global memory one iteration ahead, into registers
    /// (lower/pipeline_fetches.h). On CPUs a plain loop.
    Pipeline,
};
/// "none", "parallel", "vectorize", "unroll", "blockIdx.x", ..., "vthread", "threadIdx.x", ...,
/// "tile_matmul", "warp_mma", "pipeline"
const char* to_string(IterAnnotation a);
/// Parses to_string's names; throws UserError on an unknown name.
IterAnnotation parse_iter_annotation(const std::string& s);
/// True for the GPU bindings: blockIdx.*, vthread, threadIdx.*.
bool is_gpu_binding(IterAnnotation a);

enum class StepKind : uint8_t {
    Split,           ///< stage, iter, lengths, inner_to_outer
    FollowSplit,     ///< stage, iter, src_step, n_split
    Fuse,            ///< stage, iters (consecutive, outer to inner)
    Reorder,         ///< stage, iters (the new order: a permutation of all iterator ids)
    Annotate,        ///< stage, iter, annotation
    Pragma,          ///< stage, iter, pragma ("auto_unroll_max_step"), value
    ComputeAt,       ///< stage, target_stage, target_iter
    ComputeInline,   ///< stage
    ComputeRoot,     ///< stage
    CacheWrite,      ///< stage, scope
    CacheRead,       ///< stage, scope, readers
    Rfactor,         ///< stage, iter
    TransformLayout, ///< stage, lengths (per-dimension factors), iters (dimension order)
};
/// "split", "follow_split", "fuse", "reorder", "annotate", "pragma", "compute_at",
/// "compute_inline", "compute_root", "cache_write", "cache_read", "rfactor", "transform_layout".
const char* to_string(StepKind k);
/// Parses to_string's names; throws UserError on an unknown name.
StepKind parse_step_kind(const std::string& s);

/// One step. Only the fields listed for its kind in StepKind are meaningful; the others keep
/// their defaults (and are neither serialized nor compared).
struct Step {
    StepKind kind = StepKind::Split;
    int stage = -1;
    int iter = -1;
    /// Fuse: the fused ids; Reorder: the new order; TransformLayout: the dimension order.
    std::vector<int> iters;
    /// Split: the lengths of the inner parts, outer to inner (see schedule.h split);
    /// TransformLayout: per-dimension split factors.
    std::vector<int64_t> lengths;
    bool inner_to_outer = true;                       ///< Split.
    IterAnnotation annotation = IterAnnotation::None; ///< Annotate.
    std::string pragma;                               ///< Pragma name.
    int64_t value = 0;                                ///< Pragma value.
    int src_step = -1;        ///< FollowSplit: index of the Split step to follow.
    int n_split = 0;          ///< FollowSplit: number of lengths to take (parts - 1).
    int target_stage = -1;    ///< ComputeAt.
    int target_iter = -1;     ///< ComputeAt.
    std::string scope;        ///< CacheWrite / CacheRead: "local", "shared" or "global".
    std::vector<int> readers; ///< CacheRead: stage ids of the readers to redirect.

    /// Equality of the fields that are meaningful for the kind.
    bool operator==(const Step& o) const;
    bool operator!=(const Step& o) const { return !(*this == o); }
};

/// A one-line readable form, e.g. `split(stage=2, iter=0, lengths=[4, 16], inner_to_outer)`.
std::string to_string(const Step& s);

/// The version written by steps_to_json and the only one steps_from_json reads.
constexpr int kStepsJsonVersion = 1;

/// {"version": 1, "steps": [{"kind": "split", "stage": 2, "iter": 0, "lengths": [4, 16],
/// "inner_to_outer": true}, ...]}: each step with its kind name and its meaningful fields
/// (scope as text, annotation by name). Compact (one line), deterministic key order.
std::string steps_to_json(const std::vector<Step>& steps);

/// Parses steps_to_json's format. Throws UserError naming the reason when the text is not
/// JSON, the version is missing or not kStepsJsonVersion, a step kind is unknown, or a field
/// is missing or has the wrong type. Semantic checks (ids, lengths) happen at replay
/// (ScheduleError).
std::vector<Step> steps_from_json(const std::string& text);

} // namespace tessera::sched
