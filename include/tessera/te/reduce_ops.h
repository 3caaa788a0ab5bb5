// Reductions and normalizations beyond the op library's sum / mean / max / min: the ONNX
// ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp, LogSoftmax,
// InstanceNormalization and GlobalLpPool, composed from reduction stages and elementwise maps.
//
// Axes follow te::reduce_sum: negative counts from the end, empty = all axes; with keepdims the
// reduced dims stay as 1, otherwise they are dropped. Every builder throws UserError naming the
// op on bad shapes or parameters (they are called by the graph importer's kernels with shapes
// from user models).
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/te/tensor.h"

namespace tessera::te {

/// Product over `axes`. The IR has no product reduction, so each reduced axis shrinks by a
/// factor of 8 per stage ("reduce_prod_<k>": each element multiplies up to 8 neighbours, the
/// missing ones of a ragged last group read as 1) until it is 1; a last stage "reduce_prod"
/// drops or keeps the dims. Any numeric dtype.
Tensor reduce_prod(const Tensor& x, std::vector<int64_t> axes, bool keepdims = false);

/// sum(|x|) over axes: one stage "reduce_l1". Any numeric dtype.
Tensor reduce_l1(const Tensor& x, std::vector<int64_t> axes, bool keepdims = false);
/// sum(x * x) over axes: one stage "reduce_sum_square". Any numeric dtype.
Tensor reduce_sum_square(const Tensor& x, std::vector<int64_t> axes, bool keepdims = false);
/// sqrt(sum(x * x)) over axes: stages "reduce_l2_sum", "reduce_l2". Float only.
Tensor reduce_l2(const Tensor& x, std::vector<int64_t> axes, bool keepdims = false);
/// log(sum(x)) over axes: stages "reduce_log_sum_sum", "reduce_log_sum". Float only.
Tensor reduce_log_sum(const Tensor& x, std::vector<int64_t> axes, bool keepdims = false);
/// log(sum(exp(x))) over axes, computed as m + log(sum(exp(x - m))) with m the max over the
/// axes (0 instead where the max is infinite, so an all -inf slice gives -inf and a +inf gives
/// +inf instead of NaN): stages "reduce_log_sum_exp_max", "reduce_log_sum_exp_sum",
/// "reduce_log_sum_exp". Float only.
Tensor reduce_log_sum_exp(const Tensor& x, std::vector<int64_t> axes, bool keepdims = false);

/// log(softmax(x)) along `axis`, as x - m - log(sum(exp(x - m))) with m the max along the axis:
/// stages "log_softmax_max", "log_softmax_sum", "log_softmax". Float only.
Tensor log_softmax(const Tensor& x, int64_t axis = -1);

/// Instance normalization of x [N, C, D1, ...] (rank >= 3) over the spatial dims of each
/// (n, c): y = (x - mean) / sqrt(var + epsilon) * scale[c] + bias[c] with the biased variance,
/// two passes (stages "instance_norm_sum", "instance_norm_var", "instance_norm"). scale and
/// bias are [C]. Float only.
Tensor instance_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, double epsilon);

/// Lp norm over the spatial dims of x [N, C, D1, ...] (rank >= 3): [N, C, 1, ...] =
/// (sum |x|^p)^(1/p); p >= 1 (p = 1 and 2 without pow). Stages "global_lp_pool_sum",
/// "global_lp_pool" (p = 1: the sum stage only, named "global_lp_pool"). Float only.
Tensor global_lp_pool(const Tensor& x, int64_t p);

} // namespace tessera::te
