// Sketch rule add_rfactor (Ansor's RuleAddRfactor): factor a long reduction over little
// output into partial reductions, which gives parallelism (outer part factored) or
// vectorizable accumulation (inner part factored, moved innermost).
#include <numeric>

#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"

namespace tessera::sched {

namespace {

class AddRfactor : public SketchRule {
  public:
    explicit AddRfactor(const SketchOptions& opts) : num_cores_(std::max(1, opts.num_cores)) {}
    const char* name() const override { return "add_rfactor"; }

    RuleCondition check(const State& s, int stage) const override {
        const Stage& st = s.stages[stage];
        if (st.is_input() || st.origin != StageOrigin::Original || !st.has_reduce() ||
            st.location.kind != ComputeLocKind::Root || !st.relations.empty() ||
            st.predicate.defined() || !s.attached_stages(stage).empty() || reduce_ids(st).empty())
            return RuleCondition::Skip;
        return needs_rfactor(s, stage) ? RuleCondition::Apply : RuleCondition::Skip;
    }

    std::vector<SketchCandidate> apply(const State& s, int stage) const override {
        State base = s;
        std::vector<int> reduce = reduce_ids(base.stages[stage]);
        int fused = reduce.front();
        if (reduce.size() > 1)
            fused = fuse(base, stage, reduce);
        split(base, stage, fused, {1});
        std::vector<SketchCandidate> out;
        for (int part = 0; part < 2; ++part) {
            State next = base;
            const int rf = rfactor(next, stage, fused + part);
            if (part == 1)
                move_factored_axis_innermost(next, rf); // the factored (inner) part
            // Both the rfactor stage (at `stage`) and the original (stage + 1) are done.
            out.push_back({std::move(next), stage - 1});
        }
        return out;
    }

  private:
    /// The reduce iterators, when they are consecutive (as in an untouched stage).
    static std::vector<int> reduce_ids(const Stage& st) {
        std::vector<int> ids;
        for (size_t k = 0; k < st.iters.size(); ++k)
            if (st.iters[k].kind == IterKind::Reduce)
                ids.push_back(static_cast<int>(k));
        for (size_t k = 1; k < ids.size(); ++k)
            if (ids[k] != ids[k - 1] + 1)
                return {};
        return ids;
    }

    /// Ansor's NeedsRfactor: a tiled stage without enough spatial parallelism, or an untiled
    /// reduction longer than the core count.
    bool needs_rfactor(const State& s, int stage) const {
        const int64_t space = s.spatial_size(stage), red = s.reduce_size(stage);
        if (s.needs_multi_level_tiling(stage))
            return space <= red && space <= int64_t{16} * num_cores_;
        return red > num_cores_;
    }

    int num_cores_;
};

} // namespace

void move_factored_axis_innermost(State& s, int rf) {
    const Stage& r = s.stage(rf, "rfactor stage");
    if (r.origin != StageOrigin::Rfactor || r.axes.empty())
        throw ScheduleError("move_factored_axis_innermost: '" + r.tensor.name() +
                            "' was not made by rfactor");
    move_innermost(s, rf, static_cast<int>(r.axes.size()) - 1); // the factored axis
}

std::unique_ptr<SketchRule> make_add_rfactor_rule(const SketchOptions& opts) {
    return std::make_unique<AddRfactor>(opts);
}

} // namespace tessera::sched
