// The windowed ops on NC + spatial tensors: Conv, MaxPool, AveragePool, GlobalAveragePool.
// Canonical form (opset 17): kernel_shape, strides, dilations [S] (AveragePool's only when
// not all 1: it has them from opset 19),
// pads [2S] (begin of each dim, then end; auto_pad resolved at import); Conv group; pools
// ceil_mode; AveragePool count_include_pad. S, the number of spatial dims, is 2 or 3:
//  - 1-D (3-D input [N, C, L]) is not a canonical form. Import lifts it to 2-D with a unit H
//    dim: Unsqueeze(x, 2) -> the 2-D op with kernel [1, K], strides [1, s], dilations [1, d],
//    pads [0, b, 0, e] -> Squeeze(y, 2); a constant weight is reshaped to [M, C/g, 1, K] at
//    import, another one gets an Unsqueeze. A Conv1d so reuses the whole 2-D path: te::conv2d,
//    the blocked layout at -O3, the default schedules and the tuning database's keys.
//  - 2-D (4-D input) is unchanged: te::conv2d / the 2-D pools, the blocked layout pass.
//  - 3-D (5-D input) keeps the op with S = 3: window_nd.cpp has its type rules and reference
//    loops, te::conv_nd / max_pool_nd / avg_pool_nd (src/te/ops/window_nd.cpp) its kernels with
//    the generic default schedule. Generalizing Window2d and te::conv2d instead would touch the
//    2-D builders whose stage structure the workload keys depend on; the blocked layout pass
//    leaves these forms alone (it rewrites 4-D convs and pools of blocked tensors only).
// ConvTranspose (conv_transpose.cpp) follows the same 1-D lifting and N-D rules. The 2-D
// evaluator loops run over contiguous memory so -O3 vectorizes them and a ResNet-18 evaluates
// in about a second.
#include "conv_pool.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "../op_util.h"
#include "eval_util.h"
#include "node_kernel.h"
#include "node_types.h"
#include "op_import.h"
#include "tessera/te/op_library.h"
#include "tessera/te/ops_extra.h"
#include "tessera/te/window_nd.h"
#include "window_nd.h"

