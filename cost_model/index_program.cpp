// IndexProgram: postfix code for an integer index expression (see index_program.h).
#include "index_program.h"

#include <algorithm>

#include "tessera/ir/stmt.h"

namespace tessera::cost {

namespace {

int64_t floor_div(int64_t a, int64_t b) {
    if (b == 0)
        return 0;
    const int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t floor_mod(int64_t a, int64_t b) { return b == 0 ? 0 : a - floor_div(a, b) * b; }

} // namespace

IndexProgram::IndexProgram(const ir::Expr& e,
                           const std::function<int(const ir::Variable*)>& level_of,
                           const std::function<const ir::Expr*(const ir::Variable*)>& let_value) {
    compile(e, level_of, let_value);
    stack_.reserve(code_.size());
}

void IndexProgram::compile(const ir::Expr& e,
                           const std::function<int(const ir::Variable*)>& level_of,
                           const std::function<const ir::Expr*(const ir::Variable*)>& let_value) {
    using namespace ir;
    auto compile = [&](const Expr& x) { this->compile(x, level_of, let_value); };
    auto binary = [&](const Expr& a, const Expr& b, Op op) {
        compile(a);
        compile(b);
        code_.push_back({op, 0});
    };
    switch (e.node_type()) {
    case IRNodeType::IntImm:
        code_.push_back({Op::Const, e.as<IntImm>()->value});
        return;
    case IRNodeType::Variable: {
        const Variable* v = e.as<Variable>();
        for (size_t i = inner_lets_.size(); i-- > 0;)
            if (inner_lets_[i].first == v)
                return compile(inner_lets_[i].second);
        const int level = level_of(v);
        if (level >= 0)
            return code_.push_back({Op::Loop, level});
        if (const Expr* value = let_value(v))
            return compile(*value);
        return code_.push_back({Op::Const, 0});
    }
    case IRNodeType::Cast:
        if (e.type().is_float())
            return code_.push_back({Op::Const, 0});
        return compile(e.as<Cast>()->value);
    case IRNodeType::Add:
        return binary(e.as<Add>()->a, e.as<Add>()->b, Op::Add);
    case IRNodeType::Sub:
        return binary(e.as<Sub>()->a, e.as<Sub>()->b, Op::Sub);
    case IRNodeType::Mul:
        return binary(e.as<Mul>()->a, e.as<Mul>()->b, Op::Mul);
    case IRNodeType::Div:
        return binary(e.as<Div>()->a, e.as<Div>()->b, Op::Div);
    case IRNodeType::Mod:
        return binary(e.as<Mod>()->a, e.as<Mod>()->b, Op::Mod);
    case IRNodeType::Min:
        return binary(e.as<Min>()->a, e.as<Min>()->b, Op::Min);
    case IRNodeType::Max:
        return binary(e.as<Max>()->a, e.as<Max>()->b, Op::Max);
    case IRNodeType::EQ:
        return binary(e.as<EQ>()->a, e.as<EQ>()->b, Op::EQ);
    case IRNodeType::NE:
        return binary(e.as<NE>()->a, e.as<NE>()->b, Op::NE);
    case IRNodeType::LT:
        return binary(e.as<LT>()->a, e.as<LT>()->b, Op::LT);
    case IRNodeType::LE:
        return binary(e.as<LE>()->a, e.as<LE>()->b, Op::LE);
    case IRNodeType::GT:
        return binary(e.as<GT>()->a, e.as<GT>()->b, Op::GT);
    case IRNodeType::GE:
        return binary(e.as<GE>()->a, e.as<GE>()->b, Op::GE);
    case IRNodeType::And:
        return binary(e.as<And>()->a, e.as<And>()->b, Op::And);
    case IRNodeType::Or:
        return binary(e.as<Or>()->a, e.as<Or>()->b, Op::Or);
    case IRNodeType::Not:
        compile(e.as<Not>()->a);
        return code_.push_back({Op::Not, 0});
    case IRNodeType::Select: {
        const Select* op = e.as<Select>();
        compile(op->condition);
        compile(op->true_value);
        compile(op->false_value);
        return code_.push_back({Op::Select, 0});
    }
    case IRNodeType::Ramp:
        return compile(e.as<Ramp>()->base);
    case IRNodeType::Broadcast:
        return compile(e.as<Broadcast>()->value);
    case IRNodeType::Let: {
        const Let* op = e.as<Let>();
        inner_lets_.emplace_back(op->var.get(), op->value);
        compile(op->body);
        inner_lets_.pop_back();
        return;
    }
    default:
        // Float immediates, loads, calls, vector reductions: not index arithmetic.
        return code_.push_back({Op::Const, 0});
    }
}

int64_t IndexProgram::run(const std::vector<int64_t>& values) const {
    stack_.clear();
    for (const Instr& in : code_) {
        if (in.op == Op::Const) {
            stack_.push_back(in.arg);
            continue;
        }
        if (in.op == Op::Loop) {
            stack_.push_back(values[static_cast<size_t>(in.arg)]);
            continue;
        }
        if (in.op == Op::Not) {
            stack_.back() = !stack_.back();
            continue;
        }
        if (in.op == Op::Select) {
            const int64_t f = stack_.back();
            stack_.pop_back();
            const int64_t t = stack_.back();
            stack_.pop_back();
            stack_.back() = stack_.back() ? t : f;
            continue;
        }
        const int64_t b = stack_.back();
        stack_.pop_back();
        int64_t& a = stack_.back();
        switch (in.op) {
        case Op::Add:
            a = a + b;
            break;
        case Op::Sub:
            a = a - b;
            break;
        case Op::Mul:
            a = a * b;
            break;
        case Op::Div:
            a = floor_div(a, b);
            break;
        case Op::Mod:
            a = floor_mod(a, b);
            break;
        case Op::Min:
            a = std::min(a, b);
            break;
        case Op::Max:
            a = std::max(a, b);
            break;
        case Op::EQ:
            a = a == b;
            break;
        case Op::NE:
            a = a != b;
            break;
        case Op::LT:
            a = a < b;
            break;
        case Op::LE:
            a = a <= b;
            break;
        case Op::GT:
            a = a > b;
            break;
        case Op::GE:
            a = a >= b;
            break;
        case Op::And:
            a = a && b;
            break;
        case Op::Or:
            a = a || b;
            break;
        case Op::Const:
        case Op::Loop:
        case Op::Not:
        case Op::Select:
            break; // handled above
        }
    }
    return stack_.empty() ? 0 : stack_.back();
}

} // namespace tessera::cost
