// Helpers over stage bodies: reads, substitution, read redirection.
#include "internal/body_util.h"

#include <algorithm>

#include "tessera/ir/functor.h"

namespace tessera::sched {

using namespace ir;

namespace {
class ReadWalker : public IRVisitor {
  public:
    using IRVisitor::visit;
    explicit ReadWalker(const std::function<void(const TensorRead*)>& f) : f_(f) {}
    void visit(const TensorRead* op) override {
        f_(op);
        visit_children(op);
    }

  private:
    const std::function<void(const TensorRead*)>& f_;
};

class Substituter : public IRMutator {
  public:
    using IRMutator::visit;
    explicit Substituter(const VarMap& m) : m_(m) {}
    Expr visit(const Variable* op) override {
        auto it = m_.find(op);
        return it == m_.end() ? Expr(op) : it->second;
    }

  private:
    const VarMap& m_;
};

class LetInliner : public IRMutator {
  public:
    using IRMutator::visit;
    Expr visit(const Variable* op) override {
        auto it = m_.find(op);
        return it == m_.end() ? Expr(op) : it->second;
    }
    Expr visit(const Let* op) override {
        Expr v = mutate(op->value);
        m_[op->var.get()] = v;
        return mutate(op->body);
    }

  private:
    VarMap m_;
};

class ReadRedirect : public IRMutator {
  public:
    using IRMutator::visit;
    ReadRedirect(const Tensor& from, const Tensor& to) : from_(from), to_(to) {}
    Expr visit(const TensorRead* op) override {
        std::vector<Expr> idx;
        for (const Expr& i : op->indices)
            idx.push_back(mutate(i));
        return TensorRead::make(op->tensor.same_as(from_) ? to_ : op->tensor, idx);
    }

  private:
    Tensor from_, to_;
};

class UseFinder : public IRVisitor {
  public:
    using IRVisitor::visit;
    explicit UseFinder(const std::vector<const Variable*>& vars) : vars_(vars) {}
    void visit(const Variable* op) override {
        if (std::find(vars_.begin(), vars_.end(), op) != vars_.end())
            found = true;
    }
    bool found = false;

  private:
    const std::vector<const Variable*>& vars_;
};
} // namespace

void for_each_read(const Expr& e, const std::function<void(const TensorRead*)>& f) {
    ReadWalker w(f);
    w.visit(e);
}

Expr substitute(const Expr& e, const VarMap& m) {
    if (m.empty())
        return e;
    return Substituter(m).mutate(e);
}

Expr inline_lets(const Expr& e) { return LetInliner().mutate(e); }

Expr replace_reads(const Expr& e, const Tensor& from, const Tensor& to) {
    return ReadRedirect(from, to).mutate(e);
}

bool uses_any(const Expr& e, const std::vector<const Variable*>& vars) {
    UseFinder u(vars);
    u.visit(e);
    return u.found;
}

std::vector<AxisRead> reads_by_axis(const Expr& body, const std::vector<Var>& axes,
                                    const std::vector<const Variable*>& reduce_vars) {
    std::vector<AxisRead> reads;
    if (!body.defined())
        return reads;
    for_each_read(inline_lets(body), [&](const TensorRead* r) {
        AxisRead read;
        read.tensor = r->tensor.get();
        read.uses.assign(axes.size(), false);
        read.slides.assign(axes.size(), false);
        for (size_t a = 0; a < axes.size(); ++a)
            for (const Expr& index : r->indices) {
                if (!uses_any(index, {axes[a].get()}))
                    continue;
                read.uses[a] = true;
                read.slides[a] =
                    read.slides[a] || (!reduce_vars.empty() && uses_any(index, reduce_vars));
            }
        reads.push_back(std::move(read));
    });
    return reads;
}

bool reads_along_last_axis(const Expr& body, const Var& last) {
    bool contiguous = true, any = false;
    for_each_read(inline_lets(body), [&](const TensorRead* r) {
        any = true;
        const auto* v = r->indices.empty() ? nullptr : r->indices.back().as<Variable>();
        contiguous = contiguous && v == last.get();
    });
    return any && contiguous;
}

Tensor make_tensor(const std::string& name, DataType dtype, std::vector<int64_t> shape,
                   std::vector<Var> axes, Expr body) {
    auto* n = new TensorNode;
    n->name = name;
    n->dtype = dtype;
    n->shape = std::move(shape);
    n->axes = std::move(axes);
    n->body = std::move(body);
    return Tensor(n);
}

} // namespace tessera::sched
