// Helpers of the reference evaluator's kernels (OpDef::evaluate in each op family's file). A
// kernel takes the node (for its attributes), its inputs (nullptr for an absent optional one)
// and `where` (the node's description for messages), and returns the node's outputs. Naive
// loops, no tessera codegen: this is the independent reference the graph passes are checked
// against.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "op_def.h"

namespace tessera::graph::detail {

// ---- helpers shared by the kernels (and by shape inference) -----------------------------------

/// Input i, which must be present.
const TensorData& require_input(const EvalInputs& in, size_t i, const std::string& where);
/// Error unless t has one of the dtypes in `allowed`.
void require_dtype(const TensorData& t, std::initializer_list<DType> allowed, const char* what,
                   const std::string& where);
/// Error unless t is f32 / has rank `rank`.
void require_f32(const TensorData& t, const char* what, const std::string& where);
void require_rank(const TensorData& t, int64_t rank, const char* what, const std::string& where);
/// The integer elements of an index/shape/axes tensor (i32 or i64), for shape arguments.
std::vector<int64_t> int_elements(const TensorData& t, const char* what, const std::string& where);
/// Advances idx to the row-major multi-index that follows it in shape s (after the last one it
/// wraps to zeros): for loops over an output that compute each element's source themselves.
inline void next_index(std::vector<int64_t>& idx, const Shape& s) {
    for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) {
        if (++idx[d] < s[d])
            return;
        idx[d] = 0;
    }
}

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

/// visit_dtype for evaluators that compute on the elements: f16, bf16 and the narrow types
/// never reach them (the importer computes storage floats' operands in f32, see
/// OpDef::any_element_type; type inference refuses narrow integers), so f is not instantiated
/// for Half, BFloat16 or NarrowValue. Such a dtype is an internal error.
template <typename F> decltype(auto) visit_computed(DType t, F&& f) {
    TESSERA_CHECK(!is_storage_float(t) && !narrow_format(t))
        << "a " << dtype_name(t) << " operand reached an op that computes on its elements";
    return visit_dtype(t, [&](auto tag) -> decltype(auto) {
        using T = std::remove_pointer_t<decltype(tag)>;
        if constexpr (std::is_class_v<T>) // Half, BFloat16, NarrowValue
            return f(static_cast<float*>(nullptr)); // unreachable, checked above
        else
            return f(tag);
    });
}

/// Copies elements of `src` selected by offsets into dst (element-size generic gather):
/// dst[i] = src[offset(i)] for the index map that for_each_index produces.
void gather_elements(const TensorData& src, TensorData& dst, const std::vector<int64_t>& strides,
                     int64_t base);

} // namespace tessera::graph::detail
