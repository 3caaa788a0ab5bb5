// Data conversions of the 8-bit convolution ops (quantized_conv.cpp), shared with the passes
// that make them: the quantized-ops pass and the layout pass.
#pragma once

#include <cstdint>

#include "eval_util.h"

namespace tessera::graph::detail {

/// The four unsigned bytes of a times the four signed bytes of b, summed: the semantics of the
/// loop IR's dot4_u8s8, for the evaluators.
int32_t dot4_u8s8_reference(int32_t a, int32_t b);

/// s8 OIHW conv weights [K, C, R, S] -> i32 words [KB, CB, R, S, in_block / 4, block]: word j of
/// [kb, cb, r, s, j, k] holds the weights of output channel kb * block + k for input channels
/// cb * in_block + 4j .. 4j + 3, byte i for channel 4j + i. Padding bytes are 0.
/// Pre: w is I8 of rank 4, in_block a positive multiple of 4, block positive.
TensorData pack_conv_weight_words(const TensorData& w, int64_t block, int64_t in_block);

/// The u8 zero point attribute `key` of an 8-bit op (0 when absent); a UserError naming
/// `where` when it lies outside [0, 255].
int64_t zero_point_attr(const Node& n, const char* key, const std::string& where);

} // namespace tessera::graph::detail
