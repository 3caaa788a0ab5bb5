// Full unrolling of Unrolled loops, and the fresh-copy substitution it is built on.
#include "tessera/lower/unroll_loops.h"

#include <unordered_map>

#include "tessera/ir/functor.h"
#include "tessera/ir/op.h"

namespace tessera::lower {

using namespace ir;

namespace {

/// Substitutes variables and gives every binding site met a fresh variable or buffer.
class CopyFresh : public IRMutator {
  public:
    using IRMutator::visit;
    explicit CopyFresh(const std::vector<std::pair<Var, Expr>>& subst) {
        for (const auto& [v, e] : subst)
            vars_[v.get()] = e;
    }

    Expr visit(const Variable* op) override {
        auto it = vars_.find(op);
        return it == vars_.end() ? Expr(op) : it->second;
    }
    Expr visit(const Let* op) override {
        Expr value = mutate(op->value);
        Var fresh = rebind(op->var);
        Expr body = mutate(op->body);
        return Let::make(fresh, value, body);
    }
    Stmt visit(const LetStmt* op) override {
        Expr value = mutate(op->value);
        Var fresh = rebind(op->var);
        Stmt body = mutate(op->body);
        return LetStmt::make(fresh, value, body);
    }
    Stmt visit(const For* op) override {
        Expr min = mutate(op->min);
        Expr extent = mutate(op->extent);
        Var fresh = rebind(op->loop_var);
        Stmt body = mutate(op->body);
        return For::make(fresh, min, extent, op->kind, body);
    }
    Stmt visit(const Allocate* op) override {
        const Buffer& b = op->buffer;
        Buffer fresh = Buffer::make(b.name(), b.dtype(), b.shape());
        buffers_[b.get()] = fresh;
        Stmt body = mutate(op->body);
        return Allocate::make(fresh, op->scope, body);
    }
    Expr visit(const Load* op) override {
        Expr index = mutate(op->index);
        Buffer b = buffer(op->buffer);
        if (index.same_as(op->index) && b.same_as(op->buffer))
            return Expr(op);
        return Load::make(b, index);
    }
    Stmt visit(const Store* op) override {
        Expr value = mutate(op->value);
        Expr index = mutate(op->index);
        Buffer b = buffer(op->buffer);
        if (value.same_as(op->value) && index.same_as(op->index) && b.same_as(op->buffer))
            return Stmt(op);
        return Store::make(b, value, index);
    }

  private:
    Var rebind(const Var& v) {
        Var fresh(v.name(), v.type());
        vars_[v.get()] = fresh;
        return fresh;
    }
    Buffer buffer(const Buffer& b) const {
        auto it = buffers_.find(b.get());
        return it == buffers_.end() ? b : it->second;
    }

    std::unordered_map<const Variable*, Expr> vars_;
    std::unordered_map<const BufferNode*, Buffer> buffers_;
};

class UnrollLoops : public IRMutator {
  public:
    using IRMutator::visit;
    Stmt visit(const For* op) override {
        Stmt body = mutate(op->body); // inner loops first
        if (op->kind != ForKind::Unrolled) {
            if (body.same_as(op->body))
                return Stmt(op);
            return For::make(op->loop_var, op->min, op->extent, op->kind, body);
        }
        const int64_t* extent = as_const_int(op->extent);
        if (!extent || *extent <= 0)
            return For::make(op->loop_var, op->min, op->extent, ForKind::Serial, body);
        std::vector<Stmt> copies;
        for (int64_t k = 0; k < *extent; ++k) {
            Expr value = is_const_int(op->min, 0) ? Expr(k) : op->min + Expr(k);
            copies.push_back(copy_with_substitution(body, {{op->loop_var, value}}));
        }
        return Seq::make(std::move(copies));
    }
};

} // namespace

Stmt copy_with_substitution(const Stmt& s, const std::vector<std::pair<Var, Expr>>& subst) {
    return CopyFresh(subst)(s);
}

Stmt unroll_loops(const Stmt& s) { return UnrollLoops()(s); }

} // namespace tessera::lower
