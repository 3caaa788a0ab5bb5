// Data conversion of the 8-bit matrix product QMatMul (quantized_matmul.cpp), shared with the
// quantized-ops pass that makes it.
#pragma once

#include "eval_util.h"

namespace tessera::graph::detail {

/// s8 weights [K, N] -> i32 words [ceil(K / 4), N]: word [j, n] holds rows 4j .. 4j + 3 of
/// column n, byte i for row 4j + i; rows past K are 0. Pre: w is I8 of rank 2.
TensorData pack_matmul_weight_words(const TensorData& w);

} // namespace tessera::graph::detail
