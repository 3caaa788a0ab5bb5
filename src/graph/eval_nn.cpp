// Reference kernels of the neural-network ops: convolution, pooling, Gemm/MatMul,
// normalizations, Softmax and reductions. Plain loop nests whose innermost loop runs over
// contiguous memory, so -O3 vectorizes them and a ResNet-18 evaluates in about a second.
#include "eval_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "op_util.h"

namespace tessera::graph::detail {

static void require_f32(const TensorData& t, const char* what, const std::string& where) {
    require_dtype(t, {DType::F32}, what, where);
}

static void require_rank(const TensorData& t, int64_t rank, const char* what,
                         const std::string& where) {
    if (t.rank() != rank)
        throw UserError() << where << ": " << what << " must have rank " << rank << ", got shape "
                          << shape_str(t.shape());
}

EvalOutputs eval_conv(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    const TensorData& w = require_input(in, 1, where);
    const TensorData* bias = in.size() > 2 ? in[2] : nullptr;
    require_f32(x, "X", where);
    require_f32(w, "W", where);
    require_rank(x, 4, "X", where);
    require_rank(w, 4, "W", where);
    const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
    const int64_t M = w.shape()[0], Cg = w.shape()[1], KH = w.shape()[2], KW = w.shape()[3];
    const int64_t G = n.attr_int("group", 1);
    if (G < 1 || C % G != 0 || M % G != 0 || C / G != Cg)
        throw UserError() << where << ": X " << shape_str(x.shape()) << " and W "
                          << shape_str(w.shape()) << " do not match group " << G;
    if (bias) {
        require_f32(*bias, "B", where);
        if (bias->shape() != Shape{M})
            throw UserError() << where << ": B has shape " << shape_str(bias->shape())
                              << ", expected [" << M << "]";
    }
    Window2d win = window_of(n, {KH, KW}, where);
    if (win.kernel[0] != KH || win.kernel[1] != KW)
        throw UserError() << where << ": kernel_shape " << shape_str({win.kernel[0], win.kernel[1]})
                          << " differs from W " << shape_str(w.shape());
    const int64_t sh = win.stride[0], sw = win.stride[1], dh = win.dilation[0],
                  dw = win.dilation[1];
    const int64_t pt = win.pads[0], pl = win.pads[1];
    const int64_t OH = window_output_dim(H, KH, sh, dh, pt, win.pads[2], false, where);
    const int64_t OW = window_output_dim(W, KW, sw, dw, pl, win.pads[3], false, where);
    TensorData out(DType::F32, {N, M, OH, OW});
    const float* px = x.data<float>();
    const float* pw = w.data<float>();
    float* po = out.data<float>();
    const int64_t Mg = M / G;
    for (int64_t b = 0; b < N; ++b)
        for (int64_t m = 0; m < M; ++m) {
            float* plane = po + (b * M + m) * OH * OW;
            const float init = bias ? bias->data<float>()[m] : 0.0f;
            std::fill(plane, plane + OH * OW, init);
            const int64_t g = m / Mg;
            for (int64_t ic = 0; ic < Cg; ++ic) {
                const float* xin = px + (b * C + g * Cg + ic) * H * W;
                const float* wk = pw + (m * Cg + ic) * KH * KW;
                for (int64_t kh = 0; kh < KH; ++kh)
                    for (int64_t kw = 0; kw < KW; ++kw) {
                        const float wv = wk[kh * KW + kw];
                        // Output columns whose input column ow*sw - pl + kw*dw is inside [0, W).
                        const int64_t shift = kw * dw - pl;
                        const int64_t ow_lo = std::max<int64_t>(0, ceil_div(-shift, sw));
                        const int64_t ow_hi =
                            std::min<int64_t>(OW, floor_div(W - 1 - shift, sw) + 1);
                        if (ow_lo >= ow_hi)
                            continue;
                        for (int64_t oh = 0; oh < OH; ++oh) {
                            const int64_t ih = oh * sh - pt + kh * dh;
                            if (ih < 0 || ih >= H)
                                continue;
                            const float* xr = xin + ih * W + shift;
                            float* orow = plane + oh * OW;
                            if (sw == 1) {
                                for (int64_t ow = ow_lo; ow < ow_hi; ++ow)
                                    orow[ow] += wv * xr[ow];
                            } else {
                                for (int64_t ow = ow_lo; ow < ow_hi; ++ow)
                                    orow[ow] += wv * xr[ow * sw];
                            }
                        }
                    }
            }
        }
    return {std::move(out)};
}

EvalOutputs eval_pool(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    require_f32(x, "X", where);
    require_rank(x, 4, "X", where);
    const bool is_max = n.op == Op::MaxPool;
    Window2d win = window_of(n, {0, 0}, where);
    const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
    const int64_t KH = win.kernel[0], KW = win.kernel[1];
    const int64_t sh = win.stride[0], sw = win.stride[1];
    const int64_t dh = is_max ? win.dilation[0] : 1, dw = is_max ? win.dilation[1] : 1;
    const int64_t pt = win.pads[0], pl = win.pads[1], pb = win.pads[2], pr = win.pads[3];
    const int64_t OH = window_output_dim(H, KH, sh, dh, pt, pb, win.ceil_mode, where);
    const int64_t OW = window_output_dim(W, KW, sw, dw, pl, pr, win.ceil_mode, where);
    const bool include_pad = n.attr_int("count_include_pad", 0) != 0;
    TensorData out(DType::F32, {N, C, OH, OW});
    const float* px = x.data<float>();
    float* po = out.data<float>();
    for (int64_t p = 0; p < N * C; ++p) {
        const float* plane = px + p * H * W;
        for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t ow = 0; ow < OW; ++ow) {
                const int64_t h0 = oh * sh - pt, w0 = ow * sw - pl;
                float best = -std::numeric_limits<float>::infinity();
                double sum = 0;
                int64_t count = 0;
                for (int64_t kh = 0; kh < KH; ++kh) {
                    const int64_t ih = h0 + kh * dh;
                    if (ih < 0 || ih >= H)
                        continue;
                    for (int64_t kw = 0; kw < KW; ++kw) {
                        const int64_t iw = w0 + kw * dw;
                        if (iw < 0 || iw >= W)
                            continue;
                        const float v = plane[ih * W + iw];
                        best = std::max(best, v);
                        sum += v;
                        ++count;
                    }
                }
                float r;
                if (is_max) {
                    r = best;
                } else {
                    // With count_include_pad the divisor counts explicit padding but not the
                    // part of a ceil_mode window hanging past it.
                    int64_t div = count;
                    if (include_pad) {
                        const int64_t hh = std::min(h0 + KH, H + pb) - h0;
                        const int64_t ww = std::min(w0 + KW, W + pr) - w0;
                        div = hh * ww;
                    }
                    r = div > 0 ? static_cast<float>(sum / static_cast<double>(div)) : 0.0f;
                }
                po[(p * OH + oh) * OW + ow] = r;
            }
    }
    return {std::move(out)};
}

