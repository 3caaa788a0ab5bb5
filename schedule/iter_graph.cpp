// The iterator graph of a stage.
#include "internal/iter_graph.h"

#include <algorithm>

#include "tessera/ir/op.h"
#include "tessera/support/error.h"

namespace tessera::sched {

int num_roots(const Stage& st) {
    return static_cast<int>(st.axes.size() + st.reduce_axes().size());
}

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Index of the part of a split that takes the ceiling extent.
size_t ceil_part(const IterRelation& r) { return r.inner_to_outer ? 0 : r.outputs.size() - 1; }
} // namespace

void recompute_extents(Stage& st) {
    // Nodes that a GPU binding's loop is, or is fused from, keep their given lengths: the
    // launch dimensions and the cooperative fetches count on every thread of the block.
    std::vector<bool> pinned(st.nodes.size(), false);
    for (const Iterator& it : st.iters)
        if (is_gpu_binding(it.annotation))
            pinned[static_cast<size_t>(it.node)] = true;
    for (size_t ri = st.relations.size(); ri-- > 0;) {
        const IterRelation& r = st.relations[ri];
        if (r.kind == IterRelation::Kind::Fuse && pinned[static_cast<size_t>(r.outputs[0])])
            for (int in : r.inputs)
                pinned[static_cast<size_t>(in)] = true;
    }
    for (const IterRelation& r : st.relations) {
        if (r.kind == IterRelation::Kind::Split) {
            // Each given part (but a pinned one) is clamped to what is left of the parent,
            // starting at the part farthest from the ceiling part; the ceiling part takes the
            // rest. A part longer than what is left (a stage computed inside its consumer's
            // tiles, a tile longer than its axis) would only run iterations that its guard
            // skips.
            const size_t c = ceil_part(r);
            int64_t left = st.nodes[r.inputs[0]].extent;
            const size_t n = r.outputs.size();
            for (size_t j = 0; j < n; ++j) {
                const size_t k = r.inner_to_outer ? n - 1 - j : j;
                if (k == c)
                    continue;
                IterNode& part = st.nodes[r.outputs[k]];
                if (part.length > 0)
                    part.extent = pinned[static_cast<size_t>(r.outputs[k])]
                                      ? part.length
                                      : std::max<int64_t>(1, std::min(part.length, left));
                left = ceil_div(left, part.extent);
            }
            st.nodes[r.outputs[c]].extent = left;
        } else {
            int64_t prod = 1;
            for (int in : r.inputs)
                prod *= st.nodes[in].extent;
            st.nodes[r.outputs[0]].extent = prod;
        }
    }
    for (Iterator& it : st.iters)
        it.extent = st.nodes[it.node].extent;
}

std::vector<ir::Expr> node_values(const Stage& st, const std::vector<ir::Expr>& leaf_values) {
    TESSERA_CHECK(leaf_values.size() == st.iters.size())
        << leaf_values.size() << " leaf values for " << st.iters.size() << " iterators";
    std::vector<ir::Expr> v(st.nodes.size());
    for (size_t k = 0; k < st.iters.size(); ++k)
        v[st.iters[k].node] = leaf_values[k];
    // Each relation's outputs are produced by it and consumed only by later relations, so
    // walking the relations backwards finds every output's value first.
    for (size_t ri = st.relations.size(); ri-- > 0;) {
        const IterRelation& r = st.relations[ri];
        if (r.kind == IterRelation::Kind::Split) {
            ir::Expr value;
            int64_t stride = 1;
            for (size_t k = r.outputs.size(); k-- > 0;) {
                const ir::Expr& part = v[r.outputs[k]];
                TESSERA_CHECK(part.defined()) << "split part without a value";
                ir::Expr term = stride == 1 ? part : part * ir::Expr(stride);
                value = value.defined() ? term + value : term;
                stride *= st.nodes[r.outputs[k]].extent;
            }
            v[r.inputs[0]] = value;
        } else {
            const ir::Expr& fused = v[r.outputs[0]];
            TESSERA_CHECK(fused.defined()) << "fused iterator without a value";
            int64_t inner = 1;
            for (size_t k = r.inputs.size(); k-- > 0;) {
                const int64_t e = st.nodes[r.inputs[k]].extent;
                ir::Expr q = inner == 1 ? fused : fused / ir::Expr(inner);
                v[r.inputs[k]] = k == 0 ? q : q % ir::Expr(e);
                inner *= e;
            }
        }
    }
    return v;
}

std::vector<ir::Expr> split_guards(const Stage& st, const std::vector<ir::Expr>& values) {
    std::vector<ir::Expr> guards;
    for (const IterRelation& r : st.relations) {
        if (r.kind != IterRelation::Kind::Split)
            continue;
        int64_t prod = 1;
        for (int o : r.outputs)
            prod *= st.nodes[o].extent;
        const int64_t e = st.nodes[r.inputs[0]].extent;
        if (prod > e)
            guards.push_back(values[r.inputs[0]] < ir::Expr(e));
    }
    return guards;
}

} // namespace tessera::sched
