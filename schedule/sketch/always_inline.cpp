// Sketch rule always_inline (Ansor's RuleAlwaysInline): inline cheap elementwise stages.
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"

namespace tessera::sched {

namespace {

class AlwaysInline : public SketchRule {
  public:
    explicit AlwaysInline(const SketchOptions& opts) : target_(opts.target) {}
    const char* name() const override { return "always_inline"; }

    RuleCondition check(const State& s, int stage) const override {
        const Stage& st = s.stages[stage];
        if (st.is_input() || s.is_output(stage) || st.has_reduce() ||
            st.location.kind != ComputeLocKind::Root || !s.attached_stages(stage).empty())
            return RuleCondition::Skip;
        // GPUs inline every injective stage (launches cost more than recomputation); CPUs only
        // those whose reads are plain axis accesses without expensive math.
        const bool inline_it =
            target_ == TargetKind::Gpu ? s.is_injective(stage) : s.is_strict_inlinable(stage);
        return inline_it ? RuleCondition::ApplyAndSkipRest : RuleCondition::Skip;
    }

    std::vector<SketchCandidate> apply(const State& s, int stage) const override {
        State next = s;
        compute_inline(next, stage);
        return {{std::move(next), stage - 1}};
    }

  private:
    TargetKind target_;
};

} // namespace

std::unique_ptr<SketchRule> make_always_inline_rule(const SketchOptions& opts) {
    return std::make_unique<AlwaysInline>(opts);
}

} // namespace tessera::sched