EvalOutputs eval_global_average_pool(const Node& n, const EvalInputs& in,
                                     const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    require_f32(x, "X", where);
    if (x.rank() < 3)
        throw UserError() << where << ": X must have rank >= 3, got shape " << shape_str(x.shape());
    Shape out_shape = {x.shape()[0], x.shape()[1]};
    int64_t spatial = 1;
    for (int64_t d = 2; d < x.rank(); ++d)
        spatial *= x.shape()[d], out_shape.push_back(1);
    TensorData out(DType::F32, out_shape);
    const float* px = x.data<float>();
    float* po = out.data<float>();
    for (int64_t p = 0; p < x.shape()[0] * x.shape()[1]; ++p) {
        double sum = 0;
        for (int64_t i = 0; i < spatial; ++i)
            sum += px[p * spatial + i];
        po[p] = spatial ? static_cast<float>(sum / static_cast<double>(spatial)) : 0.0f;
    }
    return {std::move(out)};
}

// C[M, N] += A[M, K] * B[K, N], all row-major; the j loop is contiguous in B and C.
static void matmul_kernel(int64_t M, int64_t K, int64_t N, const float* a, const float* b,
                          float* c) {
    for (int64_t i = 0; i < M; ++i) {
        float* crow = c + i * N;
        for (int64_t k = 0; k < K; ++k) {
            const float av = a[i * K + k];
            const float* brow = b + k * N;
            for (int64_t j = 0; j < N; ++j)
                crow[j] += av * brow[j];
        }
    }
}

