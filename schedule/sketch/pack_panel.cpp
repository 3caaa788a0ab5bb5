// Sketch rule pack_panel: an input that a tiled reduction reads along its innermost spatial
// axis (sgemm's B[k][j]) is copied, inside the call, into panels [J/w][K][w] whose width w is
// the reader's register tile along j: each reduce step of the register tile then reads w
// consecutive floats, and consecutive steps read consecutive panel rows (unit stride), where
// the plain layout jumps a whole row of B per step.
#include <algorithm>

#include "../internal/body_util.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"

namespace tessera::sched {

namespace {

using ir::TensorRead;
using ir::Variable;

/// Placeholder panel width of the sketch (annotation sets the real one, panel_width_for).
constexpr int64_t kPlaceholderPanelWidth = 16;
/// Inputs whose last dimension is narrower than this are left alone (a panel would be the
/// whole row anyway).
constexpr int64_t kMinPackedExtent = 32;

/// The read of `input` by `reader` that pack_panel applies to: its last index is the reader's
/// innermost spatial axis and some other index is a bare reduce variable. Returns the
/// position of the first dimension indexed by a reduce variable, or -1 when there is no such
/// read (or reads of `input` disagree).
int reduce_dim_of_panel_read(const Stage& reader, const ir::Tensor& input) {
    if (reader.axes.empty())
        return -1;
    const std::vector<ir::IterVar> raxes = reader.reduce_axes();
    const auto is_reduce_var = [&](const ir::Expr& e) {
        const auto* v = e.as<Variable>();
        return v && std::any_of(raxes.begin(), raxes.end(),
                                [&](const ir::IterVar& r) { return r.var.get() == v; });
    };
    int found = -1;
    bool ok = true, any = false;
    for_each_read(inline_lets(reader.body), [&](const TensorRead* r) {
        if (!r->tensor.same_as(input))
            return;
        any = true;
        const auto* last = r->indices.back().as<Variable>();
        if (!last || last != reader.axes.back().get()) {
            ok = false;
            return;
        }
        int dim = -1;
        for (size_t d = 0; d + 1 < r->indices.size() && dim < 0; ++d)
            if (is_reduce_var(r->indices[d]))
                dim = static_cast<int>(d);
        if (dim < 0 || (found >= 0 && found != dim))
            ok = false;
        found = dim;
    });
    return any && ok ? found : -1;
}

class PackPanel : public SketchRule {
  public:
    const char* name() const override { return "pack_panel"; }

    RuleCondition check(const State& s, int stage) const override {
        const Stage& st = s.stages[stage];
        if (!st.is_input() || !st.layout.is_identity() || st.tensor.ndim() < 2 ||
            st.tensor.shape().back() < kMinPackedExtent)
            return RuleCondition::Skip;
        const std::vector<int> readers = s.consumers(stage);
        if (readers.size() != 1)
            return RuleCondition::Skip;
        const Stage& r = s.stages[readers[0]];
        if (r.is_input() || !r.has_reduce() || !is_tiled(r) ||
            r.location.kind == ComputeLocKind::Inlined ||
            reduce_dim_of_panel_read(r, st.tensor) < 0)
            return RuleCondition::Skip;
        // Both the packed and the plain variant stay in the space.
        return RuleCondition::Apply;
    }

    std::vector<SketchCandidate> apply(const State& s, int stage) const override {
        State next = s;
        const int reader = s.consumers(stage)[0];
        const int reduce_dim = reduce_dim_of_panel_read(s.stages[reader], s.stages[stage].tensor);
        const int n = static_cast<int>(s.stages[stage].tensor.ndim());
        const int copy = cache_read(next, stage, "global", {reader});
        // Dimensions after the split: 0 .. n-2 unchanged, n-1 the panel index, n the lane in
        // the panel. The panel index goes right before the first reduce-indexed dimension
        // (batch dimensions stay outside).
        LayoutTransform t;
        t.factors.assign(static_cast<size_t>(n), 1);
        t.factors.back() = kPlaceholderPanelWidth;
        for (int d = 0; d < n - 1; ++d) {
            if (d == reduce_dim)
                t.order.push_back(n - 1);
            t.order.push_back(d);
        }
        t.order.push_back(n);
        transform_layout(next, copy, t);
        return {{std::move(next), stage - 1}};
    }
};

} // namespace

std::unique_ptr<SketchRule> make_pack_panel_rule(const SketchOptions&) {
    return std::make_unique<PackPanel>();
}

} // namespace tessera::sched