namespace tessera::graph::detail {

namespace {

EvalOutputs eval_conv(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    const TensorData& w = require_input(in, 1, where);
    const TensorData* bias = in.size() > 2 ? in[2] : nullptr;
    if (x.rank() == 5)
        return eval_conv_nd(n, in, where);
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
    if (n.op == Op::MaxPool && x.dtype() == DType::U8) {
        // The maximum of bytes is that of their f32 values, which hold them exactly.
        const TensorData xf = x.cast(DType::F32);
        EvalOutputs y = eval_pool(n, {&xf}, where);
        return {y[0].cast(DType::U8)};
    }
    if (x.rank() == 5)
        return eval_pool_nd(n, in, where);
    require_f32(x, "X", where);
    require_rank(x, 4, "X", where);
    const bool is_max = n.op == Op::MaxPool;
    Window2d win = window_of(n, {0, 0}, where);
    const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
    const int64_t KH = win.kernel[0], KW = win.kernel[1];
    const int64_t sh = win.stride[0], sw = win.stride[1];
    const int64_t dh = win.dilation[0], dw = win.dilation[1];
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
                    if (include_pad)
                        div = taps_before(h0, KH, dh, H + pb) * taps_before(w0, KW, dw, W + pr);
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

// ---- import ----

} // namespace

void emit_lifted_1d(OpImport& im, Attributes attrs) {
    const ValueId axis = im.ints_constant("unit_axis", {2});
    std::vector<ValueId> ins = im.inputs();
    ins[0] = im.new_value("input_2d");
    im.emit(Op::Unsqueeze, {im.inputs()[0], axis}, {ins[0]}, {});
    if (ins.size() > 1) {
        const ValueId w = im.inputs()[1];
        if (const TensorData* wv = im.known_value(w)) {
            Shape s = wv->shape();
            s.insert(s.begin() + 2, 1);
            ins[1] = im.constant("weight_2d", wv->reshaped(s));
        } else {
            ins[1] = im.new_value("weight_2d");
            im.emit(Op::Unsqueeze, {w, axis}, {ins[1]}, {});
        }
    }
    const ValueId y = im.new_value("output_2d");
    im.emit(im.op(), ins, {y}, std::move(attrs));
    im.emit(Op::Squeeze, {y, axis}, im.outputs(), {});
}

std::vector<int64_t> resolve_same_pads(OpImport& im, const std::vector<int64_t>& kernel,
                                       const std::vector<int64_t>& strides,
                                       const std::vector<int64_t>& dil, bool upper) {
    const size_t s = kernel.size();
    if (strides.size() != s || dil.size() != s)
        im.fail("strides and dilations must have " + std::to_string(s) + " values");
    std::vector<int64_t> pads(2 * s);
    for (size_t d = 0; d < s; ++d) {
        if (strides[d] < 1)
            im.fail("stride " + std::to_string(strides[d]) + " is not positive");
        const int64_t in = im.input_value(0).shape[2 + d];
        const int64_t out = ceil_div(in, strides[d]);
        const int64_t total =
            std::max<int64_t>(0, (out - 1) * strides[d] + (kernel[d] - 1) * dil[d] + 1 - in);
        const int64_t small = total / 2, large = total - small;
        pads[d] = upper ? small : large;
        pads[d + s] = upper ? large : small;
    }
    return pads;
}

namespace {

// Conv and pools: kernel, strides, dilations and explicit pads (auto_pad resolved); 1-D forms
// lifted to 2-D (see the top of the file).
void import_window(OpImport& im) {
    const Op op = im.op();
    const bool is_conv = op == Op::Conv;
    if (op == Op::MaxPool) {
        im.only_first_output("MaxPool indices");
        im.outputs().resize(1);
    }
    const int64_t rank = im.input_rank(0);
    if (rank < 3 || rank > 5)
        im.fail("input '" + im.input_value(0).name + "' has shape " +
                shape_str(im.input_value(0).shape) + ": only 1-D, 2-D and 3-D (3-D to 5-D input) " +
                im.op_type() + " is supported");
    const size_t s = static_cast<size_t>(rank - 2);
    const std::vector<int64_t> ones(s, 1);
    const Node& src = im.source();
    std::vector<int64_t> kernel = src.attr_ints("kernel_shape");
    if (is_conv && kernel.empty()) {
        const Value& w = im.input_value(1);
        if (static_cast<int64_t>(w.shape.size()) != rank)
            im.fail("weight '" + w.name + "' must have rank " + std::to_string(rank) +
                    ", got shape " + shape_str(w.shape));
        kernel.assign(w.shape.begin() + 2, w.shape.end());
    }
    if (kernel.size() != s)
        im.fail("kernel_shape has " + std::to_string(kernel.size()) + " values, expected " +
                std::to_string(s) + " (one per spatial dim)");
    const std::vector<int64_t> strides = src.attr_ints("strides", ones);
    const std::vector<int64_t> dil = src.attr_ints("dilations", ones);
    const std::string auto_pad = src.attr_string("auto_pad", "NOTSET");
    std::vector<int64_t> pads;
    if (auto_pad == "NOTSET")
        pads = src.attr_ints("pads", std::vector<int64_t>(2 * s, 0));
    else if (auto_pad == "VALID")
        pads.assign(2 * s, 0);
    else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")
        pads = resolve_same_pads(im, kernel, strides, dil, auto_pad == "SAME_UPPER");
    else
        im.fail("unsupported auto_pad '" + auto_pad + "'");
    if (s == 1) {
        if (strides.size() != 1 || dil.size() != 1 || pads.size() != 2)
            im.fail("strides and dilations must have 1 value and pads 2 (one spatial dim)");
        if (is_conv && im.input_rank(1) != 3)
            im.fail("weight '" + im.input_value(1).name + "' must have rank 3, got shape " +
                    shape_str(im.input_value(1).shape));
        Attributes a = {{"kernel_shape", Attribute::of_ints({1, kernel[0]})},
                        {"strides", Attribute::of_ints({1, strides[0]})},
                        {"pads", Attribute::of_ints({0, pads[0], 0, pads[1]})}};
        // AveragePool has dilations from opset 19; unit ones stay absent, as before.
        if (op != Op::AveragePool || dil[0] != 1)
            a["dilations"] = Attribute::of_ints({1, dil[0]});
        if (is_conv)
            a["group"] = Attribute::of_int(src.attr_int("group", 1));
        else
            a["ceil_mode"] = Attribute::of_int(src.attr_int("ceil_mode", 0));
        if (op == Op::AveragePool)
            a["count_include_pad"] = Attribute::of_int(src.attr_int("count_include_pad", 0));
        emit_lifted_1d(im, std::move(a));
        return;
    }
    im.set("kernel_shape", Attribute::of_ints(kernel));
    im.set("strides", Attribute::of_ints(strides));
    if (op != Op::AveragePool || dil != ones)
        im.set("dilations", Attribute::of_ints(dil));
    if (auto_pad == "NOTSET")
        im.keep("pads", Attribute::of_ints(pads));
    else
        im.set("pads", Attribute::of_ints(pads));
    if (is_conv)
        im.keep("group", Attribute::of_int(1));
    else
        im.keep("ceil_mode", Attribute::of_int(0));
    if (op == Op::AveragePool)
        im.keep("count_include_pad", Attribute::of_int(0));
}

// ---- type inference ----

TypeList conv_types(const NodeTypes& t) {
    const Node& n = t.node();
    const Value& x = t.in(0, "X");
    const Value& w = t.in(1, "W");
    t.dtype(x, kF32, "X");
    t.dtype(w, kF32, "W");
    if (x.shape.size() == 5) {
        if (t.has(2)) {
            t.dtype(t.in(2, "B"), kF32, "B");
            if (t.in(2, "B").shape != Shape{w.shape.at(0)})
                t.fail("B '" + t.in(2, "B").name + "' has shape " + shape_str(t.in(2, "B").shape) +
                       ", expected [" + std::to_string(w.shape.at(0)) + "]");
        }
        return {{DType::F32, conv_nd_output_shape(n, x.shape, w.shape, t.where())}};
    }
    t.rank(x, 4, "X");
    t.rank(w, 4, "W");
    const int64_t C = x.shape[1], M = w.shape[0], G = n.attr_int("group", 1);
    if (G < 1 || C % G != 0 || M % G != 0 || C / G != w.shape[1])
        t.fail("X " + shape_str(x.shape) + " and W " + shape_str(w.shape) + " do not match group " +
               std::to_string(G));
    if (t.has(2)) {
        const Value& b = t.in(2, "B");
        t.dtype(b, kF32, "B");
        if (b.shape != Shape{M})
            t.fail("B '" + b.name + "' has shape " + shape_str(b.shape) + ", expected [" +
                   std::to_string(M) + "]");
    }
    Window2d win = window_of(n, {w.shape[2], w.shape[3]}, t.where());
    if (win.kernel[0] != w.shape[2] || win.kernel[1] != w.shape[3])
        t.fail("kernel_shape differs from W " + shape_str(w.shape));
    Shape out = {x.shape[0], M, 0, 0};
    for (int d = 0; d < 2; ++d)
        out[2 + d] =
            window_output_dim(x.shape[2 + d], win.kernel[d], win.stride[d], win.dilation[d],
                              win.pads[d], win.pads[2 + d], false, t.where());
    return {{DType::F32, out}};
}

TypeList pool_types(const NodeTypes& t) {
    const Node& n = t.node();
    const Value& x = t.in(0, "X");
    // MaxPool also pools u8 values (the quantized-ops pass makes it), into u8.
    const DType out_t = n.op == Op::MaxPool && x.dtype == DType::U8 ? DType::U8 : DType::F32;
    if (out_t == DType::F32)
        t.dtype(x, kF32, "X");
    if (x.shape.size() == 5)
        return {{out_t, pool_nd_output_shape(n, x.shape, t.where())}};
    t.rank(x, 4, "X");
    Window2d win = window_of(n, {0, 0}, t.where());
    if (n.op != Op::MaxPool) {
        int64_t cip = n.attr_int("count_include_pad", 0);
        if (cip != 0 && cip != 1)
            t.fail("count_include_pad " + std::to_string(cip) + " is not 0 or 1");
    }
    Shape out = {x.shape[0], x.shape[1], 0, 0};
    for (int d = 0; d < 2; ++d)
        out[2 + d] =
            window_output_dim(x.shape[2 + d], win.kernel[d], win.stride[d], win.dilation[d],
                              win.pads[d], win.pads[2 + d], win.ceil_mode, t.where());
    return {{out_t, out}};
}

TypeList global_pool_types(const NodeTypes& t) {
    const Value& x = t.in(0, "X");
    t.dtype(x, kF32, "X");
    t.min_rank(x, 3, "X");
    Shape out = x.shape;
    std::fill(out.begin() + 2, out.end(), 1);
    return {{DType::F32, out}};
}

// ---- kernels ----

// 3-D forms use the N-D builders; the 2-D form keeps te::conv2d and its workload keys.
void conv_kernel(NodeKernel& k) {
    const te::Tensor w = k.in(1);
    if (w.ndim() == 5) {
        const std::vector<int64_t> wk(w.shape().begin() + 2, w.shape().end());
        const WindowNd win = window_nd_of(k.node(), 3, wk, k.where());
        k.set(te::conv_nd(k.in(0), w, win.params(k.node().attr_int("group", 1)), k.opt_in(2),
                          "conv3d"));
        return;
    }
    k.set(te::conv2d(k.in(0), w, conv2d_params(k.node(), {w.shape()[2], w.shape()[3]}, k.where()),
                     k.opt_in(2)));
}

void pool_kernel(NodeKernel& k) {
    const Node& n = k.node();
    if (k.in(0).ndim() == 5) {
        const WindowNd win = window_nd_of(n, 3, {}, k.where());
        const te::WindowNdParams p = win.params(1, n.attr_int("count_include_pad", 0) != 0);
        k.set(n.op == Op::MaxPool ? te::max_pool_nd(k.in(0), p, "max_pool3d")
                                  : te::avg_pool_nd(k.in(0), p, "avg_pool3d"));
        return;
    }
    te::Pool2dParams p = pool2d_params(n, k.where());
    k.set(n.op == Op::MaxPool ? te::max_pool2d(k.in(0), p) : te::avg_pool2d(k.in(0), p));
}

using K = Attribute::Kind;

} // namespace

te::Conv2dParams conv2d_params(const Node& n, const std::array<int64_t, 2>& kernel,
                               const std::string& where) {
    Window2d win = window_of(n, kernel, where);
    te::Conv2dParams p;
    p.stride_h = win.stride[0];
    p.stride_w = win.stride[1];
    p.dilation_h = win.dilation[0];
    p.dilation_w = win.dilation[1];
    p.pad_top = win.pads[0];
    p.pad_left = win.pads[1];
    p.pad_bottom = win.pads[2];
    p.pad_right = win.pads[3];
    p.groups = n.attr_int("group", 1);
    return p;
}

te::Pool2dParams pool2d_params(const Node& n, const std::string& where) {
    Window2d win = window_of(n, {0, 0}, where);
    te::Pool2dParams p;
    p.kernel_h = win.kernel[0];
    p.kernel_w = win.kernel[1];
    p.stride_h = win.stride[0];
    p.stride_w = win.stride[1];
    p.pad_top = win.pads[0];
    p.pad_left = win.pads[1];
    p.pad_bottom = win.pads[2];
    p.pad_right = win.pads[3];
    p.ceil_mode = win.ceil_mode;
    p.dilation_h = win.dilation[0];
    p.dilation_w = win.dilation[1];
    if (n.op != Op::MaxPool && n.op != Op::MaxPoolBlocked)
        p.count_include_pad = n.attr_int("count_include_pad", 0) != 0;
    return p;
}

} // namespace tessera::graph::detail

namespace tessera::graph::ops {

using namespace detail;

const OpDef Conv = OpDef(Op::Conv)
                       .onnx(1, 2, 3, 1,
                             {{"auto_pad", K::String},
                              {"dilations", K::Ints},
                              {"group", K::Int},
                              {"kernel_shape", K::Ints},
                              {"pads", K::Ints},
                              {"strides", K::Ints}})
                       .import_with(import_window)
                       .types(conv_types)
                       .eval(eval_conv)
                       .fuses_as(FusionKind::OutFusable)
                       .named("conv2d")
                       .builds(conv_kernel);

const OpDef MaxPool = OpDef(Op::MaxPool)
                          .onnx(1, 1, 1, 2,
                                {{"auto_pad", K::String},
                                 {"ceil_mode", K::Int, 10},
                                 {"dilations", K::Ints, 10},
                                 {"kernel_shape", K::Ints},
                                 {"pads", K::Ints},
                                 {"storage_order", K::Int, 8},
                                 {"strides", K::Ints}})
                          .import_with(import_window)
                          .types(pool_types)
                          .eval(eval_pool)
                          .fuses_as(FusionKind::Reduction)
                          .named("max_pool2d")
                          .builds(pool_kernel);

const OpDef AveragePool = OpDef(Op::AveragePool)
                              .onnx(1, 1, 1, 1,
                                    {{"auto_pad", K::String},
                                     {"ceil_mode", K::Int, 10},
                                     {"count_include_pad", K::Int},
                                     {"dilations", K::Ints, 19},
                                     {"kernel_shape", K::Ints},
                                     {"pads", K::Ints},
                                     {"strides", K::Ints}})
                              .import_with(import_window)
                              .types(pool_types)
                              .eval(eval_pool)
                              .fuses_as(FusionKind::Reduction)
                              .named("avg_pool2d")
                              .builds(pool_kernel);

const OpDef GlobalAveragePool =
    OpDef(Op::GlobalAveragePool)
        .onnx(1, 1, 1, 1)
        .types(global_pool_types)
        .eval(eval_global_average_pool)
        .fuses_as(FusionKind::Reduction)
        .named("global_avg_pool2d")
        .builds([](NodeKernel& k) { k.set(te::global_avg_pool2d(k.in(0))); });

} // namespace tessera::graph::ops
