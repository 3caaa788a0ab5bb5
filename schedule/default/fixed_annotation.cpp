// annotate_fixed: the parallel, unroll and vectorize decisions of the default schedule, the
// same structure annotation sampling gives (sampling.h) with every choice fixed.
#include <algorithm>

#include "../internal/body_util.h"
#include "../internal/parallel_outer.h"
#include "default_rules.h"
#include "tessera/ir/functor.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"

namespace tessera::sched::detail {

namespace {

/// The most vectors of one unrolled register-tile row (beyond it the tile would not fit in
/// the register file; the loop then stays one vector loop).
constexpr int64_t kMaxUnrolledVectors = 8;
/// auto_unroll_max_step of a register tile (its rows and inner reduce level unrolled whole)
/// and of other reductions (short inner loops only). The pragma counts each vector loop's
/// lanes, so a tile over a kernel window gets steps in proportion to the vector width: at 512
/// steps a 16-lane 7 x 2-vector tile of a 3x3 conv kept its window as loops, which loaded and
/// stored its 14 accumulators every 3 FMA steps (resnet18's 7x7 convs: 110 GFLOP/s on an
/// AVX-512 core so, 127 with the window unrolled). A GEMM-like tile, or one with a partial
/// last tile, keeps 512: unrolling a GEMM's 4 reduce steps too made bert_emb_op13 20% slower
/// on the same core, and unrolled windows of SqueezeNet's 27-wide rows in tiles of 7 spilled
/// accumulators (its 3x3 expand convs: 169 -> 130 GFLOP/s). The window steps cover a 3x3
/// window over the largest register tile, 2 vectors by 8 columns (144 vector steps; with
/// 128, conv_bn_relu's 32 x 32 convs kept their 8-column tiles' windows rolled: 5% slower).
constexpr int64_t kTileUnrollSteps = 512;
constexpr int64_t kWindowTileUnrollVectorSteps = 144;
/// The most unrolled steps for a register tile with its whole channel block (taken with 16
/// vector registers only: an 8-lane tile of 6 rows x 2 vectors over an 8-channel block, 768).
constexpr int64_t kMaxWholeBlockUnrollSteps = 4096;
constexpr int64_t kReductionUnrollSteps = 16;
/// Stages with fewer loop iterations than this (spatial x reduce) stay serial: waking the
/// thread pool costs more than they do.
constexpr int64_t kMinParallelWork = 4096;
/// A window tile reducing over at most this many steps per output (a stem's 3 channels by a
/// 7x7 window: 147) writes its output faster than its loads and FMAs hide the stores' misses:
/// its nest walks each row across all column tiles (order_rows_before_columns). Convs over
/// 64 channels and more (576 steps and up) ran as fast either way on a Zen 4 core.
constexpr int64_t kMaxStreamedWindow = 256;

bool is_free(const State& s, int sid, int k) {
    const Iterator& it = s.stages[sid].iters[static_cast<size_t>(k)];
    return it.kind == IterKind::Spatial && it.annotation == IterAnnotation::None &&
           s.attached_at(sid, k).empty();
}

/// Whether some split of stage sid, or of the stage it is computed at (whose tiles its loops
/// cover), leaves a partial last tile: its parts span more than their parent.
bool has_partial_tile(const State& s, int sid) {
    for (int id = sid; id >= 0;) {
        const Stage& st = s.stages[static_cast<size_t>(id)];
        for (const IterRelation& r : st.relations) {
            if (r.kind != IterRelation::Kind::Split)
                continue;
            int64_t span = 1;
            for (int o : r.outputs)
                span *= st.nodes[static_cast<size_t>(o)].extent;
            if (span != st.nodes[static_cast<size_t>(r.inputs.front())].extent)
                return true;
        }
        id = st.location.kind == ComputeLocKind::At ? st.location.stage : -1;
    }
    return false;
}

/// A tiled stage: its innermost loop (the register tile's vector axis) becomes vectors; a
/// whole number of vectors wider than one is split into vector-wide parts, the outer part
/// unrolled, so that each part stays one register.
void vectorize_tile(State& s, int sid, int64_t lanes) {
    const int n = static_cast<int>(s.stages[sid].iters.size());
    if (n == 0 || !is_free(s, sid, n - 1))
        return;
    const int64_t e = s.stages[sid].iters[static_cast<size_t>(n - 1)].extent;
    if (e < 2)
        return;
    if (e > lanes && e % lanes == 0 && e <= lanes * kMaxUnrolledVectors) {
        split(s, sid, n - 1, {lanes});
        unroll(s, sid, n - 1);
        vectorize(s, sid, n);
    } else if (e <= lanes) {
        vectorize(s, sid, n - 1);
    }
}

/// A reduction whose innermost output axis is contiguous in every operand (a pool or a
/// global pool over NCHW[x]c, a column sum): the reduce loops move outside that axis so that
/// it becomes the vector loop (one vector max or add per reduce step instead of a scalar
/// chain per output).
void hoist_window_reduce(State& s, int sid) {
    const Stage& st = s.stages[sid];
    const int n = static_cast<int>(st.iters.size());
    if (n < 2 || !st.has_reduce() || st.iters.back().kind != IterKind::Reduce ||
        st.axes.empty() || !reads_along_last_axis(st.body, st.axes.back()))
        return;
    int inner = n - 1;
    while (inner >= 0 && st.iters[static_cast<size_t>(inner)].kind == IterKind::Reduce)
        --inner;
    if (inner < 0 || !is_free(s, sid, inner))
        return;
    move_innermost(s, sid, inner);
}

/// Whether stage sid reads some tensor with its last axis in an index other than that tensor's
/// last one: vectorized along that axis, such a read is a gather across the tensor's planes.
bool reads_across_along_last_axis(const State& s, int sid) {
    const Stage& st = s.stages[sid];
    if (st.axes.empty())
        return false;
    const std::vector<const ir::Variable*> last = {st.axes.back().get()};
    bool across = false;
    for_each_read(inline_lets(st.body), [&](const ir::TensorRead* r) {
        for (size_t d = 0; d + 1 < r->indices.size(); ++d)
            across = across || uses_any(r->indices[d], last);
    });
    return across;
}

/// The k of a read index `last / k` (k > 1 a constant) of stage sid in a dimension other than
/// the read tensor's last, with `last` the stage's last axis: its lanes come in groups of k
/// that each read one slice of that dimension (a word pack gathering 4 words from each of 4
/// channel blocks). 0 when there is none.
int64_t lane_group_across(const State& s, int sid) {
    const Stage& st = s.stages[sid];
    if (st.axes.empty())
        return 0;
    // The divisions `last / k` anywhere in an index (a block cb * 4 + j / 4).
    struct Divisions : ir::IRVisitor {
        using ir::IRVisitor::visit;
        const ir::Variable* last = nullptr;
        int64_t k = 0;
        void visit(const ir::Div* op) override {
            const auto* by = op->b.as<ir::IntImm>();
            if (by && by->value > 1 && op->a.as<ir::Variable>() == last)
                k = by->value;
            ir::IRVisitor::visit(op);
        }
    } divisions;
    divisions.last = st.axes.back().get();
    for_each_read(inline_lets(st.body), [&](const ir::TensorRead* r) {
        for (size_t d = 0; d + 1 < r->indices.size(); ++d)
            divisions.visit(r->indices[d]);
    });
    return divisions.k;
}

/// An untiled stage: a long innermost spatial loop is split by the vector width (its guarded
/// remainder included) and the inner part vectorized; short innermost loops are fused up to
/// the vector width (with a vector's worth of the next loop when it divides) and vectorized
/// together; one loop of 3 read across planes (an image's channels) is unrolled instead.
void vectorize_untiled(State& s, int sid, int64_t lanes) {
    hoist_window_reduce(s, sid);
    // A trailing loop of one iteration (the channel block of a one-channel NCHW[1]c tensor)
    // joins the loop outside it, which then is the innermost loop to vectorize.
    while (s.stages[sid].iters.size() >= 2 && s.stages[sid].iters.back().extent == 1) {
        const int last = static_cast<int>(s.stages[sid].iters.size()) - 1;
        if (!is_free(s, sid, last) || !is_free(s, sid, last - 1))
            break;
        fuse(s, sid, {last - 1, last});
    }
    const int n = static_cast<int>(s.stages[sid].iters.size());
    if (n == 0 || !is_free(s, sid, n - 1))
        return;
    const int64_t e = s.stages[sid].iters[static_cast<size_t>(n - 1)].extent;
    // Lanes in groups of k that read different slices of an input (int8 resnet18's word
    // packs: 16 words of a pixel, 4 from each of its 4 channel blocks) gather one element per
    // lane as vectors of the whole loop; as vectors of k lanes, unrolled, each group is one
    // dense load (4 words, 16 bytes) and the stores stay contiguous.
    const int64_t group = lane_group_across(s, sid);
    if (group > 1 && group < e && e % group == 0 && e <= lanes) {
        split(s, sid, n - 1, {group});
        unroll(s, sid, n - 1);
        vectorize(s, sid, n);
        return;
    }
    if (e > lanes) {
        split(s, sid, n - 1, {lanes});
        vectorize(s, sid, n);
        return;
    }
    int64_t prod = 1;
    int count = 0;
    while (count < n && is_free(s, sid, n - 1 - count) &&
           prod * s.stages[sid].iters[static_cast<size_t>(n - 1 - count)].extent <= lanes) {
        prod *= s.stages[sid].iters[static_cast<size_t>(n - 1 - count)].extent;
        ++count;
    }
    if (count == 0 || prod < 2)
        return;
    // One loop of 3 (no whole number of them fills a vector) along which the stage reads
    // across an input's outer dimension, an RGB image's channels from their planes: as
    // vectors of 3 lanes each iteration gathers (the image blocked into NCHW[3]c, f32[1, 1,
    // 224, 224, 3]: 0.098 ms hot on a Zen 4 core). Unrolled, the loop outside it is left to
    // LLVM's loop vectorizer, whose interleaved stores write 16 pixels' channels from 3 dense
    // loads: 0.013 ms. (Longer odd loops, a transpose's 13 columns, stay gathers: interleave
    // groups that long are not vectorized.)
    // A loop of 2 read across (a bf16 product's pairs of rows, interleaved) likewise: LLVM
    // interleaves two dense rows where 2-lane groups of one vector would gather.
    if (count == 1 && (prod == 2 || (prod == 3 && lanes % prod != 0)) &&
        reads_across_along_last_axis(s, sid)) {
        unroll(s, sid, n - 1);
        return;
    }
    // Short loops that fill part of a vector take a vector's worth of the loop outside them
    // (when it divides): the 3-channel image quantized into blocks of 4 u8 channels (u8[1, 1,
    // 224, 224, 4], int8 resnet18's first kernel) ran one 4-lane vector per pixel, 0.13 ms hot
    // on a Zen 4 core; 4 pixels x 4 channels per vector (stored as one, the simplifier
    // recombining the fused index), 0.10.
    const int outer = n - 1 - count;
    if (outer >= 0 && prod < lanes && lanes % prod == 0 && is_free(s, sid, outer)) {
        const int64_t take = lanes / prod;
        const int64_t e_outer = s.stages[sid].iters[static_cast<size_t>(outer)].extent;
        if (e_outer > take && e_outer % take == 0) {
            split(s, sid, outer, {take});
            ++count; // the split's inner part, at outer + 1, joins the short loops
        }
    }
    int iter = static_cast<int>(s.stages[sid].iters.size()) - 1;
    const int n_now = iter + 1;
    if (count > 1) {
        std::vector<int> ids;
        for (int k = n_now - count; k < n_now; ++k)
            ids.push_back(k);
        iter = fuse(s, sid, ids);
    }
    vectorize(s, sid, iter);
}

/// About how many innermost iterations a root stage's nest runs: its spatial size times the
/// longest reduction among it and the stages computed inside it (a fused register tile), or
/// all the loops of a stage of partial reductions computed per output element (a factored
/// row reduction runs a whole row for each).
int64_t loop_work(const State& s, int sid) {
    int64_t reduce = s.reduce_size(sid);
    for (int a : s.attached_stages(sid)) {
        int64_t per_iteration = s.reduce_size(a);
        if (s.stages[a].origin == StageOrigin::Rfactor)
            for (const Iterator& it : s.stages[a].iters)
                per_iteration *= it.kind == IterKind::Spatial ? it.extent : 1;
        reduce = std::max(reduce, per_iteration);
    }
    return s.spatial_size(sid) * reduce;
}

/// A window tile of at most kMaxStreamedWindow reduce steps per output, whose nest walks rows
/// before columns.
bool is_short_window(const State& s, int sid) {
    return has_window(s.stages[sid]) && s.reduce_size(sid) <= kMaxStreamedWindow;
}

/// The unroll steps that reach from the innermost loop of tiled stage st out through the loop
/// of the reduce axis its register tile takes whole (whole_reduce_axis: a channel block, left
/// rolled inside the channel blocks' loop, kept its accumulators in memory), or 0.
int64_t whole_block_unroll_steps(const Stage& st, const DefaultScheduleOptions& opts) {
    const int axis = whole_reduce_axis(st, opts);
    if (axis < 0)
        return 0;
    int64_t steps = 1;
    for (auto it = st.iters.rbegin(); it != st.iters.rend(); ++it) {
        steps *= it->extent;
        if (it->kind == IterKind::Reduce && root_axis(st, it->node) == axis)
            return steps <= kMaxWholeBlockUnrollSteps ? steps : 0;
    }
    return 0;
}

} // namespace

void annotate_fixed(State& s, const DefaultScheduleOptions& opts) {
    const int64_t lanes = std::max<int64_t>(1, opts.vector_lanes);
    if (lanes > 1)
        for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid) {
            const Stage& st = s.stages[sid];
            if (st.is_input() || st.location.kind == ComputeLocKind::Inlined)
                continue;
            if (is_tiled(st) || st.origin == StageOrigin::CacheRead)
                vectorize_tile(s, sid, lanes);
            else
                vectorize_untiled(s, sid, lanes);
        }

