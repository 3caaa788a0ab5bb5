// Operators and helpers for building expressions.
#include "tessera/ir/op.h"

#include <cmath>
#include <limits>

#include "tessera/support/error.h"

namespace tessera::ir {

Expr make_const(DataType t, double v) {
    DataType e = t.element_of();
    Expr c = e.is_float() ? FloatImm::make(e, v) : IntImm::make(e, static_cast<int64_t>(v));
    return t.lanes > 1 ? Broadcast::make(c, t.lanes) : c;
}

Expr make_const(DataType t, int64_t v) {
    DataType e = t.element_of();
    Expr c = e.is_float() ? FloatImm::make(e, static_cast<double>(v)) : IntImm::make(e, v);
    return t.lanes > 1 ? Broadcast::make(c, t.lanes) : c;
}

Expr make_zero(DataType t) { return make_const(t, int64_t{0}); }
Expr make_one(DataType t) { return make_const(t, int64_t{1}); }
Expr lowest_value(DataType t) { return reduce_identity(ReduceOp::Max, t); }
Expr highest_value(DataType t) { return reduce_identity(ReduceOp::Min, t); }

const int64_t* as_const_int(const Expr& e) {
    if (!e.defined()) return nullptr;
    if (const auto* b = e.as<Broadcast>()) return as_const_int(b->value);
    if (const auto* i = e.as<IntImm>()) return &i->value;
    return nullptr;
}

const double* as_const_float(const Expr& e) {
    if (!e.defined()) return nullptr;
    if (const auto* b = e.as<Broadcast>()) return as_const_float(b->value);
    if (const auto* f = e.as<FloatImm>()) return &f->value;
    return nullptr;
}

bool is_const_int(const Expr& e, int64_t v) {
    const int64_t* c = as_const_int(e);
    return c && *c == v;
}

/// Retypes an immediate operand to match the other side.
static void match_types(Expr& a, Expr& b) {
    TESSERA_CHECK(a.defined() && b.defined()) << "operator on undefined expression";
    if (a.type() == b.type()) return;
    auto retype = [](Expr& c, DataType t) {
        if (const int64_t* i = as_const_int(c)) c = make_const(t, *i);
        else if (const double* f = as_const_float(c)) c = make_const(t, *f);
        else return false;
        return true;
    };
    // Prefer converting the side that is an immediate; a scalar non-immediate is broadcast to
    // the other side's lanes when the element types agree.
    if ((as_const_int(b) || as_const_float(b)) && retype(b, a.type())) return;
    if ((as_const_int(a) || as_const_float(a)) && retype(a, b.type())) return;
    if (a.type().element_of() == b.type().element_of()) {
        if (a.type().is_scalar()) a = Broadcast::make(a, b.type().lanes);
        else if (b.type().is_scalar()) b = Broadcast::make(b, a.type().lanes);
    }
}

#define TESSERA_BINOP(fn, Node)                                                                \
    Expr fn(Expr a, Expr b) {                                                                  \
        match_types(a, b);                                                                     \
        return Node::make(std::move(a), std::move(b));                                         \
    }
TESSERA_BINOP(operator+, Add)
TESSERA_BINOP(operator-, Sub)
TESSERA_BINOP(operator*, Mul)
TESSERA_BINOP(operator/, Div)
TESSERA_BINOP(operator%, Mod)
TESSERA_BINOP(operator<, LT)
TESSERA_BINOP(operator<=, LE)
TESSERA_BINOP(operator>, GT)
TESSERA_BINOP(operator>=, GE)
TESSERA_BINOP(eq, EQ)
TESSERA_BINOP(ne, NE)
TESSERA_BINOP(logical_and, And)
TESSERA_BINOP(logical_or, Or)
TESSERA_BINOP(min, Min)
TESSERA_BINOP(max, Max)
#undef TESSERA_BINOP

Expr operator-(Expr a) { return make_zero(a.type()) - a; }
Expr logical_not(Expr a) { return Not::make(std::move(a)); }

Expr select(Expr c, Expr t, Expr f) {
    match_types(t, f);
    return Select::make(std::move(c), std::move(t), std::move(f));
}

Expr cast(DataType t, Expr e) {
    if (e.type() == t) return e;
    return Cast::make(t, std::move(e));
}

Expr exp(Expr x) { return Call::make(CallOp::Exp, {std::move(x)}); }
Expr log(Expr x) { return Call::make(CallOp::Log, {std::move(x)}); }
Expr sqrt(Expr x) { return Call::make(CallOp::Sqrt, {std::move(x)}); }
Expr tanh(Expr x) { return Call::make(CallOp::Tanh, {std::move(x)}); }
Expr erf(Expr x) { return Call::make(CallOp::Erf, {std::move(x)}); }
Expr abs(Expr x) { return Call::make(CallOp::Abs, {std::move(x)}); }
Expr floor(Expr x) { return Call::make(CallOp::Floor, {std::move(x)}); }
Expr round_even(Expr x) { return Call::make(CallOp::RoundEven, {std::move(x)}); }
Expr ceil(Expr x) { return Call::make(CallOp::Ceil, {std::move(x)}); }
Expr dot4_u8s8(Expr a, Expr b) {
    match_types(a, b);
    return Call::make(CallOp::Dot4U8S8, {std::move(a), std::move(b)});
}
Expr dot2_bf16(Expr a, Expr b) {
    match_types(a, b);
    return Call::make(CallOp::Dot2BF16, {std::move(a), std::move(b)});
}
Expr bytes_as_word(Expr bytes) { return Call::make(CallOp::BytesAsWord, {std::move(bytes)}); }
Expr ldexp(Expr x, Expr k) {
    const int lanes = x.type().lanes;
    if (k.type() != DataType::i32(lanes))
        k = cast(DataType::i32(k.type().lanes), std::move(k));
    if (lanes > 1 && k.type().lanes == 1)
        k = Broadcast::make(std::move(k), lanes);
    return Call::make(CallOp::Ldexp, {std::move(x), std::move(k)});
}
Expr pow(Expr x, Expr y) {
    match_types(x, y);
    return Call::make(CallOp::Pow, {std::move(x), std::move(y)});
}

} // namespace tessera::ir
