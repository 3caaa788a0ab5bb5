// Sketch rule add_cache_write (Ansor's RuleAddCacheWrite): a tiled stage without a fusible
// consumer computes into a local buffer (a register tile once fused) and copies it out.
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"

namespace tessera::sched {

namespace {

class AddCacheWrite : public SketchRule {
  public:
    explicit AddCacheWrite(const SketchOptions& opts) : target_(opts.target) {}
    const char* name() const override { return "add_cache_write"; }

    RuleCondition check(const State& s, int stage) const override {
        const Stage& st = s.stages[stage];
        if (st.is_input() || st.origin != StageOrigin::Original ||
            st.location.kind != ComputeLocKind::Root || !st.relations.empty() ||
            st.predicate.defined() || !s.attached_stages(stage).empty() ||
            !s.needs_multi_level_tiling(stage) || fusible_consumer(s, stage) >= 0)
            return RuleCondition::Skip;
        return target_ == TargetKind::Gpu ? RuleCondition::ApplyAndSkipRest : RuleCondition::Apply;
    }

    std::vector<SketchCandidate> apply(const State& s, int stage) const override {
        State next = s;
        cache_write(next, stage, "local");
        // The cache stage now has id `stage` (the copy-out moved to stage + 1): visit it next,
        // where the fusion rule tiles it into the copy-out.
        return {{std::move(next), stage}};
    }

  private:
    TargetKind target_;
};

} // namespace

std::unique_ptr<SketchRule> make_add_cache_write_rule(const SketchOptions& opts) {
    return std::make_unique<AddCacheWrite>(opts);
}

} // namespace tessera::sched
