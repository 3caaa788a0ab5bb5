// Bounds inference: compute locations checked, regions of attached stages sized.
#include <algorithm>
#include <functional>

#include "internal/body_util.h"
#include "internal/bound.h"
#include "internal/error_msg.h"
#include "internal/iter_graph.h"
#include "internal/sym_range.h"
#include "tessera/ir/op.h"
#include "tessera/ir/simplify.h"
#include "tessera/support/error.h"

namespace tessera::sched {

using namespace ir;

namespace {

bool has_loops(const Stage& st) {
    return !st.is_input() && st.location.kind != ComputeLocKind::Inlined;
}

/// Checks the attach target of every attached stage and that attachments form no cycle.
void check_locations(const State& s) {
    const int n = static_cast<int>(s.stages.size());
    for (int i = 0; i < n; ++i) {
        const Stage& st = s.stages[i];
        if (st.location.kind != ComputeLocKind::At)
            continue;
        const int t = st.location.stage;
        if (t < 0 || t >= n)
            throw ScheduleError(Msg() << "stage '" << st.tensor.name()
                                      << "' is computed at a stage id " << t << " out of range");
        const Stage& target = s.stages[t];
        if (t == i)
            throw ScheduleError(Msg()
                                << "stage '" << st.tensor.name() << "' is computed at itself");
        if (!has_loops(target))
            throw ScheduleError(Msg() << "stage '" << st.tensor.name() << "' is computed at '"
                                      << target.tensor.name() << "', which has no loops ("
                                      << (target.is_input() ? "an input" : "inlined") << ")");
        if (st.location.iter < 0 || st.location.iter >= static_cast<int>(target.iters.size()))
            throw ScheduleError(Msg() << "stage '" << st.tensor.name() << "' is computed at loop "
                                      << st.location.iter << " of '" << target.tensor.name()
                                      << "', which has " << target.iters.size() << " loops");
        // Walk the chain of attach targets: it must end at a root stage.
        int cur = t;
        for (int steps = 0; s.stages[cur].location.kind == ComputeLocKind::At; ++steps) {
            cur = s.stages[cur].location.stage;
            if (cur == i || steps > n)
                throw ScheduleError(Msg() << "compute locations form a cycle through stage '"
                                          << st.tensor.name() << "'");
            if (cur < 0 || cur >= n)
                break; // reported when that stage is checked
        }
    }
}

/// True when stage q's code runs inside loop `iter` of stage c.
bool runs_inside(const State& s, int q, int c, int iter) {
    if (q == c)
        return true;
    int cur = q;
    for (size_t guard = 0; guard <= s.stages.size(); ++guard) {
        const ComputeLocation& loc = s.stages[cur].location;
        if (loc.kind != ComputeLocKind::At)
            return false;
        if (loc.stage == c)
            return loc.iter >= iter;
        cur = loc.stage;
    }
    return false;
}

/// Index lists of every read of `target` in expression e, looking through inlined stages.
void collect_reads(const State& s, const Expr& e, const Tensor& target,
                   std::vector<std::vector<Expr>>& out, int depth) {
    TESSERA_CHECK(depth <= static_cast<int>(s.stages.size())) << "inline nesting too deep";
    for_each_read(e, [&](const TensorRead* r) {
        if (r->tensor.same_as(target)) {
            out.push_back(r->indices);
            return;
        }
        const int sid = s.stage_id_of(r->tensor);
        if (sid < 0 || s.stages[sid].location.kind != ComputeLocKind::Inlined)
            return;
        const Stage& in = s.stages[sid];
        VarMap m;
        for (size_t d = 0; d < in.axes.size() && d < r->indices.size(); ++d)
            m[in.axes[d].get()] = r->indices[d];
        collect_reads(s, substitute(inline_lets(in.body), m), target, out, depth + 1);
    });
}

class BoundInference {
  public:
    explicit BoundInference(State& s) : s_(s), loops_(s.stages.size()), state_(s.stages.size()) {}

    std::vector<StageLoops> run() {
        check_locations(s_);
        for (size_t i = 0; i < s_.stages.size(); ++i) {
            Stage& st = s_.stages[i];
            if (!has_loops(st))
                continue;
            for (const Iterator& it : st.iters)
                loops_[i].leaf_vars.emplace_back(it.name);
        }
        for (size_t i = s_.stages.size(); i-- > 0;)
            visit(static_cast<int>(i));
        return std::move(loops_);
    }

  private:
    enum class Mark : uint8_t { None, Active, Done };

    /// Infers stage sid after everything its region depends on: its readers and its target.
    void visit(int sid) {
        if (state_[sid] == Mark::Done)
            return;
        if (state_[sid] == Mark::Active)
            throw ScheduleError(Msg() << "compute locations and data flow form a cycle through '"
                                      << s_.stages[sid].tensor.name() << "'");
        state_[sid] = Mark::Active;
        const Stage& st = s_.stages[sid];
        std::vector<int> readers;
        if (has_loops(st)) {
            readers = s_.consumers_through_inlined(sid);
            for (int r : readers)
                visit(r);
        }
        if (st.location.kind == ComputeLocKind::At)
            visit(st.location.stage);
        if (has_loops(st))
            infer(sid, readers);
        state_[sid] = Mark::Done;
    }

