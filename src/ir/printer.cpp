// The text printer of the loop IR: one switch over ir_nodes.def, names disambiguated per call.
#include "tessera/ir/printer.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "tessera/support/error.h"

namespace tessera::ir {

namespace {

/// Gives each object (variable, buffer, tensor) a unique printed name on first sight. The
/// object pointer is only a lookup key; names depend on the order of appearance alone.
class Namer {
public:
    const std::string& name(const void* object, const std::string& hint, const char* fallback) {
        auto it = names_.find(object);
        if (it != names_.end()) return it->second;
        std::string base = hint.empty() ? fallback : hint;
        std::string candidate = base;
        for (int k = 1; used_.count(candidate); ++k) candidate = base + "_" + std::to_string(k);
        used_.insert(candidate);
        return names_.emplace(object, candidate).first->second;
    }

private:
    std::unordered_map<const void*, std::string> names_;
    std::unordered_set<std::string> used_;
};

/// Shortest decimal text that reads back as the same value in the type's precision.
std::string float_text(double v, int bits) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    char buf[64];
    for (int precision = 1; precision <= 17; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*g", precision, v);
        double back = std::strtod(buf, nullptr);
        if (bits == 32 ? (float)back == (float)v : back == v) break;
    }
    std::string s = buf;
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    return s;
}

class Printer {
public:
    std::ostringstream os;

    void print(const Expr& e, bool top = false) {
        if (!e.defined()) {
            os << "<undef>";
            return;
        }
        switch (e.node_type()) {
#define TESSERA_EXPR_NODE(X)                                                                   \
    case IRNodeType::X:                                                                        \
        return print_node(static_cast<const X*>(e.get()), top);
#define TESSERA_STMT_NODE(X) case IRNodeType::X:
#include "tessera/ir/ir_nodes.def"
            break;
        }
        TESSERA_UNREACHABLE() << "statement node in expression position";
    }

    void print(const Stmt& s) {
        if (!s.defined()) {
            line() << "<undef>\n";
            return;
        }
        switch (s.node_type()) {
#define TESSERA_STMT_NODE(X)                                                                   \
    case IRNodeType::X:                                                                        \
        return print_node(static_cast<const X*>(s.get()));
#define TESSERA_EXPR_NODE(X) case IRNodeType::X:
#include "tessera/ir/ir_nodes.def"
            break;
        }
        TESSERA_UNREACHABLE() << "expression node in statement position";
    }

    void print_func(const LoweredFunc& f) {
        os << "func " << f.name << "(";
        for (size_t i = 0; i < f.params.size(); ++i) {
            if (i) os << ", ";
            print_buffer_decl(f.params[i]);
        }
        os << ") {\n";
        ++indent_;
        print(f.body);
        --indent_;
        os << "}\n";
    }

private:
    Namer names_;
    int indent_ = 0;

    std::ostream& line() {
        for (int i = 0; i < indent_; ++i) os << "  ";
        return os;
    }
    void name_of(const Var& v) {
        if (!v.defined()) {
            os << "<undef>";
            return;
        }
        os << names_.name(v.get(), v.name(), "v");
    }
    void name_of(const Buffer& b) {
        if (!b.defined()) {
            os << "<undef>";
            return;
        }
        os << names_.name(b.get(), b.name(), "b");
    }
    void print_buffer_decl(const Buffer& b) {
        name_of(b);
        if (!b.defined()) return;
        os << ": " << b.dtype() << "[";
        for (size_t i = 0; i < b.shape().size(); ++i) os << (i ? ", " : "") << b.shape()[i];
        os << "]";
    }
    void args(const std::vector<Expr>& v) {
        for (size_t i = 0; i < v.size(); ++i) {
            if (i) os << ", ";
            print(v[i], true);
        }
    }
    void binary(const Expr& a, const char* op, const Expr& b, bool top) {
        if (!top) os << "(";
        print(a);
        os << op;
        print(b);
        if (!top) os << ")";
    }
    void call(const char* fn, const Expr& a, const Expr& b) {
        os << fn << "(";
        print(a, true);
        os << ", ";
        print(b, true);
        os << ")";
    }

