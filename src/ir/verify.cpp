// The IR verifier: scopes of variables and buffers, type rules, and lowering leftovers.
#include "tessera/ir/verify.h"

#include <sstream>
#include <unordered_set>

#include "tessera/ir/functor.h"
#include "tessera/ir/printer.h"
#include "tessera/support/error.h"

namespace tessera::ir {

namespace {

/// The first lines of a statement's text: enough to find it, bounded for huge bodies.
std::string head_of(const Stmt& s, int max_lines = 6) {
    std::string text = to_string(s);
    size_t pos = 0;
    for (int i = 0; i < max_lines && pos != std::string::npos; ++i) {
        pos = text.find('\n', pos);
        if (pos != std::string::npos) ++pos;
    }
    if (pos != std::string::npos && pos < text.size()) text = text.substr(0, pos) + "  ...\n";
    return text;
}

class Verifier : public IRVisitor {
public:
    explicit Verifier(const std::vector<Buffer>& params) {
        for (const Buffer& b : params) {
            TESSERA_CHECK(b.defined()) << "verify: undefined param buffer";
            TESSERA_CHECK(live_.insert(b.get()).second)
                << "verify: buffer '" << b.name() << "' passed twice as a param";
        }
    }

    using IRVisitor::visit;

    void visit(const Stmt& s) override {
        Stmt saved = stmt_;
        stmt_ = s;
        IRVisitor::visit(s);
        stmt_ = saved;
    }

    void visit(const Expr& e) override {
        if (!e.defined()) return;
        Expr saved = root_;
        if (!root_.defined()) root_ = e;
        check_type(e);
        IRVisitor::visit(e);
        root_ = saved;
    }

    void visit(const Variable* op) override {
        if (!scope_.count(op)) fail("variable used outside its binding scope", Var(op));
    }
    void visit(const Load* op) override {
        check_buffer(op->buffer, Expr(op));
        IRVisitor::visit(op);
    }
    void visit(const Call* op) override {
        if (op->op == CallOp::Prefetch && op != evaluated_)
            fail("prefetch outside an Evaluate", Expr(op));
        if (is_tile_matmul(op->op) && op != evaluated_)
            fail("tile_matmul outside an Evaluate", Expr(op));
        IRVisitor::visit(op);
    }
    void visit(const Let* op) override {
        if (!op->var.defined()) return fail("let with an undefined variable", Expr(op));
        visit(op->value);
        bind(op->var);
        visit(op->body);
        scope_.erase(op->var.get());
    }
    void visit(const TensorRead* op) override { fail("TensorRead left after lowering", Expr(op)); }
    void visit(const Reduce* op) override { fail("Reduce left after lowering", Expr(op)); }

