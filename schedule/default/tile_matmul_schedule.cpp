// The default schedule's matrix-tile variant: the register tile of a stage of word products
// (a sum of dot4_u8s8 or dot2_bf16 over words) re-cut into AMX tiles, its reduce loops run
// inside one tile_matmul nest (lower/tile_matmul.h).
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

/// The two reads of the stage's `sum(dot4_u8s8(a, b))` (when opts.cpu_tiles) or
/// `sum(dot2_bf16(a, b))` (opts.cpu_tiles_bf16), when its body has that form.
struct WordProductReads {
    const ir::TensorRead* a = nullptr;
    const ir::TensorRead* b = nullptr;
};
std::optional<WordProductReads> word_product_reads(const Stage& st,
                                                   const DefaultScheduleOptions& opts) {
    const ir::Reduce* r = st.body.as<ir::Reduce>();
    if (!r || r->op != ir::ReduceOp::Sum)
        return std::nullopt;
    const ir::Call* dot = r->source.as<ir::Call>();
    if (!dot || !((dot->op == ir::CallOp::Dot4U8S8 && opts.cpu_tiles) ||
                  (dot->op == ir::CallOp::Dot2BF16 && opts.cpu_tiles_bf16)))
        return std::nullopt;
    // A's words may be its elements reinterpreted.
    const ir::Call* bytes = dot->args[0].as<ir::Call>();
    const ir::Expr a =
        bytes && bytes->op == ir::CallOp::BytesAsWord ? bytes->args[0] : dot->args[0];
    WordProductReads d{a.as<ir::TensorRead>(), dot->args[1].as<ir::TensorRead>()};
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

} // namespace

