// Sketch rule weight_blocked_tiling: the register tile of a convolution (or dense layer) as
// vendor kernels build it. The vector runs along the axis that selects a weight row (output
// channels): each reduce step loads b consecutive weights of a blocked filter
// [K/b][C][R][S][b] (prepared once, outside the call) and broadcasts one input value, and the
// accumulators are dense vectors of a local tile stored with that axis last. Tiling along the
// innermost output axis instead (the plain rules) gathers the weights with a stride of C*R*S,
// and is hopeless for small images (7 x 7) whose rows are shorter than a vector.
#include <algorithm>

#include "../internal/body_util.h"
#include "tessera/ir/op.h"
#include "tessera/ir/simplify.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"

namespace tessera::sched {

namespace {

using ir::TensorRead;
using ir::Variable;

/// Placeholder block of the sketch (annotation sets the real one, panel_width_for).
constexpr int64_t kPlaceholderBlock = 16;

/// A weight read by a stage through one dimension indexed by a spatial axis.
struct WeightRead {
    int weight = -1; ///< The weight's stage id.
    int dim = -1;    ///< Its dimension indexed by the axis.
    int axis = -1;   ///< The reading stage's spatial axis.
};

/// The spatial axes of `st` that index some read of a tensor other than `weight` (the batch
/// axis of a batched matmul indexes its activation as well as its weight).
std::vector<bool> axes_read_besides(const Stage& st, const ir::Tensor& weight) {
    std::vector<bool> used(st.axes.size(), false);
    for (const AxisRead& r : reads_by_axis(st.body, st.axes, {}))
        if (r.tensor != weight.get())
            for (size_t a = 0; a < st.axes.size(); ++a)
                used[a] = used[a] || r.uses[a];
    return used;
}

/// The first weight of opts that stage `sid` reads, in every read, with one dimension indexed
/// by a bare spatial axis (an output channel), the rest free of spatial axes, except for
/// dimensions indexed by bare spatial axes that also index the activation when another one
/// does not (the batch of a batched matmul: Winograd's per-position filters [P][C][K], packed
/// outside the call instead of inside it); weight = -1 when there is none.
WeightRead find_weight_read(const State& s, int sid, const std::vector<int>& weight_inputs) {
    const Stage& st = s.stages[sid];
    std::vector<const Variable*> spatial;
    for (const ir::Var& a : st.axes)
        spatial.push_back(a.get());
    for (int wi : weight_inputs) {
        if (wi < 0 || wi >= static_cast<int>(s.compute.inputs.size()))
            continue;
        const int wid = s.stage_id_of(s.compute.inputs[static_cast<size_t>(wi)]);
        if (wid < 0 || !s.stages[wid].is_input() || !s.stages[wid].layout.is_identity())
            continue;
        // The stage reads the weight itself, or its widened f32 view (a weight stored in f16).
        const int view = s.read_view(wid);
        const ir::Tensor& read = s.stages[view].tensor;
        if (s.consumers(view) != std::vector<int>{sid})
            continue;
        const std::vector<bool> shared = axes_read_besides(st, read);
        WeightRead found{wid, -1, -1};
        bool ok = true;
        for_each_read(inline_lets(st.body), [&](const TensorRead* r) {
            if (!r->tensor.same_as(read) || !ok)
                return;
            std::vector<std::pair<int, int>> indexed; // (dim, axis) of bare spatial indices
            for (size_t d = 0; d < r->indices.size() && ok; ++d) {
                if (!uses_any(r->indices[d], spatial))
                    continue;
                const auto* v = r->indices[d].as<Variable>();
                const auto at = std::find(spatial.begin(), spatial.end(), v);
                ok = v && at != spatial.end();
                if (ok)
                    indexed.push_back(
                        {static_cast<int>(d), static_cast<int>(at - spatial.begin())});
            }
            // Of several, the batch dimensions (axes the activation reads too) are left out.
            if (indexed.size() > 1)
                indexed.erase(std::remove_if(indexed.begin(), indexed.end(),
                                             [&](const std::pair<int, int>& da) {
                                                 return shared[static_cast<size_t>(da.second)];
                                             }),
                              indexed.end());
            const WeightRead here{wid, indexed.empty() ? -1 : indexed[0].first,
                                  indexed.empty() ? -1 : indexed[0].second};
            if (!ok || indexed.size() != 1 ||
                (found.dim >= 0 && (found.dim != here.dim || found.axis != here.axis))) {
                ok = false;
                return;
            }
            found = here;
        });
        if (ok && found.dim >= 0 && s.stages[wid].tensor.shape()[found.dim] > 1)
            return found;
    }
    return {};
}

/// The permutation of one tiled loop list that moves, in every spatial level (a block of
/// n_space consecutive loops), the loop of axis `axis` to the end of the block. `blocks` lists
/// the block sizes in order and whether each is spatial.
std::vector<int> axis_last_order(const std::vector<std::pair<int, bool>>& blocks, int axis,
                                 int total) {
    std::vector<int> order;
    int pos = 0;
    for (const auto& [size, spatial] : blocks) {
        for (int k = 0; k < size; ++k)
            if (!spatial || k != axis)
                order.push_back(pos + k);
        if (spatial)
            order.push_back(pos + axis);
        pos += size;
    }
    for (; pos < total; ++pos)
        order.push_back(pos);
    return order;
}

/// A layout splitting dimension `dim` of an ndim-dimensional buffer by a placeholder block,
/// the block innermost, the other dimensions in order; with `panels`, the blocks outermost:
/// each panel of b columns is then contiguous over the other dimensions (the reduction), as
/// vendor GEMMs pack B. A MatMul weight [K, N] blocked along N as [K][N/b][b] instead strides
/// N floats between reduce steps, a page apart for N = 1024: BERT's FFN matmul ran at 23
/// GFLOP/s against 37 for the same product with a [N/b][K][b] panel (2-core Zen 1).
LayoutTransform blocked_layout(int ndim, int dim, bool panels) {
    LayoutTransform t;
    t.factors.assign(static_cast<size_t>(ndim), 1);
    t.factors[static_cast<size_t>(dim)] = kPlaceholderBlock;
    if (panels)
        t.order.push_back(dim);
    for (int d = 0; d <= ndim; ++d)
        if (d != dim + 1 && !(panels && d == dim))
            t.order.push_back(d);
    t.order.push_back(dim + 1);
    return t;
}

/// Channel-blocks the intermediate inputs of `sid` that it reads along `axis` too (the padded
/// input of a depthwise convolution, read at the output channel): stored [N][C/b][H][W][b],
/// each vector of the register tile loads b consecutive values instead of gathering them
/// H*W apart. Only whole buffers at root that nothing else reads.
void block_activations(State& s, int sid, int axis) {
    const Stage& st = s.stages[sid];
    VarMap unit_reduce;
    for (const ir::IterVar& r : st.reduce_axes())
        if (r.extent == 1)
            unit_reduce[r.var.get()] = ir::make_zero(r.var.type());
    for (int p : s.producers(sid)) {
        const Stage& ps = s.stages[p];
        const std::vector<int> sources = s.producers(p);
        const bool weight_view = sources.size() == 1 && s.read_view(sources[0]) == p;
        if (ps.is_input() || s.is_output(p) || ps.location.kind != ComputeLocKind::Root ||
            !ps.layout.is_identity() || s.consumers(p) != std::vector<int>{sid} || weight_view)
            continue;
        int dim = -1;
        bool ok = true;
        for_each_read(inline_lets(st.body), [&](const TensorRead* r) {
            if (!r->tensor.same_as(ps.tensor))
                return;
            int here = -1;
            for (size_t d = 0; d < r->indices.size(); ++d) {
                // A grouped conv reads channel (k / 1) * 1 + rc with rc of extent 1.
                const ir::Expr index = ir::simplify(substitute(r->indices[d], unit_reduce));
                const auto* v = index.as<Variable>();
                if (v && v == st.axes[static_cast<size_t>(axis)].get())
                    here = static_cast<int>(d);
            }
            if (here < 0 || (dim >= 0 && dim != here))
                ok = false;
            dim = here;
        });
        if (ok && dim >= 0 && ps.tensor.shape()[static_cast<size_t>(dim)] > 1)
            transform_layout(s, p, blocked_layout(static_cast<int>(ps.tensor.ndim()), dim, false));
    }
}

/// Whether every read of a tensor other than the weight indexed by `axis` alone reads it
/// contiguously along the axis (in its last dimension), or reads an intermediate that
/// block_activations re-lays out by channel blocks. An NCHW depthwise conv without padding
/// reads its input x[n][k][oh + ry][ow + rx] at the output channel k: vectorized along k, each
/// lane loads a value a whole image away from the next's. Its default schedule from this rule
/// ran a 3x3 depthwise conv over 32 channels of 114x114 at 5.2 GFLOP/s on a Zen 3 core, 26x
/// slower than the same conv with padding, tiled along the image width.
bool activations_follow_axis(const State& s, int sid, int axis, int weight) {
    const Stage& st = s.stages[sid];
    const Variable* av = st.axes[static_cast<size_t>(axis)].get();
    const int weight_view = s.read_view(weight);
    // A grouped conv reads channel (k / g) * c + rc: lanes of one group share the value (a
    // broadcast), unless each group has one channel (rc of extent 1): then the index is k.
    VarMap unit_reduce;
    for (const ir::IterVar& rv : st.reduce_axes())
        if (rv.extent == 1)
            unit_reduce[rv.var.get()] = ir::make_zero(rv.var.type());
    bool ok = true;
    for_each_read(inline_lets(st.body), [&](const TensorRead* r) {
        const int p = s.stage_id_of(r->tensor);
        if (!ok || p < 0 || p == weight || p == weight_view)
            return;
        const Stage& ps = s.stages[p];
        const bool blockable = !ps.is_input() && !s.is_output(p) &&
                               ps.location.kind == ComputeLocKind::Root &&
                               ps.layout.is_identity() && s.consumers(p) == std::vector<int>{sid};
        for (size_t d = 0; d + 1 < r->indices.size() && ok; ++d)
            ok = blockable ||
                 ir::simplify(substitute(r->indices[d], unit_reduce)).as<Variable>() != av;
    });
    return ok;
}

bool is_identity_order(const std::vector<int>& order) {
    for (size_t k = 0; k < order.size(); ++k)
        if (order[k] != static_cast<int>(k))
            return false;
    return true;
}

class WeightBlockedTiling : public SketchRule {
  public:
    explicit WeightBlockedTiling(const SketchOptions& opts)
        : structure_(opts.cpu_tiling_structure), levels_(opts.cpu_fusion_levels),
          weights_(opts.weight_inputs), enabled_(opts.target == TargetKind::Cpu) {}
    const char* name() const override { return "weight_blocked_tiling"; }

