// Sketch rules that give a GPU-tiled stage shared copies of what it reads:
// - gpu_shared_cache_read (Ansor's shared-memory cache read for GPUs): an input (or any stage)
//   whose single reader is tiled with the GPU structure is copied into shared memory once per
//   step of the reader's outer reduce tile, so that the threads of a block read it from shared
//   memory instead of global memory; annotation later binds the copy's loops to the block's
//   threads (cooperative fetching).
// - gpu_shared_computed_read: an injective stage of inputs (a convolution's padding, a cast) is
//   computed into such a copy instead of being inlined into the reader: the copy's loads
//   evaluate it (the padding's bounds test once per element fetched, not once per use).
//   gpu_shared_cache_read cannot reach such data: once the stage is inlined, the input's only
//   reader is no longer the tiled stage.
#include "tessera/schedule/gpu_sampling.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"

namespace tessera::sched {

namespace {

/// s with a shared copy of `stage` for its single reader at the reader's outer reduce tile
/// loop; `stage` inlined into the copy when `compute_in_copy`.
State with_shared_copy(const State& s, int stage, bool compute_in_copy,
                       const std::string& structure) {
    State next = s;
    const ir::Tensor reader_t = next.stages[next.consumers(stage)[0]].tensor;
    const int copy = cache_read(next, stage, "shared", {next.stage_id_of(reader_t)});
    if (compute_in_copy)
        compute_inline(next, stage);
    const int reader = next.stage_id_of(reader_t);
    compute_at(next, copy, reader, gpu_reduce_tile_iter(next, reader, structure));
    return next;
}

class GpuSharedCacheRead : public SketchRule {
  public:
    explicit GpuSharedCacheRead(const SketchOptions& opts) : structure_(opts.gpu_tiling_structure) {}
    const char* name() const override { return "gpu_shared_cache_read"; }

    RuleCondition check(const State& s, int stage) const override {
        const Stage& st = s.stages[stage];
        if (st.scope != StageScope::Global || st.location.kind == ComputeLocKind::Inlined)
            return RuleCondition::Skip;
        const std::vector<int> readers = s.consumers(stage);
        if (readers.size() != 1 || gpu_reduce_tile_iter(s, readers[0], structure_) < 0)
            return RuleCondition::Skip;
        return RuleCondition::Apply; // the variant without the copy remains
    }

    std::vector<SketchCandidate> apply(const State& s, int stage) const override {
        return {{with_shared_copy(s, stage, false, structure_), stage - 1}};
    }

  private:
    std::string structure_;
};

class GpuSharedComputedRead : public SketchRule {
  public:
    explicit GpuSharedComputedRead(const SketchOptions& opts)
        : structure_(opts.gpu_tiling_structure) {}
    const char* name() const override { return "gpu_shared_computed_read"; }

    RuleCondition check(const State& s, int stage) const override {
        const Stage& st = s.stages[stage];
        if (st.is_input() || s.is_output(stage) || st.has_reduce() ||
            st.location.kind != ComputeLocKind::Root || !s.attached_stages(stage).empty() ||
            !s.is_injective(stage))
            return RuleCondition::Skip;
        const std::vector<int> readers = s.consumers(stage);
        if (readers.size() != 1 || gpu_reduce_tile_iter(s, readers[0], structure_) < 0)
            return RuleCondition::Skip;
        for (int p : s.producers(stage))
            if (!s.stages[p].is_input())
                return RuleCondition::Skip; // the copy would read another kernel's output
        return RuleCondition::Apply;        // always_inline's variant remains
    }

    std::vector<SketchCandidate> apply(const State& s, int stage) const override {
        return {{with_shared_copy(s, stage, true, structure_), stage - 1}};
    }

  private:
    std::string structure_;
};

} // namespace

int gpu_reduce_tile_iter(const State& s, int stage, const std::string& structure) {
    const Stage& st = s.stages[stage];
    if (st.is_input() || !st.has_reduce() || !is_tiled(st))
        return -1;
    const int n_space = static_cast<int>(st.axes.size());
    const int n_reduce = static_cast<int>(st.reduce_axes().size());
    int s_levels = 0, r_levels = 0, before_first_r = 0;
    bool seen_r = false;
    for (char ch : structure) {
        if (ch == 'S')
            ++s_levels;
        if (ch == 'R') {
            if (!seen_r)
                before_first_r = s_levels;
            seen_r = true;
            ++r_levels;
        }
    }
    if (!seen_r || static_cast<int>(st.iters.size()) != s_levels * n_space + r_levels * n_reduce)
        return -1;
    const int iter = before_first_r * n_space + n_reduce - 1;
    for (int k = 0; k <= iter; ++k)
        if ((k < before_first_r * n_space) != (st.iters[k].kind == IterKind::Spatial))
            return -1; // not in the structure's order
    return iter;
}

std::unique_ptr<SketchRule> make_gpu_shared_cache_read_rule(const SketchOptions& opts) {
    return std::make_unique<GpuSharedCacheRead>(opts);
}

std::unique_ptr<SketchRule> make_gpu_shared_computed_read_rule(const SketchOptions& opts) {
    return std::make_unique<GpuSharedComputedRead>(opts);
}

} // namespace tessera::sched
