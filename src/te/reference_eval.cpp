// Direct tensor-expression evaluation in double precision.
#include "tessera/te/reference_eval.h"

#include <cmath>

#include "tessera/support/bfloat16.h"
#include "tessera/support/half.h"
#include "tessera/support/error.h"

namespace tessera::te {

using namespace ir;

void ReferenceEvaluator::bind(const Tensor& t, const void* data) {
    TESSERA_CHECK(t->is_placeholder()) << "bind of compute tensor " << t.name();
    inputs_[t.get()] = data;
}

double ReferenceEvaluator::at(const Tensor& t, const std::vector<int64_t>& idx) {
    Value v = element(t, idx);
    return v.is_float ? v.f : static_cast<double>(v.i);
}

static int64_t flat_index(const Tensor& t, const std::vector<int64_t>& idx) {
    TESSERA_CHECK(idx.size() == t.ndim()) << "tensor " << t.name() << " indexed with "
                                          << idx.size() << " indices";
    int64_t flat = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
        TESSERA_CHECK(idx[d] >= 0 && idx[d] < t.shape()[d])
            << "tensor " << t.name() << " index " << idx[d] << " out of bounds in dimension "
            << d << " of extent " << t.shape()[d];
        flat = flat * t.shape()[d] + idx[d];
    }
    return flat;
}

ReferenceEvaluator::Value ReferenceEvaluator::element(const Tensor& t,
                                                      const std::vector<int64_t>& idx) {
    int64_t flat = flat_index(t, idx);
    DataType dt = t.dtype();
    if (t->is_placeholder()) {
        auto it = inputs_.find(t.get());
        TESSERA_CHECK(it != inputs_.end()) << "placeholder " << t.name() << " is not bound";
        const void* p = it->second;
        Value v;
        v.is_float = dt.is_float();
        if (dt == DataType::f32()) v.f = static_cast<const float*>(p)[flat];
        else if (dt == DataType::f64()) v.f = static_cast<const double*>(p)[flat];
        else if (dt == DataType::i32()) v.i = static_cast<const int32_t*>(p)[flat];
        else if (dt == DataType::i64()) v.i = static_cast<const int64_t*>(p)[flat];
        else if (dt.is_bool() || dt == DataType::u8()) v.i = static_cast<const uint8_t*>(p)[flat];
        else if (dt == DataType::bf16())
            v.f = bf16_bits_to_f32(static_cast<const uint16_t*>(p)[flat]);
        else if (dt == DataType::f16())
            v.f = f16_bits_to_f32(static_cast<const uint16_t*>(p)[flat]);
        else TESSERA_UNREACHABLE() << "reference of tensor type " << dt;
        return v;
    }
    auto& memo = memo_[t.get()];
    auto hit = memo.find(flat);
    if (hit != memo.end()) return hit->second;
    Env env;
    for (size_t d = 0; d < idx.size(); ++d) {
        Value a;
        a.i = idx[d];
        env.emplace_back(t->axes[d].get(), a);
    }
    Value v = eval(t->body, env);
    memo.emplace(flat, v);
    return v;
}

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

