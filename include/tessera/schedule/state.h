// STABLE API (S2 builds on it): sketch rules, annotation sampling and mutations read and
// extend these types. Change only in backward-compatible ways.
//
// The schedule state of one Compute: its stages (inputs first, then the compute stages in
// topological order), each with its loop iterators (outer to inner), compute location,
// annotations and pragmas, plus the list of steps that made it. A State is a plain value:
// copying it is cheap (tensor and expression handles are shared, never mutated), and the
// primitives of schedule.h turn one State into the next. Lowering (lower_state.h) turns it into
// loop IR.
//
// Stage ids are indices into State::stages. Steps that add stages (cache_write, cache_read,
// rfactor) shift the ids of later stages, as in Ansor; steps recorded before keep the ids that
// were valid when they were applied, so replay is sequential. Iterator ids are indices into
// Stage::iters at the time a step is applied.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/schedule/step.h"
#include "tessera/te/compute.h"

namespace tessera::sched {

/// Whether an iterator walks a data-parallel (output) axis or a reduction axis.
enum class IterKind : uint8_t { Spatial, Reduce };
const char* to_string(IterKind k);

/// One loop of a stage: its extent and annotation. The extent of an attached stage's loop is
/// the extent of the region its consumer needs (bounds inference), not the tensor's extent.
struct Iterator {
    std::string name; ///< Hint: "i", "i.0", "i.1", "i.j.fused", ...
    int64_t extent = 1;
    IterKind kind = IterKind::Spatial;
    IterAnnotation annotation = IterAnnotation::None;
    int node = -1; ///< Internal: this loop's node in Stage::nodes (for lowering).
};

/// Where a stage's loop nest is placed.
enum class ComputeLocKind : uint8_t {
    Root,    ///< Its own loop nest at the top level of the function.
    Inlined, ///< No loops: its body is substituted into its consumers.
    At,      ///< Inside loop `iter` of stage `stage` (computed for each iteration of it).
};
const char* to_string(ComputeLocKind k);

struct ComputeLocation {
    ComputeLocKind kind = ComputeLocKind::Root;
    int stage = -1; ///< At only: the consumer-side stage whose loop holds this stage.
    int iter = -1;  ///< At only: the index of that loop in stage.iters (kept up to date).
};

/// Where a stage's buffer lives. Global: a function-level buffer (a param for inputs and
/// outputs, a heap temporary otherwise). Local: per-thread scratch (a Stack Allocate when
/// small, as a register tile). Shared: GPU shared memory (lowered as Local on CPUs).
enum class StageScope : uint8_t { Global, Local, Shared };
const char* to_string(StageScope s);

/// How a stage came to be.
enum class StageOrigin : uint8_t {
    Input,      ///< A placeholder of the Compute (no loops; only layout and cache_read apply).
    Original,   ///< A compute stage of the Compute.
    CacheWrite, ///< The stage cache_write made: it computes the original's body into a local
                ///< buffer.
    CacheRead,  ///< The stage cache_read made: a copy of another stage for some readers.
    Rfactor,    ///< The stage rfactor made: partial reductions over the factored axis.
};
const char* to_string(StageOrigin o);

/// A storage layout transform of a stage's buffer: split some dimensions, then permute the
/// resulting dimensions. Dimension d with factors[d] = f > 1 becomes two dimensions
/// (ceil(extent/f), f): index i becomes (i / f, i % f); factors[d] <= 1 keeps it. `order` lists
/// the resulting dimensions in their new order (a permutation; empty = keep the order).
/// Example: B[K][N] with factors {1, 16} gives [K][N/16][16]; order {1, 0, 2} stores it as the
/// panels [N/16][K][16]. Elements of the padding (when f does not divide the extent) are zero.
/// An empty transform (no factors, no order) is the identity (dense row-major).
struct LayoutTransform {
    std::vector<int64_t> factors;
    std::vector<int> order;
    bool is_identity() const;
    bool operator==(const LayoutTransform& o) const {
        return factors == o.factors && order == o.order;
    }
};

/// A node of a stage's iterator graph: a root axis (the tensor's spatial axes first, then the
/// reduce axes of its body) or an iterator made by split or fuse. Internal to lowering.
struct IterNode {
    std::string name;
    int64_t extent = 1;
    IterKind kind = IterKind::Spatial;
    /// A split part's given length (0: a root, a fused node or a split's ceiling part). Its
    /// extent is this length clamped to what is left of the parent (see recompute_extents).
    int64_t length = 0;
};

/// How iterator nodes derive from one another. Split: inputs = {parent}, outputs = parts
/// outer to inner, parent = sum(part_k * stride_k) (a guard `parent < extent` keeps
/// imperfect splits exact). Fuse: inputs = fused nodes outer to inner, outputs = {fused}.
struct IterRelation {
    enum class Kind : uint8_t { Split, Fuse };
    Kind kind = Kind::Split;
    std::vector<int> inputs, outputs;
    /// Split only: true when outputs[0] takes the ceiling extent (lengths given for the inner
    /// parts), false when outputs.back() does.
    bool inner_to_outer = true;
};

/// One stage: a tensor computed by a loop nest (or an input).
struct Stage {
    /// The stage's identity: other stages read it through TensorRead of this tensor. Gives the
    /// name, shape and dtype. Never changes for a given stage.
    ir::Tensor tensor;
    /// The current definition (undefined body for inputs): element at `axes` is `body`, which
    /// may be one top-level Reduce. Starts as the tensor's own; cache_write, cache_read and
    /// rfactor rewrite it (consumers keep reading `tensor`).
    std::vector<ir::Var> axes;
    ir::Expr body;
    /// Reductions made by rfactor over an imperfect split: accumulate only where this holds
    /// (over axes and the reduce variables); undefined means always.
    ir::Expr predicate;
    /// The loops, outer to inner. Empty for inputs.
    std::vector<Iterator> iters;
    ComputeLocation location;
    /// Pragma auto_unroll_max_step: inner loops of this stage whose total trip count is at
    /// most this many are unrolled (0 = off). On a local cache_write stage it also unrolls,
    /// within the same count, the loops of the stage that reads the tile back (those inside
    /// the loop the tile is computed at), so the tile stays in registers.
    int64_t auto_unroll_max_step = 0;
    StageScope scope = StageScope::Global;
    StageOrigin origin = StageOrigin::Original;
    /// Storage layout of the stage's buffer (inputs: packed ahead of time; see layout.h).
    LayoutTransform layout;

