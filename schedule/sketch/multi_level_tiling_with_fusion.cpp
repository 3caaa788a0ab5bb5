// Sketch rule multi_level_tiling_with_fusion (Ansor's RuleMultiLevelTilingWithFusion): tile a
// stage and compute it inside the outer tiles of its elementwise consumer, so that each tile
// of the result is produced and consumed while it is in cache (or in registers).
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"

namespace tessera::sched {

namespace {

class MultiLevelTilingWithFusion : public SketchRule {
  public:
    explicit MultiLevelTilingWithFusion(const SketchOptions& opts)
        : target_(opts.target),
          structure_(opts.target == TargetKind::Gpu ? opts.gpu_tiling_structure
                                                    : opts.cpu_tiling_structure),
          levels_(opts.target == TargetKind::Gpu ? std::vector<int>{3} : opts.cpu_fusion_levels) {}
    const char* name() const override { return "multi_level_tiling_with_fusion"; }

    RuleCondition check(const State& s, int stage) const override {
        const Stage& st = s.stages[stage];
        if (st.is_input() || st.location.kind != ComputeLocKind::Root || !st.relations.empty() ||
            !s.attached_stages(stage).empty() || !s.needs_multi_level_tiling(stage) ||
            fusible_consumer(s, stage) < 0 || usable_levels(st).empty())
            return RuleCondition::Skip;
        // A cache-write stage exists to be fused into its copy-out: no unfused variant.
        if (st.origin == StageOrigin::CacheWrite || target_ == TargetKind::Gpu)
            return RuleCondition::ApplyAndSkipRest;
        return RuleCondition::Apply;
    }

    std::vector<SketchCandidate> apply(const State& s, int stage) const override {
        State base = s;
        const int consumer = fusible_consumer(base, stage);
        const std::vector<int> split_steps = multi_level_tile(base, stage, structure_);
        const int n_axes = static_cast<int>(split_steps.size());
        std::vector<SketchCandidate> out;
        for (int level : usable_levels(s.stages[stage])) {
            State next = base;
            // The consumer's axis d becomes level + 1 loops that follow the producer's split of
            // axis d; then all the outer parts come first, level by level.
            std::vector<std::vector<int>> parts(level + 1);
            int pos = 0;
            for (int d = 0; d < n_axes; ++d) {
                follow_split(next, consumer, pos, split_steps[d], level);
                for (int l = 0; l <= level; ++l)
                    parts[l].push_back(pos++);
            }
            std::vector<int> order;
            for (const auto& p : parts)
                order.insert(order.end(), p.begin(), p.end());
            for (int k = pos; k < static_cast<int>(next.stages[consumer].iters.size()); ++k)
                order.push_back(k);
            reorder(next, consumer, order);
            compute_at(next, stage, consumer, level * n_axes - 1);
            out.push_back({std::move(next), stage - 1});
        }
        return out;
    }

  private:
    /// The fusion levels that leave a spatial level inside the attach point (a structure with
    /// n spatial levels has follow_split sources of n - 1 lengths).
    std::vector<int> usable_levels(const Stage& st) const {
        int n_space = 0;
        for (char ch : structure_)
            n_space += ch == 'S';
        std::vector<int> out;
        if (st.axes.empty())
            return out;
        for (int l : levels_)
            if (l >= 1 && l <= n_space - 1)
                out.push_back(l);
        return out;
    }

    TargetKind target_;
    std::string structure_;
    std::vector<int> levels_;
};

} // namespace

std::unique_ptr<SketchRule> make_multi_level_tiling_with_fusion_rule(const SketchOptions& opts) {
    return std::make_unique<MultiLevelTilingWithFusion>(opts);
}

} // namespace tessera::sched
