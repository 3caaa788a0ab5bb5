// Sketch generation (Ansor's sketch rules): the high-level loop structures a search starts
// from. A sketch is a State whose steps fix the structure (which stages are inlined, tiled,
// fused into a consumer, cached or rfactored) while its split lengths are placeholders (all 1);
// annotation (sampling.h) fills them in and adds parallel, vectorize, unroll and compute
// location decisions.
//
// Generation walks the stages from the last to the first, keeping a frontier of
// (state, stage) pairs. At each pair the rules are tried in order: a rule whose check says
// Apply contributes its states and lets the later rules apply too (a branch), ApplyAndSkipRest
// contributes and stops there, Skip passes. A pair whose stage id is below 0 is a finished
// sketch. The result is deterministic (no randomness, no host queries).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/schedule/state.h"
#include "tessera/support/error.h"
#include "tessera/te/compute.h"

namespace tessera::sched {

/// Which kind of machine the sketches are for; the rules differ (Ansor's CPU and GPU lists).
enum class TargetKind : uint8_t { Cpu, Gpu };
const char* to_string(TargetKind k);

/// Options of sketch generation, one documented default each.
struct SketchOptions {
    TargetKind target = TargetKind::Cpu; ///< The rule list (CPU or GPU).
    /// Cores of the target: a stage whose spatial size is at most 16 x cores (and at most its
    /// reduce size) gets rfactor sketches; an untiled reduction gets them when its reduce size
    /// is above the core count. A fixed default keeps sketches independent of the host; the CLI
    /// passes the host's count.
    int num_cores = 8;
    /// Multi-level tiling structure for CPUs: S = a level of every spatial loop, R = a level
    /// of every reduce loop, outermost first.
    std::string cpu_tiling_structure = "SSRSRS";
    /// The same for GPUs (used once the GPU rules exist).
    std::string gpu_tiling_structure = "SSSRRSRS";
    /// Spatial tile levels under which a tiled producer is computed inside its fused
    /// elementwise consumer (CPU: after the 1st or the 2nd level).
    std::vector<int> cpu_fusion_levels = {1, 2};
    /// Indices into Compute::inputs of the weights (te::OpInstance::weight_inputs; in a model,
    /// the initializers): only these may be stored in a blocked layout, which the measurer and
    /// the built model prepare once outside the timed call (layout.h). Empty: no input is.
    std::vector<int> weight_inputs;
};

/// What a rule's check says about a (state, stage) pair.
enum class RuleCondition : uint8_t {
    Skip,             ///< Does not apply.
    Apply,            ///< Applies; later rules may apply too (the sketch branches).
    ApplyAndSkipRest, ///< Applies; no later rule is tried for this pair.
};
const char* to_string(RuleCondition c);

/// One result of a rule: the new state and the stage at which generation continues (usually
/// stage - 1; a rule that inserts a stage to be processed next, such as cache write, returns
/// the same id).
struct SketchCandidate {
    State state;
    int next_stage = -1;
};

/// A sketch derivation rule: check then apply (one rule per file in schedule/sketch/).
class SketchRule {
  public:
    virtual ~SketchRule() = default;
    /// A short stable name ("always_inline", "multi_level_tiling", ...), for logs and tests.
    virtual const char* name() const = 0;
    /// Whether the rule applies to stage `stage` of `s`. Pre: 0 <= stage < s.stages.size().
    virtual RuleCondition check(const State& s, int stage) const = 0;
    /// The states the rule derives (called only after check said Apply or ApplyAndSkipRest).
    /// Throws ScheduleError only if a primitive rejects a step the check allowed (a bug in the
    /// rule's check, reported by generate_sketches as such).
    virtual std::vector<SketchCandidate> apply(const State& s, int stage) const = 0;
};

using SketchRules = std::vector<std::unique_ptr<SketchRule>>;

// ---- The rules (each in its own file under schedule/sketch/) -------------------------------

/// Inlines a compute stage that is not an output and has no reduction: on CPUs only strictly
/// inlinable stages (State::is_strict_inlinable), on GPUs every injective one.
/// ApplyAndSkipRest.
std::unique_ptr<SketchRule> make_always_inline_rule(const SketchOptions& opts);
/// Multi-level tiling of a stage that needs it (State::needs_multi_level_tiling): every
/// spatial loop split into as many levels as the structure has S, every reduce loop into as
/// many as it has R, then reordered by the structure (CPU "SSRSRS": S0 S1 R0 S2 R1 S3).
/// ApplyAndSkipRest.
std::unique_ptr<SketchRule> make_multi_level_tiling_rule(const SketchOptions& opts);
/// Multi-level tiling of a stage with exactly one consumer (looking through inlined stages)
/// that reads it elementwise: the consumer follows the stage's outer spatial tiles
/// (follow_split), and the stage is computed at the consumer's tile loop of each fusion
/// level. ApplyAndSkipRest for a cache-write stage (and on GPUs), Apply otherwise.
std::unique_ptr<SketchRule> make_multi_level_tiling_with_fusion_rule(const SketchOptions& opts);
/// A stage that needs multi-level tiling but has no fusible consumer gets a local cache
/// (cache_write "local"); generation revisits the same id, now the cache stage, which then
/// fuses into the copy-out. Apply on CPUs (the uncached variant remains), ApplyAndSkipRest on
/// GPUs.
std::unique_ptr<SketchRule> make_add_cache_write_rule(const SketchOptions& opts);
/// Rfactor of a reduction with little spatial parallelism and a long reduction (Ansor's
/// NeedsRfactor): the reduce loops are fused, split once, and either part is factored out
/// (two sketches; the inner-part one moves the factored axis innermost). Apply.
std::unique_ptr<SketchRule> make_add_rfactor_rule(const SketchOptions& opts);
/// Panel packing of an input read by a tiled reduction along the reader's innermost spatial
/// axis (matmul's B[k][j]): a cache_read copy (inside the call) stored by transform_layout as
/// [J/w][K][w] (the panel dimension placed before the first dimension read by a reduce axis),
/// w a placeholder that annotation sets to the reader's register-tile width
/// (panel_width_for in sampling.h). Inputs with a last dimension under 32 are left alone.
/// Apply (the unpacked variant remains).
std::unique_ptr<SketchRule> make_pack_panel_rule(const SketchOptions& opts);
/// Tiling around a vector of weights (conv2d's output channels, dense's output features): a
/// cache-write stage (or a stage with a fusible elementwise consumer) that reads a weight input (SketchOptions::weight_inputs) at one
/// dimension by a spatial axis `a` (and at the others by reduce axes or constants) is
/// multi-level tiled with `a` innermost in every spatial level, fused into its copy-out at
/// each CPU fusion level (the copy-out's levels ordered the same way), stored with `a` as its
/// last dimension (a register tile of dense vectors along `a`), and the weight is blocked
/// along that dimension, [K/b][C][R][S][b] for OIHW filters, b a placeholder that annotation
/// sets to the register tile's extent along `a` (panel_width_for). Apply (the plain tilings
/// remain); placed before multi_level_tiling_with_fusion.
std::unique_ptr<SketchRule> make_weight_blocked_tiling_rule(const SketchOptions& opts);
/// Moves to the previous stage unchanged. Always Apply (the last rule).
std::unique_ptr<SketchRule> make_skip_stage_rule(const SketchOptions& opts);

/// The rules for opts.target in order. CPU: always_inline, add_rfactor, add_cache_write,
/// weight_blocked_tiling, multi_level_tiling_with_fusion, multi_level_tiling, pack_panel,
/// skip_stage. Gpu: gpu_shared_computed_read (gpu_sampling.h), always_inline,
/// gpu_cross_thread_reduction (gpu_sampling.h),
/// add_cache_write, multi_level_tiling_with_fusion, multi_level_tiling,
/// gpu_shared_cache_read, skip_stage.
SketchRules make_default_sketch_rules(const SketchOptions& opts);

/// The sketches of c with the default rules for opts.target.
std::vector<State> generate_sketches(const te::Compute& c, const SketchOptions& opts = {});
/// The sketches of c with the given rules, starting from make_initial_state(c). Throws
/// InternalError when a rule's apply fails after its check passed, or when the frontier grows
/// beyond a sanity bound (a rule that never moves on).
std::vector<State> generate_sketches(const te::Compute& c, const SketchRules& rules);

// ---- Helpers shared by rules, annotation and tests -----------------------------------------

/// The single stage that consumes `sid` (looking through inlined stages) and reads it
/// elementwise (State::elementwise_match along the chain of inlined single-consumer stages in
/// between), or -1. The consumer must be an injective stage at root with untouched loops.
int fusible_consumer(const State& s, int sid);

/// Splits every loop of `stage` (at root, untouched) by the structure and reorders (see
/// make_multi_level_tiling_rule), with placeholder lengths 1. Returns the indices in s.steps of
/// the spatial loops' Split steps, in axis order (the follow_split sources of a fused
/// consumer). Throws ScheduleError when a primitive rejects a step, or the structure has a
/// letter other than S and R or no S.
std::vector<int> multi_level_tile(State& s, int stage, const std::string& structure);

/// Reorders the loops of `rf`, a stage that rfactor made (its spatial axes, the factored
/// axis, then the remaining reduce loops), so that the factored axis is innermost, inside the
/// remaining reduce loops: each of its steps accumulates a vector of partials. Throws
/// ScheduleError when `rf` was not made by rfactor.
void move_factored_axis_innermost(State& s, int rf);

/// True when a stage was tiled by a split (it has split relations).
bool is_tiled(const Stage& st);

} // namespace tessera::sched