    void visit(const LetStmt* op) override {
        if (!op->var.defined() || !op->value.defined() || !op->body.defined())
            return fail("let with an undefined part");
        visit(op->value);
        if (op->var.type() != op->value.type())
            fail("let of type " + to_string(op->var.type()) + " bound to a value of type " +
                     to_string(op->value.type()),
                 op->var);
        bind(op->var);
        visit(op->body);
        scope_.erase(op->var.get());
    }
    void visit(const For* op) override {
        if (!op->loop_var.defined() || !op->min.defined() || !op->extent.defined() ||
            !op->body.defined())
            return fail("for with an undefined part");
        const DataType i64 = DataType::i64();
        if (op->loop_var.type() != i64 || op->min.type() != i64 || op->extent.type() != i64)
            fail("for with non-i64 bounds or loop variable", op->loop_var);
        if ((op->kind == ForKind::Vectorized || op->kind == ForKind::Unrolled) &&
            !op->extent.as<IntImm>())
            fail(std::string(to_string(op->kind)) + " for with non-constant extent", op->extent);
        visit(op->min);
        visit(op->extent);
        bind(op->loop_var);
        visit(op->body);
        scope_.erase(op->loop_var.get());
    }
    void visit(const Store* op) override {
        if (!op->value.defined() || !op->index.defined())
            return fail("store with an undefined part");
        check_buffer(op->buffer, Expr());
        DataType vt = op->value.type();
        if (vt.element_of() != op->buffer.dtype())
            fail("store of " + to_string(vt) + " into a buffer of " +
                     to_string(op->buffer.dtype()),
                 op->value);
        if (op->index.type() != DataType::i64(vt.lanes))
            fail("store index of type " + to_string(op->index.type()) + " for a value of type " +
                     to_string(vt),
                 op->index);
        IRVisitor::visit(op);
    }
    void visit(const Allocate* op) override {
        if (!op->buffer.defined() || !op->body.defined())
            return fail("allocate with an undefined part");
        const BufferNode* b = op->buffer.get();
        if (!live_.insert(b).second)
            fail("buffer '" + op->buffer.name() + "' allocated while live");
        visit(op->body);
        live_.erase(b);
    }
    void visit(const IfThenElse* op) override {
        if (!op->condition.defined() || !op->then_case.defined())
            return fail("if with an undefined part");
        if (op->condition.type() != DataType::boolean())
            fail("if condition of type " + to_string(op->condition.type()), op->condition);
        IRVisitor::visit(op);
    }
    void visit(const Evaluate* op) override {
        const BaseExprNode* saved = evaluated_;
        evaluated_ = op->value.get();
        IRVisitor::visit(op);
        evaluated_ = saved;
    }

private:
    std::unordered_set<const Variable*> scope_, ever_bound_;
    std::unordered_set<const BufferNode*> live_;
    Stmt stmt_;                                ///< Innermost statement being checked.
    Expr root_;                                ///< Outermost expression being checked.
    const BaseExprNode* evaluated_ = nullptr; ///< The value of the enclosing Evaluate.

    void fail(const std::string& what, const Expr& node = Expr()) {
        std::ostringstream msg;
        msg << "verify: " << what;
        if (node.defined()) msg << ": " << to_string(node);
        if (root_.defined() && node.defined() && !root_.same_as(node))
            msg << "\n  in expression: " << to_string(root_);
        if (stmt_.defined()) msg << "\n  in statement:\n" << head_of(stmt_);
        TESSERA_CHECK(false) << msg.str();
    }

    void bind(const Var& v) {
        if (!ever_bound_.insert(v.get()).second) fail("variable bound twice", v);
        scope_.insert(v.get());
    }

    void check_buffer(const Buffer& b, const Expr& node) {
        if (!b.defined()) return fail("undefined buffer", node);
        if (!live_.count(b.get()))
            fail("buffer '" + b.name() + "' used outside its Allocate and not a param", node);
    }

    void check_type(const Expr& e) {
        switch (e.node_type()) {
#define TESSERA_EXPR_NODE(X)                                                                   \
    case IRNodeType::X:                                                                        \
        return check_rule(static_cast<const X*>(e.get()));
#define TESSERA_STMT_NODE(X) case IRNodeType::X:
#include "tessera/ir/ir_nodes.def"
            break;
        }
        fail("statement node in expression position");
    }

    template <typename T> void check_rule(const T* op) {
        DataType want;
        try {
            want = op->infer_type();
        } catch (const InternalError& err) {
            return fail(std::string("type rule broken (") + err.what() + ")", Expr(op));
        }
        if (want != op->type)
            fail("node of type " + to_string(op->type) + " where its rule gives " +
                     to_string(want),
                 Expr(op));
        if constexpr (std::is_same_v<T, IntImm>) {
            if (!op->type.is_scalar() || op->type.is_float()) fail("bad IntImm type", Expr(op));
        }
        if constexpr (std::is_same_v<T, FloatImm>) {
            if (!op->type.is_scalar() || !op->type.is_float()) fail("bad FloatImm type", Expr(op));
        }
    }
};

} // namespace

void verify(const Stmt& s, const std::vector<Buffer>& params) {
    TESSERA_CHECK(s.defined()) << "verify: undefined statement";
    Verifier v(params);
    v.visit(s);
}

void verify(const LoweredFunc& f) {
    TESSERA_CHECK(f.body.defined()) << "verify: function '" << f.name << "' without a body";
    Verifier v(f.params);
    v.visit(f.body);
}

} // namespace tessera::ir
