// order_weights_for_tiles: a weight read by a register tile over several blocks of output
// channels (an NCHW[x]c conv's [KB][CB][R][S][c][k] filters, two blocks per tile) is stored,
// outside the call, in the order the tile reads it: the tile's blocks side by side next to the
// vector dimension, the reduce dimensions in the order of the tile's reduce loops. The filters
// of one tile are then one sequential stream; in the graph's layout each reduce step took one
// 64-byte line from each of 18 places 1 KiB apart and from two blocks 288 KiB apart.
// resnet18's 7x7 convs (9.4 MB of filters each, more than L2): 121 -> 183 GFLOP/s on one
// Rocket Lake core.
#include <algorithm>

#include "../internal/body_util.h"
#include "default_rules.h"
#include "tessera/schedule/sampling.h"
#include "tessera/schedule/schedule.h"

namespace tessera::sched::detail {

namespace {

/// How the tile stage reads the weight: per dimension, the index into the stage's roots
/// (spatial axes, then reduce axes) of the bare variable there; empty when some read indexes
/// it otherwise or reads differ.
std::vector<int> read_roots(const Stage& st, const ir::Tensor& weight) {
    std::vector<const ir::Variable*> roots;
    for (const ir::Var& a : st.axes)
        roots.push_back(a.get());
    for (const ir::IterVar& r : st.reduce_axes())
        roots.push_back(r.var.get());
    std::vector<int> dims;
    bool ok = true, seen = false;
    for_each_read(inline_lets(st.body), [&](const ir::TensorRead* r) {
        if (!r->tensor.same_as(weight) || !ok)
            return;
        std::vector<int> here;
        for (const ir::Expr& index : r->indices) {
            const auto at = std::find(roots.begin(), roots.end(), index.as<ir::Variable>());
            if (at == roots.end()) {
                ok = false;
                return;
            }
            here.push_back(static_cast<int>(at - roots.begin()));
        }
        ok = !seen || here == dims;
        dims = here;
        seen = true;
    });
    return ok ? dims : std::vector<int>{};
}

/// Per root of st, the position in st.iters of its outermost loop with more than one
/// iteration (the loop order the tile reads in), or -1.
std::vector<int> outermost_loops(const Stage& st) {
    const size_t n_roots = st.axes.size() + st.reduce_axes().size();
    std::vector<int> first(n_roots, -1);
    for (size_t k = 0; k < st.iters.size(); ++k) {
        const int root = root_axis(st, st.iters[k].node);
        if (root >= 0 && static_cast<size_t>(root) < n_roots && first[root] < 0 &&
            st.iters[k].extent > 1)
            first[static_cast<size_t>(root)] = static_cast<int>(k);
    }
    return first;
}

} // namespace

void order_weights_for_tiles(State& s, const std::vector<int>& weight_inputs) {
    for (int wi : weight_inputs) {
        if (wi < 0 || wi >= static_cast<int>(s.compute.inputs.size()))
            continue;
        const int wid = s.stage_id_of(s.compute.inputs[static_cast<size_t>(wi)]);
        if (wid < 0 || !s.stages[static_cast<size_t>(wid)].is_input() ||
            !s.stages[static_cast<size_t>(wid)].layout.is_identity())
            continue;
        // The tile reads the weight itself, or its widened f32 view (a weight stored in f16).
        const int view = s.read_view(wid);
        const std::vector<int> readers = s.consumers(view);
        if (readers.size() != 1)
            continue;
        const Stage& st = s.stages[static_cast<size_t>(readers[0])];
        const ir::Tensor& w = s.stages[static_cast<size_t>(view)].tensor;
        const std::vector<int> roots = read_roots(st, w);
        const int n_axes = static_cast<int>(st.axes.size());
        const int ndim = static_cast<int>(w.ndim());
        if (roots.size() != static_cast<size_t>(ndim) || ndim < 3 || roots.back() >= n_axes)
            continue;
        // Exactly one other spatial dimension: the blocks of output channels.
        int block = -1;
        bool ok = true;
        for (int d = 0; d + 1 < ndim; ++d)
            if (roots[static_cast<size_t>(d)] < n_axes) {
                ok = ok && block < 0;
                block = d;
            }
        if (!ok || block < 0)
            continue;
        const int64_t b = register_tile_width(st, roots[static_cast<size_t>(block)]);
        if (b < 2 || w.shape()[static_cast<size_t>(block)] % b != 0)
            continue;
        // Split dimensions: block -> (block, block + 1); later ones shift by one.
        const auto split_index = [&](int d) { return d <= block ? d : d + 1; };
        std::vector<int> reduce_dims;
        for (int d = 0; d + 1 < ndim; ++d)
            if (d != block)
                reduce_dims.push_back(d);
        const std::vector<int> first = outermost_loops(st);
        std::stable_sort(reduce_dims.begin(), reduce_dims.end(), [&](int x, int y) {
            return first[static_cast<size_t>(roots[static_cast<size_t>(x)])] <
                   first[static_cast<size_t>(roots[static_cast<size_t>(y)])];
        });
        LayoutTransform t;
        t.factors.assign(static_cast<size_t>(ndim), 1);
        t.factors[static_cast<size_t>(block)] = b;
        t.order.push_back(block);
        for (int d : reduce_dims)
            t.order.push_back(split_index(d));
        t.order.push_back(block + 1);
        t.order.push_back(split_index(ndim - 1));
        try {
            transform_layout(s, wid, t);
        } catch (const ScheduleError&) {
            // The graph's layout stays.
        }
    }
}

} // namespace tessera::sched::detail
