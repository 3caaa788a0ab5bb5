// State queries: data flow between stages and the access analysis behind the sketch rules.
#include <algorithm>
#include <set>

#include "internal/body_util.h"
#include "tessera/ir/expr.h"
#include "tessera/ir/functor.h"
#include "tessera/ir/op.h"
#include "tessera/schedule/state.h"

namespace tessera::sched {

using namespace ir;

std::vector<int> State::consumers(int sid) const {
    const Stage& st = stage(sid);
    std::vector<int> out;
    for (size_t i = 0; i < stages.size(); ++i) {
        const Stage& c = stages[i];
        if (!c.body.defined())
            continue;
        bool reads = false;
        for_each_read(c.body, [&](const TensorRead* r) {
            if (r->tensor.same_as(st.tensor))
                reads = true;
        });
        if (reads)
            out.push_back(static_cast<int>(i));
    }
    return out;
}

std::vector<int> State::producers(int sid) const {
    const Stage& st = stage(sid);
    std::set<int> out;
    if (st.body.defined())
        for_each_read(st.body, [&](const TensorRead* r) {
            int p = stage_id_of(r->tensor);
            if (p >= 0)
                out.insert(p);
        });
    return {out.begin(), out.end()};
}

std::vector<int> State::consumers_through_inlined(int sid) const {
    std::set<int> out;
    for (int c : consumers(sid)) {
        if (stages[c].location.kind == ComputeLocKind::Inlined) {
            for (int cc : consumers_through_inlined(c))
                out.insert(cc);
        } else {
            out.insert(c);
        }
    }
    return {out.begin(), out.end()};
}

std::vector<int> State::producers_through_inlined(int sid) const {
    std::set<int> out;
    for (int p : producers(sid)) {
        if (stages[p].location.kind == ComputeLocKind::Inlined) {
            for (int pp : producers_through_inlined(p))
                out.insert(pp);
        } else {
            out.insert(p);
        }
    }
    return {out.begin(), out.end()};
}

bool State::is_output(int sid) const {
    const Stage& st = stage(sid);
    return te::is_output(compute, st.tensor);
}

bool State::is_input(int sid) const { return stage(sid).is_input(); }

namespace {
/// The axis index a read index uses when it is `axis` or `axis + c`, else -1 (-2: constant).
int simple_index_axis(const Expr& e, const std::vector<Var>& axes) {
    Expr x = e;
    if (as_const_int(x))
        return -2;
    if (const auto* a = x.as<Add>()) {
        if (as_const_int(a->b))
            x = a->a;
        else if (as_const_int(a->a))
            x = a->b;
    } else if (const auto* s = x.as<Sub>()) {
        if (as_const_int(s->b))
            x = s->a;
    }
    if (const auto* v = x.as<Variable>())
        for (size_t d = 0; d < axes.size(); ++d)
            if (axes[d].get() == v)
                return static_cast<int>(d);
    return -1;
}

class ExpensiveFinder : public IRVisitor {
  public:
    using IRVisitor::visit;
    bool found = false;
    // A Select on indices (a padding stage's bounds) is a branch or a masked load per
    // element of its reader when inlined; one on values read from tensors (rounding half to
    // even, a Where) is a vector blend, as cheap as the arithmetic around it.
    void visit(const Select* op) override {
        bool reads = false;
        for_each_read(op->condition, [&](const TensorRead*) { reads = true; });
        found = found || !reads;
        visit_children(op);
    }
    void visit(const Call* op) override {
        switch (op->op) {
        case CallOp::Exp:
        case CallOp::Log:
        case CallOp::Sqrt:
        case CallOp::Tanh:
        case CallOp::Erf:
        case CallOp::Pow:
            found = true;
            break;
        case CallOp::Abs:
        case CallOp::Floor:
        case CallOp::Ceil:
        case CallOp::RoundEven:
        case CallOp::Ldexp: // an exponent add (vscalefps)
        case CallOp::Dot4U8S8: // a few integer multiply-adds, one instruction with VNNI
        case CallOp::Dot2BF16: // two float multiply-adds, one instruction with AVX512-BF16
        case CallOp::TileMatmulU8S8:
        case CallOp::TileMatmulBF16:
        case CallOp::BytesAsWord:
        case CallOp::Prefetch:
        case CallOp::GpuBlockSum:
        case CallOp::GpuBlockMax:
        case CallOp::GpuBlockMin:
        case CallOp::WarpMma:
            break;
        }
        visit_children(op);
    }
};

/// The set of variables that appear in e.
class VarCollector : public IRVisitor {
  public:
    using IRVisitor::visit;
    std::set<const Variable*> vars;
    void visit(const Variable* op) override { vars.insert(op); }
};
} // namespace

bool State::is_read_as_words(int sid) const {
    struct Finder : IRVisitor {
        using IRVisitor::visit;
        const ir::TensorNode* tensor = nullptr;
        bool found = false;
        void visit(const Call* op) override {
            if (op->op == CallOp::BytesAsWord)
                for_each_read(op->args[0], [&](const TensorRead* r) {
                    found = found || r->tensor.get() == tensor;
                });
            IRVisitor::visit(op);
        }
    } finder;
    finder.tensor = stage(sid).tensor.get();
    for (int c : consumers(sid))
        if (stages[static_cast<size_t>(c)].body.defined())
            finder.visit(inline_lets(stages[static_cast<size_t>(c)].body));
    return finder.found;
}

bool State::is_injective(int sid) const {
    const Stage& st = stage(sid);
    return !st.is_input() && !st.has_reduce();
}

int State::read_view(int sid) const {
    const std::vector<int> readers = consumers(sid);
    if (!stage(sid).is_input() || readers.size() != 1)
        return sid;
    const Stage& w = stages[static_cast<size_t>(readers[0])];
    const auto* cast = w.body.as<ir::Cast>();
    const auto* read = cast ? cast->value.as<ir::TensorRead>() : nullptr;
    if (w.is_input() || w.has_reduce() || !read || !read->tensor.same_as(stages[sid].tensor) ||
        w.tensor.shape() != stages[sid].tensor.shape() || read->indices.size() != w.axes.size())
        return sid;
    for (size_t d = 0; d < w.axes.size(); ++d)
        if (read->indices[d].as<ir::Variable>() != w.axes[d].get())
            return sid;
    return readers[0];
}

bool State::is_strict_inlinable(int sid) const {
    const Stage& st = stage(sid);
    if (st.is_input() || st.has_reduce())
        return false;
    Expr body = inline_lets(st.body);
    bool simple = true;
    for_each_read(body, [&](const TensorRead* r) {
        std::vector<bool> used(st.axes.size(), false);
        for (const Expr& i : r->indices) {
            int a = simple_index_axis(i, st.axes);
            if (a == -1) {
                simple = false;
            } else if (a >= 0) {
                if (used[a])
                    simple = false;
                used[a] = true;
            }
        }
    });
    if (!simple)
        return false;
    ExpensiveFinder f;
    f.visit(body);
    return !f.found;
}

bool State::needs_multi_level_tiling(int sid) const {
    const Stage& st = stage(sid);
    if (st.is_input() || !st.body.defined())
        return false;
    const bool reduces = st.has_reduce();
    Expr body = inline_lets(st.body);
    bool need = false;
    for_each_read(body, [&](const TensorRead* r) {
        VarCollector vc;
        for (const Expr& i : r->indices)
            vc.visit(i);
        int missing = 0;
        for (size_t d = 0; d < st.axes.size(); ++d)
            if (st.tensor.shape()[d] > 1 && !vc.vars.count(st.axes[d].get()))
                ++missing;
        if (missing >= 2 || (missing >= 1 && reduces))
            need = true;
    });
    return need;
}

bool State::elementwise_match(int producer, int consumer) const {
    const Stage& p = stage(producer, "producer stage");
    const Stage& c = stage(consumer, "consumer stage");
    if (c.is_input() || p.tensor.shape() != c.tensor.shape())
        return false;
    bool any = false, all = true;
    for_each_read(inline_lets(c.body), [&](const TensorRead* r) {
        if (!r->tensor.same_as(p.tensor))
            return;
        any = true;
        for (size_t d = 0; d < r->indices.size(); ++d) {
            if (d >= c.axes.size()) {
                all = false;
                continue;
            }
            const auto* v = r->indices[d].as<Variable>();
            const auto* k = r->indices[d].as<ir::IntImm>();
            const bool unit_zero = k && k->value == 0 && c.tensor.shape()[d] == 1;
            if (!unit_zero && (!v || c.axes[d].get() != v))
                all = false;
        }
    });
    return any && all;
}

std::vector<int> State::attached_stages(int sid) const {
    stage(sid);
    std::vector<int> out;
    for (size_t i = 0; i < stages.size(); ++i)
        if (stages[i].location.kind == ComputeLocKind::At && stages[i].location.stage == sid)
            out.push_back(static_cast<int>(i));
    return out;
}

std::vector<int> State::attached_at(int sid, int iter) const {
    std::vector<int> out;
    for (int a : attached_stages(sid))
        if (stages[a].location.iter == iter)
            out.push_back(a);
    return out;
}

int64_t State::spatial_size(int sid) const {
    int64_t n = 1;
    for (const Iterator& it : stage(sid).iters)
        if (it.kind == IterKind::Spatial)
            n *= it.extent;
    return n;
}

int64_t State::reduce_size(int sid) const {
    int64_t n = 1;
    for (const Iterator& it : stage(sid).iters)
        if (it.kind == IterKind::Reduce)
            n *= it.extent;
    return n;
}

} // namespace tessera::sched
