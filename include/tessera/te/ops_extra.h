// More operator definitions: the ONNX operators of the graph importer that op_library.h does not
// cover, mostly those of integer and boolean tensors (attention masks, token-id arithmetic) and
// the ops a graph pass normally removes (an unfolded BatchNormalization, tensors computed from
// compile-time values).
//
// Conventions are those of op_library.h: each function validates its operands and throws
// UserError naming the op and the offending value; stages are named after the op.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/te/op_library.h"

namespace tessera::te {

// ---- where.cpp -------------------------------------------------------------------------------

/// ONNX Where: y = cond ? x : y, with numpy broadcasting of all three. cond is bool; x and y
/// have one dtype, which the result keeps. Stage "where".
Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y);

// ---- integer_arith.cpp -----------------------------------------------------------------------

/// Division with ONNX (and C) semantics, numpy broadcasting: floats IEEE, integers rounded
/// toward zero (the IR's integer Div rounds toward negative infinity, so this adds the
/// correction). Pre for integers: no divisor is 0 (a kernel's behaviour is undefined then).
/// Stage "divide".
Tensor truncating_divide(const Tensor& a, const Tensor& b);

/// ONNX Pow: a ** b with numpy broadcasting; the result has a's dtype and b may have another
/// numeric dtype. A float base computes in its own type (b cast to it); an integer base computes
/// in f64 and truncates toward zero, saturating. Stage "pow", with elementwise conversion stages
/// "pow_base" / "pow_exponent" before it and "pow_cast" after it where a dtype differs. Throws
/// UserError for bool operands.
Tensor power(const Tensor& a, const Tensor& b);

// ---- batch_norm.cpp --------------------------------------------------------------------------

/// Inference batch normalization over channel dim 1 of x [N, C, ...]:
/// y = (x - mean[c]) * scale[c] / sqrt(var[c] + epsilon) + shift[c]. scale, shift, mean and var
/// have shape [C] and x's (float) dtype. Stage "batch_norm". Throws UserError on other shapes or
/// dtypes, a rank below 2 or a negative epsilon.
Tensor batch_norm_inference(const Tensor& x, const Tensor& scale, const Tensor& shift,
                            const Tensor& mean, const Tensor& var, double epsilon);

// ---- layer_norm_outputs.cpp ------------------------------------------------------------------

/// All three outputs of ONNX LayerNormalization.
struct LayerNormOutputs {
    Tensor y;           ///< as te::layer_norm
    Tensor mean;        ///< x.shape[:axis] + [1] * (rank - axis): the mean of each row
    Tensor inv_std_dev; ///< same shape: 1 / sqrt(variance + epsilon)
};
/// te::layer_norm plus the statistics as outputs, all three from one pair of reduction stages
/// (layer_norm_sum, layer_norm_var), then stages "layer_norm", "layer_norm_mean" and
/// "layer_norm_inv_std_dev". Same preconditions and errors as te::layer_norm.
LayerNormOutputs layer_norm_with_stats(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                       int64_t axis = -1, double epsilon = 1e-5);

// ---- split.cpp -------------------------------------------------------------------------------

/// Cuts x along `axis` (negative counts from the end) into consecutive parts of the given
/// sizes, one stage "split" each. Throws UserError unless every size is positive and they sum to
/// the extent.
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis);

// ---- generators.cpp --------------------------------------------------------------------------
// Tensors that read no input: their values are known when the program is compiled.

/// Every element `value`, an immediate whose scalar type is the result's dtype (ONNX
/// ConstantOfShape). Stage "full".
Tensor full(const std::vector<int64_t>& shape, Expr value);

/// [count] with element i = start + i * delta (ONNX Range). start and delta are immediates of
/// one scalar type, the result's dtype (floats: the backend may fuse the multiply-add, so the
/// last bit may differ from a loop rounding the product first). Throws UserError unless count > 0
/// and the types agree. Stage "range".
Tensor arange(Expr start, Expr delta, int64_t count);

/// A tensor holding the row-major `values` (immediates of one scalar type, the result's dtype),
/// e.g. the dims Shape produces or a Constant node's data. The body is a balanced select tree
/// over the flat index, so this is for small tensors: throws UserError when values.size() !=
/// num_elements(shape), when there are more than kMaxTableElements, or the types differ. Stage
/// "table".
constexpr int64_t kMaxTableElements = 1024;
Tensor constant_table(const std::vector<int64_t>& shape, const std::vector<Expr>& values);

} // namespace tessera::te