    void print_node(const IntImm* op, bool) {
        DataType t = op->type;
        if (t.is_bool()) {
            os << (op->value ? "true" : "false");
            return;
        }
        if (t != DataType::i64()) os << "(" << t << ")";
        if (t.is_uint()) os << static_cast<uint64_t>(op->value);
        else os << op->value;
    }
    void print_node(const FloatImm* op, bool) {
        if (op->type != DataType::f32()) os << "(" << op->type << ")";
        os << float_text(op->value, op->type.bits);
    }
    void print_node(const Variable* op, bool) { name_of(Var(op)); }
    void print_node(const Cast* op, bool) {
        os << op->type << "(";
        print(op->value, true);
        os << ")";
    }
    void print_node(const Add* op, bool top) { binary(op->a, " + ", op->b, top); }
    void print_node(const Sub* op, bool top) { binary(op->a, " - ", op->b, top); }
    void print_node(const Mul* op, bool top) { binary(op->a, "*", op->b, top); }
    void print_node(const Div* op, bool top) { binary(op->a, "/", op->b, top); }
    void print_node(const Mod* op, bool top) { binary(op->a, " % ", op->b, top); }
    void print_node(const Min* op, bool) { call("min", op->a, op->b); }
    void print_node(const Max* op, bool) { call("max", op->a, op->b); }
    void print_node(const EQ* op, bool top) { binary(op->a, " == ", op->b, top); }
    void print_node(const NE* op, bool top) { binary(op->a, " != ", op->b, top); }
    void print_node(const LT* op, bool top) { binary(op->a, " < ", op->b, top); }
    void print_node(const LE* op, bool top) { binary(op->a, " <= ", op->b, top); }
    void print_node(const GT* op, bool top) { binary(op->a, " > ", op->b, top); }
    void print_node(const GE* op, bool top) { binary(op->a, " >= ", op->b, top); }
    void print_node(const And* op, bool top) { binary(op->a, " && ", op->b, top); }
    void print_node(const Or* op, bool top) { binary(op->a, " || ", op->b, top); }
    void print_node(const Not* op, bool) {
        os << "!";
        print(op->a);
    }
    void print_node(const Select* op, bool) {
        os << "select(";
        args({op->condition, op->true_value, op->false_value});
        os << ")";
    }
    void print_node(const Load* op, bool) {
        name_of(op->buffer);
        os << "[";
        print(op->index, true);
        os << "]";
    }
    void print_node(const Ramp* op, bool) {
        os << "ramp(";
        args({op->base, op->stride});
        os << ", " << op->lanes << ")";
    }
    void print_node(const Broadcast* op, bool) {
        os << "x" << op->lanes << "(";
        print(op->value, true);
        os << ")";
    }
    void print_node(const VectorReduce* op, bool) {
        os << "vector_reduce_" << to_string(op->op) << "(";
        print(op->value, true);
        os << ", " << op->lanes << ")";
    }
    void print_node(const Call* op, bool) {
        os << to_string(op->op) << "(";
        args(op->args);
        os << ")";
    }
    void print_node(const Let* op, bool) {
        os << "(let ";
        name_of(op->var);
        os << " = ";
        print(op->value, true);
        os << " in ";
        print(op->body, true);
        os << ")";
    }
    void print_node(const TensorRead* op, bool) {
        if (op->tensor.defined()) os << names_.name(op->tensor.get(), op->tensor.name(), "t");
        else os << "<undef>";
        os << "[";
        args(op->indices);
        os << "]";
    }
    void print_node(const Reduce* op, bool) {
        os << to_string(op->op) << "(";
        for (const IterVar& iv : op->axes) {
            name_of(iv.var);
            os << ": 0.." << iv.extent << ", ";
        }
        print(op->source, true);
        os << ")";
    }

    void print_node(const LetStmt* op) {
        line() << "let ";
        name_of(op->var);
        os << " = ";
        print(op->value, true);
        os << "\n";
        print(op->body);
    }
    void print_node(const For* op) {
        line() << "for (";
        name_of(op->loop_var);
        os << ", ";
        print(op->min, true);
        os << ", ";
        print(op->extent, true);
        os << ")";
        if (op->kind != ForKind::Serial) os << " " << to_string(op->kind);
        os << " {\n";
        block(op->body);
        line() << "}\n";
    }
    void print_node(const Store* op) {
        line();
        name_of(op->buffer);
        os << "[";
        print(op->index, true);
        os << "] = ";
        print(op->value);
        os << "\n";
    }
    void print_node(const Allocate* op) {
        line() << "allocate ";
        print_buffer_decl(op->buffer);
        os << " " << to_string(op->scope) << " {\n";
        block(op->body);
        line() << "}\n";
    }
    void print_node(const IfThenElse* op) {
        line() << "if (";
        print(op->condition, true);
        os << ") {\n";
        block(op->then_case);
        if (op->else_case.defined()) {
            line() << "} else {\n";
            block(op->else_case);
        }
        line() << "}\n";
    }
    void print_node(const Seq* op) {
        for (const Stmt& s : op->stmts) print(s);
    }
    void print_node(const Evaluate* op) {
        line() << "evaluate(";
        print(op->value, true);
        os << ")\n";
    }
    void block(const Stmt& s) {
        ++indent_;
        print(s);
        --indent_;
    }
};

} // namespace

std::string to_string(const Expr& e) {
    Printer p;
    p.print(e, true);
    return p.os.str();
}

std::string to_string(const Stmt& s) {
    Printer p;
    p.print(s);
    return p.os.str();
}

std::string to_string(const LoweredFunc& f) {
    Printer p;
    p.print_func(f);
    return p.os.str();
}

std::ostream& operator<<(std::ostream& os, const Expr& e) { return os << to_string(e); }
std::ostream& operator<<(std::ostream& os, const Stmt& s) { return os << to_string(s); }
std::ostream& operator<<(std::ostream& os, const LoweredFunc& f) { return os << to_string(f); }

} // namespace tessera::ir
