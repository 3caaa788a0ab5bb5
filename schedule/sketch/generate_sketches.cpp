// generate_sketches: Ansor's sketch enumeration over the stages, last to first, and the
// default rule lists.
#include "tessera/schedule/sketch.h"

#include <utility>

#include "tessera/schedule/gpu_sampling.h"
#include "tessera/support/error.h"

namespace tessera::sched {

const char* to_string(TargetKind k) {
    switch (k) {
    case TargetKind::Cpu:
        return "cpu";
    case TargetKind::Gpu:
        return "gpu";
    }
    TESSERA_UNREACHABLE() << "target kind " << int(k);
}

const char* to_string(RuleCondition c) {
    switch (c) {
    case RuleCondition::Skip:
        return "skip";
    case RuleCondition::Apply:
        return "apply";
    case RuleCondition::ApplyAndSkipRest:
        return "apply_and_skip_rest";
    }
    TESSERA_UNREACHABLE() << "rule condition " << int(c);
}

SketchRules make_default_sketch_rules(const SketchOptions& opts) {
    SketchRules rules;
    switch (opts.target) {
    case TargetKind::Cpu:
        // Ansor's CPU order: inlining first (it removes stages from the tiling decisions),
        // rfactor and cache write before the tiling rules they branch from, skip last.
        rules.push_back(make_always_inline_rule(opts));
        rules.push_back(make_add_rfactor_rule(opts));
        rules.push_back(make_add_cache_write_rule(opts));
        // Before the fusion rule, which ends the list for a cache-write stage.
        rules.push_back(make_weight_blocked_tiling_rule(opts));
        rules.push_back(make_multi_level_tiling_with_fusion_rule(opts));
        rules.push_back(make_multi_level_tiling_rule(opts));
        // On inputs, after their readers are tiled (the panel follows the reader's tile).
        rules.push_back(make_pack_panel_rule(opts));
        rules.push_back(make_skip_stage_rule(opts));
        return rules;
    case TargetKind::Gpu:
        // Ansor's GPU order: every injective stage inlined, tiled reductions always through a
        // local cache fused into their copy-out, shared copies of the tiled stage's inputs.
        // Cross-thread reduction before the tiling rules it branches from (Apply); a padding
        // computed into its reader's shared copy before always_inline (Apply).
        rules.push_back(make_gpu_shared_computed_read_rule(opts));
        rules.push_back(make_always_inline_rule(opts));
        rules.push_back(make_gpu_cross_thread_reduction_rule(opts));
        rules.push_back(make_add_cache_write_rule(opts));
        rules.push_back(make_multi_level_tiling_with_fusion_rule(opts));
        rules.push_back(make_multi_level_tiling_rule(opts));
        rules.push_back(make_gpu_shared_cache_read_rule(opts));
        rules.push_back(make_skip_stage_rule(opts));
        return rules;
    }
    TESSERA_UNREACHABLE() << "target kind " << int(opts.target);
}

std::vector<State> generate_sketches(const te::Compute& c, const SketchOptions& opts) {
    return generate_sketches(c, make_default_sketch_rules(opts));
}

std::vector<State> generate_sketches(const te::Compute& c, const SketchRules& rules) {
    // A generous bound on the frontier: each stage multiplies it by a handful of branches at
    // most, so only a rule that loops (never lowers the stage id) reaches it.
    constexpr size_t kMaxFrontier = 100000;
    std::vector<SketchCandidate> now, next;
    State init = make_initial_state(c);
    const int last = static_cast<int>(init.stages.size()) - 1;
    now.push_back({std::move(init), last});
    std::vector<State> out;
    size_t rounds = 0;
    while (!now.empty()) {
        TESSERA_CHECK(++rounds <= kMaxFrontier) << "sketch generation does not terminate";
        next.clear();
        for (SketchCandidate& cur : now) {
            if (cur.next_stage < 0) {
                out.push_back(std::move(cur.state));
                continue;
            }
            for (const auto& rule : rules) {
                const RuleCondition cond = rule->check(cur.state, cur.next_stage);
                if (cond == RuleCondition::Skip)
                    continue;
                std::vector<SketchCandidate> made;
                try {
                    made = rule->apply(cur.state, cur.next_stage);
                } catch (const ScheduleError& e) {
                    TESSERA_UNREACHABLE()
                        << "sketch rule " << rule->name() << " at stage " << cur.next_stage
                        << " failed after its check passed: " << e.what();
                }
                for (SketchCandidate& m : made) {
                    TESSERA_CHECK(m.next_stage < static_cast<int>(m.state.stages.size()))
                        << "sketch rule " << rule->name() << " continues at stage " << m.next_stage
                        << " of " << m.state.stages.size();
                    next.push_back(std::move(m));
                }
                if (cond == RuleCondition::ApplyAndSkipRest)
                    break;
            }
            TESSERA_CHECK(next.size() <= kMaxFrontier) << "too many sketches";
        }
        std::swap(now, next);
    }
    return out;
}

} // namespace tessera::sched
