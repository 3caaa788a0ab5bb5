// Data conversion of the bf16 matrix product MatMulBF16 (bf16_matmul.cpp), shared with the
// precision pass that makes it.
#pragma once

#include "eval_util.h"

namespace tessera::graph::detail {

/// f32 weights [K, N] (K even) -> i32 words [K / 2, N]: word [j, n] holds rows 2j (low half)
/// and 2j + 1 (high half) of column n, each rounded to bf16 (nearest even); batched weights
/// [B, K, N] -> [B, K / 2, N], each matrix so. Pre: w is F32 of rank 2 or 3 with an even K.
TensorData pack_bf16_weight_words(const TensorData& w);

} // namespace tessera::graph::detail