ReferenceEvaluator::Value ReferenceEvaluator::eval(const Expr& e, Env& env) {
    auto F = [](double f) { Value v; v.f = f; v.is_float = true; return v; };
    auto I = [](int64_t i) { Value v; v.i = i; return v; };
    auto num = [](const Value& v) { return v.is_float ? v.f : static_cast<double>(v.i); };
    switch (e.node_type()) {
    case IRNodeType::IntImm: return I(e.as<IntImm>()->value);
    case IRNodeType::FloatImm: return F(e.as<FloatImm>()->value);
    case IRNodeType::Variable: {
        for (auto it = env.rbegin(); it != env.rend(); ++it)
            if (it->first == e.get()) return it->second;
        TESSERA_UNREACHABLE() << "unbound variable " << e.as<Variable>()->name;
    }
    case IRNodeType::Cast: {
        Value v = eval(e.as<Cast>()->value, env);
        DataType t = e.type();
        if (t.is_bfloat()) // the one rounding the reference keeps: the kernels' bf16 operands
            return F(bf16_bits_to_f32(f32_to_bf16_bits(static_cast<float>(num(v)))));
        if (t.is_float()) return F(num(v));
        if (t.is_bool()) return I(num(v) != 0);
        return I(v.is_float ? static_cast<int64_t>(std::trunc(v.f)) : v.i);
    }
#define TESSERA_ARITH(Node, fop, iop)                                                          \
    case IRNodeType::Node: {                                                                   \
        const auto* op = e.as<Node>();                                                         \
        Value a = eval(op->a, env), b = eval(op->b, env);                                      \
        if (a.is_float) return F(fop);                                                         \
        return I(iop);                                                                         \
    }
        TESSERA_ARITH(Add, a.f + b.f, a.i + b.i)
        TESSERA_ARITH(Sub, a.f - b.f, a.i - b.i)
        TESSERA_ARITH(Mul, a.f * b.f, a.i * b.i)
        TESSERA_ARITH(Div, a.f / b.f, floor_div(a.i, b.i))
        TESSERA_ARITH(Mod, a.f - std::floor(a.f / b.f) * b.f, floor_mod(a.i, b.i))
        TESSERA_ARITH(Min, std::fmin(a.f, b.f), std::min(a.i, b.i))
        TESSERA_ARITH(Max, std::fmax(a.f, b.f), std::max(a.i, b.i))
#undef TESSERA_ARITH
#define TESSERA_CMP(Node, cmp)                                                                 \
    case IRNodeType::Node: {                                                                   \
        const auto* op = e.as<Node>();                                                         \
        Value a = eval(op->a, env), b = eval(op->b, env);                                      \
        return a.is_float ? I(a.f cmp b.f) : I(a.i cmp b.i);                                   \
    }
        TESSERA_CMP(EQ, ==)
        TESSERA_CMP(NE, !=)
        TESSERA_CMP(LT, <)
        TESSERA_CMP(LE, <=)
        TESSERA_CMP(GT, >)
        TESSERA_CMP(GE, >=)
#undef TESSERA_CMP
    case IRNodeType::And: {
        const auto* op = e.as<And>();
        return I(eval(op->a, env).i && eval(op->b, env).i);
    }
    case IRNodeType::Or: {
        const auto* op = e.as<Or>();
        return I(eval(op->a, env).i || eval(op->b, env).i);
    }
    case IRNodeType::Not: return I(!eval(e.as<Not>()->a, env).i);
    case IRNodeType::Select: {
        const auto* op = e.as<Select>();
        // Only the chosen branch is evaluated: the other may read out of bounds (padding).
        return eval(op->condition, env).i ? eval(op->true_value, env)
                                          : eval(op->false_value, env);
    }
    case IRNodeType::Call: {
        const auto* op = e.as<Call>();
        if (op->op == CallOp::BytesAsWord) { // the elements from the read's last index on
            const TensorRead* t = op->args[0].as<TensorRead>();
            TESSERA_CHECK(t) << "bytes_as_word of a non-TensorRead in a tensor expression";
            std::vector<int64_t> idx;
            for (const auto& i : t->indices)
                idx.push_back(eval(i, env).i);
            const bool bf16 = t->tensor.dtype().is_bfloat();
            uint32_t w = 0;
            for (int j = 0; j < (bf16 ? 2 : 4); ++j, ++idx.back()) {
                const Value v = element(t->tensor, idx);
                w |= bf16 ? uint32_t(f32_to_bf16_bits(static_cast<float>(v.f))) << (16 * j)
                          : uint32_t(v.i & 0xff) << (8 * j);
            }
            return I(int32_t(w));
        }
        Value a = eval(op->args[0], env);
        switch (op->op) {
        case CallOp::Exp: return F(std::exp(a.f));
        case CallOp::Log: return F(std::log(a.f));
        case CallOp::Sqrt: return F(std::sqrt(a.f));
        case CallOp::Tanh: return F(std::tanh(a.f));
        case CallOp::Erf: return F(std::erf(a.f));
        case CallOp::Abs: return a.is_float ? F(std::fabs(a.f)) : I(a.i < 0 ? -a.i : a.i);
        case CallOp::Floor: return F(std::floor(a.f));
        case CallOp::RoundEven: return F(std::nearbyint(a.f));
        case CallOp::Ceil: return F(std::ceil(a.f));
        case CallOp::Pow: return F(std::pow(a.f, eval(op->args[1], env).f));
        case CallOp::Ldexp:
            return F(std::ldexp(a.f, static_cast<int>(eval(op->args[1], env).i)));
        case CallOp::Dot4U8S8: {
            // The words' low 32 bits: integer results here are not wrapped to their width.
            const auto ua = static_cast<uint32_t>(a.i);
            const auto ub = static_cast<uint32_t>(eval(op->args[1], env).i);
            int64_t sum = 0;
            for (int j = 0; j < 4; ++j)
                sum += int64_t((ua >> (8 * j)) & 0xff) * int64_t(int8_t(uint8_t(ub >> (8 * j))));
            return I(sum);
        }
        case CallOp::Dot2BF16:
            return F(dot2_bf16(static_cast<uint32_t>(a.i),
                               static_cast<uint32_t>(eval(op->args[1], env).i)));
        case CallOp::Prefetch:
        case CallOp::TileMatmulU8S8:
        case CallOp::TileMatmulBF16:
        case CallOp::BytesAsWord:
        case CallOp::GpuBlockSum:
        case CallOp::GpuBlockMax:
        case CallOp::GpuBlockMin:
        case CallOp::WarpMma: break;
        }
        TESSERA_UNREACHABLE() << "call " << to_string(op->op) << " in a tensor expression";
    }
    case IRNodeType::Let: {
        const auto* op = e.as<Let>();
        env.emplace_back(op->var.get(), eval(op->value, env));
        Value v = eval(op->body, env);
        env.pop_back();
        return v;
    }
    case IRNodeType::TensorRead: {
        const auto* op = e.as<TensorRead>();
        std::vector<int64_t> idx;
        idx.reserve(op->indices.size());
        for (const auto& i : op->indices) idx.push_back(eval(i, env).i);
        return element(op->tensor, idx);
    }
    case IRNodeType::Reduce: {
        const auto* op = e.as<Reduce>();
        bool is_float = op->type.is_float();
        Value acc = is_float ? F(op->op == ReduceOp::Sum ? 0.0
                                 : op->op == ReduceOp::Max ? -INFINITY : INFINITY)
                             : I(op->op == ReduceOp::Sum ? 0
                                 : op->op == ReduceOp::Max ? INT64_MIN : INT64_MAX);
        size_t base = env.size();
        for (const auto& ax : op->axes) env.emplace_back(ax.var.get(), I(0));
        // Odometer over the reduction domain.
        while (true) {
            Value v = eval(op->source, env);
            switch (op->op) {
            case ReduceOp::Sum: is_float ? void(acc.f += v.f) : void(acc.i += v.i); break;
            case ReduceOp::Max:
                is_float ? void(acc.f = std::fmax(acc.f, v.f)) : void(acc.i = std::max(acc.i, v.i));
                break;
            case ReduceOp::Min:
                is_float ? void(acc.f = std::fmin(acc.f, v.f)) : void(acc.i = std::min(acc.i, v.i));
                break;
            }
            size_t d = op->axes.size();
            while (d > 0) {
                --d;
                if (++env[base + d].second.i < op->axes[d].extent) break;
                env[base + d].second.i = 0;
                if (d == 0) {
                    env.resize(base);
                    return acc;
                }
            }
        }
    }
    case IRNodeType::Load:
    case IRNodeType::Ramp:
    case IRNodeType::Broadcast:
    case IRNodeType::VectorReduce:
    case IRNodeType::LetStmt:
    case IRNodeType::For:
    case IRNodeType::Store:
    case IRNodeType::Allocate:
    case IRNodeType::IfThenElse:
    case IRNodeType::Seq:
    case IRNodeType::Evaluate:
        break;
    }
    TESSERA_UNREACHABLE() << "node " << node_type_name(e.node_type())
                          << " in a tensor expression";
}

} // namespace tessera::te
