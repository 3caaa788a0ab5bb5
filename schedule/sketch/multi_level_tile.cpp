// multi_level_tile: the split-and-reorder of Ansor's multi-level tiling (DoMultiLevelTiling),
// shared by the tiling rules.
#include <string>
#include <vector>

#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"

namespace tessera::sched {

bool is_tiled(const Stage& st) {
    for (const IterRelation& r : st.relations)
        if (r.kind == IterRelation::Kind::Split)
            return true;
    return false;
}

std::vector<int> multi_level_tile(State& s, int stage, const std::string& structure) {
    int n_space = 0, n_reduce = 0;
    for (char ch : structure) {
        if (ch == 'S')
            ++n_space;
        else if (ch == 'R')
            ++n_reduce;
        else
            throw ScheduleError("tiling structure '" + structure +
                                "' has a letter other than S and R");
    }
    if (n_space == 0)
        throw ScheduleError("tiling structure '" + structure + "' has no spatial level");
    const int num_iters = static_cast<int>(s.stage(stage).iters.size());
    // levels[kind][level] = the iterator ids (final positions are assigned at the reorder).
    // Splitting loop k replaces it by its parts in place, so a running position walks them.
    std::vector<std::vector<int>> space(n_space), reduce(std::max(n_reduce, 1));
    std::vector<int> split_steps;
    int pos = 0;
    for (int k = 0; k < num_iters; ++k) {
        const bool spatial = s.stages[stage].iters[pos].kind == IterKind::Spatial;
        const int levels = spatial ? n_space : n_reduce;
        auto& dst = spatial ? space : reduce;
        if (levels <= 1) {
            dst[0].push_back(pos++);
            continue;
        }
        split(s, stage, pos, std::vector<int64_t>(levels - 1, 1));
        if (spatial)
            split_steps.push_back(static_cast<int>(s.steps.size()) - 1);
        for (int l = 0; l < levels; ++l)
            dst[l].push_back(pos++);
    }
    std::vector<int> order;
    int si = 0, ri = 0;
    for (char ch : structure) {
        const auto& ids = ch == 'S' ? space[si++] : reduce[ri++];
        order.insert(order.end(), ids.begin(), ids.end());
    }
    // A structure without R leaves the reduce loops (if any) innermost.
    if (n_reduce == 0)
        order.insert(order.end(), reduce[0].begin(), reduce[0].end());
    bool identity = true;
    for (size_t k = 0; k < order.size(); ++k)
        identity = identity && order[k] == static_cast<int>(k);
    if (!identity)
        reorder(s, stage, order);
    return split_steps;
}

} // namespace tessera::sched
