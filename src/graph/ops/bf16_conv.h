// Data conversion of the blocked bf16 convolution ConvBF16Blocked (bf16_conv.cpp), shared with
// the precision pass that makes it.
#pragma once

#include <cstdint>

#include "eval_util.h"

namespace tessera::graph::detail {

/// f32 OIHW conv weights [K, C, R, S] -> i32 words [KB, CBW, R, S, in_block / 2, block] with
/// KB = ceil(K / block), CBW = ceil(C / in_block): word j of [kb, cb, r, s, j, k] holds the
/// weights of output channel kb * block + k for input channels cb * in_block + 2j (low half)
/// and 2j + 1 (high half), each rounded to bf16 (nearest even). With `fold_width`, [KB, CBW, R,
/// ceil(S * in_block / 2), block]: a window row's S pixels of in_block channels as one run of
/// words (word j holds elements 2j and 2j + 1 of the run; in_block may be odd). Padding entries
/// are 0. Pre: w is F32 of rank 4, in_block positive (even unless folded), block positive.
TensorData pack_bf16_conv_weight_words(const TensorData& w, int64_t block, int64_t in_block,
                                       bool fold_width = false);

} // namespace tessera::graph::detail