std::optional<State> tile_matmul_schedule(const State& tiled,
                                         const DefaultScheduleOptions& opts) {
    const State initial = make_initial_state(tiled.compute);
    int stage = -1;
    std::optional<WordProductReads> reads;
    for (size_t i = 0; i < initial.stages.size() && stage < 0; ++i)
        if ((reads = word_product_reads(initial.stages[i], opts)))
            stage = static_cast<int>(i);
    if (stage < 0)
        return std::nullopt;
    const Stage& st = initial.stages[stage];
    const size_t n_spatial = st.axes.size(), n_reduce = st.reduce_axes().size();
    if (n_spatial < 2 || n_reduce < 1)
        return std::nullopt;

    // Roles by the reads: columns are the innermost axis only the weights B read, rows the
    // innermost axis only the activations A read. A tile spans up to 16 of each; a second
    // tile of each comes from the same axis when it is longer (a matmul's rows and columns)
    // or from the next axis of that kind (a convolution's output rows, its channel blocks).
    // Lengths of split levels 1..3 (the tile is level 3, its tiles level 2 or 3).
    const auto extent = [&](size_t axis) { return st.iters[axis].extent; };
    const auto even = [](int64_t n) { return n % 2 == 0 ? int64_t(2) : int64_t(1); };
    std::vector<std::vector<int64_t>> lengths(n_spatial, {1, 1, 1});
    const int64_t column = static_cast<int64_t>(n_spatial) - 1;
    if (reads_var(reads->a, st.axes[column]) || !reads_var(reads->b, st.axes[column]))
        return std::nullopt;
    bool column_tiles = false;
    if (extent(column) <= TileMatmul::kMaxColumnWords) {
        lengths[column][2] = extent(column);
    } else if (extent(column) % TileMatmul::kMaxColumnWords == 0) {
        lengths[column][2] = TileMatmul::kMaxColumnWords;
        lengths[column][1] = even(extent(column) / TileMatmul::kMaxColumnWords);
        column_tiles = true;
    } else {
        return std::nullopt;
    }
    bool rows = false, row_tiles = false;
    for (int64_t axis = column - 1; axis >= 0; --axis) {
        const bool in_a = reads_var(reads->a, st.axes[axis]);
        const bool in_b = reads_var(reads->b, st.axes[axis]);
        if (in_a && !in_b && !row_tiles && extent(axis) > 1) {
            if (!rows) {
                const int64_t m = largest_divisor(extent(axis), TileMatmul::kMaxRows);
                lengths[axis][2] = m;
                rows = true;
                if (extent(axis) / m > 1) {
                    lengths[axis][1] = even(extent(axis) / m);
                    row_tiles = true;
                }
            } else {
                lengths[axis][2] = even(extent(axis));
                row_tiles = true;
            }
        } else if (in_b && !in_a && !column_tiles && extent(axis) > 1) {
            lengths[axis][2] = even(extent(axis));
            column_tiles = true;
        }
    }
    if (!rows)
        return std::nullopt;
    // Columns one tile nest covers. A weight packed in blocks of more columns (the register
    // tile's) would make B's index jump between blocks inside the nest: its blocks shrink to
    // the nest's columns, which keeps B linear in the nest's loops.
    const int64_t nest_columns = lengths[column][1] * lengths[column][2];
    const int b_stage = initial.stage_id_of(reads->b->tensor);

    // The tiled schedule's split and reorder steps of the stage: 3 lengths per spatial axis
    // (levels 1..3 of "SSRSRS"), 1 per reduce axis. Its later steps on the stage (the vector
    // axis split into registers, unrolling, vectorizing) give way to the tile annotation.
    std::vector<Step> steps;
    std::vector<int> new_index(tiled.steps.size(), -1);
    std::vector<size_t> spatial_splits, reduce_splits;
    int reorder = -1, vectorize = -1;
    for (size_t i = 0; i < tiled.steps.size(); ++i) {
        const Step& s = tiled.steps[i];
        if (s.stage == stage && reorder >= 0 && s.kind != StepKind::Pragma &&
            s.kind != StepKind::ComputeAt &&
            !(s.kind == StepKind::Annotate && s.annotation == IterAnnotation::Vectorize &&
              vectorize < 0))
            continue; // dropped
        new_index[i] = static_cast<int>(steps.size());
        steps.push_back(s);
        Step& t = steps.back();
        if (t.kind == StepKind::TransformLayout && t.stage == b_stage && !t.lengths.empty() &&
            t.lengths.back() > nest_columns && t.lengths.back() % nest_columns == 0)
            t.lengths.back() = nest_columns;
        if (t.kind == StepKind::FollowSplit) {
            if (t.src_step < 0 || new_index[static_cast<size_t>(t.src_step)] < 0)
                return std::nullopt;
            t.src_step = new_index[static_cast<size_t>(t.src_step)];
        }
        if (t.stage != stage)
            continue;
        const size_t at = steps.size() - 1;
        if (t.kind == StepKind::Split && t.lengths.size() == 3 &&
            spatial_splits.size() < n_spatial && reduce_splits.empty())
            spatial_splits.push_back(at);
        else if (t.kind == StepKind::Split && t.lengths.size() == 1 &&
                 spatial_splits.size() == n_spatial)
            reduce_splits.push_back(at);
        else if (t.kind == StepKind::Reorder && reorder < 0)
            reorder = static_cast<int>(at);
        else if (t.kind == StepKind::Annotate)
            vectorize = static_cast<int>(at);
        else if (t.kind == StepKind::Pragma)
            t.value = 0; // nothing to unroll: the nest becomes one call
    }
    const size_t n_iters = 4 * n_spatial + 2 * n_reduce;
    if (spatial_splits.size() != n_spatial || reduce_splits.size() != n_reduce || reorder < 0 ||
        vectorize < 0 || steps[reorder].iters.size() != n_iters)
        return std::nullopt;
    for (size_t a = 0; a < n_spatial; ++a)
        steps[spatial_splits[a]].lengths = lengths[a];

    // The order S0 S1 R0 S2 R1 S3 becomes S0 S1 R0 R1 S2 S3 with the words loop of R1 last:
    // the tile nest holds both tile levels and accumulates over R1 with the words innermost.
    // The words axis's outer steps (R0 of a matmul's long K) move into the nest too, first:
    // outside it, every step of 16 words would store the accumulator tiles and load them back.
    // When the words axis has one step (an image of 4 channels: one word per pixel), the
    // reduce axis before it takes its place: a kernel window's columns, whose words lie side
    // by side in a row of the input (7 words of a 7x7 window instead of 1 per tile step).
    const auto reduce_extent = [&](size_t r) { return st.iters[n_spatial + r].extent; };
    size_t words_axis = n_reduce - 1;
    while (words_axis > 0 && reduce_extent(words_axis) == 1)
        --words_axis;
    // The whole reduction inside the tile's reduce level, but for a long words axis (a
    // matmul's): 16 words per tile step, the rest around the tile.
    std::vector<int64_t> inner(n_reduce);
    for (size_t r = 0; r < n_reduce; ++r) {
        inner[r] = r == words_axis ? largest_divisor(reduce_extent(r), TileMatmul::kMaxColumnWords)
                                   : reduce_extent(r);
        steps[reduce_splits[r]].lengths = {inner[r]};
    }
    std::vector<int>& order = steps[reorder].iters;
    const auto level = [&](size_t from, size_t n) {
        return std::vector<int>(order.begin() + static_cast<long>(from),
                                order.begin() + static_cast<long>(from + n));
    };
    const size_t s2 = 2 * n_spatial + n_reduce, r1 = 3 * n_spatial + n_reduce;
    const std::vector<int> spatial2 = level(s2, n_spatial), reduce1 = level(r1, n_reduce),
                           spatial3 = level(r1 + n_reduce, n_spatial);
    const int words_outer = order[2 * n_spatial + words_axis];
    std::vector<int> new_order;
    for (size_t i = 0; i < s2; ++i)
        if (order[i] != words_outer)
            new_order.push_back(order[i]);
    const size_t nest_start = new_order.size();
    new_order.push_back(words_outer);
    for (size_t r = 0; r < n_reduce; ++r)
        if (r != words_axis)
            new_order.push_back(reduce1[r]);
    new_order.insert(new_order.end(), spatial2.begin(), spatial2.end());
    new_order.insert(new_order.end(), spatial3.begin(), spatial3.end());
    new_order.push_back(reduce1[words_axis]);
    order = new_order;
    // The tile nest's root: its outermost loop of more than one step (lowering drops the
    // others), among the words' outer steps, the other reduce loops, then the spatial loops of
    // levels 2 and 3, then words.
    std::vector<int64_t> nest_extents = {reduce_extent(words_axis) / inner[words_axis]};
    for (size_t r = 0; r < n_reduce; ++r)
        if (r != words_axis)
            nest_extents.push_back(inner[r]);
    for (int lv : {1, 2})
        for (const auto& l : lengths)
            nest_extents.push_back(l[static_cast<size_t>(lv)]);
    nest_extents.push_back(inner[words_axis]);
    size_t root = 0;
    while (root + 1 < nest_extents.size() && nest_extents[root] == 1)
        ++root;
    steps[vectorize].iter = static_cast<int>(nest_start + root);
    steps[vectorize].annotation = IterAnnotation::TileMatmul;
    try {
        State s = replay(tiled.compute, steps);
        ir::LoweredFunc f = lower_state(s, "tile_matmul_check");
        if (!ir::contains_call(lower::lower_tile_matmuls(f.body), ir::is_tile_matmul))
            return std::nullopt;
        return s;
    } catch (const ScheduleError&) {
        return std::nullopt;
    }
}

} // namespace tessera::sched::detail