    RuleCondition check(const State& s, int stage) const override {
        const Stage& st = s.stages[stage];
        // A cache-write stage (fused into its copy-out) or a stage with an elementwise
        // consumer (bias, relu) to fuse into.
        if (!enabled_ || weights_.empty() ||
            (st.origin != StageOrigin::CacheWrite && st.origin != StageOrigin::Original) ||
            st.location.kind != ComputeLocKind::Root || !st.relations.empty() ||
            !s.attached_stages(stage).empty() || !s.needs_multi_level_tiling(stage) ||
            fusible_consumer(s, stage) < 0 || usable_levels().empty())
            return RuleCondition::Skip;
        const WeightRead wr = find_weight_read(s, stage, weights_);
        if (wr.weight < 0 || !activations_follow_axis(s, stage, wr.axis, wr.weight))
            return RuleCondition::Skip;
        return RuleCondition::Apply;
    }

    std::vector<SketchCandidate> apply(const State& s, int stage) const override {
        const WeightRead wr = find_weight_read(s, stage, weights_);
        State base = s;
        const int consumer = fusible_consumer(base, stage);
        const std::vector<int> split_steps = multi_level_tile(base, stage, structure_);
        const int n_axes = static_cast<int>(split_steps.size());
        const int n_reduce = static_cast<int>(base.stages[stage].reduce_axes().size());
        std::vector<std::pair<int, bool>> blocks;
        for (char ch : structure_)
            blocks.push_back(ch == 'S' ? std::make_pair(n_axes, true)
                                       : std::make_pair(n_reduce, false));
        const int total = static_cast<int>(base.stages[stage].iters.size());
        const std::vector<int> order = axis_last_order(blocks, wr.axis, total);
        if (!is_identity_order(order))
            reorder(base, stage, order);

        std::vector<SketchCandidate> out;
        for (int level : usable_levels()) {
            State next = base;
            // The copy-out follows the outer tiles, its levels ordered like the tile's.
            int pos = 0;
            for (int d = 0; d < n_axes; ++d) {
                follow_split(next, consumer, pos, split_steps[d], level);
                pos += level + 1;
            }
            // Level by level (outer first), the axis last in each.
            std::vector<int> corder;
            for (int l = 0; l <= level; ++l) {
                for (int d = 0; d < n_axes; ++d)
                    if (d != wr.axis)
                        corder.push_back(d * (level + 1) + l);
                corder.push_back(wr.axis * (level + 1) + l);
            }
            for (int k = pos; k < static_cast<int>(next.stages[consumer].iters.size()); ++k)
                corder.push_back(k);
            reorder(next, consumer, corder);
            compute_at(next, stage, consumer, level * n_axes - 1);
            // The local tile stores the axis last: every accumulator is one dense vector.
            if (wr.axis != n_axes - 1) {
                LayoutTransform local;
                for (int d = 0; d < n_axes; ++d)
                    if (d != wr.axis)
                        local.order.push_back(d);
                local.order.push_back(wr.axis);
                transform_layout(next, stage, local);
            }
            // The weight blocked along the axis' dimension, the block innermost.
            transform_layout(next, wr.weight,
                             blocked_layout(static_cast<int>(next.stages[wr.weight].tensor.ndim()),
                                            wr.dim, true));
            block_activations(next, stage, wr.axis);
            out.push_back({std::move(next), stage - 1});
        }
        return out;
    }

  private:
    /// The fusion levels that leave a spatial level inside the attach point.
    std::vector<int> usable_levels() const {
        const int n_space = static_cast<int>(std::count(structure_.begin(), structure_.end(), 'S'));
        std::vector<int> out;
        for (int l : levels_)
            if (l >= 1 && l <= n_space - 1)
                out.push_back(l);
        return out;
    }

    std::string structure_;
    std::vector<int> levels_;
    std::vector<int> weights_;
    bool enabled_;
};

} // namespace

std::unique_ptr<SketchRule> make_weight_blocked_tiling_rule(const SketchOptions& opts) {
    return std::make_unique<WeightBlockedTiling>(opts);
}

} // namespace tessera::sched
