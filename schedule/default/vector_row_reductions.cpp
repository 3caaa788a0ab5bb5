// factor_row_reductions: a reduction along the contiguous last axis of its input (softmax's
// max and sum, layer norm's mean and variance over a row) runs as one dependent scalar chain
// per row (the compiler may not reassociate float adds). Split by the vector width and
// factored (rfactor), each row accumulates one vector of partial results over the row, then
// reduces those lanes: 8 vector adds and 16 scalar ones for a 128-float row at 16 lanes instead
// of 128 chained adds. On one Rocket Lake core, bert_emb_op13's softmax [4, 128, 128] took
// 0.15 ms per call as scalar chains.
#include "../internal/body_util.h"
#include "default_rules.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"

namespace tessera::sched::detail {

namespace {

/// Whether every read of `body` that uses some of the reduce variables `vars` indexes its
/// last dimensions with exactly them, in order, each spanning its whole dimension (so they
/// walk one contiguous row), and some read does (a row; a per-row value such as layer norm's
/// mean may be read besides).
bool reads_rows_along(const ir::Expr& body, const std::vector<ir::IterVar>& vars) {
    std::vector<const ir::Variable*> vs;
    for (const ir::IterVar& v : vars)
        vs.push_back(v.var.get());
    bool rows = true, any = false;
    for_each_read(inline_lets(body), [&](const ir::TensorRead* r) {
        bool uses = false;
        for (const ir::Expr& index : r->indices)
            uses = uses || uses_any(index, vs);
        if (!uses)
            return;
        any = true;
        const size_t n = r->indices.size(), m = vars.size();
        if (n < m) {
            rows = false;
            return;
        }
        for (size_t d = 0; d < n; ++d) {
            if (d + m < n) {
                rows = rows && !uses_any(r->indices[d], vs);
                continue;
            }
            const ir::IterVar& v = vars[d + m - n];
            rows = rows && r->indices[d].as<ir::Variable>() == v.var.get() &&
                   r->tensor.shape()[d] == v.extent;
        }
    });
    return any && rows;
}

/// Whether stage st is a plain row reduction: untouched loops (its spatial axes, then its
/// reduce loops, together at least two vectors long, the innermost a whole number of
/// vectors or at least four) over rows of its inputs (reads_rows_along).
bool is_row_reduction(const State& s, int sid, int64_t lanes) {
    const Stage& st = s.stages[static_cast<size_t>(sid)];
    if (st.is_input() || st.origin != StageOrigin::Original ||
        st.location.kind != ComputeLocKind::Root || !st.relations.empty() ||
        st.predicate.defined() || is_tiled(st) || !s.attached_stages(sid).empty())
        return false;
    const std::vector<ir::IterVar> reduce = st.reduce_axes();
    if (reduce.empty() || st.iters.size() < reduce.size())
        return false;
    int64_t e = 1;
    for (size_t k = 0; k < reduce.size(); ++k) {
        if (st.iters[st.iters.size() - reduce.size() + k].kind != IterKind::Reduce)
            return false;
        e *= reduce[k].extent;
    }
    // The innermost reduce loop splits into whole vectors, or into at least four and a
    // partial one: its guard scalarizes the partial vector's lanes, a small share of a long row
    // (ViT's softmax over 197 keys: 1.0 -> 0.33 ms per call of 12 x 197 rows on a Zen 4 core).
    const int64_t inner = reduce.back().extent;
    return e >= 2 * lanes && (inner % lanes == 0 || inner >= 4 * lanes) &&
           reads_rows_along(st.body, reduce);
}

} // namespace

void factor_row_reductions(State& s, const DefaultScheduleOptions& opts) {
    const int64_t lanes = opts.vector_lanes;
    if (lanes < 2)
        return;
    for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid) {
        if (!is_row_reduction(s, sid, lanes))
            continue;
        State next = s;
        try {
            // The innermost reduce loop (a global pool's w, inside its h) split by the lanes.
            const int last =
                static_cast<int>(next.stages[static_cast<size_t>(sid)].iters.size()) - 1;
            split(next, sid, last, {lanes});
            const int rf = rfactor(next, sid, last + 1);
            move_factored_axis_innermost(next, rf); // the vector of partials
            // The partial vector is computed per row of the final reduction: one parallel loop,
            // the partials in registers.
            const Stage& final_stage = next.stages[static_cast<size_t>(rf + 1)];
            const int row = static_cast<int>(final_stage.axes.size()) - 1;
            if (row >= 0)
                compute_at(next, rf, rf + 1, row);
        } catch (const ScheduleError&) {
            continue; // stays a scalar chain
        }
        s = std::move(next);
        ++sid; // the original now follows its factored stage
    }
}

} // namespace tessera::sched::detail
