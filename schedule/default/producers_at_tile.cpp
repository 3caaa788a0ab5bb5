// compute_producers_at_tiles: an intermediate that a tiled stage reads slice by slice (the
// zero-padded input of a depthwise convolution, read at the output channel) is computed inside
// the tiled nest's outer tile loop instead of as a whole buffer before it: each tile pads the
// rows it reads into a small buffer that stays in cache, instead of writing the whole padded
// image to memory and reading it back. On MobileNetV2 the whole-image copies of the depthwise
// convs' inputs (96 x 112 x 112 for the first stride-2 one, 4.8 MB) took 15% of the model's
// time as memmove on one Rocket Lake core.
#include <algorithm>

#include "../search_space/search_space_util.h"
#include "default_rules.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"

namespace tessera::sched::detail {

namespace {

/// The tiles may compute at most this many times what the whole buffer holds: the halo of a
/// 3x3 window around a small tile (10 x 10 padded rows and columns for an 8 x 8 stride-1
/// tile, 1.56x) costs less, copied in cache, than the whole image through memory. A conv that
/// reads every input channel in each of several output-channel tiles would pad the image once
/// per tile: those stay whole.
constexpr double kMaxRecompute = 2.0;

int64_t product_of_extents(const Stage& st, size_t begin, size_t end) {
    int64_t p = 1;
    for (size_t k = begin; k < end && k < st.iters.size(); ++k)
        p *= st.iters[k].extent;
    return p;
}

} // namespace

void compute_producers_at_tiles(State& s) {
    for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid) {
        const Stage& st = s.stages[static_cast<size_t>(sid)];
        if (st.is_input() || s.is_output(sid) || st.has_reduce() ||
            st.location.kind != ComputeLocKind::Root || !st.layout.is_identity() ||
            !st.relations.empty())
            continue;
        const std::vector<int> readers = s.consumers(sid);
        if (readers.size() != 1 || !is_tiled(s.stages[static_cast<size_t>(readers[0])]))
            continue;
        const int holder = root_stage(s, readers[0]);
        const Stage& h = s.stages[static_cast<size_t>(holder)];
        // The innermost loop of the holder's outer tile level (one loop per axis).
        const size_t n_axes = h.axes.size();
        if (holder == sid || n_axes == 0 || h.iters.size() < 2 * n_axes)
            continue;
        const int64_t whole = s.spatial_size(sid);
        State tried = s;
        try {
            compute_at(tried, sid, holder, static_cast<int>(n_axes) - 1);
        } catch (const ScheduleError&) {
            continue; // stays a whole buffer
        }
        const Stage& at = tried.stages[static_cast<size_t>(sid)];
        const int64_t computed =
            product_of_extents(h, 0, n_axes) * product_of_extents(at, 0, at.iters.size());
        if (static_cast<double>(computed) <= kMaxRecompute * static_cast<double>(whole))
            s = std::move(tried);
    }
}

} // namespace tessera::sched::detail