    void infer(int sid, const std::vector<int>& readers) {
        Stage& st = s_.stages[sid];
        StageLoops& L = loops_[sid];
        const auto& shape = st.tensor.shape();
        L.region.clear();
        L.attached = st.location.kind == ComputeLocKind::At;
        if (!L.attached) {
            for (int64_t e : shape)
                L.region.push_back({Expr(0), e});
        } else {
            L.region = attached_region(sid, readers);
        }
        for (size_t d = 0; d < shape.size(); ++d)
            st.nodes[d].extent = L.region[d].extent;
        recompute_extents(st);
        std::vector<Expr> leaves(L.leaf_vars.begin(), L.leaf_vars.end());
        L.values = node_values(st, leaves);
        L.coords.clear();
        for (size_t d = 0; d < shape.size(); ++d)
            L.coords.push_back(L.attached ? simplify(L.region[d].min + L.values[d]) : L.values[d]);
    }

    std::vector<DimRegion> attached_region(int sid, const std::vector<int>& readers) {
        const Stage& st = s_.stages[sid];
        const int c = st.location.stage, t = st.location.iter;
        // The variables that vary within one iteration of loop t of c.
        VaryingMap varying;
        const Stage& cs = s_.stages[c];
        for (size_t k = t + 1; k < cs.iters.size(); ++k)
            varying[loops_[c].leaf_vars[k].get()] = {0, cs.iters[k].extent - 1};
        // A shared-memory stage is computed once per GPU block for all its threads: the
        // thread-bound loops around the attach point (up the attach chain) vary within it too.
        if (st.scope == StageScope::Shared)
            for (int x = c, limit = t; x >= 0;) {
                const Stage& xs = s_.stages[x];
                for (int k = 0; k <= limit; ++k) {
                    const IterAnnotation a = xs.iters[k].annotation;
                    if (a == IterAnnotation::ThreadX || a == IterAnnotation::ThreadY ||
                        a == IterAnnotation::ThreadZ)
                        varying[loops_[x].leaf_vars[k].get()] = {0, xs.iters[k].extent - 1};
                }
                const bool at = xs.location.kind == ComputeLocKind::At;
                limit = at ? xs.location.iter : -1;
                x = at ? xs.location.stage : -1;
            }
        for (size_t q = 0; q < s_.stages.size(); ++q) {
            if (static_cast<int>(q) == c || !has_loops(s_.stages[q]) ||
                !runs_inside(s_, static_cast<int>(q), c, t))
                continue;
            for (size_t k = 0; k < s_.stages[q].iters.size(); ++k)
                varying[loops_[q].leaf_vars[k].get()] = {0, s_.stages[q].iters[k].extent - 1};
        }
        const size_t ndim = st.tensor.ndim();
        std::vector<SymRange> ranges(ndim);
        std::vector<bool> seen(ndim, false);
        for (int r : readers) {
            if (!runs_inside(s_, r, c, t))
                throw ScheduleError(Msg()
                                    << "stage '" << s_.stages[r].tensor.name() << "' reads '"
                                    << st.tensor.name() << "' outside loop " << cs.iters[t].name
                                    << " of '" << cs.tensor.name() << "' where it is computed");
            const Stage& rs = s_.stages[r];
            const StageLoops& rl = loops_[r];
            VarMap m;
            for (size_t d = 0; d < rs.axes.size(); ++d)
                m[rs.axes[d].get()] = rl.coords[d];
            const auto raxes = rs.reduce_axes();
            for (size_t k = 0; k < raxes.size(); ++k)
                m[raxes[k].var.get()] = rl.values[rs.axes.size() + k];
            std::vector<std::vector<Expr>> reads;
            collect_reads(s_, inline_lets(rs.body), st.tensor, reads, 0);
            for (const auto& idx : reads) {
                for (size_t d = 0; d < ndim && d < idx.size(); ++d) {
                    SymRange sr = sym_range(simplify(substitute(idx[d], m)), varying);
                    ranges[d] = seen[d] ? sym_union(ranges[d], sr) : sr;
                    seen[d] = true;
                }
            }
        }
        std::vector<DimRegion> region;
        for (size_t d = 0; d < ndim; ++d) {
            const int64_t dim = st.tensor.shape()[d];
            const SymRange& r = ranges[d];
            if (!seen[d] || !r.ok || r.hi - r.lo + 1 >= dim) {
                region.push_back({Expr(0), dim});
            } else if (!r.base.defined()) {
                int64_t lo = std::max<int64_t>(r.lo, 0), hi = std::min<int64_t>(r.hi, dim - 1);
                if (hi < lo)
                    lo = hi = std::min<int64_t>(std::max<int64_t>(r.lo, 0), dim - 1);
                region.push_back({Expr(lo), hi - lo + 1});
            } else {
                region.push_back({simplify(r.base + Expr(r.lo)), r.hi - r.lo + 1});
            }
        }
        return region;
    }

    State& s_;
    std::vector<StageLoops> loops_;
    std::vector<Mark> state_;
};

} // namespace

std::vector<StageLoops> infer_bounds(State& s) { return BoundInference(s).run(); }

} // namespace tessera::sched
