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

} // namespace tessera::ir
