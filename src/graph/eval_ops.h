// The reference evaluator's kernels, one function per op family. Each takes the node (for its
// attributes), its inputs (nullptr for an absent optional one) and `where` (the node's
// description for messages), and returns the node's outputs. Naive loops, no tessera codegen:
// this is the independent reference the graph passes are checked against.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "tessera/graph/graph.h"

namespace tessera::graph::detail {

using EvalInputs = std::vector<const TensorData*>;
using EvalOutputs = std::vector<TensorData>;

// eval_elementwise.cpp; the kernel families take the function as their own small enum, so
// their switches stay exhaustive.
enum class UnaryFn {
    Relu,
    LeakyRelu,
    Sigmoid,
    HardSigmoid,
    HardSwish,
    Tanh,
    Erf,
    Gelu,
    Sqrt,
    Exp,
    Log,
    Neg,
    Reciprocal
};
enum class ArithFn { Add, Sub, Mul, Div, Max, Min };
enum class CompareFn { Equal, Less, Greater };
EvalOutputs eval_unary(const Node& n, const EvalInputs& in, UnaryFn fn, const std::string& where);
EvalOutputs eval_not(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_arith(const Node& n, const EvalInputs& in, ArithFn fn, const std::string& where);
EvalOutputs eval_pow(const Node& n, const EvalInputs& in, const std::string& where);
/// Max and Min over one or more inputs.
EvalOutputs eval_variadic(const Node& n, const EvalInputs& in, ArithFn fn,
                          const std::string& where);
EvalOutputs eval_compare(const Node& n, const EvalInputs& in, CompareFn fn,
                         const std::string& where);
EvalOutputs eval_where(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_clip(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_cast(const Node& n, const EvalInputs& in, const std::string& where);

// eval_nn.cpp
EvalOutputs eval_conv(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_pool(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_global_average_pool(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_gemm(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_matmul(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_batch_norm(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_softmax(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_layer_norm(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_reduce(const Node& n, const EvalInputs& in, const std::string& where);

// eval_data.cpp
EvalOutputs eval_identity(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_flatten(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_reshape(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_squeeze(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_unsqueeze(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_transpose(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_concat(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_split(const Node& n, const EvalInputs& in, size_t num_outputs,
                       const std::string& where);
EvalOutputs eval_slice(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_gather(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_shape(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_constant(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_constant_of_shape(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_range(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_expand(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_pad(const Node& n, const EvalInputs& in, const std::string& where);
EvalOutputs eval_dropout(const Node& n, const EvalInputs& in, size_t num_outputs,
                         const std::string& where);

// ---- helpers shared by the kernels (and by shape inference) -----------------------------------

/// Input i, which must be present.
const TensorData& require_input(const EvalInputs& in, size_t i, const std::string& where);
/// Error unless t has one of the dtypes in `allowed`.
void require_dtype(const TensorData& t, std::initializer_list<DType> allowed, const char* what,
                   const std::string& where);
/// The integer elements of an index/shape/axes tensor (i32 or i64), for shape arguments.
std::vector<int64_t> int_elements(const TensorData& t, const char* what, const std::string& where);

/// Calls f(out_index, offsets) for every element of `out` in row-major order, where offsets[k]
/// = sum over dims of index * strides[k][dim] + base[k] (strides from broadcast_strides or a
/// permutation).
template <size_t K, typename F>
void for_each_index(const Shape& out, const std::array<std::vector<int64_t>, K>& strides,
                    const std::array<int64_t, K>& base, F&& f) {
    const int64_t n = shape_numel(out);
    if (n == 0)
        return;
    const int64_t rank = static_cast<int64_t>(out.size());
    const int64_t inner = rank ? out[rank - 1] : 1;
    std::array<int64_t, K> inner_stride{};
    for (size_t k = 0; k < K; ++k)
        inner_stride[k] = rank ? strides[k][rank - 1] : 0;
    std::vector<int64_t> idx(rank, 0);
    std::array<int64_t, K> off = base;
    for (int64_t o = 0; o < n; o += inner) {
        std::array<int64_t, K> cur = off;
        for (int64_t j = 0; j < inner; ++j) {
            f(o + j, cur);
            for (size_t k = 0; k < K; ++k)
                cur[k] += inner_stride[k];
        }
        for (int64_t d = rank - 2; d >= 0; --d) {
            for (size_t k = 0; k < K; ++k)
                off[k] += strides[k][d];
            if (++idx[d] < out[d])
                break;
            for (size_t k = 0; k < K; ++k)
                off[k] -= strides[k][d] * out[d];
            idx[d] = 0;
        }
    }
}

/// Applies f to a typed null pointer of t's element type (for dtype dispatch):
/// `dispatch(t, [&](auto tag) { using T = std::remove_pointer_t<decltype(tag)>; ... })`.
template <typename F> auto dispatch(DType t, F&& f) {
    switch (t) {
    case DType::F32:
        return f(static_cast<float*>(nullptr));
    case DType::F64:
        return f(static_cast<double*>(nullptr));
    case DType::I32:
        return f(static_cast<int32_t*>(nullptr));
    case DType::I64:
        return f(static_cast<int64_t*>(nullptr));
    case DType::Bool:
        return f(static_cast<uint8_t*>(nullptr));
    }
    TESSERA_UNREACHABLE();
}

/// Copies elements of `src` selected by offsets into dst (element-size generic gather):
/// dst[i] = src[offset(i)] for the index map that for_each_index produces.
void gather_elements(const TensorData& src, TensorData& dst, const std::vector<int64_t>& strides,
                     int64_t base);

} // namespace tessera::graph::detail
