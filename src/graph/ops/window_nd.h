// The windows of the forms without a 2-D builder: 3-D Conv / MaxPool / AveragePool (5-D input)
// and ConvTranspose of any rank. Reads the canonical attributes (conv_pool.cpp and
// conv_transpose.cpp document them) and evaluates those forms with naive N-D loops.
#pragma once

#include <string>
#include <vector>

#include "op_def.h"
#include "tessera/graph/graph.h"
#include "tessera/te/window_nd.h"

namespace tessera::graph::detail {

/// Canonical window attributes of a node with `spatial` spatial dims.
struct WindowNd {
    std::vector<int64_t> kernel, stride, dilation;
    std::vector<int64_t> pads;           ///< begin of each dim, then end of each dim
    std::vector<int64_t> output_padding; ///< ConvTranspose only (zeros otherwise)
    bool ceil_mode = false;

    size_t spatial() const { return stride.size(); }
    /// The op library's form, with `groups` and AveragePool's count_include_pad.
    te::WindowNdParams params(int64_t groups, bool count_include_pad = false) const;
};

/// Reads kernel_shape (`kernel` when the node has none; `kernel` empty: required), strides,
/// dilations, pads, output_padding and ceil_mode, each checked for length and range. Throws
/// UserError naming `where`.
WindowNd window_nd_of(const Node& n, size_t spatial, const std::vector<int64_t>& kernel,
                      const std::string& where);

/// Output shape of an N-D Conv (x [N, C, D...], w [M, C/group, K...]) or pool (w empty),
/// checking operand shapes against the window and group.
Shape conv_nd_output_shape(const Node& n, const Shape& x, const Shape& w, const std::string& where);
Shape pool_nd_output_shape(const Node& n, const Shape& x, const std::string& where);

/// Reference evaluators of the N-D Conv and pools (any number of spatial dims).
EvalOutputs eval_conv_nd(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_pool_nd(const Node& n, const EvalInputs& in, const std::string& where);

} // namespace tessera::graph::detail
