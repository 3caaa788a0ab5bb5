// inline_sliced_producers: an intermediate that a tiled stage reads slice by slice (the
// zero-padded input of a depthwise convolution, read at the output channel) is inlined into
// its reader, which then reads the image itself, zero outside it, instead of a whole padded
// copy written before the nest. On MobileNetV2 the whole-image copies of the depthwise convs'
// inputs (96 x 112 x 112 for the first stride-2 one, 4.8 MB) took 15% of the model's time as
// memmove on one Rocket Lake core. Padding each tile's slice into a small buffer inside the
// outer tile loop instead still copied the halo of every tile, through memcpy calls that
// reloaded the input from L2: the depthwise convs ran 1.2-2x slower than with the padding
// inlined (MobileNetV2 5.70 -> 5.09 ms on one core, 3.23 -> 3.05 on two).
//
// A padding that the reader's vector lanes cross (an NCHW depthwise conv vectorized along the
// image width) splits the vectors of the edge columns: a scalar lane and a partial vector.
// With its rows fused into the parallel loop every chunk also kept the rows' tests
// (1x32x112x112 3x3 on a Zen 4 core: 0.338 ms inlined, 0.166 with a whole padded copy first,
// 0.147 by bands of 10 rows; 0.169, 0.084 and 0.076 ms on two). It is inlined only where the
// split vectors are few (rows of at least kMinVectorsPerRow vectors, read at stride 1) and
// the threads can split the channels alone, leaving the rows serial (annotate_fixed), so that
// the partitioner peels the first and last rows and the rest run without tests: on a Zen 3
// core 0.78x the time of a band per chunk for 32 channels of 112x112, at 1 and 2 threads.
// Elsewhere it is padded a band of whole rows at a time inside the parallel loop.
#include <algorithm>

#include "../internal/body_util.h"
#include "../search_space/search_space_util.h"
#include "default_rules.h"
#include "tessera/ir/functor.h"
#include "tessera/ir/op.h"
#include "tessera/ir/simplify.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"