    // Split before the threads' split below (which splits untiled stages too).
    std::vector<bool> tiled;
    for (const Stage& st : s.stages)
        tiled.push_back(is_tiled(st));
    const std::vector<int>& weights =
        opts.weight_inputs.empty() ? s.compute.weight_inputs : opts.weight_inputs;
    const int64_t max_degree = int64_t{16} * std::max(1, opts.num_cores);
    // Rows outside a tile's local buffer stay a serial loop inside each thread's chunk (the
    // weights or B panel they share stay in cache): fewer parallel iterations suffice.
    const int64_t rows_degree = int64_t{4} * std::max(1, opts.num_cores);
    for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid) {
        if (s.stages[sid].is_input() || s.stages[sid].location.kind != ComputeLocKind::Root ||
            loop_work(s, sid) < kMinParallelWork)
            continue;
        order_outer_loops_for_threads(s, sid, weights, opts.num_cores);
        bool rows_outside = tiles_rows_outside_local(s.stages[sid], opts);
        bool short_window = is_short_window(s, sid);
        for (int a : s.attached_stages(sid)) {
            rows_outside = rows_outside || tiles_rows_outside_local(s.stages[a], opts);
            short_window = short_window || is_short_window(s, a);
        }
        const int64_t degree = rows_outside ? rows_degree : max_degree;
        // A loop over rows that the nest's guards test (an inlined padding's) stays serial
        // when the loops outside it give each thread 4 chunks: the partitioner then peels its
        // first and last iterations and the rows between run without tests. Fused into the
        // parallel loop, every chunk kept its tests (an NCHW depthwise conv over 32 channels
        // of 112x112 3x3 with its padding inlined on a Zen 3 core: 1.05x the time of a padded
        // band of rows per chunk; over channels alone, its rows serial: 0.78-0.83x).
        const GuardedLoop guarded = first_guarded_loop(s, sid);
        parallelize_outer_loops(s, sid, 0, degree,
                                guarded.iterations_outside >= rows_degree ? guarded.loop : -1);
        if (short_window)
            order_rows_before_columns(s, sid);
    }

    for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid) {
        const Stage& st = s.stages[sid];
        if (st.is_input() || st.location.kind == ComputeLocKind::Inlined || st.iters.empty() ||
            !st.has_reduce())
            continue;
        int64_t steps = kReductionUnrollSteps;
        if (tiled[static_cast<size_t>(sid)]) {
            steps = has_window(st) && !has_partial_tile(s, sid)
                        ? std::max(kTileUnrollSteps, kWindowTileUnrollVectorSteps * lanes)
                        : kTileUnrollSteps;
            steps = std::max(steps, whole_block_unroll_steps(st, opts));
        }
        pragma(s, sid, 0, "auto_unroll_max_step", steps);
    }
}

} // namespace tessera::sched::detail
