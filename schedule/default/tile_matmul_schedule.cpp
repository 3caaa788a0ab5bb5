// The default schedule's matrix-tile variant: the register tile of a stage of 8-bit products
// (sum of dot4_u8s8 over words) re-cut into AMX tiles, its reduce loops run inside one
// tile_matmul nest (lower/tile_matmul.h).
#include <algorithm>
#include <optional>

#include "default_rules.h"
#include "tessera/ir/functor.h"
#include "tessera/ir/tile_matmul.h"
#include "tessera/lower/tile_matmul.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/schedule.h"
#include "tessera/support/error.h"

namespace tessera::sched::detail {

namespace {

using ir::TileMatmul;

/// The two reads of the stage's `sum(dot4_u8s8(a, b))`, when its body has that form.
struct Dot4Reads {
    const ir::TensorRead* a = nullptr;
    const ir::TensorRead* b = nullptr;
};
std::optional<Dot4Reads> dot4_reads(const Stage& st) {
    const ir::Reduce* r = st.body.as<ir::Reduce>();
    if (!r || r->op != ir::ReduceOp::Sum)
        return std::nullopt;
    const ir::Call* dot = r->source.as<ir::Call>();
    if (!dot || dot->op != ir::CallOp::Dot4U8S8)
        return std::nullopt;
    Dot4Reads d{dot->args[0].as<ir::TensorRead>(), dot->args[1].as<ir::TensorRead>()};
    if (!d.a || !d.b)
        return std::nullopt;
    return d;
}

bool reads_var(const ir::TensorRead* t, const ir::Var& v) {
    struct Finder : ir::IRVisitor {
        const ir::Variable* v = nullptr;
        bool found = false;
        using ir::IRVisitor::visit;
        void visit(const ir::Variable* op) override { found = found || op == v; }
    } f;
    f.v = v.get();
    for (const auto& e : t->indices)
        f.visit(e);
    return f.found;
}

/// The largest divisor of n that is at most cap.
int64_t largest_divisor(int64_t n, int64_t cap) {
    for (int64_t d = std::min(n, cap); d > 1; --d)
        if (n % d == 0)
            return d;
    return 1;
}

bool has_tile_matmul(const ir::Stmt& s) {
    struct Finder : ir::IRVisitor {
        bool found = false;
        using ir::IRVisitor::visit;
        void visit(const ir::Call* op) override {
            found = found || op->op == ir::CallOp::TileMatmulU8S8;
        }
    } f;
    f.visit(s);
    return f.found;
}

} // namespace

std::optional<State> tile_matmul_schedule(const State& tiled) {
    const State initial = make_initial_state(tiled.compute);
    int stage = -1;
    std::optional<Dot4Reads> reads;
    for (size_t i = 0; i < initial.stages.size() && stage < 0; ++i)
        if ((reads = dot4_reads(initial.stages[i])))
            stage = static_cast<int>(i);
    if (stage < 0)
        return std::nullopt;
    const Stage& st = initial.stages[stage];
    const size_t n_spatial = st.axes.size(), n_reduce = st.reduce_axes().size();
    if (n_spatial < 2 || n_reduce < 1)
        return std::nullopt;

    // Roles by the reads: columns are the innermost axis only the weights B read, rows the
    // innermost axis only the activations A read, and one more of each counts tiles.
    const int64_t column = static_cast<int64_t>(n_spatial) - 1;
    if (reads_var(reads->a, st.axes[column]) || !reads_var(reads->b, st.axes[column]))
        return std::nullopt;
    std::vector<int64_t> lengths(n_spatial, 1);
    const auto extent = [&](size_t axis) { return st.iters[axis].extent; };
    if (extent(column) > TileMatmul::kMaxColumnWords)
        return std::nullopt;
    lengths[column] = extent(column);
    int rows = 0, column_tiles = 0;
    for (int64_t axis = column - 1; axis >= 0; --axis) {
        const bool in_a = reads_var(reads->a, st.axes[axis]);
        const bool in_b = reads_var(reads->b, st.axes[axis]);
        if (in_a && !in_b && rows < 2 && extent(axis) > 1) {
            // The row axis: up to 16 rows of a tile; the next one: 2 row tiles when even.
            lengths[axis] = rows == 0 ? largest_divisor(extent(axis), TileMatmul::kMaxRows)
                                      : (extent(axis) % 2 == 0 ? 2 : 1);
            ++rows;
        } else if (in_b && !in_a && column_tiles < 1 && extent(axis) > 1) {
            lengths[axis] = extent(axis) % 2 == 0 ? 2 : 1;
            ++column_tiles;
        }
    }
    if (rows == 0)
        return std::nullopt;

    // The tiled schedule's split and reorder steps of the stage: 3 lengths per spatial axis
    // (levels 1..3 of "SSRSRS"), 1 per reduce axis.
    std::vector<Step> steps = tiled.steps;
    std::vector<size_t> spatial_splits, reduce_splits;
    int reorder = -1, vectorize = -1;
    for (size_t i = 0; i < steps.size(); ++i) {
        const Step& s = steps[i];
        if (s.stage != stage)
            continue;
        if (s.kind == StepKind::Split && s.lengths.size() == 3 &&
            spatial_splits.size() < n_spatial && reduce_splits.empty())
            spatial_splits.push_back(i);
        else if (s.kind == StepKind::Split && s.lengths.size() == 1 &&
                 spatial_splits.size() == n_spatial)
            reduce_splits.push_back(i);
        else if (s.kind == StepKind::Reorder && reorder < 0)
            reorder = static_cast<int>(i);
        else if (s.kind == StepKind::Annotate && s.annotation == IterAnnotation::Vectorize)
            vectorize = static_cast<int>(i);
        else if (s.kind == StepKind::Pragma)
            steps[i].value = 0; // nothing to unroll: the nest becomes one call
    }
    const size_t n_iters = 4 * n_spatial + 2 * n_reduce;
    if (spatial_splits.size() != n_spatial || reduce_splits.size() != n_reduce || reorder < 0 ||
        vectorize < 0 || steps[reorder].iters.size() != n_iters)
        return std::nullopt;
    for (size_t a = 0; a < n_spatial; ++a)
        steps[spatial_splits[a]].lengths = {1, 1, lengths[a]};
    for (size_t r = 0; r < n_reduce; ++r) // the whole reduction inside the tile's reduce level
        steps[reduce_splits[r]].lengths = {st.iters[n_spatial + r].extent};

    // Reduce level 2 (after S0 S1 R0 S2) holds the words loop last: it moves inside the tile.
    // When the words axis has one step (an image of 4 channels: one word per pixel), the
    // reduce axis before it takes its place: a kernel window's columns, whose words lie side
    // by side in a row of the input (7 words of a 7x7 window instead of 1 per tile step).
    const auto reduce_extent = [&](size_t r) { return st.iters[n_spatial + r].extent; };
    size_t words_axis = n_reduce - 1;
    while (words_axis > 0 && reduce_extent(words_axis) == 1)
        --words_axis;
    std::vector<int>& order = steps[reorder].iters;
    const size_t r1 = 3 * n_spatial + n_reduce;
    const int words = order[r1 + words_axis];
    order.erase(order.begin() + static_cast<long>(r1 + words_axis));
    order.push_back(words);
    // The tile nest's root: its outermost loop of more than one step (lowering drops the
    // others), among the tile level's reduce loops, then its spatial loops, then words.
    std::vector<int64_t> nest_extents;
    for (size_t r = 0; r < n_reduce; ++r)
        if (r != words_axis)
            nest_extents.push_back(reduce_extent(r));
    nest_extents.insert(nest_extents.end(), lengths.begin(), lengths.end());
    nest_extents.push_back(reduce_extent(words_axis));
    size_t root = 0;
    while (root + 1 < nest_extents.size() && nest_extents[root] == 1)
        ++root;
    steps[vectorize].iter = static_cast<int>(r1 + root);
    steps[vectorize].annotation = IterAnnotation::TileMatmul;
    try {
        State s = replay(tiled.compute, steps);
        ir::LoweredFunc f = lower_state(s, "tile_matmul_check");
        if (!has_tile_matmul(lower::lower_tile_matmuls(f.body)))
            return std::nullopt;
        return s;
    } catch (const ScheduleError&) {
        return std::nullopt;
    }
}

} // namespace tessera::sched::detail
