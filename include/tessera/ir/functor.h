// IRVisitor and IRMutator: one virtual visit per node of ir_nodes.def, with defaults that
// recurse into children through each node's reflect() field list.
//
// Subclasses override the visits they need and add `using IRVisitor::visit;` (or
// `using IRMutator::visit;`) so the other overloads stay visible.
//
// Children visited by default: every Expr and Stmt field, and vectors of them. Binding sites
// (For::loop_var, Let/LetStmt::var, Reduce::axes), buffers and the definitions of tensors read
// by TensorRead are not children; visitors that care override those nodes.
#pragma once

#include <vector>

#include "tessera/ir/stmt.h"

namespace tessera::ir {

class IRVisitor {
public:
    virtual ~IRVisitor() = default;
    /// Dispatches on the node type. Undefined handles are ignored.
    virtual void visit(const Expr& e);
    virtual void visit(const Stmt& s);
#define TESSERA_EXPR_NODE(X) virtual void visit(const X* op);
#define TESSERA_STMT_NODE(X) virtual void visit(const X* op);
#include "tessera/ir/ir_nodes.def"

protected:
    /// Visits the children of op (what the default visit does).
    template <typename T> void visit_children(const T* op);
};

class IRMutator {
public:
    virtual ~IRMutator() = default;
    /// Dispatches on the node type. Undefined handles are returned as they are.
    virtual Expr mutate(const Expr& e);
    virtual Stmt mutate(const Stmt& s);
    Expr operator()(const Expr& e) { return mutate(e); }
    Stmt operator()(const Stmt& s) { return mutate(s); }
#define TESSERA_EXPR_NODE(X) virtual Expr visit(const X* op);
#define TESSERA_STMT_NODE(X) virtual Stmt visit(const X* op);
#include "tessera/ir/ir_nodes.def"

protected:
    /// Mutates the children of op; returns op itself when none changed, otherwise a new node
    /// of the same kind (expression types re-inferred). What the default visit does.
    template <typename T> Expr mutate_expr_children(const T* op);
    template <typename T> Stmt mutate_stmt_children(const T* op);
};

// ---------------------------------------------------------------------------------------------
// Implementation of the generic child walks.

namespace detail {
struct ChildVisitor {
    IRVisitor* self;
    void operator()(const char*, const Expr& e) const {
        if (e.defined()) self->visit(e);
    }
    void operator()(const char*, const Stmt& s) const {
        if (s.defined()) self->visit(s);
    }
    void operator()(const char*, const std::vector<Expr>& v) const {
        for (const auto& e : v) self->visit(e);
    }
    void operator()(const char*, const std::vector<Stmt>& v) const {
        for (const auto& s : v) self->visit(s);
    }
    template <typename U> void operator()(const char*, const U&) const {}
};

struct ChildMutator {
    IRMutator* self;
    bool* changed;
    void operator()(const char*, Expr& e) const {
        if (!e.defined()) return;
        Expr n = self->mutate(e);
        if (!n.same_as(e)) *changed = true, e = std::move(n);
    }
    void operator()(const char*, Stmt& s) const {
        if (!s.defined()) return;
        Stmt n = self->mutate(s);
        if (!n.same_as(s)) *changed = true, s = std::move(n);
    }
    void operator()(const char* name, std::vector<Expr>& v) const {
        for (auto& e : v) (*this)(name, e);
    }
    void operator()(const char* name, std::vector<Stmt>& v) const {
        for (auto& s : v) (*this)(name, s);
    }
    template <typename U> void operator()(const char*, U&) const {}
};
} // namespace detail

template <typename T> void IRVisitor::visit_children(const T* op) {
    T::reflect(*op, detail::ChildVisitor{this});
}

template <typename T> Expr IRMutator::mutate_expr_children(const T* op) {
    bool changed = false;
    T copy(*op);
    T::reflect(copy, detail::ChildMutator{this, &changed});
    if (!changed) return Expr(op);
    copy.type = copy.infer_type();
    return Expr(new T(std::move(copy)));
}

template <typename T> Stmt IRMutator::mutate_stmt_children(const T* op) {
    bool changed = false;
    T copy(*op);
    T::reflect(copy, detail::ChildMutator{this, &changed});
    if (!changed) return Stmt(op);
    if constexpr (std::is_same_v<T, Seq>) return Seq::make(std::move(copy.stmts));
    return Stmt(new T(std::move(copy)));
}

/// Whether n (a statement or expression) contains a Call whose op satisfies `pred`.
bool contains_call(const Stmt& n, bool (*pred)(CallOp));
bool contains_call(const Expr& n, bool (*pred)(CallOp));
/// Whether n contains a Call of `op`.
bool contains_call(const Stmt& n, CallOp op);
bool contains_call(const Expr& n, CallOp op);

} // namespace tessera::ir
