// N-D window attributes and the reference loops of the 3-D Conv and pools (window_nd.h). The
// loops are plain gathers over every output element and window position: 3-D models in tests
// are small, and the 2-D forms keep their vectorized loops in conv_pool.cpp.
#include "window_nd.h"

#include <algorithm>
#include <limits>

#include "../op_util.h"
#include "eval_util.h"

namespace tessera::graph::detail {

te::WindowNdParams WindowNd::params(int64_t groups, bool count_include_pad) const {
    te::WindowNdParams p;
    p.kernel = kernel;
    p.stride = stride;
    p.dilation = dilation;
    p.pads = pads;
    p.output_padding = output_padding;
    p.groups = groups;
    p.ceil_mode = ceil_mode;
    p.count_include_pad = count_include_pad;
    return p;
}

WindowNd window_nd_of(const Node& n, size_t spatial, const std::vector<int64_t>& kernel,
                      const std::string& where) {
    auto read = [&](const char* key, size_t count, int64_t fill, int64_t lo) {
        std::vector<int64_t> v = n.attr_ints(key);
        if (v.empty())
            v.assign(count, fill);
        if (v.size() != count)
            throw UserError() << where << ": attribute '" << key << "' has " << v.size()
                              << " values, expected " << count;
        for (int64_t x : v)
            if (x < lo)
                throw UserError() << where << ": attribute '" << key << "' value " << x
                                  << " is below " << lo;
        return v;
    };
    WindowNd w;
    if (kernel.empty() && n.attr_ints("kernel_shape").empty())
        throw UserError() << where << ": attribute 'kernel_shape' is missing";
    w.kernel = n.attr_ints("kernel_shape").empty() ? kernel : n.attr_ints("kernel_shape");
    if (w.kernel.size() != spatial)
        throw UserError() << where << ": attribute 'kernel_shape' has " << w.kernel.size()
                          << " values, expected " << spatial;
    for (int64_t k : w.kernel)
        if (k < 1)
            throw UserError() << where << ": attribute 'kernel_shape' value " << k
                              << " is not positive";
    w.stride = read("strides", spatial, 1, 1);
    w.dilation = read("dilations", spatial, 1, 1);
    w.pads = read("pads", 2 * spatial, 0, 0);
    w.output_padding = read("output_padding", spatial, 0, 0);
    const int64_t ceil = n.attr_int("ceil_mode", 0);
    if (ceil != 0 && ceil != 1)
        throw UserError() << where << ": ceil_mode " << ceil << " is not 0 or 1";
    w.ceil_mode = ceil == 1;
    return w;
}

Shape conv_nd_output_shape(const Node& n, const Shape& x, const Shape& w,
                           const std::string& where) {
    if (x.size() < 3 || w.size() != x.size())
        throw UserError() << where << ": X " << shape_str(x) << " and W " << shape_str(w)
                          << " must have the same rank >= 3";
    const size_t s = x.size() - 2;
    const int64_t C = x[1], M = w[0], G = n.attr_int("group", 1);
    if (G < 1 || C % G != 0 || M % G != 0 || C / G != w[1])
        throw UserError() << where << ": X " << shape_str(x) << " and W " << shape_str(w)
                          << " do not match group " << G;
    const std::vector<int64_t> wk(w.begin() + 2, w.end());
    const WindowNd win = window_nd_of(n, s, wk, where);
    if (win.kernel != wk)
        throw UserError() << where << ": kernel_shape " << shape_str(win.kernel)
                          << " differs from W " << shape_str(w);
    Shape out = {x[0], M};
    for (size_t d = 0; d < s; ++d)
        out.push_back(window_output_dim(x[2 + d], win.kernel[d], win.stride[d], win.dilation[d],
                                        win.pads[d], win.pads[s + d], false, where));
    return out;
}

Shape pool_nd_output_shape(const Node& n, const Shape& x, const std::string& where) {
    if (x.size() < 3)
        throw UserError() << where << ": X " << shape_str(x) << " must have rank >= 3";
    const size_t s = x.size() - 2;
    const WindowNd win = window_nd_of(n, s, {}, where);
    Shape out = {x[0], x[1]};
    for (size_t d = 0; d < s; ++d)
        out.push_back(window_output_dim(x[2 + d], win.kernel[d], win.stride[d], win.dilation[d],
                                        win.pads[d], win.pads[s + d], win.ceil_mode, where));
    return out;
}

namespace {

/// Calls f(pos, flat) for every position `pos` of `dims` in row-major order, `flat` being its
/// row-major offset.
template <typename F> void for_each_position(const Shape& dims, F&& f) {
    const size_t s = dims.size();
    std::vector<int64_t> pos(s, 0);
    int64_t total = 1;
    for (int64_t d : dims)
        total *= d;
    for (int64_t flat = 0; flat < total; ++flat) {
        f(pos, flat);
        for (size_t d = s; d-- > 0;) {
            if (++pos[d] < dims[d])
                break;
            pos[d] = 0;
        }
    }
}

} // namespace

EvalOutputs eval_conv_nd(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    const TensorData& w = require_input(in, 1, where);
    const TensorData* bias = in.size() > 2 ? in[2] : nullptr;
    require_f32(x, "X", where);
    require_f32(w, "W", where);
    const Shape out_shape = conv_nd_output_shape(n, x.shape(), w.shape(), where);
    const int64_t N = x.shape()[0], C = x.shape()[1], M = w.shape()[0], Cg = w.shape()[1];
    if (bias) {
        require_f32(*bias, "B", where);
        if (bias->shape() != Shape{M})
            throw UserError() << where << ": B has shape " << shape_str(bias->shape())
                              << ", expected [" << M << "]";
    }
    const size_t s = x.rank() - 2;
    const WindowNd win = window_nd_of(n, s, {w.shape().begin() + 2, w.shape().end()}, where);
    const Shape in_dims(x.shape().begin() + 2, x.shape().end());
    const Shape out_dims(out_shape.begin() + 2, out_shape.end());
    const std::vector<int64_t> xs = contiguous_strides(in_dims);
    int64_t in_size = 1, out_size = 1, k_size = 1;
    for (size_t d = 0; d < s; ++d)
        in_size *= in_dims[d], out_size *= out_dims[d], k_size *= win.kernel[d];
    const int64_t Mg = M / n.attr_int("group", 1);
    TensorData out(DType::F32, out_shape);
    const float* px = x.data<float>();
    const float* pw = w.data<float>();
    float* po = out.data<float>();
    for (int64_t b = 0; b < N; ++b)
        for (int64_t m = 0; m < M; ++m) {
            const int64_t c0 = (m / Mg) * Cg;
            float* plane = po + (b * M + m) * out_size;
            for_each_position(out_dims, [&](const std::vector<int64_t>& o, int64_t flat) {
                double acc = bias ? bias->data<float>()[m] : 0.0;
                for_each_position(win.kernel, [&](const std::vector<int64_t>& k, int64_t kf) {
                    int64_t off = 0;
                    for (size_t d = 0; d < s; ++d) {
                        const int64_t i =
                            o[d] * win.stride[d] - win.pads[d] + k[d] * win.dilation[d];
                        if (i < 0 || i >= in_dims[d])
                            return;
                        off += i * xs[d];
                    }
                    for (int64_t c = 0; c < Cg; ++c)
                        acc += static_cast<double>(px[(b * C + c0 + c) * in_size + off]) *
                               pw[(m * Cg + c) * k_size + kf];
                });
                plane[flat] = static_cast<float>(acc);
            });
        }
    return {std::move(out)};
}

EvalOutputs eval_pool_nd(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    require_f32(x, "X", where);
    const Shape out_shape = pool_nd_output_shape(n, x.shape(), where);
    const size_t s = x.rank() - 2;
    const WindowNd win = window_nd_of(n, s, {}, where);
    const bool is_max = n.op == Op::MaxPool;
    const bool include_pad = n.attr_int("count_include_pad", 0) != 0;
    const Shape in_dims(x.shape().begin() + 2, x.shape().end());
    const Shape out_dims(out_shape.begin() + 2, out_shape.end());
    const std::vector<int64_t> xs = contiguous_strides(in_dims);
    int64_t in_size = 1, out_size = 1;
    for (size_t d = 0; d < s; ++d)
        in_size *= in_dims[d], out_size *= out_dims[d];
    TensorData out(DType::F32, out_shape);
    const float* px = x.data<float>();
    float* po = out.data<float>();
    for (int64_t p = 0; p < x.shape()[0] * x.shape()[1]; ++p) {
        const float* plane = px + p * in_size;
        for_each_position(out_dims, [&](const std::vector<int64_t>& o, int64_t flat) {
            float best = -std::numeric_limits<float>::infinity();
            double sum = 0;
            int64_t count = 0;
            for_each_position(win.kernel, [&](const std::vector<int64_t>& k, int64_t) {
                int64_t off = 0;
                for (size_t d = 0; d < s; ++d) {
                    const int64_t i = o[d] * win.stride[d] - win.pads[d] + k[d] * win.dilation[d];
                    if (i < 0 || i >= in_dims[d])
                        return;
                    off += i * xs[d];
                }
                best = std::max(best, plane[off]);
                sum += plane[off];
                ++count;
            });
            float r = best;
            if (!is_max) {
                // With count_include_pad the divisor counts explicit padding but not the part
                // of a ceil_mode window hanging past it.
                int64_t div = count;
                if (include_pad) {
                    div = 1;
                    for (size_t d = 0; d < s; ++d)
                        div *= taps_before(o[d] * win.stride[d] - win.pads[d], win.kernel[d],
                                           win.dilation[d], in_dims[d] + win.pads[s + d]);
                }
                r = div > 0 ? static_cast<float>(sum / static_cast<double>(div)) : 0.0f;
            }
            po[p * out_size + flat] = r;
        });
    }
    return {std::move(out)};
}

} // namespace tessera::graph::detail