static std::vector<float> transposed(const float* p, int64_t rows, int64_t cols) {
    std::vector<float> t(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
            t[c * rows + r] = p[r * cols + c];
    return t;
}

EvalOutputs eval_gemm(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& a = require_input(in, 0, where);
    const TensorData& b = require_input(in, 1, where);
    const TensorData* c = in.size() > 2 ? in[2] : nullptr;
    require_f32(a, "A", where);
    require_f32(b, "B", where);
    require_rank(a, 2, "A", where);
    require_rank(b, 2, "B", where);
    const bool ta = n.attr_int("transA", 0) != 0, tb = n.attr_int("transB", 0) != 0;
    const float alpha = n.attr_float("alpha", 1.0f), beta = n.attr_float("beta", 1.0f);
    const int64_t M = ta ? a.shape()[1] : a.shape()[0], K = ta ? a.shape()[0] : a.shape()[1];
    const int64_t K2 = tb ? b.shape()[1] : b.shape()[0], N = tb ? b.shape()[0] : b.shape()[1];
    if (K != K2)
        throw UserError() << where << ": A " << shape_str(a.shape()) << " and B "
                          << shape_str(b.shape()) << " do not multiply (transA " << ta
                          << ", transB " << tb << ")";
    std::vector<float> at = ta ? transposed(a.data<float>(), K, M) : a.to_vector<float>();
    std::vector<float> bt = tb ? transposed(b.data<float>(), N, K) : b.to_vector<float>();
    TensorData out(DType::F32, {M, N});
    float* po = out.data<float>();
    matmul_kernel(M, K, N, at.data(), bt.data(), po);
    for (int64_t i = 0; i < M * N; ++i)
        po[i] *= alpha;
    if (c) {
        require_f32(*c, "C", where);
        Shape s = broadcast_shapes({c->shape(), {M, N}}, where);
        if (s != Shape{M, N})
            throw UserError() << where << ": C " << shape_str(c->shape())
                              << " does not broadcast to [" << M << "," << N << "]";
        const float* pc = c->data<float>();
        for_each_index<1>(
            {M, N}, {broadcast_strides(c->shape(), {M, N})}, {0},
            [&](int64_t o, const std::array<int64_t, 1>& off) { po[o] += beta * pc[off[0]]; });
    }
    return {std::move(out)};
}

EvalOutputs eval_matmul(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& a = require_input(in, 0, where);
    const TensorData& b = require_input(in, 1, where);
    require_f32(a, "A", where);
    require_f32(b, "B", where);
    Shape out_shape = matmul_shape(a.shape(), b.shape(), where);
    // Promote 1-D operands to matrices, then broadcast the batch dims.
    Shape as = a.shape(), bs = b.shape();
    if (as.size() == 1)
        as.insert(as.begin(), 1);
    if (bs.size() == 1)
        bs.push_back(1);
    const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
    Shape abatch(as.begin(), as.end() - 2), bbatch(bs.begin(), bs.end() - 2);
    Shape batch = broadcast_shapes({abatch, bbatch}, where);
    TensorData out(DType::F32, out_shape);
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* po = out.data<float>();
    for_each_index<2>(batch, {broadcast_strides(abatch, batch), broadcast_strides(bbatch, batch)},
                      {0, 0}, [&](int64_t o, const std::array<int64_t, 2>& off) {
                          matmul_kernel(M, K, N, pa + off[0] * M * K, pb + off[1] * K * N,
                                        po + o * M * N);
                      });
    return {std::move(out)};
}

EvalOutputs eval_batch_norm(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    require_f32(x, "X", where);
    if (x.rank() < 2)
        throw UserError() << where << ": X must have rank >= 2, got shape " << shape_str(x.shape());
    const int64_t N = x.shape()[0], C = x.shape()[1],
                  inner = x.numel() / std::max<int64_t>(1, N * C);
    const char* names[] = {"scale", "B", "mean", "var"};
    const float* p[4];
    for (size_t i = 0; i < 4; ++i) {
        const TensorData& t = require_input(in, i + 1, where);
        require_f32(t, names[i], where);
        if (t.shape() != Shape{C})
            throw UserError() << where << ": " << names[i] << " has shape " << shape_str(t.shape())
                              << ", expected [" << C << "]";
        p[i] = t.data<float>();
    }
    const double eps = n.attr_float("epsilon", 1e-5f);
    TensorData out(DType::F32, x.shape());
    const float* px = x.data<float>();
    float* po = out.data<float>();
    for (int64_t c = 0; c < C; ++c) {
        const float s = static_cast<float>(p[0][c] / std::sqrt(static_cast<double>(p[3][c]) + eps));
        const float shift = static_cast<float>(p[1][c] - static_cast<double>(p[2][c]) * s);
        for (int64_t b = 0; b < N; ++b) {
            const int64_t base = (b * C + c) * inner;
            for (int64_t i = 0; i < inner; ++i)
                po[base + i] = px[base + i] * s + shift;
        }
    }
    return {std::move(out)};
}

EvalOutputs eval_softmax(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    require_f32(x, "input", where);
    const int64_t rank = x.rank();
    if (rank == 0)
        throw UserError() << where << ": softmax of a scalar";
    const int64_t axis = normalize_axis(n.attr_int("axis", -1), rank, where);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
        outer *= x.shape()[d];
    for (int64_t d = axis + 1; d < rank; ++d)
        inner *= x.shape()[d];
    const int64_t len = x.shape()[axis];
    TensorData out(DType::F32, x.shape());
    const float* px = x.data<float>();
    float* po = out.data<float>();
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
            const int64_t base = o * len * inner + i;
            float mx = -std::numeric_limits<float>::infinity();
            for (int64_t k = 0; k < len; ++k)
                mx = std::max(mx, px[base + k * inner]);
            double sum = 0;
            for (int64_t k = 0; k < len; ++k) {
                const float e = std::exp(px[base + k * inner] - mx);
                po[base + k * inner] = e;
                sum += e;
            }
            for (int64_t k = 0; k < len; ++k)
                po[base + k * inner] = static_cast<float>(po[base + k * inner] / sum);
        }
    return {std::move(out)};
}

