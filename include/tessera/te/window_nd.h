// Windowed ops over any number of spatial dims (NC + spatial layout): convolution, max and
// average pooling, and the transposed convolution. The 2-D model path keeps te::conv2d and the
// 2-D pools (op_library.h), whose stage structure the tuning database's workload keys depend
// on; these builders serve the forms that have no 2-D builder: 3-D windows (5-D tensors) and
// ConvTranspose of any rank.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/te/tensor.h"

namespace tessera::te {

/// The window of one N-D windowed op; every vector has one entry per spatial dim except
/// `pads` (begin of each dim, then end of each dim, as ONNX).
struct WindowNdParams {
    std::vector<int64_t> kernel, stride, dilation, pads;
    /// conv_transpose_nd only: extra output rows at the end of each spatial dim.
    std::vector<int64_t> output_padding;
    int64_t groups = 1;
    /// Pools only: the output extent rounds up (a window starting in the end padding is
    /// dropped).
    bool ceil_mode = false;
    /// avg_pool_nd only: divide by the window clipped to the padded input (true) or by the
    /// number of input elements in it (false).
    bool count_include_pad = false;

    size_t spatial() const { return stride.size(); }
};

/// Convolution (cross-correlation) of x [N, C, D1..Dk] with w [M, C / groups, K1..Kk] and an
/// optional bias [M]: stages "<name>_pad" (when padded), "<name>" and "<name>_bias". p.kernel is
/// taken from w. Throws UserError on mismatched shapes or parameters.
Tensor conv_nd(const Tensor& x, const Tensor& w, const WindowNdParams& p,
               const Tensor& bias = Tensor(), const std::string& name = "conv_nd");

/// Max / average pooling of the spatial dims of x [N, C, D1..Dk] (stages "<name>_pad" when
/// padded, "<name>", and for the average "<name>_sum" before the division). Average pooling
/// ignores dilations (ONNX AveragePool has none).
Tensor max_pool_nd(const Tensor& x, const WindowNdParams& p,
                   const std::string& name = "max_pool_nd");
Tensor avg_pool_nd(const Tensor& x, const WindowNdParams& p,
                   const std::string& name = "avg_pool_nd");

/// Transposed convolution of x [N, C, I1..Ik] with w [C, M / groups, K1..Kk] and an optional
/// bias [M] as a gather: y[n, m, o] = sum over input channels c of m's group and kernel
/// positions k of x[n, c, (o + pad_begin - k * dilation) / stride] * w[c, m % (M / groups), k],
/// where the division is exact and in range. Output extent per dim:
/// stride * (I - 1) + output_padding + (K - 1) * dilation + 1 - pad_begin - pad_end.
/// Stages "<name>" and "<name>_bias". p.kernel is taken from w.
Tensor conv_transpose_nd(const Tensor& x, const Tensor& w, const WindowNdParams& p,
                         const Tensor& bias = Tensor(),
                         const std::string& name = "conv_transpose_nd");

/// The output extents of conv_transpose_nd for input spatial extents `in` and kernel `kernel`.
std::vector<int64_t> conv_transpose_output_dims(const std::vector<int64_t>& in,
                                                const std::vector<int64_t>& kernel,
                                                const WindowNdParams& p);

} // namespace tessera::te
