// Casts to and from the narrow types (support/narrow_types.h) as loop-IR expressions: a narrow
// value is its code in a u8, and these build the arithmetic that turns a number into a code and
// back, with the rounding, saturation and special values narrow_encode / narrow_decode define
// (exact: powers of two come from ldexp, rounding from round_even). One exception: the IR does
// not see a NaN's sign bit, so every NaN encodes as a positive NaN does.
#pragma once

#include "tessera/ir/expr.h"
#include "tessera/support/narrow_types.h"

namespace tessera::te {

/// The code of x in format f, as a u8 of x's lanes. x is a float (f16 and bf16 are computed
/// in f32) or, for an integer format, also an integer (wrapped to the low bits).
ir::Expr narrow_encode_expr(NarrowFormat f, ir::Expr x, bool saturate);

/// The value of code `code` (an integer expression; its low bits are the code) in format f,
/// as type t (a float, or an integer for integer formats and through f32 for float ones,
/// converted as ir::cast converts).
ir::Expr narrow_decode_expr(NarrowFormat f, ir::Expr code, ir::DataType t);

} // namespace tessera::te
