// The blocked channel layout NCHW[x]c: data conversions shared by the layout pass (which
// re-lays out constants at compile time) and the ops LayoutToBlocked, LayoutFromBlocked,
// ConvBlocked and MaxPoolBlocked defined in blocked_layout.cpp (ops.def documents their
// operands).
//
// Channel c of an NCHW tensor lives at [n, c / x, h, w, c % x] of the blocked tensor; the
// channel count is padded up to a multiple of x and the padding channels hold 0.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "eval_util.h"

namespace tessera::graph::detail {

/// ceil(channels / block) blocks.
int64_t channel_blocks(int64_t channels, int64_t block);

/// [N, C, H, W] -> [N, ceil(C/x), H, W, x] (padding channels 0). Any dtype. Pre: rank 4.
TensorData to_blocked(const TensorData& x, int64_t block);
/// [N, CB, H, W, x] -> [N, channels, H, W]. Pre: rank 5, channels <= CB * x.
TensorData from_blocked(const TensorData& x, int64_t channels);
/// OIHW conv weights [K, C, R, S] -> [KB, CB, R, S, xc, x] with input blocks of `in_block`
/// channels (0: `block`); with `depthwise` (weights [K, 1, R, S], K == C) -> [KB, 1, R, S, 1, x].
/// Padding entries are 0.
TensorData block_conv_weight(const TensorData& w, int64_t block, bool depthwise,
                             int64_t in_block = 0);
/// A grouped conv's weights [K, C/g, R, S] (g groups of w = C/g input and output channels,
/// w dividing x) as one group per block of x channels: [KB, 1, R, S, x, x], entry (kb, ci, k)
/// the weight from input channel kb*x + ci to output channel kb*x + k when both lie in one
/// group, else 0 (block-diagonal; padding channels 0). Pre: rank 4, f32, x % w == 0.
TensorData block_diagonal_conv_weight(const TensorData& w, int64_t block);
/// The inverse of block_conv_weight, keeping the padding: [KB*x, CB*x, R, S] (depthwise
/// [KB*x, 1, R, S]).
TensorData unblock_conv_weight(const TensorData& w, bool depthwise);
/// A per-channel vector [K] -> [KB, x] (padding 0).
TensorData block_channel_vector(const TensorData& v, int64_t block);

/// Output types of the blocked ops from their typed inputs (`inputs[i]` is node input i, null
/// when absent). Throws UserError prefixed with `where` on a rank, dtype or shape mismatch.
std::vector<std::pair<DType, Shape>> blocked_layout_types(const Node& n,
                                                          const std::vector<const Value*>& inputs,
                                                          const std::string& where);

} // namespace tessera::graph::detail
