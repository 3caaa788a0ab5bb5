// Base classes of IR nodes and the Expr/Stmt handles.
#pragma once

#include <cstdint>

#include "tessera/ir/type.h"
#include "tessera/support/intrusive_ptr.h"

namespace tessera::ir {

/// One enumerator per node in ir_nodes.def.
enum class IRNodeType : uint8_t {
#define TESSERA_EXPR_NODE(X) X,
#define TESSERA_STMT_NODE(X) X,
#include "tessera/ir/ir_nodes.def"
};

/// The node's name as in ir_nodes.def ("Add", "For").
const char* node_type_name(IRNodeType t);

/// Every IR node. Nodes are immutable once built and shared between threads; fields are public
/// and set only by the node's make().
struct IRNode : RefCounted {
    explicit IRNode(IRNodeType t) : node_type(t) {}
    IRNodeType node_type;
};

/// Base of expression nodes: every expression has a type.
struct BaseExprNode : IRNode {
    explicit BaseExprNode(IRNodeType t) : IRNode(t) {}
    DataType type;
};

/// Base of statement nodes.
struct BaseStmtNode : IRNode {
    explicit BaseStmtNode(IRNodeType t) : IRNode(t) {}
};

/// CRTP helpers that give a node its IRNodeType tag.
template <typename T> struct ExprNode : BaseExprNode {
    ExprNode() : BaseExprNode(T::kNodeType) {}
};
template <typename T> struct StmtNode : BaseStmtNode {
    StmtNode() : BaseStmtNode(T::kNodeType) {}
};

/// Handle to an expression node. Null when default-constructed.
class Expr : public IntrusivePtr<const BaseExprNode> {
public:
    Expr() = default;
    explicit Expr(const BaseExprNode* n) : IntrusivePtr(const_cast<BaseExprNode*>(n)) {}
    /// An Int(64) immediate; lets index code write `i * 4 + 1`.
    Expr(int v);
    Expr(int64_t v);
    /// A Float(32) immediate.
    Expr(float v);

    DataType type() const { return get()->type; }
    IRNodeType node_type() const { return get()->node_type; }
    /// The node as T, or null if it is another kind (a tag compare, no dynamic_cast).
    template <typename T> const T* as() const {
        if (get() && get()->node_type == T::kNodeType) return static_cast<const T*>(get());
        return nullptr;
    }
};

/// Handle to a statement node. Null when default-constructed.
class Stmt : public IntrusivePtr<const BaseStmtNode> {
public:
    Stmt() = default;
    explicit Stmt(const BaseStmtNode* n) : IntrusivePtr(const_cast<BaseStmtNode*>(n)) {}
    IRNodeType node_type() const { return get()->node_type; }
    template <typename T> const T* as() const {
        if (get() && get()->node_type == T::kNodeType) return static_cast<const T*>(get());
        return nullptr;
    }
};

} // namespace tessera::ir
