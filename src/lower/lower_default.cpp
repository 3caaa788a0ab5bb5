// lower_default: a Compute to its naive loop nest.
#include "tessera/lower/lower_default.h"

#include <unordered_map>

#include "tessera/ir/functor.h"
#include "tessera/ir/op.h"
#include "tessera/support/error.h"

namespace tessera::lower {

using namespace ir;

Expr flatten_index(const std::vector<int64_t>& shape, const std::vector<Expr>& indices) {
    TESSERA_CHECK(shape.size() == indices.size())
        << "flat index of " << indices.size() << " indices into rank " << shape.size();
    Expr flat;
    int64_t stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
        Expr term = stride == 1 ? indices[d] : indices[d] * Expr(stride);
        flat = flat.defined() ? term + flat : term;
        stride *= shape[d];
    }
    return flat.defined() ? flat : Expr(0);
}

namespace {
/// Rewrites one stage body for its loop nest: TensorReads become Loads of the tensors' buffers,
/// and every variable the body binds or uses gets a fresh copy (so no variable is bound twice in
/// the function even when stages share IterVars or Let variables, and functions lowered from
/// the same Compute share no variables).
class StageRewriter : public IRMutator {
  public:
    using IRMutator::visit;
    explicit StageRewriter(const std::unordered_map<const TensorNode*, Buffer>& buffers)
        : buffers_(buffers) {}

    /// A fresh variable standing for `v` from now on.
    Var rebind(const Var& v) {
        Var fresh(v.name(), v.type());
        vars_[v.get()] = fresh;
        return fresh;
    }

    Expr visit(const Variable* op) override {
        auto it = vars_.find(op);
        TESSERA_CHECK(it != vars_.end()) << "variable '" << op->name << "' unbound in a stage body";
        return it->second;
    }
    Expr visit(const Let* op) override {
        Expr value = mutate(op->value);
        Var fresh = rebind(op->var);
        return Let::make(fresh, value, mutate(op->body));
    }
    Expr visit(const TensorRead* op) override {
        auto it = buffers_.find(op->tensor.get());
        TESSERA_CHECK(it != buffers_.end())
            << "read of tensor '" << op->tensor.name() << "' that has no buffer";
        std::vector<Expr> idx;
        idx.reserve(op->indices.size());
        for (const auto& i : op->indices)
            idx.push_back(mutate(i));
        return Load::make(it->second, flatten_index(op->tensor.shape(), idx));
    }
    Expr visit(const Reduce* op) override {
        TESSERA_UNREACHABLE() << "nested Reduce in a compute body";
    }

  private:
    const std::unordered_map<const TensorNode*, Buffer>& buffers_;
    std::unordered_map<const Variable*, Var> vars_;
};

Stmt lower_stage(const Tensor& t, const Buffer& buf,
                 const std::unordered_map<const TensorNode*, Buffer>& buffers) {
    StageRewriter rewrite(buffers);
    std::vector<Var> loop_vars;
    std::vector<Expr> axes;
    for (const Var& a : t->axes) {
        loop_vars.push_back(rewrite.rebind(a));
        axes.push_back(loop_vars.back());
    }
    Expr index = flatten_index(t.shape(), axes);
    Stmt body;
    if (const auto* r = t->body.as<Reduce>()) {
        std::vector<Var> red_vars;
        for (const IterVar& iv : r->axes)
            red_vars.push_back(rewrite.rebind(iv.var));
        Expr src = rewrite(r->source);
        Stmt update = Store::make(buf, reduce_combine(r->op, Load::make(buf, index), src), index);
        for (size_t k = r->axes.size(); k-- > 0;)
            update =
                For::make(red_vars[k], Expr(0), Expr(r->axes[k].extent), ForKind::Serial, update);
        body = Seq::make({Store::make(buf, reduce_identity(r->op, t.dtype()), index), update});
    } else {
        body = Store::make(buf, rewrite(t->body), index);
    }
    for (size_t d = t.ndim(); d-- > 0;)
        body = For::make(loop_vars[d], Expr(0), Expr(t.shape()[d]), ForKind::Serial, body);
    return body;
}
} // namespace

LoweredFunc lower_default(const te::Compute& c, const std::string& name) {
    LoweredFunc f;
    f.name = name;
    std::unordered_map<const TensorNode*, Buffer> buffers;
    auto add_param = [&](const Tensor& t) {
        Buffer b = Buffer::make(t.name(), t.dtype(), t.shape());
        buffers.emplace(t.get(), b);
        f.params.push_back(b);
    };
    for (const Tensor& t : c.inputs)
        add_param(t);
    for (const Tensor& t : c.outputs)
        add_param(t);

    std::vector<Buffer> temps;
    for (const Tensor& t : c.stages) {
        if (buffers.count(t.get()))
            continue;
        Buffer b = Buffer::make(t.name(), t.dtype(), t.shape());
        buffers.emplace(t.get(), b);
        temps.push_back(b);
    }

    std::vector<Stmt> stmts;
    for (const Tensor& t : c.stages)
        stmts.push_back(lower_stage(t, buffers.at(t.get()), buffers));
    TESSERA_CHECK(!stmts.empty()) << "compute '" << name << "' without stages";
    Stmt body = Seq::make(std::move(stmts));
    for (size_t i = temps.size(); i-- > 0;)
        body = Allocate::make(temps[i], MemoryScope::Heap, body);
    f.body = body;
    return f;
}

} // namespace tessera::lower
