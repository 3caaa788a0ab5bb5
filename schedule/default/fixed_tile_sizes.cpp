// fill_fixed_tile_sizes: the split lengths of the default schedule. A multi-level tiled stage
// gets one register tile (its innermost spatial level) of whole vectors along the vector axis
// by a few rows of the width axis (and by a few channel blocks when the vector axis is short);
// a cache tile repeats it over rows (reusing each weight): in the second level for a conv, in
// the first, around the register tile's local buffer, for a GEMM-like stage (a long reduction
// without a window, which the tile accumulates whole); every other level stays 1, so that the
// cache tile is computed whole, with its full reduction, inside one iteration of the parallel
// outer loops.
#include <algorithm>
#include <map>
#include <string>

#include "../internal/body_util.h"
#include "default_rules.h"
#include "tessera/schedule/sampling.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"

namespace tessera::sched::detail {

namespace {

/// Reduce loops up to this extent (kernel windows) lie whole inside the register tile's
/// reduce level; longer ones (channels, the K of a GEMM) stay in the outer reduce level.
constexpr int64_t kMaxInnerReduce = 7;
/// A window of this many steps or more (5x5) keeps one register tile in its local buffer
/// (add_cache_tile).
constexpr int64_t kLongWindow = 25;
/// The most rows of the width axis in one register tile.
constexpr int64_t kMaxTileRows = 8;
/// The most elements of a convolution's cache tile (register tile x rows of the row axis):
/// 8 KiB of f32, well inside L1 and under the lowering's stack limit for local buffers.
constexpr int64_t kMaxCacheTileElements = 2048;
/// The most elements of a cache tile of whole rows (below): the lowering's 16 KiB stack limit
/// for local buffers (LowerOptions::stack_limit_bytes), beyond which they would go to the heap.
constexpr int64_t kMaxWholeRowsElements = 4096;
/// A reduction at least this long without a window (matmul, dense, 1x1 conv) is GEMM-like: its
/// register tile keeps its accumulators over the whole reduction, whose innermost kReduceUnroll
/// steps are unrolled around the tile's FMAs.
constexpr int64_t kMinGemmReduce = 128;
constexpr int64_t kReduceUnroll = 4;
/// The longest channel block (an NCHW[x]c block: 8 or 16 lanes) that a reduction over channels
/// without a window takes whole into the register tile's reduce level (whole_reduce_axis).
constexpr int64_t kMaxWholeChannelBlock = 16;

/// Whether stage st reduces over a kernel window (a reduce loop of extent 2..kMaxInnerReduce)
/// and how long its longest reduce loop is.
struct ReduceShape {
    bool window = false;
    /// Some reduce loop of extent > 1 slides no window: the input channels of a dense conv.
    bool channels = false;
    int64_t longest = 1;
    int64_t steps = 1; ///< The product of the reduce extents.
    bool gemm_like() const { return !window && longest >= kMinGemmReduce; }
    /// A network's stem: a long window over a few input channels, every reduce loop short
    /// (3x3 or 7x7 over 3 channels), so the register tile holds its whole reduction.
    bool stem() const {
        return window && channels && longest <= kMaxInnerReduce && steps >= kLongWindow;
    }
};

/// Whether reduce variable `v` slides a window: some read index adds it to a spatial axis
/// (oh * stride + ry). A short reduction over channels (the 2 channel blocks of a 1x1 conv on
/// 16 channels) is no window: its tile should not repeat over rows that reload the
/// accumulators at every step of the channel loop (MobileNetV2's 1x1 convs ran at 16-25
/// GFLOP/s so, on a 2-core Zen 1).
bool slides_window(const Stage& st, const ir::Var& v) {
    std::vector<const ir::Variable*> spatial;
    for (const ir::Var& a : st.axes)
        spatial.push_back(a.get());
    bool window = false;
    if (st.body.defined())
        for_each_read(inline_lets(st.body), [&](const ir::TensorRead* r) {
            for (const ir::Expr& index : r->indices)
                window = window || (uses_any(index, {v.get()}) && uses_any(index, spatial));
        });
    return window;
}

ReduceShape reduce_shape(const Stage& st) {
    ReduceShape r;
    for (const ir::IterVar& v : st.reduce_axes()) {
        const bool slides = v.extent > 1 && slides_window(st, v.var);
        r.window = r.window || (slides && v.extent <= kMaxInnerReduce);
        r.channels = r.channels || (v.extent > 1 && !slides);
        r.longest = std::max(r.longest, v.extent);
        r.steps *= v.extent;
    }
    return r;
}

/// The register tile of one tiled stage: its extent along each spatial axis it covers.
struct RegisterTile {
    int vector_axis = -1;
    int64_t vector_extent = 1;
    int width_axis = -1;
    int64_t width_extent = 1;
    int block_axis = -1;
    int64_t block_extent = 1;
    /// A convolution window's cache tile: the register tile repeated over this many rows of
    /// the row axis (its second-innermost spatial level), so that each weight loaded from L2
    /// serves the outputs of several rows.
    int row_axis = -1;
    int64_t row_extent = 1;
    /// A cache tile of whole rows: the register tile repeated this many times along the width
    /// axis, at the rows' level, so that each iteration of the parallel loops covers rows.
    int64_t width_repeats = 1;
    /// The inner reduce level of a GEMM-like stage (kReduceUnroll; 0: reductions longer than
    /// kMaxInnerReduce stay whole in the outer reduce level).
    int64_t reduce_chunk = 0;
    /// A reduce axis (its node: spatial axes first, then reduce axes) taken whole into the
    /// inner reduce level, where annotate_fixed unrolls it around the register tile: the
    /// channel block of a 1x1 NCHW[x]c conv, with 16 vector registers (add_cache_tile). In
    /// the outer level its loop
    /// nested in the channel blocks' loop, and the accumulators went through memory at every
    /// step: SqueezeNet's 512 -> 1000 classifier conv at 13x13 on a Zen 3 core ran 1.49x ONNX
    /// Runtime's time, with the block whole 0.98x (1 and 2 threads).
    int whole_reduce_axis = -1;
    /// The rows lie outside the register tile's local buffer (second spatial level of the
    /// sketch's S S R S R S tiling, around the cache write), not inside it: GEMM-like stages,
    /// and windows with an outer reduction (add_cache_tile).
    bool rows_outside_local = false;
};

/// For each read in the body of `st`, which of its spatial axes the read's indices use.
std::vector<std::vector<bool>> axes_used_by_reads(const Stage& st) {
    const size_t n_axes = std::min(st.axes.size(), st.tensor.shape().size());
    const std::vector<ir::Var> axes(st.axes.begin(), st.axes.begin() + static_cast<long>(n_axes));
    std::vector<std::vector<bool>> uses;
    for (AxisRead& r : reads_by_axis(st.body, axes, {}))
        uses.push_back(std::move(r.uses));
    return uses;
}

/// A spatial axis (other than the vector and width axes, extent > 1) that some read using the
/// width axis leaves out while some read uses it: tiling it reuses each value that read loads
/// across more accumulators, as the output-channel blocks of an NCHW[x]c convolution reuse its
/// input, and the channel blocks of Winograd's output transform its table entries (one per
/// output position; with a tile of one block, 1.25 loads per FMA: resnet18's 56x56 output
/// transforms 0.95 -> 0.66 ms per run on a Rocket Lake core with two). -1 when there is none.
int block_axis(const Stage& st, int vector_axis, int width_axis) {
    if (width_axis < 0)
        return -1;
    const std::vector<std::vector<bool>> uses = axes_used_by_reads(st);
    const int n_axes = static_cast<int>(std::min(st.axes.size(), st.tensor.shape().size()));
    for (int a = n_axes - 1; a >= 0; --a) {
        if (a == vector_axis || a == width_axis || st.tensor.shape()[static_cast<size_t>(a)] <= 1)
            continue;
        bool left_out_by_a_width_read = false, used = false;
        for (const std::vector<bool>& u : uses) {
            left_out_by_a_width_read = left_out_by_a_width_read ||
                                       (u[static_cast<size_t>(width_axis)] &&
                                        !u[static_cast<size_t>(a)]);
            used = used || u[static_cast<size_t>(a)];
        }
        if (used && left_out_by_a_width_read)
            return a;
    }
    return -1;
}

/// Rows of a tile over an axis of extent e, at most max_rows: a divisor close to max_rows
/// when there is one, otherwise balanced imperfect tiles.
int64_t tile_rows(int64_t e, int64_t max_rows) {
    if (e <= max_rows)
        return e;
    for (int64_t d = max_rows; d * 2 > max_rows; --d)
        if (e % d == 0)
            return d;
    const int64_t n = (e + max_rows - 1) / max_rows;
    return (e + n - 1) / n;
}

/// The cache tile: the register tile repeated over rows of a row axis, so that each weight
/// loaded from L2 serves several register tiles.
///   - A stage with a convolution window (a reduce axis of extent 2 to kMaxInnerReduce, whole
///     inside the tile's reduce level, so each load and store of the accumulators serves a
///     window of FMAs): rows of the innermost remaining spatial axis that some read (the
///     weight) leaves out (at most kMaxCacheTileElements elements), while the parallel loops
///     keep at least 4 x num_cores iterations. With a short reduction (a 3x3 depthwise conv's
///     9 steps) they lie in the tile's second spatial level inside the local buffer; with a
///     reduction outside the window (input channels, an 8-bit conv's words) or a long window
///     (25 steps or more: a stem's 7x7 over 3 channels, a 5x5 depthwise) and a tile of whole
///     vectors, outside it, so that the register tile's accumulators stay in registers over
///     the whole reduction instead of being reloaded for each row at every step of it.
///     resnet18's 56x56 8-bit convs on a Zen 4 core: 0.566 -> 0.505 ms (the `vpdpbusd` peak),
///     its f32 direct ones 2.05 -> 2.02; its 8-bit stem 0.83 -> 0.77, its f32 one 2.49 ->
///     2.38, a 5x5 depthwise conv over 96 channels of 56x56 0.99 -> 0.93.
///     A stem (ReduceShape::stem) repeats its tile along the width axis instead: each
///     parallel iteration then writes whole output rows and reads whole input rows, in memory
///     order, where a column of rows 4 outputs wide touched each of ~60 input rows and 28
///     output rows in pieces of 2 cache lines, which no prefetcher followed. In MobileNetV2 on
///     a Zen 3 core (its stem's input, padded copy and output miss the 512 KiB L2), 3x3 over 3
///     channels to 32: 1.00 -> 0.53 ms; resnet18's 7x7 to 64: 3.86 -> 3.23. Depthwise windows
///     keep their rows: a 5x5 stride-2 one ran 0.58 -> 1.22 ms along the width.
///     A short depthwise window over channel blocks (rows in its local buffer) takes whole
///     rows instead: every column tile of at least two rows (as many as kMaxCacheTileElements
///     allows), where its tile was a column 8 outputs wide down 28 rows, written and read in
///     pieces of a few cache lines. MobileNetV2's 3x3 depthwise convs on a Zen 3 core in the
///     model: 12-30% faster (112x112x32 0.40 -> 0.31 ms, 56x56x144 0.43 -> 0.31), mobilenet_tiny
///     1.94 -> 1.80 ms.
///   - A GEMM-like stage (a long reduction without a window: matmul, dense, 1x1 conv): rows of
///     the width axis outside the local buffer, which stays one register tile that accumulates
///     over the whole reduction (its innermost kReduceUnroll steps unrolled). As many rows as
///     the parallel loops allow, ideally all: each panel of the vector axis' operand (the B of
///     a matmul, packed) then stays in L2 while every row of A streams past it. On a 2-core
///     AVX-512 machine, sgemm 1024^3 ran at 314 GFLOP/s with all 171 row tiles per panel, 277
///     with 43 and 223 with the former 8-row local cache tile and reduction chunks of 256.
///   - A reduction over channels without a window whose last reduce axis is a channel block
///     of 8 to kMaxWholeChannelBlock (a 1x1 NCHW[x]c conv, GEMM-like or not), on a CPU with 16
///     vector registers (AVX2; with 32 the block stays rolled outside): that block whole
///     in the register tile's reduce level (whole_reduce_axis), a GEMM-like one's other
///     reduce axes without a chunk, so that one rolled loop runs around the unrolled block.
void add_cache_tile(const Stage& st, const DefaultScheduleOptions& opts, RegisterTile& t) {
    if (t.width_axis < 0)
        return;
    const ReduceShape reduce = reduce_shape(st);
    const std::vector<int64_t>& shape = st.tensor.shape();
    const int n_axes = static_cast<int>(std::min(st.axes.size(), shape.size()));
    if (reduce.window) {
        const std::vector<std::vector<bool>> uses = axes_used_by_reads(st);
        if (reduce.stem())
            t.row_axis = t.width_axis;
        for (int a = n_axes - 1; a >= 0 && t.row_axis < 0; --a) {
            if (a == t.vector_axis || a == t.width_axis || a == t.block_axis ||
                shape[static_cast<size_t>(a)] <= 1)
                continue;
            bool left_out = false;
            for (const std::vector<bool>& u : uses)
                left_out = left_out || !u[static_cast<size_t>(a)];
            if (left_out)
                t.row_axis = a;
        }
        // Whole vectors only: unet's NCHW convs to 8 channels (8-lane register tiles on a
        // 16-lane CPU) ran 16-54% slower with their rows outside.
        t.rows_outside_local = (reduce.longest > kMaxInnerReduce || reduce.steps >= kLongWindow) &&
                               t.vector_extent % std::max<int64_t>(1, opts.vector_lanes) == 0;
    }
    // A channel block (the last of several reduce axes, 8 to kMaxWholeChannelBlock) of a
    // reduction over channels without a window goes whole into the reduce level, with 16
    // vector registers. With 32 (AVX-512), the block's loop rolled outside the blocks' loop
    // keeps the accumulators in registers, and the unrolled block spilled them instead: the
    // 8 x 2-vector tile of a 96 -> 24 channel 1x1 conv at 56x56 on a Zen 4 core, whole,
    // stored and reloaded 94 vectors per step of 16 channels (0.261 against 0.223 ms);
    // MobileNetV2 1.09x slower. On a Zen 3 (16 registers) the whole block was the faster one.
    const std::vector<ir::IterVar> raxes = st.reduce_axes();
    if (!reduce.window && reduce.channels && raxes.size() > 1 && opts.vector_registers <= 16 &&
        raxes.back().extent > kMaxInnerReduce && raxes.back().extent <= kMaxWholeChannelBlock)
        t.whole_reduce_axis = static_cast<int>(st.axes.size() + raxes.size() - 1);
    if (reduce.gemm_like()) {
        t.row_axis = t.width_axis;
        // With a whole channel block, the blocks' loop stays one loop around it.
        t.reduce_chunk = t.whole_reduce_axis >= 0 ? 0 : kReduceUnroll;
        t.rows_outside_local = true;
    }
    if (t.row_axis < 0)
        return;
    auto tiles = [](int64_t extent, int64_t e) { return (extent + e - 1) / e; };
    auto register_extent = [&](int a) {
        return a == t.vector_axis  ? t.vector_extent
               : a == t.width_axis ? t.width_extent
               : a == t.block_axis ? t.block_extent
                                   : int64_t{1};
    };
    int64_t outer = 1; // parallel iterations without the row axis
    for (int a = 0; a < n_axes; ++a)
        if (a != t.row_axis)
            outer *= tiles(shape[static_cast<size_t>(a)], register_extent(a));
    // The row axis in units of its register-tile extent.
    const int64_t units = tiles(shape[static_cast<size_t>(t.row_axis)], register_extent(t.row_axis));
    int64_t tile = t.vector_extent * t.width_extent * t.block_extent;
    const int64_t min_parallel = int64_t{4} * std::max(1, opts.num_cores);
    // A depthwise window (no channel reduction) whose rows lie in its local buffer over a
    // channel block (the vector axis whole and innermost, the width axis just outside it):
    // whole rows, at least two, when they fit the stack.
    const int64_t width_units =
        tiles(shape[static_cast<size_t>(t.width_axis)], register_extent(t.width_axis));
    if (reduce.window && !reduce.channels && !t.rows_outside_local && t.vector_axis == n_axes - 1 &&
        t.width_axis == n_axes - 2 &&
        t.vector_extent == shape[static_cast<size_t>(t.vector_axis)] &&
        2 * tile * width_units <= kMaxWholeRowsElements) {
        t.width_repeats = width_units;
        outer /= width_units;
        tile *= width_units;
    }
    const int64_t min_rows = t.width_repeats > 1 ? 2 : 1;
    int64_t rows = reduce.gemm_like()
                       ? units
                       : std::min(units, std::max(min_rows, kMaxCacheTileElements / tile));
    while (rows > 1 && outer * tiles(units, rows) < min_parallel)
        --rows;
    t.row_extent = tile_rows(units, rows);
}

/// The register tile of a stage of the sketch: the vector axis is the axis of its innermost
/// spatial loop (the sketch rules put the weight's axis or the contiguous axis there), the
/// width axis the innermost other spatial axis of extent > 1.
RegisterTile register_tile(const Stage& st, const DefaultScheduleOptions& opts) {
    RegisterTile t;
    t.vector_axis = vector_axis(st);
    const int n_axes = static_cast<int>(std::min(st.axes.size(), st.tensor.shape().size()));
    if (t.vector_axis < 0 || t.vector_axis >= n_axes)
        return RegisterTile{};
    for (int a = n_axes - 1; a >= 0; --a)
        if (a != t.vector_axis && st.tensor.shape()[static_cast<size_t>(a)] > 1) {
            t.width_axis = a;
            break;
        }
    const int64_t lanes = std::max<int64_t>(1, opts.vector_lanes);
    const ReduceShape reduce = reduce_shape(st);
    // Whole-tensor extents: an attached stage's loops cover only the region it is computed for.
    const std::vector<int64_t>& shape = st.tensor.shape();
    const int64_t ev = shape[static_cast<size_t>(t.vector_axis)];
    const int64_t ew = t.width_axis >= 0 ? shape[static_cast<size_t>(t.width_axis)] : 1;
    // Accumulators, one loaded weight vector each and a broadcast must fit the register file.
    const int64_t registers = opts.vector_registers;
    // Two vectors by several rows keeps both FMA ports busy; with fewer than 4 rows (a batch
    // of 1) more vectors per row hide the FMA latency instead. A GEMM-like tile with 32
    // registers takes four vectors by six rows: 24 accumulators, 4 vector loads and 6
    // broadcasts per reduction step (as the hand-written sgemm of bench/sgemm_ir.cpp).
    const int64_t want_vectors = ew < 4 ? 4 : (registers == 32 && reduce.gemm_like() ? 4 : 2);
    int64_t vectors = std::min(want_vectors, ev / lanes);
    // A window's tile that does not divide its vector axis leaves a partial last tile, which
    // keeps the window rolled (annotate_fixed: unrolled, SqueezeNet's partial tiles spilled):
    // fewer vectors per row that divide it instead. An NCHW depthwise conv along 112 columns
    // in tiles of 2 x 16 lanes ran 0.148 ms on a Zen 4 core, in tiles of one vector by 8 rows
    // with the window unrolled 0.099.
    if (reduce.window && ev % lanes == 0)
        while (vectors > 1 && (ev / lanes) % vectors != 0)
            --vectors;
    t.vector_extent = vectors >= 1 ? vectors * lanes : ev;
    // A vector axis shorter than the vectors wanted (an NCHW[x]c block): more vectors from
    // the block axis instead.
    int64_t per_row = std::max<int64_t>(1, vectors);
    if (per_row < want_vectors) {
        t.block_axis = block_axis(st, t.vector_axis, t.width_axis);
        if (t.block_axis >= 0) {
            t.block_extent =
                tile_rows(shape[static_cast<size_t>(t.block_axis)], want_vectors / per_row);
            per_row *= t.block_extent;
        }
    } else {
        // Enough vectors already: a block axis still multiplies the accumulators that each
        // loaded vector of the width axis' read feeds, up to a quarter of the registers per
        // row. Winograd's input transform has one (the 36 tile positions e, which all read
        // the same tile values): with a tile of one position it re-read its input from L2 for
        // each of them, 1.62 ms per call of resnet18's four 56x56 ones on a Rocket Lake core
        // against 1.06 with 4 positions x 2 tiles x 2 vectors.
        t.block_axis = block_axis(st, t.vector_axis, t.width_axis);
        if (t.block_axis >= 0) {
            t.block_extent = tile_rows(shape[static_cast<size_t>(t.block_axis)],
                                       std::max<int64_t>(1, registers / (4 * per_row)));
            per_row *= t.block_extent;
        }
    }
    const int64_t acc = per_row;
    const int64_t max_rows = std::clamp<int64_t>((registers - acc - 1) / acc, 1, kMaxTileRows);
    // A GEMM-like tile takes the full max_rows even when they do not divide the width axis
    // (the last tile is partial): 6 x 4 vectors beat a dividing 4 x 4 by a quarter more FMAs
    // per loaded vector.
    if (t.width_axis < 0)
        t.width_extent = 1;
    else if (reduce.gemm_like())
        t.width_extent = std::min(ew, max_rows);
    else
        t.width_extent = tile_rows(ew, max_rows);
    add_cache_tile(st, opts, t);
    return t;
}

/// The split or fuse of st whose outputs include node, or null (a root axis).
const IterRelation* relation_producing(const Stage& st, int node) {
    for (const IterRelation& r : st.relations)
        if (std::find(r.outputs.begin(), r.outputs.end(), node) != r.outputs.end())
            return &r;
    return nullptr;
}

bool is_root(const Stage& st, int node) {
    return node < static_cast<int>(st.axes.size() + st.reduce_axes().size());
}

} // namespace

int root_axis(const Stage& st, int node) {
    while (!is_root(st, node)) {
        const IterRelation* r = relation_producing(st, node);
        if (r == nullptr || r->kind != IterRelation::Kind::Split)
            return -1;
        node = r->inputs.front();
    }
    return node;
}

std::set<int> root_axes(const Stage& st, int node) {
    if (is_root(st, node))
        return {node};
    const IterRelation* r = relation_producing(st, node);
    if (r == nullptr)
        return {};
    std::set<int> axes;
    for (int in :
         (r->kind == IterRelation::Kind::Split ? std::vector<int>{r->inputs.front()} : r->inputs))
        for (int a : root_axes(st, in))
            axes.insert(a);
    return axes;
}

int vector_axis(const Stage& st) {
    for (auto it = st.iters.rbegin(); it != st.iters.rend(); ++it)
        if (it->kind == IterKind::Spatial)
            return root_axis(st, it->node);
    return -1;
}

bool tiles_rows_outside_local(const Stage& st, const DefaultScheduleOptions& opts) {
    return register_tile(st, opts).rows_outside_local;
}

bool has_window(const Stage& st) { return reduce_shape(st).window; }

int whole_reduce_axis(const Stage& st, const DefaultScheduleOptions& opts) {
    return register_tile(st, opts).whole_reduce_axis;
}

namespace {

/// The sketch's reorder of a tiled stage, with the register tile's width loop moved outside its
/// block loop when the tile has more columns than blocks. Each reduction step loads one vector
/// per block (a conv's weights) and broadcasts one value per column (its input): with the
/// blocks outside, every broadcast stays live across them, and a tile of 2 blocks by 6
/// columns needs 12 accumulators, 6 broadcasts and 2 vectors, more than AVX2's 16 registers
/// (LLVM spilled accumulators at every step: SqueezeNet's 27x27 1x1 convs at 45% of the FMA
/// peak on a Zen 3); with the columns outside, 12 + 2 + 1.
void broadcasts_outside_vector_loads(const Stage& st,
                                     const std::map<std::string, RegisterTile>& tiles, Step& step) {
    const auto tile = tiles.find(st.tensor.name());
    if (tile == tiles.end())
        return;
    const RegisterTile& t = tile->second;
    if (t.block_axis < 0 || t.width_axis < 0 || t.block_extent <= 1 ||
        t.width_extent <= t.block_extent)
        return;
    // The innermost (register-tile) iterators of the two axes: their last places in the order.
    int block_at = -1, width_at = -1;
    for (size_t k = 0; k < step.iters.size(); ++k) {
        const int it = step.iters[k];
        if (it < 0 || it >= static_cast<int>(st.iters.size()))
            return;
        const int axis = root_axis(st, st.iters[static_cast<size_t>(it)].node);
        if (axis == t.block_axis)
            block_at = static_cast<int>(k);
        else if (axis == t.width_axis)
            width_at = static_cast<int>(k);
    }
    if (block_at < 0 || width_at < block_at)
        return;
    const int width_iter = step.iters[static_cast<size_t>(width_at)];
    step.iters.erase(step.iters.begin() + width_at);
    step.iters.insert(step.iters.begin() + block_at, width_iter);
}

} // namespace

State fill_fixed_tile_sizes(const State& sketch, const DefaultScheduleOptions& opts) {
    std::map<std::string, RegisterTile> tiles;
    for (const Stage& st : sketch.stages)
        if (!st.is_input() && is_tiled(st))
            tiles[st.tensor.name()] = register_tile(st, opts);

    SampleOptions sample;
    sample.num_cores = opts.num_cores;
    sample.max_vectorize_lanes = opts.vector_lanes;

    State s = make_initial_state(sketch.compute);
    for (size_t i = 0; i < sketch.steps.size(); ++i) {
        Step step = sketch.steps[i];
        if (step.kind == StepKind::Split && !step.lengths.empty()) {
            const Stage& st = s.stage(step.stage, "split stage");
            if (step.iter < 0 || step.iter >= static_cast<int>(st.iters.size()))
                throw ScheduleError("sketch split of a missing iterator");
            const Iterator& it = st.iters[static_cast<size_t>(step.iter)];
            const int axis = root_axis(st, it.node);
            const auto tile = tiles.find(st.tensor.name());
            std::fill(step.lengths.begin(), step.lengths.end(), 1);
            if (it.kind == IterKind::Reduce) {
                if (it.extent <= kMaxInnerReduce ||
                    (tile != tiles.end() && axis >= 0 && axis == tile->second.whole_reduce_axis))
                    step.lengths.back() = it.extent;
                else if (tile != tiles.end() && tile->second.reduce_chunk > 0)
                    step.lengths.back() = std::min(it.extent, tile->second.reduce_chunk);
            } else if (tile != tiles.end() && axis >= 0) {
                const RegisterTile& t = tile->second;
                if (axis == t.vector_axis)
                    step.lengths.back() = t.vector_extent;
                else if (axis == t.width_axis)
                    step.lengths.back() = t.width_extent;
                else if (axis == t.block_axis)
                    step.lengths.back() = t.block_extent;
                // Rows go to the second spatial level (inside the local buffer) or, for a
                // GEMM-like stage, the first one below the parallel level (outside it).
                const size_t level = t.rows_outside_local ? 3 : 2;
                if (axis == t.row_axis && step.lengths.size() >= level)
                    step.lengths[step.lengths.size() - level] = t.row_extent;
                if (axis == t.width_axis && t.width_repeats > 1 && step.lengths.size() >= 2)
                    step.lengths[step.lengths.size() - 2] = t.width_repeats;
            }
        }
        if (step.kind == StepKind::Reorder)
            broadcasts_outside_vector_loads(s.stage(step.stage, "reorder stage"), tiles, step);
        if (is_panel_layout_step(s, step)) {
            const int64_t width = panel_width_for(s, step, sample);
            for (int64_t& f : step.lengths)
                f = f > 1 ? width : f;
        }
        apply_step(s, step);
    }
    return s;
}

} // namespace tessera::sched::detail
