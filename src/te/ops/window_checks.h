// Operand checks shared by the N-d window builders (window_nd.cpp: conv_nd and the N-d pools;
// conv_transpose.cpp). Each throws UserError naming `op` and the offending parameter.
#pragma once

#include <string>

#include "tessera/te/window_nd.h"

namespace tessera::te {

/// p's kernel (with `with_kernel`), stride and dilation hold `spatial` values >= 1, its pads
/// 2 * spatial values >= 0, its groups >= 1.
void check_window(const WindowNdParams& p, size_t spatial, bool with_kernel, const std::string& op);
/// x is defined with rank >= 3 (N, C, spatial...), w is defined with x's rank and dtype.
void check_conv_operands(const Tensor& x, const Tensor& w, const std::string& op);

} // namespace tessera::te
