// Sketch rule multi_level_tiling (Ansor's RuleMultiLevelTiling): tile a stage with data reuse.
#include "tessera/schedule/sketch.h"

namespace tessera::sched {

namespace {

class MultiLevelTiling : public SketchRule {
  public:
    explicit MultiLevelTiling(const SketchOptions& opts)
        : structure_(opts.target == TargetKind::Gpu ? opts.gpu_tiling_structure
                                                    : opts.cpu_tiling_structure) {}
    const char* name() const override { return "multi_level_tiling"; }

    RuleCondition check(const State& s, int stage) const override {
        const Stage& st = s.stages[stage];
        if (st.is_input() || st.location.kind != ComputeLocKind::Root || !st.relations.empty() ||
            !s.attached_stages(stage).empty() || !s.needs_multi_level_tiling(stage))
            return RuleCondition::Skip;
        return RuleCondition::ApplyAndSkipRest;
    }

    std::vector<SketchCandidate> apply(const State& s, int stage) const override {
        State next = s;
        multi_level_tile(next, stage, structure_);
        return {{std::move(next), stage - 1}};
    }

  private:
    std::string structure_;
};

} // namespace

std::unique_ptr<SketchRule> make_multi_level_tiling_rule(const SketchOptions& opts) {
    return std::make_unique<MultiLevelTiling>(opts);
}

} // namespace tessera::sched
