// order_rows_before_columns: a cache tile of rows inside a loop over column tiles (the
// multi-level tiling's level-1 rows within its level-0 columns) writes its output a few
// vectors at a time in as many rows as the tile has, each row a whole image row away from the
// last. Where the output is not in cache, which is where a model leaves it, the hardware
// prefetchers do not follow those short runs and each store waits for its line: SqueezeNet's
// stem (3 -> 64 channels, 3x3 stride 2) ran 0.77-0.98 ms in the model against 0.46 ms hot on
// a Zen 4 core. Walking the rows outside the columns writes each output row in one run of
// the tile's channel blocks: 0.48-0.51 ms in the model, 0.42 hot. A stem now repeats its
// tile along the row instead (add_cache_tile), so it has no rows here: what is left to
// reorder are the window tiles over a few channel blocks (up to kMaxStreamedWindow steps).
#include <algorithm>

#include "default_rules.h"
#include "tessera/schedule/schedule.h"

namespace tessera::sched::detail {

void order_rows_before_columns(State& s, int holder) {
    const Stage& h = s.stages[static_cast<size_t>(holder)];
    // The loops outside everything attached to the holder and outside its reductions: moving
    // one of those past another changes no attached stage's region.
    size_t end = h.iters.size();
    for (size_t k = 0; k < h.iters.size(); ++k)
        if (h.iters[k].kind != IterKind::Spatial) {
            end = k;
            break;
        }
    for (int a : s.attached_stages(holder))
        end = std::min(end, static_cast<size_t>(s.stages[static_cast<size_t>(a)].location.iter));
    std::vector<std::set<int>> axes;
    for (const Iterator& it : h.iters)
        axes.push_back(root_axes(h, it.node));
    auto single = [&](size_t k) { return axes[k].size() == 1 ? *axes[k].begin() : -1; };
    // A serial loop X of more than one iteration and a later one, Y, over an axis outside X's
    // in the output's layout that an outer loop already splits (Y is an inner level of it: a
    // cache tile's rows inside the column tiles, not the channel blocks inside the rows).
    for (size_t x = 0; x < end; ++x) {
        const int x_axis = single(x);
        if (h.iters[x].extent <= 1 || x_axis < 0 ||
            h.iters[x].annotation == IterAnnotation::Parallel)
            continue;
        for (size_t y = x + 1; y < end; ++y) {
            const int y_axis = single(y);
            if (h.iters[y].extent <= 1 || y_axis < 0 || y_axis >= x_axis)
                continue;
            bool inner_level = false;
            for (size_t k = 0; k < x; ++k)
                inner_level = inner_level || axes[k].count(y_axis) > 0;
            if (!inner_level)
                continue;
            std::vector<int> order; // Y just outside X
            for (size_t k = 0; k < h.iters.size(); ++k) {
                if (k == x)
                    order.push_back(static_cast<int>(y));
                if (k != y)
                    order.push_back(static_cast<int>(k));
            }
            reorder(s, holder, order);
            return;
        }
    }
}

} // namespace tessera::sched::detail