EvalOutputs eval_layer_norm(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    const TensorData& scale = require_input(in, 1, where);
    const TensorData* bias = in.size() > 2 ? in[2] : nullptr;
    require_f32(x, "X", where);
    require_f32(scale, "scale", where);
    if (x.rank() == 0)
        throw UserError() << where << ": layer norm of a scalar";
    const int64_t axis = normalize_axis(n.attr_int("axis", -1), x.rank(), where);
    const double eps = n.attr_float("epsilon", 1e-5f);
    Shape norm_shape(x.shape().begin() + axis, x.shape().end());
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d)
        outer *= x.shape()[d];
    const int64_t len = shape_numel(norm_shape);
    // Scale and bias broadcast (unidirectionally) to the normalized shape.
    auto expand = [&](const TensorData& t, const char* what) {
        if (broadcast_shapes({t.shape(), norm_shape}, where) != norm_shape)
            throw UserError() << where << ": " << what << " " << shape_str(t.shape())
                              << " does not broadcast to " << shape_str(norm_shape);
        std::vector<float> v(static_cast<size_t>(len));
        const float* pt = t.data<float>();
        for_each_index<1>(norm_shape, {broadcast_strides(t.shape(), norm_shape)}, {0},
                          [&](int64_t o, const std::array<int64_t, 1>& off) { v[o] = pt[off[0]]; });
        return v;
    };
    std::vector<float> sv = expand(scale, "scale");
    std::vector<float> bv(static_cast<size_t>(len), 0.0f);
    if (bias) {
        require_f32(*bias, "B", where);
        bv = expand(*bias, "B");
    }
    Shape stat_shape(x.shape().begin(), x.shape().begin() + axis);
    stat_shape.resize(x.shape().size(), 1);
    TensorData out(DType::F32, x.shape()), mean_out(DType::F32, stat_shape),
        inv_out(DType::F32, stat_shape);
    const float* px = x.data<float>();
    float* po = out.data<float>();
    for (int64_t o = 0; o < outer; ++o) {
        const float* row = px + o * len;
        double mean = 0, var = 0;
        for (int64_t k = 0; k < len; ++k)
            mean += row[k];
        mean /= static_cast<double>(len);
        for (int64_t k = 0; k < len; ++k)
            var += (row[k] - mean) * (row[k] - mean);
        var /= static_cast<double>(len);
        const double inv = 1.0 / std::sqrt(var + eps);
        for (int64_t k = 0; k < len; ++k)
            po[o * len + k] = static_cast<float>((row[k] - mean) * inv * sv[k] + bv[k]);
        mean_out.data<float>()[o] = static_cast<float>(mean);
        inv_out.data<float>()[o] = static_cast<float>(inv);
    }
    EvalOutputs outs;
    outs.push_back(std::move(out));
    outs.push_back(std::move(mean_out));
    outs.push_back(std::move(inv_out));
    return outs;
}

