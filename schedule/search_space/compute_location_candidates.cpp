// compute_location_candidates and can_change_compute_location (Ansor's
// GetComputeLocationCandidates and the filter of InitChangeComputeLocation).
#include "tessera/schedule/sampling.h"
#include "tessera/schedule/sketch.h"

namespace tessera::sched {

bool can_change_compute_location(const State& s, int stage) {
    const Stage& st = s.stage(stage);
    // A stage given a storage layout (a channel-blocked pad) stays a whole buffer at root:
    // inlining would drop the layout, and a per-tile region would not be blocked.
    return !st.is_input() && !s.is_output(stage) && st.location.kind != ComputeLocKind::Inlined &&
           !is_tiled(st) && !s.needs_multi_level_tiling(stage) && st.layout.is_identity();
}

std::vector<std::pair<int, int>> compute_location_candidates(const State& s, int stage) {
    std::vector<std::pair<int, int>> out;
    const std::vector<int> consumers = s.consumers_through_inlined(stage);
    if (consumers.size() != 1)
        return out;
    const int target = consumers[0];
    const Stage& t = s.stages[target];
    if (t.is_input() || t.location.kind == ComputeLocKind::Inlined)
        return out;
    const bool tiled = is_tiled(t);
    bool seen_reduce = false;
    for (size_t k = 0; k < t.iters.size(); ++k) {
        const Iterator& it = t.iters[k];
        if (it.kind == IterKind::Reduce) {
            seen_reduce = true;
            if (!tiled) // an untiled reduction's loops are all inner ones
                break;
        } else if (seen_reduce) { // a spatial loop inside a reduce tile: an inner tile
            break;
        }
        if (it.annotation == IterAnnotation::Unroll || it.annotation == IterAnnotation::Vectorize)
            break;
        if (it.extent == 1) // the same as the loop outside it
            continue;
        out.emplace_back(target, static_cast<int>(k));
        if (!s.attached_at(target, static_cast<int>(k)).empty())
            break;
    }
    // A consumer computed inside another stage: that stage's loops outside the attach point.
    if (t.location.kind == ComputeLocKind::At) {
        const int outer = t.location.stage;
        const Stage& o = s.stages[outer];
        for (int k = 0; k < t.location.iter && k < static_cast<int>(o.iters.size()); ++k) {
            const Iterator& it = o.iters[k];
            if (it.kind == IterKind::Reduce || !s.attached_at(outer, k).empty() ||
                it.annotation == IterAnnotation::Unroll)
                break;
            if (it.extent == 1)
                continue;
            out.emplace_back(outer, k);
        }
    }
    return out;
}

} // namespace tessera::sched
