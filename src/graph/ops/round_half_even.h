// Round half to even as a tensor-expression value, shared by the kernels of Round and
// QuantizeLinear.
#pragma once

#include "tessera/te/tensor.h"

namespace tessera::graph::detail {

/// e (a float) rounded to the nearest integer, halves to even (as nearbyint in the default
/// rounding mode); infinities and NaN come out unchanged.
te::Expr round_half_even(te::Expr e);

} // namespace tessera::graph::detail
