// default_schedule: the schedule `build` uses for a task without a tuning record. Sketches of
// a reduced rule list (no rfactor, tiles fused at the register-tile level only) are ranked by
// how much structure they carry, filled with fixed tile sizes and annotated; the first that
// lowers wins. When none does, simpler schedules follow, down to the default nest with its
// outer loops parallel, so a Compute that lowers at all gets a schedule.
#include <algorithm>

#include "default_rules.h"
#include "tessera/schedule/default_schedule.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/schedule.h"
#include "tessera/support/error.h"

namespace tessera::sched {

namespace {

/// The register tile is the innermost spatial level of "SSRSRS"; fusing the tile into its
/// consumer at level 2 keeps the local buffer one register tile.
constexpr int kRegisterTileFusionLevel = 2;

SketchRules default_rules(const SketchOptions& opts) {
    SketchRules rules;
    rules.push_back(make_always_inline_rule(opts));
    rules.push_back(make_add_cache_write_rule(opts));
    rules.push_back(make_weight_blocked_tiling_rule(opts));
    rules.push_back(make_multi_level_tiling_with_fusion_rule(opts));
    rules.push_back(make_multi_level_tiling_rule(opts));
    rules.push_back(make_pack_panel_rule(opts));
    rules.push_back(make_skip_stage_rule(opts));
    return rules;
}

/// How much of the fast structure a sketch has: a blocked weight (vector loads of weights and
/// one broadcast per reduce step) first, then a tile fused into its consumer (a register tile
/// instead of read-modify-write of the output), then a packed panel. A sketch that also
/// re-lays out an activation (a depthwise convolution's padded input, blocked by channels)
/// ranks last: its root stages write, and its copy-out stores, with a stride of a whole image
/// per vector lane, which costs more than the register tile saves.
int structure_rank(const State& sketch) {
    bool blocked = false, fused = false, panel = false, activation_layout = false;
    State s = make_initial_state(sketch.compute);
    for (const Step& step : sketch.steps) {
        if (step.kind == StepKind::TransformLayout && step.stage >= 0 &&
            step.stage < static_cast<int>(s.stages.size())) {
            const Stage& st = s.stages[step.stage];
            blocked = blocked || st.is_input();
            activation_layout = activation_layout ||
                                (!st.is_input() && st.location.kind == ComputeLocKind::Root &&
                                 st.origin != StageOrigin::CacheRead);
        }
        fused = fused || step.kind == StepKind::ComputeAt;
        panel = panel || step.kind == StepKind::CacheRead;
        apply_step(s, step);
    }
    if (activation_layout)
        return 0;
    return (blocked ? 4 : 0) + (fused ? 2 : 0) + (panel ? 1 : 0);
}

/// Throws ScheduleError unless s lowers. Any failure of the lowering counts: a candidate that
/// trips an internal check falls back to a simpler schedule instead of failing the build.
void check_lowers(const State& s) {
    try {
        (void)lower_state(s, "default_schedule_check");
    } catch (const ScheduleError&) {
        throw;
    } catch (const std::exception& e) {
        throw ScheduleError(std::string("does not lower: ") + e.what());
    }
}

/// The default nest with strictly inlinable stages inlined, then the fixed annotation.
State annotated_initial_state(const te::Compute& c, const DefaultScheduleOptions& opts,
                              bool inline_stages, bool annotate) {
    State s = make_initial_state(c);
    if (inline_stages)
        detail::inline_strict_stages(s);
    if (annotate)
        detail::annotate_fixed(s, opts);
    return s;
}

} // namespace

void detail::inline_strict_stages(State& s) {
    for (int sid = static_cast<int>(s.stages.size()) - 1; sid >= 0; --sid)
        if (!s.is_output(sid) && s.is_strict_inlinable(sid))
            compute_inline(s, sid);
}

State default_schedule(const te::Compute& c, const DefaultScheduleOptions& opts) {
    if (opts.target == TargetKind::Gpu)
        return detail::gpu_default_schedule(c, opts);
    if (std::optional<State> two_pass = detail::separable_transform_schedule(c, opts)) {
        try {
            check_lowers(*two_pass);
            return *two_pass;
        } catch (const ScheduleError&) {
            // The sketches below.
        }
    }
    SketchOptions sketch_opts;
    sketch_opts.target = opts.target;
    sketch_opts.num_cores = opts.num_cores;
    sketch_opts.cpu_fusion_levels = {kRegisterTileFusionLevel};
    sketch_opts.weight_inputs = opts.weight_inputs.empty() ? c.weight_inputs : opts.weight_inputs;

    std::vector<State> sketches;
    try {
        sketches = generate_sketches(c, default_rules(sketch_opts));
    } catch (const std::exception&) {
        sketches.clear(); // The simpler schedules below do not need sketches.
    }
    std::vector<std::pair<int, size_t>> order;
    for (size_t i = 0; i < sketches.size(); ++i) {
        try {
            order.push_back({-structure_rank(sketches[i]), i});
        } catch (const ScheduleError&) {
            // A sketch that does not replay is not a candidate.
        }
    }
    std::stable_sort(order.begin(), order.end());
    for (const auto& [rank, i] : order) {
        (void)rank;
        try {
            State s = detail::fill_fixed_tile_sizes(sketches[i], opts);
            detail::order_weights_for_tiles(s, sketch_opts.weight_inputs);
            detail::inline_sliced_producers(s, opts);
            detail::factor_row_reductions(s, opts);
            detail::annotate_fixed(s, opts);
            check_lowers(s);
            if ((opts.cpu_tiles || opts.cpu_tiles_bf16) && opts.target == TargetKind::Cpu)
                if (std::optional<State> tiles = detail::tile_matmul_schedule(s, opts))
                    return *tiles;
            return s;
        } catch (const ScheduleError&) {
            // The next sketch, or the simpler schedules.
        }
    }
    // Without vectors (lanes 1), only the outer loops parallel.
    DefaultScheduleOptions scalar = opts;
    scalar.vector_lanes = 1;
    for (const auto& [inline_stages, o] :
         {std::make_pair(true, opts), std::make_pair(false, opts), std::make_pair(false, scalar)}) {
        try {
            State s = annotated_initial_state(c, o, inline_stages, true);
            check_lowers(s);
            return s;
        } catch (const ScheduleError&) {
            // The next, simpler variant.
        }
    }
    return annotated_initial_state(c, opts, false, false);
}

} // namespace tessera::sched
