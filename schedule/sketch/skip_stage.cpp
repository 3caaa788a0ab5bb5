// Sketch rule skip_stage (Ansor's RuleSkipStage): leave the stage as it is.
#include "tessera/schedule/sketch.h"

namespace tessera::sched {

namespace {

class SkipStage : public SketchRule {
  public:
    const char* name() const override { return "skip_stage"; }
    RuleCondition check(const State&, int) const override { return RuleCondition::Apply; }
    std::vector<SketchCandidate> apply(const State& s, int stage) const override {
        return {{s, stage - 1}};
    }
};

} // namespace

std::unique_ptr<SketchRule> make_skip_stage_rule(const SketchOptions&) {
    return std::make_unique<SkipStage>();
}

} // namespace tessera::sched
