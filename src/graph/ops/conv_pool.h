// The window parameters of Conv and the pools as the op library takes them; shared with the
// blocked-layout forms (blocked_layout.cpp).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "tessera/graph/graph.h"
#include "tessera/te/op_library.h"

namespace tessera::graph::detail {

class OpImport;

/// A Conv or ConvBlocked node's strides, dilations, pads and group (`kernel` when the node has
/// no kernel_shape). Throws UserError naming `where` on invalid attributes.
te::Conv2dParams conv2d_params(const Node& n, const std::array<int64_t, 2>& kernel,
                               const std::string& where);
/// A pool node's window (MaxPool and MaxPoolBlocked with dilations, AveragePool with
/// count_include_pad).
te::Pool2dParams pool2d_params(const Node& n, const std::string& where);

/// Imports a 1-D windowed node (3-D input) as its 2-D form: Unsqueeze(x, 2), the node's op with
/// the 2-D canonical `attrs`, Squeeze(y, 2). Operand 1 (the weight), when present, gets the
/// unit dim too: reshaped at import when constant, else by an Unsqueeze.
void emit_lifted_1d(OpImport& im, Attributes attrs);
/// The explicit pads [2S] of auto_pad SAME_UPPER (`upper`) or SAME_LOWER for the node's input
/// spatial dims: output extent ceil(in / stride), the odd padding at the end (upper) or begin.
std::vector<int64_t> resolve_same_pads(OpImport& im, const std::vector<int64_t>& kernel,
                                       const std::vector<int64_t>& strides,
                                       const std::vector<int64_t>& dil, bool upper);

} // namespace tessera::graph::detail
