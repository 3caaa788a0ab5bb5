// Dispatch and default visits of IRVisitor and IRMutator.
#include "tessera/ir/functor.h"

#include "tessera/support/error.h"

namespace tessera::ir {

void IRVisitor::visit(const Expr& e) {
    if (!e.defined()) return;
    switch (e.node_type()) {
#define TESSERA_EXPR_NODE(X)                                                                   \
    case IRNodeType::X:                                                                        \
        return visit(static_cast<const X*>(e.get()));
#define TESSERA_STMT_NODE(X) case IRNodeType::X:
#include "tessera/ir/ir_nodes.def"
        break;
    }
    TESSERA_UNREACHABLE() << "statement node in expression position";
}

void IRVisitor::visit(const Stmt& s) {
    if (!s.defined()) return;
    switch (s.node_type()) {
#define TESSERA_STMT_NODE(X)                                                                   \
    case IRNodeType::X:                                                                        \
        return visit(static_cast<const X*>(s.get()));
#define TESSERA_EXPR_NODE(X) case IRNodeType::X:
#include "tessera/ir/ir_nodes.def"
        break;
    }
    TESSERA_UNREACHABLE() << "expression node in statement position";
}

#define TESSERA_EXPR_NODE(X)                                                                   \
    void IRVisitor::visit(const X* op) { visit_children(op); }
#define TESSERA_STMT_NODE(X)                                                                   \
    void IRVisitor::visit(const X* op) { visit_children(op); }
#include "tessera/ir/ir_nodes.def"

Expr IRMutator::mutate(const Expr& e) {
    if (!e.defined()) return e;
    switch (e.node_type()) {
#define TESSERA_EXPR_NODE(X)                                                                   \
    case IRNodeType::X:                                                                        \
        return visit(static_cast<const X*>(e.get()));
#define TESSERA_STMT_NODE(X) case IRNodeType::X:
#include "tessera/ir/ir_nodes.def"
        break;
    }
    TESSERA_UNREACHABLE() << "statement node in expression position";
}

Stmt IRMutator::mutate(const Stmt& s) {
    if (!s.defined()) return s;
    switch (s.node_type()) {
#define TESSERA_STMT_NODE(X)                                                                   \
    case IRNodeType::X:                                                                        \
        return visit(static_cast<const X*>(s.get()));
#define TESSERA_EXPR_NODE(X) case IRNodeType::X:
#include "tessera/ir/ir_nodes.def"
        break;
    }
    TESSERA_UNREACHABLE() << "expression node in statement position";
}

#define TESSERA_EXPR_NODE(X)                                                                   \
    Expr IRMutator::visit(const X* op) { return mutate_expr_children(op); }
#define TESSERA_STMT_NODE(X)                                                                   \
    Stmt IRMutator::visit(const X* op) { return mutate_stmt_children(op); }
#include "tessera/ir/ir_nodes.def"

namespace {

struct CallFinder : IRVisitor {
    bool (*pred)(CallOp) = nullptr;
    CallOp op = CallOp::Exp;
    bool found = false;
    using IRVisitor::visit;
    void visit(const Call* c) override {
        found = found || (pred ? pred(c->op) : c->op == op);
        if (!found)
            IRVisitor::visit(c);
    }
};

template <typename N> bool find_call(const N& n, bool (*pred)(CallOp), CallOp op) {
    CallFinder f;
    f.pred = pred;
    f.op = op;
    f.visit(n);
    return f.found;
}

} // namespace

bool contains_call(const Stmt& n, bool (*pred)(CallOp)) { return find_call(n, pred, CallOp::Exp); }
bool contains_call(const Expr& n, bool (*pred)(CallOp)) { return find_call(n, pred, CallOp::Exp); }
bool contains_call(const Stmt& n, CallOp op) { return find_call(n, nullptr, op); }
bool contains_call(const Expr& n, CallOp op) { return find_call(n, nullptr, op); }

} // namespace tessera::ir