    /// Internal: the iterator graph (roots first: one node per axis, then per reduce axis).
    std::vector<IterNode> nodes;
    std::vector<IterRelation> relations;

    bool is_input() const { return origin == StageOrigin::Input; }
    /// True when the body is a Reduce.
    bool has_reduce() const;
    /// The reduce axes of the body (empty without a Reduce).
    std::vector<ir::IterVar> reduce_axes() const;
    /// Index of the leaf iterator whose node is `node`, or -1.
    int iter_of_node(int node) const;
};

/// The schedule state of a Compute.
struct State {
    te::Compute compute;
    std::vector<Stage> stages;
    std::vector<Step> steps; ///< The steps applied so far, in order (replay input).

    // ---- Lookup -------------------------------------------------------------------------------
    /// The id of the stage whose tensor is `t`, or -1.
    int stage_id_of(const ir::Tensor& t) const;
    /// The id of the first stage named `name`, or -1.
    int stage_id_of(const std::string& name) const;
    /// Throws ScheduleError (naming `what`) unless 0 <= stage < stages.size().
    const Stage& stage(int stage_id, const char* what = "stage") const;

    // ---- Data flow (direct, through the current bodies) ------------------------------------
    /// Stages whose body reads stage `sid` (ascending ids).
    std::vector<int> consumers(int sid) const;
    /// Stages that stage `sid`'s body reads (ascending ids).
    std::vector<int> producers(int sid) const;
    /// Consumers, looking through inlined stages (an inlined consumer is replaced by its own
    /// consumers, recursively): the stages whose loop nests actually read sid's values.
    std::vector<int> consumers_through_inlined(int sid) const;
    /// Producers, looking through inlined stages.
    std::vector<int> producers_through_inlined(int sid) const;
    /// The stage whose tensor the loop nests read in place of input stage `sid`: its one
    /// consumer when that consumer only widens it, element by element (same shape, each
    /// element a Cast of the same element of sid: a weight stored in f16 and read as f32,
    /// graph::Value::stored_f16); otherwise sid itself. Rules that find a weight by its reads
    /// look through that stage (which is inlined into its readers).
    int read_view(int sid) const;

    // ---- Stage analysis (Ansor's access analysis, in our terms) ----------------------------
    bool is_output(int sid) const;
    bool is_input(int sid) const;
    /// A compute stage without reduction whose reads all index with plain axis variables
    /// (plus constant offsets, each axis at most once per read) and whose body has no
    /// Select and no expensive call (exp, log, tanh, erf, pow, sqrt): inlining it is free.
    bool is_strict_inlinable(int sid) const;
    /// A compute stage without reduction (elementwise or any injective map).
    bool is_injective(int sid) const;
    /// True when some consumer reinterprets stage sid's elements as words (bytes_as_word of a
    /// read of it reads the elements after the one indexed, in memory): the stage must stay
    /// in memory, never inlined.
    bool is_read_as_words(int sid) const;
    /// A stage with data reuse that wants multi-level tiling: some read leaves out two or more
    /// spatial axes of extent > 1, or leaves out one while the stage reduces (matmul, conv;
    /// not elementwise ops).
    bool needs_multi_level_tiling(int sid) const;
    /// True when `consumer` reads `producer` exactly at its own axes (same shape, indices are
    /// the consumer's axes in order) in every read: a consumer that can follow producer tiles.
    /// Index 0 on an axis of extent 1 counts as that axis (a broadcasting op reads a unit
    /// batch dim so: MatMul [1, M, K] x [K, N] + bias).
    bool elementwise_match(int producer, int consumer) const;
    /// Stages computed at some loop of `sid` (ascending ids).
    std::vector<int> attached_stages(int sid) const;
    /// Stages computed at loop `iter` of `sid` (ascending ids).
    std::vector<int> attached_at(int sid, int iter) const;
    /// Product of the extents of the spatial (reduce) iterators of the stage.
    int64_t spatial_size(int sid) const;
    int64_t reduce_size(int sid) const;
};

/// The initial state of c: one input stage per c.inputs (in order), then one stage per
/// c.stages (in order), each at Root with one iterator per axis (spatial axes, then the reduce
/// axes), no steps. Deterministic.
State make_initial_state(const te::Compute& c);

/// A readable dump of the loop structure (for messages, logs and tests), e.g.
///   C: for i.0 (8) parallel / for j.0 (4) / C.local@j.0 ... / for i.1 (6) ...
/// Stable across runs (no addresses).
std::string to_string(const State& s);

} // namespace tessera::sched
