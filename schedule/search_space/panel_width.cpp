// Panel widths of pack_panel and weight_blocked_tiling sketches (sketch.h): the packed panel
// or weight block of an input follows the register tile of its reader, in annotation and
// after every tile-size change.
#include <algorithm>
#include <set>

#include "../internal/body_util.h"
#include "tessera/ir/op.h"
#include "tessera/ir/simplify.h"
#include "tessera/schedule/sampling.h"
#include "tessera/schedule/schedule.h"

namespace tessera::sched {

namespace {

/// Whether stage `sid` may hold a panel layout: an input, or a compute stage that is not an
/// output (a cache-read copy, a padded input).
bool may_hold_panels(const State& s, int sid) {
    return s.stages[sid].is_input() || !s.is_output(sid);
}

/// The axis of `s`'s single reader of `stage` (through its widened view, State::read_view)
/// that indexes dimension `dim` (a bare axis variable, in the first read), with the reader's
/// id; {-1, -1} when there is none.
std::pair<int, int> reader_axis(const State& s, int stage, int dim) {
    const Stage& cs = s.stages[s.read_view(stage)];
    const std::vector<int> readers = s.consumers(s.read_view(stage));
    if (readers.size() != 1 || dim < 0 || dim >= static_cast<int>(cs.tensor.ndim()))
        return {-1, -1};
    const Stage& r = s.stages[readers[0]];
    // Reduce variables of extent 1 are 0 (a grouped conv reads channel (k / 1) * 1 + rc).
    VarMap unit_reduce;
    for (const ir::IterVar& rv : r.reduce_axes())
        if (rv.extent == 1)
            unit_reduce[rv.var.get()] = ir::make_zero(rv.var.type());
    int axis = -1;
    bool seen = false;
    for_each_read(inline_lets(r.body), [&](const ir::TensorRead* read) {
        if (!read->tensor.same_as(cs.tensor) || seen)
            return;
        seen = true;
        const ir::Expr index =
            ir::simplify(substitute(read->indices[static_cast<size_t>(dim)], unit_reduce));
        const auto* v = index.as<ir::Variable>();
        for (size_t a = 0; v && a < r.axes.size(); ++a)
            if (r.axes[a].get() == v)
                axis = static_cast<int>(a);
    });
    return axis < 0 ? std::make_pair(-1, -1) : std::make_pair(readers[0], axis);
}

/// The blocked dimension of a layout step: the only dimension with a factor > 1, whose inner
/// part the order puts last while moving something else; -1 when the step is not one.
int blocked_dim(const Step& step, size_t ndim) {
    if (step.lengths.size() != ndim || step.iters.size() != ndim + 1)
        return -1;
    int dim = -1;
    for (size_t d = 0; d < ndim; ++d) {
        if (step.lengths[d] <= 1)
            continue;
        if (dim >= 0)
            return -1;
        dim = static_cast<int>(d);
    }
    if (dim < 0 || step.iters.back() != dim + 1)
        return -1;
    for (size_t k = 0; k < step.iters.size(); ++k)
        if (step.iters[k] != static_cast<int>(k))
            return dim;
    return -1; // the identity order: blocking without a move is not a panel
}

} // namespace

bool is_panel_layout_step(const State& s, const Step& step) {
    if (step.kind != StepKind::TransformLayout || step.stage < 0 ||
        step.stage >= static_cast<int>(s.stages.size()) || !may_hold_panels(s, step.stage))
        return false;
    const int dim = blocked_dim(step, s.stages[step.stage].tensor.ndim());
    // Only a dimension that the reader walks with one of its axes follows a register tile.
    return dim >= 0 && reader_axis(s, step.stage, dim).first >= 0;
}

int64_t register_tile_width(const Stage& r, int axis) {
    // Root node `axis` and every node derived from it (relations are recorded in order, so
    // one pass sees parents before children).
    std::set<int> derived = {axis};
    for (const IterRelation& rel : r.relations)
        if (std::any_of(rel.inputs.begin(), rel.inputs.end(),
                        [&](int in) { return derived.count(in) > 0; }))
            derived.insert(rel.outputs.begin(), rel.outputs.end());
    // The loops of that axis inside the innermost reduce loop: the register tile's width
    // (each step of that reduce loop reads one tile-wide row of the panel, and the next step
    // the next row, so the panel is read contiguously).
    std::set<int> inside;
    for (const Iterator& it : r.iters) {
        if (it.kind == IterKind::Reduce)
            inside.clear();
        else if (derived.count(it.node))
            inside.insert(it.node);
    }
    // A node whose split parts all lie inside spans its own extent, not the product of the
    // parts' extents (an imperfect split, e.g. 64 as 2 x 48, covers 64 under a guard).
    for (auto rel = r.relations.rbegin(); rel != r.relations.rend(); ++rel)
        if (rel->kind == IterRelation::Kind::Split &&
            std::all_of(rel->outputs.begin(), rel->outputs.end(),
                        [&](int o) { return inside.count(o) > 0; })) {
            for (int o : rel->outputs)
                inside.erase(o);
            inside.insert(rel->inputs.front());
        }
    int64_t width = 1;
    for (int node : inside)
        width *= r.nodes[static_cast<size_t>(node)].extent;
    return width;
}

int64_t panel_width_for(const State& s, int stage, int dim, const SampleOptions& opts) {
    const Stage& cs = s.stage(stage, "panel stage");
    if (dim < 0 || dim >= static_cast<int>(cs.tensor.ndim()))
        throw ScheduleError("panel dimension " + std::to_string(dim) + " of '" +
                            cs.tensor.name() + "' is out of range");
    const auto [reader, axis] = reader_axis(s, stage, dim);
    if (reader < 0)
        throw ScheduleError("panel stage '" + cs.tensor.name() +
                            "' has no single reader that indexes dimension " +
                            std::to_string(dim) + " by one of its axes");
    const int64_t width = register_tile_width(s.stages[reader], axis);
    const int64_t extent = cs.tensor.shape()[static_cast<size_t>(dim)];
    const int64_t lo = std::min<int64_t>(std::max<int64_t>(opts.max_vectorize_lanes, 2), extent);
    return std::clamp(width, lo, extent);
}

int64_t panel_width_for(const State& s, const Step& step, const SampleOptions& opts) {
    TESSERA_CHECK(is_panel_layout_step(s, step)) << "panel_width_for of " << to_string(step);
    return panel_width_for(s, step.stage, blocked_dim(step, s.stages[step.stage].tensor.ndim()),
                           opts);
}

State refresh_panel_widths(const State& s, const SampleOptions& opts) {
    if (std::none_of(s.steps.begin(), s.steps.end(),
                     [](const Step& st) { return st.kind == StepKind::TransformLayout; }))
        return s; // nothing to refresh: skip the replay
    State cur = make_initial_state(s.compute);
    for (Step step : s.steps) {
        if (is_panel_layout_step(cur, step)) {
            const int dim = blocked_dim(step, cur.stages[step.stage].tensor.ndim());
            step.lengths[static_cast<size_t>(dim)] = panel_width_for(cur, step.stage, dim, opts);
        }
        apply_step(cur, step);
    }
    return cur;
}

} // namespace tessera::sched
