// Building expressions in C++: operators and helper functions over Expr.
//
// Immediates adapt to the other operand: in `x + 1.0f` or `i * 4` a constant takes the other
// side's type (and is broadcast to its lanes). Otherwise operand types must match exactly;
// a mismatch is an InternalError (a bug in the caller). Comparisons are <, <=, >, >= and the
// functions eq/ne; logical operators are functions, never && || ! (which would silently
// convert handles to bool).
#pragma once

#include "tessera/ir/expr.h"

namespace tessera::ir {

/// An immediate of type t with value v (broadcast when t is a vector).
Expr make_const(DataType t, double v);
Expr make_const(DataType t, int64_t v);
/// Zero / one of type t.
Expr make_zero(DataType t);
Expr make_one(DataType t);
/// The lowest and highest finite-or-infinite values of scalar type t (-inf/+inf for floats).
Expr lowest_value(DataType t);
Expr highest_value(DataType t);

/// If e is an integer immediate (scalar, or a Broadcast of one), its value.
const int64_t* as_const_int(const Expr& e);
/// If e is a float immediate (scalar, or a Broadcast of one), its value.
const double* as_const_float(const Expr& e);
bool is_const_int(const Expr& e, int64_t v);

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator%(Expr a, Expr b);
Expr operator-(Expr a);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr eq(Expr a, Expr b);
Expr ne(Expr a, Expr b);
Expr logical_and(Expr a, Expr b);
Expr logical_or(Expr a, Expr b);
Expr logical_not(Expr a);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr select(Expr c, Expr t, Expr f);
Expr cast(DataType t, Expr e);
Expr exp(Expr x);
Expr log(Expr x);
Expr sqrt(Expr x);
Expr tanh(Expr x);
Expr erf(Expr x);
Expr abs(Expr x);
Expr floor(Expr x);
/// x rounded to the nearest integer, halves to even (CallOp::RoundEven).
Expr round_even(Expr x);
Expr ceil(Expr x);
Expr pow(Expr x, Expr y);
/// x * 2^k exactly (CallOp::Ldexp): float x, integer k (cast to i32; a scalar is broadcast to
/// x's lanes).
Expr ldexp(Expr x, Expr k);
/// The four unsigned bytes of i32 a times the four signed bytes of b, summed (CallOp::Dot4U8S8).
/// Both i32 of the same lanes; a scalar is broadcast to the other's lanes.
Expr dot4_u8s8(Expr a, Expr b);
/// The two bf16 halves of i32 a times those of b, summed in f32 (CallOp::Dot2BF16). Both i32
/// of the same lanes; a scalar is broadcast to the other's lanes.
Expr dot2_bf16(Expr a, Expr b);
/// The 4 u8 or 2 bf16 elements from `bytes` on as one little-endian i32 (CallOp::BytesAsWord).
/// Pre: bytes is a u8 or bf16 Load or TensorRead.
Expr bytes_as_word(Expr bytes);

} // namespace tessera::ir
