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
// A padding that the reader's vector lanes cross is not inlined: an NCHW depthwise conv
// vectorized along the image width would test the border lane by lane in its edge tiles, with
// 15-lane vectors and a scalar lane whose accumulators leave the registers. It is padded a
// band of whole rows at a time inside the parallel loop instead (1x32x112x112 3x3 on a Zen 4
// core: 0.338 ms inlined, 0.166 with a whole padded copy first, 0.147 by bands of 10 rows;
// 0.169, 0.084 and 0.076 ms on two).
#include <algorithm>

#include "../internal/body_util.h"
#include "../search_space/search_space_util.h"
#include "default_rules.h"
#include "tessera/ir/functor.h"
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

int64_t product_of_extents(const Stage& st, size_t begin, size_t end) {
    int64_t p = 1;
    for (size_t k = begin; k < end && k < st.iters.size(); ++k)
        p *= st.iters[k].extent;
    return p;
}

/// The axes of `st` that a select condition of its body tests (a padding's borders).
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

/// Whether `reader` indexes a guarded axis of `producer` with its vector axis: inlined, the
/// guard would split its vectors.
bool guard_crosses_lanes(const Stage& producer, const Stage& reader) {
    const int lanes_axis = vector_axis(reader);
    if (lanes_axis < 0 || lanes_axis >= static_cast<int>(reader.axes.size()) ||
        !reader.body.defined())
        return false;
    const std::vector<bool> guarded = guarded_axes(producer);
    const ir::Variable* lane = reader.axes[static_cast<size_t>(lanes_axis)].get();
    bool crosses = false;
    for_each_read(inline_lets(reader.body), [&](const ir::TensorRead* r) {
        if (r->tensor.get() != producer.tensor.get())
            return;
        for (size_t d = 0; d < r->indices.size() && d < guarded.size(); ++d)
            crosses = crosses || (guarded[d] && uses_any(r->indices[d], {lane}));
    });
    return crosses;
}

} // namespace

void inline_sliced_producers(State& s) {
    for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid) {
        const Stage& st = s.stages[static_cast<size_t>(sid)];
        if (st.is_input() || s.is_output(sid) || st.has_reduce() ||
            st.location.kind != ComputeLocKind::Root || !st.layout.is_identity() ||
            !st.relations.empty())
            continue;
        const std::vector<int> readers = s.consumers(sid);
        if (readers.size() != 1 || !is_tiled(s.stages[static_cast<size_t>(readers[0])]))
            continue;
        const bool crosses = guard_crosses_lanes(st, s.stages[static_cast<size_t>(readers[0])]);
        const int holder = root_stage(s, readers[0]);
        const Stage& h = s.stages[static_cast<size_t>(holder)];
        // The innermost loop of the holder's outer tile level (one loop per axis).
        const size_t n_axes = h.axes.size();
        if (holder == sid || n_axes == 0 || h.iters.size() < 2 * n_axes)
            continue;
        if (crosses) {
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