EvalOutputs eval_reduce(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    require_dtype(x, {DType::F32, DType::F64, DType::I32, DType::I64}, "input", where);
    std::vector<int64_t> axes;
    if (n.op == Op::ReduceSum) {
        if (in.size() > 1 && in[1])
            axes = int_elements(*in[1], "axes", where);
    } else {
        axes = n.attr_ints("axes");
    }
    axes = normalize_axes(axes, x.rank(), where);
    if (axes.empty() && n.op == Op::ReduceSum && n.attr_int("noop_with_empty_axes", 0) != 0)
        return {x};
    const bool keepdims = n.attr_int("keepdims", 1) != 0;
    Shape kept = reduced_shape(x.shape(), axes, true); // reduced dims as 1
    TensorData out(x.dtype(), reduced_shape(x.shape(), axes, keepdims));
    // Every input element adds into the output element at its index with reduced dims at 0.
    std::vector<int64_t> out_strides = broadcast_strides(kept, x.shape());
    const int64_t count = out.numel() ? x.numel() / out.numel() : 0;
    dispatch(x.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        if constexpr (std::is_same_v<T, uint8_t>) {
            TESSERA_UNREACHABLE();
        } else {
            using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
            const bool is_max = n.op == Op::ReduceMax;
            std::vector<Acc> acc(static_cast<size_t>(out.numel()),
                                 is_max ? std::numeric_limits<Acc>::lowest() : Acc(0));
            if (is_max && std::is_floating_point_v<T>)
                std::fill(acc.begin(), acc.end(), -std::numeric_limits<Acc>::infinity());
            const T* px = x.data<T>();
            for_each_index<1>(x.shape(), {out_strides}, {0},
                              [&](int64_t i, const std::array<int64_t, 1>& off) {
                                  Acc& a = acc[off[0]];
                                  if (is_max)
                                      a = (px[i] != px[i] || px[i] > a) ? Acc(px[i]) : a;
                                  else
                                      a += px[i];
                              });
            T* po = out.data<T>();
            for (int64_t i = 0; i < out.numel(); ++i) {
                Acc v = acc[i];
                if (n.op == Op::ReduceMean)
                    v = count ? v / static_cast<Acc>(count) : v;
                po[i] = static_cast<T>(v);
            }
        }
        return 0;
    });
    return {std::move(out)};
}

} // namespace tessera::graph::detail
