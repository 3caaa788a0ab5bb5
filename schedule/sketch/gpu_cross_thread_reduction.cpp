// Sketch rule gpu_cross_thread_reduction (Ansor's cross-thread reduction rule): a reduction
// with little output and a long reduce range gets its threads from the reduce range. The
// reduce loops are fused and split once; the inner part is bound to threadIdx.x (its length,
// the block's thread count, is set by annotation), and the lowering combines the threads'
// partial values with warp shuffles and shared memory (lower_state.cpp, docs/CUDA.md).
#include "tessera/schedule/gpu_sampling.h"
#include "tessera/schedule/schedule.h"

namespace tessera::sched {

namespace {

/// A warp: below this many reduce iterations a cross-thread reduction leaves most lanes idle.
constexpr int64_t kWarpSize = 32;

class GpuCrossThreadReduction : public SketchRule {
  public:
    const char* name() const override { return "gpu_cross_thread_reduction"; }

    RuleCondition check(const State& s, int stage) const override {
        const Stage& st = s.stages[stage];
        if (st.is_input() || st.origin != StageOrigin::Original || !st.has_reduce() ||
            st.location.kind != ComputeLocKind::Root || !st.relations.empty() ||
            st.predicate.defined() || !s.attached_stages(stage).empty() ||
            !st.tensor.dtype().is_float() || trailing_reduce_ids(st).empty())
            return RuleCondition::Skip;
        const int64_t space = s.spatial_size(stage), red = s.reduce_size(stage);
        // A tiled reduction (matmul-like) only when its output is smaller than its reduce
        // range (gemv, dense with batch 1); other reductions whenever they fill a warp.
        const bool needs =
            s.needs_multi_level_tiling(stage) ? space < red : red > kWarpSize;
        return needs ? RuleCondition::Apply : RuleCondition::Skip;
    }

    std::vector<SketchCandidate> apply(const State& s, int stage) const override {
        State next = s;
        const std::vector<int> reduce = trailing_reduce_ids(next.stages[stage]);
        const int fused = reduce.size() > 1 ? fuse(next, stage, reduce) : reduce.front();
        const std::vector<int> parts = split(next, stage, fused, {1});
        annotate(next, stage, parts[1], IterAnnotation::ThreadX);
        return {{std::move(next), stage - 1}};
    }

  private:
    /// The reduce iterators when they follow every spatial one (an untouched stage).
    static std::vector<int> trailing_reduce_ids(const Stage& st) {
        std::vector<int> ids;
        for (size_t k = 0; k < st.iters.size(); ++k) {
            if (st.iters[k].kind == IterKind::Reduce)
                ids.push_back(static_cast<int>(k));
            else if (!ids.empty())
                return {};
        }
        return ids;
    }
};

} // namespace

std::unique_ptr<SketchRule> make_gpu_cross_thread_reduction_rule(const SketchOptions&) {
    return std::make_unique<GpuCrossThreadReduction>();
}

int cross_thread_reduce_iter(const State& s, int stage) {
    const Stage& st = s.stages[stage];
    for (size_t k = 0; k < st.iters.size(); ++k)
        if (st.iters[k].kind == IterKind::Reduce &&
            st.iters[k].annotation == IterAnnotation::ThreadX)
            return static_cast<int>(k);
    return -1;
}

} // namespace tessera::sched