namespace tessera::sched::detail {

namespace {

/// The reader's tiles may read at most this many times what the whole buffer holds: the halo
/// of a 3x3 window around a small tile (10 x 10 padded rows and columns for an 8 x 8 stride-1
/// tile, 1.56x). A conv that reads every input channel in each of several output-channel
/// tiles would evaluate each padded value once per tile, with a select inside its channel
/// loop: its padded input stays one whole buffer (inlined, resnet18's first conv and
/// Winograd input transforms ran 35-40% slower).
constexpr double kMaxRecompute = 2.0;

/// A padding that a reader's vectors cross is inlined only into rows of at least this many
/// vectors: the first and last vectors of a row split lane by lane at the border (a scalar lane
/// and a partial vector), which costs more than the band copy saves when they are a large
/// part of the row. NCHW depthwise 3x3 convs on a Zen 3 core, 2 threads, inlined against
/// banded: 32 channels of 112x112 (14 vectors of 8 per row) 0.78x the time, 144 of 56x56
/// (7) 0.91x, 64 of 28x28 5x5 (3.5) 1.36x, 512 of 14x14 1.35x.
constexpr int64_t kMinVectorsPerRow = 7;

int64_t product_of_extents(const Stage& st, size_t begin, size_t end) {
    int64_t p = 1;
    for (size_t k = begin; k < end && k < st.iters.size(); ++k)
        p *= st.iters[k].extent;
    return p;
}

/// How `reader` reads `producer` along its vector axis (the lanes).
struct LaneReads {
    /// Some read indexes a guarded axis of `producer` with the lanes: inlined, the guard
    /// would split the reader's vectors.
    bool cross_guards = false;
    /// The guards crossed would split few vectors: every read steps one element per lane (a
    /// stride-1 window, no gathered lanes) and each row holds at least kMinVectorsPerRow
    /// vectors, of which only the first and last cross the border.
    bool few_split = false;
};

LaneReads lane_reads(const Stage& producer, const Stage& reader, int64_t lanes) {
    LaneReads out;
    const int lanes_axis = vector_axis(reader);
    if (lanes_axis < 0 || lanes_axis >= static_cast<int>(reader.axes.size()) ||
        !reader.body.defined())
        return out;
    const std::vector<bool> guarded = guarded_axes(producer);
    const ir::Var& lane = reader.axes[static_cast<size_t>(lanes_axis)];
    VarMap next;
    next[lane.get()] = ir::Expr(lane) + ir::make_const(lane.type(), int64_t{1});
    bool unit = true;
    for_each_read(inline_lets(reader.body), [&](const ir::TensorRead* r) {
        if (r->tensor.get() != producer.tensor.get())
            return;
        for (size_t d = 0; d < r->indices.size(); ++d) {
            const ir::Expr& index = r->indices[d];
            if (!uses_any(index, {lane.get()}))
                continue;
            out.cross_guards = out.cross_guards || (d < guarded.size() && guarded[d]);
            const int64_t* step =
                ir::as_const_int(ir::simplify(substitute(index, next) - ir::Expr(index)));
            unit = unit && step && *step == 1;
        }
    });
    out.few_split =
        out.cross_guards && unit && lanes >= 1 &&
        reader.tensor.shape()[static_cast<size_t>(lanes_axis)] >= kMinVectorsPerRow * lanes;
    return out;
}

} // namespace

std::vector<bool> guarded_axes(const Stage& st) {
    struct Conditions : ir::IRVisitor {
        using ir::IRVisitor::visit;
        std::vector<ir::Expr> found;
        void visit(const ir::Select* op) override {
            found.push_back(op->condition);
            ir::IRVisitor::visit(op);
        }
    } conditions;
    std::vector<bool> guarded(st.axes.size(), false);
    if (!st.body.defined())
        return guarded;
    conditions.visit(inline_lets(st.body));
    for (size_t a = 0; a < st.axes.size(); ++a)
        for (const ir::Expr& c : conditions.found)
            guarded[a] = guarded[a] || uses_any(c, {st.axes[a].get()});
    return guarded;
}

namespace {

/// The axes of stage sid that index a dimension of an inlined producer it reads that the
/// producer's guards test (a padding inlined into a conv: the conv's rows and columns). A
/// stage's own guards do not count: a whole padded copy splits its rows among the threads as
/// the task before it wrote them (resnet18's 56x56 ones split by channel blocks instead ran
/// 4% slower at 2 threads).
std::vector<bool> nest_guarded_axes(const State& s, int sid) {
    const Stage& st = s.stages[static_cast<size_t>(sid)];
    std::vector<bool> guarded(st.axes.size(), false);
    if (!st.body.defined())
        return guarded;
    for_each_read(inline_lets(st.body), [&](const ir::TensorRead* r) {
        const int p = s.stage_id_of(r->tensor);
        if (p < 0 || s.stages[static_cast<size_t>(p)].location.kind != ComputeLocKind::Inlined)
            return;
        const std::vector<bool> tested = guarded_axes(s.stages[static_cast<size_t>(p)]);
        for (size_t d = 0; d < r->indices.size() && d < tested.size(); ++d)
            for (size_t a = 0; a < st.axes.size() && tested[d]; ++a)
                guarded[a] = guarded[a] || uses_any(r->indices[d], {st.axes[a].get()});
    });
    return guarded;
}

} // namespace

GuardedLoop first_guarded_loop(const State& s, int holder) {
    const Stage& h = s.stages[static_cast<size_t>(holder)];
    std::vector<bool> guarded = nest_guarded_axes(s, holder);
    for (int a : s.attached_stages(holder)) {
        const Stage& st = s.stages[static_cast<size_t>(a)];
        if (st.tensor.shape() != h.tensor.shape() || st.axes.size() != h.axes.size())
            continue;
        const std::vector<bool> g = nest_guarded_axes(s, a);
        for (size_t k = 0; k < g.size(); ++k)
            guarded[k] = guarded[k] || g[k];
    }
    int64_t outside = 1;
    for (size_t k = 0; k < h.iters.size(); ++k) {
        const Iterator& it = h.iters[k];
        if (it.kind != IterKind::Spatial || it.annotation != IterAnnotation::None)
            return {};
        const int axis = root_axis(h, it.node);
        if (axis < 0)
            return {};
        if (axis < static_cast<int>(guarded.size()) && guarded[static_cast<size_t>(axis)])
            return {static_cast<int>(k), outside};
        outside *= it.extent;
    }
    return {};
}

void inline_sliced_producers(State& s, const DefaultScheduleOptions& opts) {
    for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid) {
        const Stage& st = s.stages[static_cast<size_t>(sid)];
        if (st.is_input() || s.is_output(sid) || st.has_reduce() ||
            st.location.kind != ComputeLocKind::Root || !st.layout.is_identity() ||
            !st.relations.empty())
            continue;
        const std::vector<int> readers = s.consumers(sid);
        if (readers.size() != 1 || !is_tiled(s.stages[static_cast<size_t>(readers[0])]))
            continue;
        const LaneReads lanes =
            lane_reads(st, s.stages[static_cast<size_t>(readers[0])], opts.vector_lanes);
        const int holder = root_stage(s, readers[0]);
        const Stage& h = s.stages[static_cast<size_t>(holder)];
        // The innermost loop of the holder's outer tile level (one loop per axis).
        const size_t n_axes = h.axes.size();
        if (holder == sid || n_axes == 0 || h.iters.size() < 2 * n_axes)
            continue;
        if (lanes.cross_guards) {
            // Inlined when the threads can split loops outside its tested rows: those stay
            // serial (annotate_fixed), the partitioner runs all but the first and last rows'
            // tiles without tests, and only the edge columns' vectors split.
            if (lanes.few_split) {
                State inlined = s;
                bool inlines = false;
                try {
                    compute_inline(inlined, sid);
                    inlines = first_guarded_loop(inlined, holder).iterations_outside >=
                              int64_t{4} * std::max(1, opts.num_cores);
                } catch (const ScheduleError&) { // a band, below
                }
                if (inlines) {
                    s = std::move(inlined);
                    continue;
                }
            }
            // Padded a band of rows at a time, whole rows (the loop outside the outer tile
            // level's last axis): the band stays in L1 for the tiles that read it.
            if (n_axes >= 2) {
                State band = s;
                try {
                    compute_at(band, sid, holder, static_cast<int>(n_axes) - 2);
                    s = std::move(band);
                } catch (const ScheduleError&) { // stays a whole buffer
                }
            }
            continue;
        }
        // How much the tiles read: the region each reads, computed at the outer tile loop.
        const int64_t whole = s.spatial_size(sid);
        State at_tiles = s;
        try {
            compute_at(at_tiles, sid, holder, static_cast<int>(n_axes) - 1);
        } catch (const ScheduleError&) {
            continue; // stays a whole buffer
        }
        const Stage& at = at_tiles.stages[static_cast<size_t>(sid)];
        const int64_t read =
            product_of_extents(h, 0, n_axes) * product_of_extents(at, 0, at.iters.size());
        if (static_cast<double>(read) > kMaxRecompute * static_cast<double>(whole))
            continue;
        State inlined = s;
        try {
            compute_inline(inlined, sid);
            s = std::move(inlined);
        } catch (const ScheduleError&) {
            s = std::move(at_tiles); // per tile, when it cannot be inlined
        }
    }
}

} // namespace tessera::sched::detail
