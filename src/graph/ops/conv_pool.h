// The window parameters of Conv and the pools as the op library takes them; shared with the
// blocked-layout forms (blocked_layout.cpp).
#pragma once

#include <array>
#include <string>

#include "tessera/graph/graph.h"
#include "tessera/te/op_library.h"

namespace tessera::graph::detail {

/// A Conv or ConvBlocked node's strides, dilations, pads and group (`kernel` when the node has
/// no kernel_shape). Throws UserError naming `where` on invalid attributes.
te::Conv2dParams conv2d_params(const Node& n, const std::array<int64_t, 2>& kernel,
                               const std::string& where);
/// A pool node's window (MaxPool and MaxPoolBlocked with dilations, AveragePool with
/// count_include_pad).
te::Pool2dParams pool2d_params(const Node& n, const std::string& where);

} // namespace tessera::graph::detail
