// Naive, obviously correct reference implementations of the operator library, on plain arrays.
// Plain loops, double accumulation, no cleverness: these are what every lowering, schedule and
// backend is checked against.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace tessera::testing {

/// A dense row-major float array with its shape.
struct RefTensor {
    std::vector<int64_t> shape;
    std::vector<float> data;

    RefTensor() = default;
    RefTensor(std::vector<int64_t> s, std::vector<float> d);
    /// Zero-filled.
    explicit RefTensor(std::vector<int64_t> s);
    int64_t size() const { return static_cast<int64_t>(data.size()); }
    /// Row-major flat offset of a full index.
    int64_t offset(const std::vector<int64_t>& idx) const;
    float at(const std::vector<int64_t>& idx) const {
        return data[static_cast<size_t>(offset(idx))];
    }
    float& at(const std::vector<int64_t>& idx) { return data[static_cast<size_t>(offset(idx))]; }
};

/// The multi-index of flat position `flat` in `shape` (row-major).
std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& shape);

namespace ref {

// Matrix products.
RefTensor matmul(const RefTensor& a, const RefTensor& b); ///< a [M, K] x b [K, N]
/// a [B, M, K] x b [B, K, N], B of either side may be 1.
RefTensor batch_matmul(const RefTensor& a, const RefTensor& b);
/// x [M, K], w [N, K], bias [N] or empty (shape {}), optional relu.
RefTensor dense(const RefTensor& x, const RefTensor& w, const RefTensor* bias, bool relu);

// Convolution, NCHW x OIHW, bias [K] optional.
struct ConvArgs {
    int64_t stride_h = 1, stride_w = 1;
    int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
    int64_t dilation_h = 1, dilation_w = 1;
    int64_t groups = 1;
};
RefTensor conv2d(const RefTensor& x, const RefTensor& w, const ConvArgs& a, const RefTensor* bias);

// Pooling over NCHW (rank 4), PyTorch semantics.
struct PoolArgs {
    int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
    int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
    int64_t dilation_h = 1, dilation_w = 1;
    bool ceil_mode = false;
    bool count_include_pad = false;
};
RefTensor max_pool2d(const RefTensor& x, const PoolArgs& a);
RefTensor avg_pool2d(const RefTensor& x, const PoolArgs& a);
RefTensor global_avg_pool2d(const RefTensor& x); ///< [N, C, H, W] -> [N, C, 1, 1]
RefTensor global_max_pool2d(const RefTensor& x);

// Elementwise.
RefTensor unary(const RefTensor& x, const std::function<double(double)>& f);
/// numpy broadcasting.
RefTensor binary(const RefTensor& a, const RefTensor& b,
                 const std::function<double(double, double)>& f);
double relu(double x);
double sigmoid(double x);
double gelu(double x); ///< 0.5 x (1 + erf(x / sqrt 2))

// Normalizations.
RefTensor softmax(const RefTensor& x, int64_t axis);
/// Over dims from axis on; gamma/beta may be null.
RefTensor layer_norm(const RefTensor& x, const RefTensor* gamma, const RefTensor* beta,
                     int64_t axis, double eps);

// Reductions; axes normalized and sorted, empty = all.
enum class Reduce { Sum, Mean, Max, Min };
RefTensor reduce(const RefTensor& x, std::vector<int64_t> axes, bool keepdims, Reduce op);

// Layout.
RefTensor transpose(const RefTensor& x, const std::vector<int64_t>& perm);
RefTensor reshape(const RefTensor& x, const std::vector<int64_t>& shape);
RefTensor concat(const std::vector<RefTensor>& xs, int64_t axis);
enum class PadMode { Constant, Edge, Reflect };
RefTensor pad(const RefTensor& x, const std::vector<int64_t>& before,
              const std::vector<int64_t>& after, float value, PadMode mode);
/// ONNX Slice semantics (negative indices, clamping, negative steps).
RefTensor slice(const RefTensor& x, const std::vector<int64_t>& starts,
                const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                const std::vector<int64_t>& steps);

// Integer kernels.
/// dot4_u8s8 of two i32 words: the four bytes of a (unsigned) times those of b (signed),
/// summed. Reads the bytes through memory, independent of any shift-and-mask implementation.
int32_t dot4_u8s8(int32_t a, int32_t b);

} // namespace ref
} // namespace tessera::testing
