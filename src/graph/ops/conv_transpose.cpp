// ConvTranspose, the gradient of Conv with respect to its input (a U-Net decoder's upsampling).
// Canonical form: x [N, C, D...], w [C, M / group, K...], optional bias [M]; kernel_shape,
// strides, dilations, output_padding [S], pads [2S] (begin of each dim, then end), group, with
// S = 2 or 3 spatial dims. Import resolves auto_pad and output_shape into pads and
// output_padding with ONNX's rule
//   total_padding = stride * (in - 1) + output_padding + ((kernel - 1) * dilation + 1) - out
// (SAME_UPPER: the odd unit at the end, otherwise at the begin; SAME_* without output_shape:
// out = in * stride). An output_shape beyond the natural extent (negative total) pads nothing
// and extends output_padding, as onnxruntime does. Output extent per dim:
//   stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1 - pad_begin - pad_end.
// 1-D (3-D input) is lifted to 2-D at import like Conv (conv_pool.cpp, emit_lifted_1d). The
// kernel is te::conv_transpose_nd (a gather, one reduction stage), so fusion treats the op as
// a Conv: bias and activation epilogues fuse. The blocked layout pass leaves it NCHW.
#include <algorithm>

#include "../op_util.h"
#include "conv_pool.h"
#include "eval_util.h"
#include "node_kernel.h"
#include "node_types.h"
#include "op_import.h"
#include "tessera/te/window_nd.h"
#include "window_nd.h"

namespace tessera::graph::detail {

namespace {

/// The output shape of a canonical ConvTranspose node, checking the operands.
Shape conv_transpose_shape(const Node& n, const Shape& x, const Shape& w, const Shape* bias,
                           const std::string& where) {
    if ((x.size() != 4 && x.size() != 5) || w.size() != x.size())
        throw UserError() << where << ": X " << shape_str(x) << " and W " << shape_str(w)
                          << " must both have rank 4 or both rank 5";
    const size_t s = x.size() - 2;
    const int64_t G = n.attr_int("group", 1);
    if (G < 1 || x[1] % G != 0 || w[0] != x[1])
        throw UserError() << where << ": X " << shape_str(x) << " and W " << shape_str(w)
                          << " do not match group " << G << " (W is [C, M / group, kernel...])";
    const int64_t M = w[1] * G;
    if (bias && *bias != Shape{M})
        throw UserError() << where << ": B has shape " << shape_str(*bias) << ", expected [" << M
                          << "]";
    const std::vector<int64_t> wk(w.begin() + 2, w.end());
    const WindowNd win = window_nd_of(n, s, wk, where);
    if (win.kernel != wk)
        throw UserError() << where << ": kernel_shape " << shape_str(win.kernel)
                          << " differs from W " << shape_str(w);
    Shape out = {x[0], M};
    for (int64_t o : te::conv_transpose_output_dims({x.begin() + 2, x.end()}, wk, win.params(G))) {
        if (o < 1)
            throw UserError() << where << ": output extent " << o << " is not positive (X "
                              << shape_str(x) << ", pads " << shape_str(win.pads) << ")";
        out.push_back(o);
    }
    return out;
}

// The reference is the scatter form (each input element adds its weighted kernel window to the
// output), independent of the kernel's gather.
EvalOutputs eval_conv_transpose(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    const TensorData& w = require_input(in, 1, where);
    const TensorData* bias = in.size() > 2 ? in[2] : nullptr;
    require_f32(x, "X", where);
    require_f32(w, "W", where);
    if (bias)
        require_f32(*bias, "B", where);
    const Shape out_shape =
        conv_transpose_shape(n, x.shape(), w.shape(), bias ? &bias->shape() : nullptr, where);
    const size_t s = x.rank() - 2;
    const WindowNd win = window_nd_of(n, s, {w.shape().begin() + 2, w.shape().end()}, where);
    const int64_t N = x.shape()[0], C = x.shape()[1], M = out_shape[1], G = n.attr_int("group", 1);
    const int64_t Cg = C / G, Mg = M / G;
    const Shape in_dims(x.shape().begin() + 2, x.shape().end());
    const Shape out_dims(out_shape.begin() + 2, out_shape.end());
    const std::vector<int64_t> os = contiguous_strides(out_dims);
    int64_t in_size = 1, out_size = 1, k_size = 1;
    for (size_t d = 0; d < s; ++d)
        in_size *= in_dims[d], out_size *= out_dims[d], k_size *= win.kernel[d];
    std::vector<double> acc(static_cast<size_t>(N * M * out_size), 0.0);
    const float* px = x.data<float>();
    const float* pw = w.data<float>();
    std::vector<int64_t> ip(s), kp(s);
    for (int64_t b = 0; b < N; ++b)
        for (int64_t c = 0; c < C; ++c) {
            const int64_t g = c / Cg;
            for (int64_t i = 0; i < in_size; ++i) {
                for (size_t d = s, r = static_cast<size_t>(i); d-- > 0;)
                    ip[d] = static_cast<int64_t>(r) % in_dims[d], r /= in_dims[d];
                const double xv = px[(b * C + c) * in_size + i];
                for (int64_t k = 0; k < k_size; ++k) {
                    int64_t off = 0;
                    bool inside = true;
                    for (size_t d = s, r = static_cast<size_t>(k); d-- > 0;) {
                        kp[d] = static_cast<int64_t>(r) % win.kernel[d];
                        r /= static_cast<size_t>(win.kernel[d]);
                        const int64_t o =
                            ip[d] * win.stride[d] - win.pads[d] + kp[d] * win.dilation[d];
                        inside = inside && o >= 0 && o < out_dims[d];
                        off += o * os[d];
                    }
                    if (!inside)
                        continue;
                    for (int64_t m = 0; m < Mg; ++m)
                        acc[static_cast<size_t>((b * M + g * Mg + m) * out_size + off)] +=
                            xv * pw[(c * Mg + m) * k_size + k];
                }
            }
        }
    TensorData out(DType::F32, out_shape);
    float* po = out.data<float>();
    for (int64_t p = 0; p < N * M * out_size; ++p)
        po[p] = static_cast<float>(acc[static_cast<size_t>(p)] +
                                   (bias ? bias->data<float>()[(p / out_size) % M] : 0.0f));
    return {std::move(out)};
}

TypeList conv_transpose_types(const NodeTypes& t) {
    const Value& x = t.in(0, "X");
    const Value& w = t.in(1, "W");
    t.dtype(x, kF32, "X");
    t.dtype(w, kF32, "W");
    const Shape* bias = nullptr;
    if (t.has(2)) {
        t.dtype(t.in(2, "B"), kF32, "B");
        bias = &t.in(2, "B").shape;
    }
    return {{DType::F32, conv_transpose_shape(t.node(), x.shape, w.shape, bias, t.where())}};
}

void import_conv_transpose(OpImport& im) {
    const int64_t rank = im.input_rank(0);
    const Value& w = im.input_value(1);
    if (rank < 3 || rank > 5)
        im.fail("input '" + im.input_value(0).name + "' has shape " +
                shape_str(im.input_value(0).shape) +
                ": only 1-D, 2-D and 3-D (3-D to 5-D input) ConvTranspose is supported");
    if (static_cast<int64_t>(w.shape.size()) != rank)
        im.fail("weight '" + w.name + "' must have rank " + std::to_string(rank) + ", got shape " +
                shape_str(w.shape));
    const size_t s = static_cast<size_t>(rank - 2);
    const Node& src = im.source();
    const std::vector<int64_t> ones(s, 1), zeros(s, 0);
    const std::vector<int64_t> kernel =
        src.attr_ints("kernel_shape", std::vector<int64_t>(w.shape.begin() + 2, w.shape.end()));
    const std::vector<int64_t> strides = src.attr_ints("strides", ones);
    const std::vector<int64_t> dil = src.attr_ints("dilations", ones);
    std::vector<int64_t> out_pad = src.attr_ints("output_padding", zeros);
    const std::vector<int64_t> out_shape = src.attr_ints("output_shape");
    const std::string auto_pad = src.attr_string("auto_pad", "NOTSET");
    const std::string n = std::to_string(s);
    if (kernel.size() != s || strides.size() != s || dil.size() != s || out_pad.size() != s)
        im.fail("kernel_shape, strides, dilations and output_padding must have " + n +
                " values (one per spatial dim)");
    for (size_t d = 0; d < s; ++d)
        if (strides[d] < 1 || dil[d] < 1 || kernel[d] < 1 || out_pad[d] < 0)
            im.fail("kernel_shape, strides and dilations must be positive and output_padding "
                    "not negative");
    if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
        auto_pad != "SAME_LOWER")
        im.fail("unsupported auto_pad '" + auto_pad + "'");
    if (!out_shape.empty() && out_shape.size() != s)
        im.fail("output_shape has " + std::to_string(out_shape.size()) + " values, expected " + n);
    std::vector<int64_t> pads = src.attr_ints("pads", std::vector<int64_t>(2 * s, 0));
    if (auto_pad == "VALID")
        pads.assign(2 * s, 0);
    if (!out_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        for (size_t d = 0; d < s; ++d) {
            const int64_t in = im.input_value(0).shape[2 + d];
            const int64_t out = out_shape.empty() ? in * strides[d] : out_shape[d];
            const int64_t total =
                strides[d] * (in - 1) + out_pad[d] + (kernel[d] - 1) * dil[d] + 1 - out;
            if (total < 0) {
                pads[d] = pads[s + d] = 0;
                out_pad[d] -= total;
                continue;
            }
            const bool upper = auto_pad == "SAME_UPPER";
            pads[d] = upper ? total / 2 : total - total / 2;
            pads[s + d] = upper ? total - total / 2 : total / 2;
        }
    }
    if (pads.size() != 2 * s)
        im.fail("pads has " + std::to_string(pads.size()) + " values, expected " +
                std::to_string(2 * s));
    const int64_t group = src.attr_int("group", 1);
    if (s == 1) {
        emit_lifted_1d(im, {{"kernel_shape", Attribute::of_ints({1, kernel[0]})},
                            {"strides", Attribute::of_ints({1, strides[0]})},
                            {"dilations", Attribute::of_ints({1, dil[0]})},
                            {"pads", Attribute::of_ints({0, pads[0], 0, pads[1]})},
                            {"output_padding", Attribute::of_ints({0, out_pad[0]})},
                            {"group", Attribute::of_int(group)}});
        return;
    }
    im.set("kernel_shape", Attribute::of_ints(kernel));
    im.set("strides", Attribute::of_ints(strides));
    im.set("dilations", Attribute::of_ints(dil));
    im.set("pads", Attribute::of_ints(pads));
    im.set("output_padding", Attribute::of_ints(out_pad));
    im.set("group", Attribute::of_int(group));
}

void conv_transpose_kernel(NodeKernel& k) {
    const te::Tensor w = k.in(1);
    const size_t s = w.ndim() - 2;
    const WindowNd win =
        window_nd_of(k.node(), s, {w.shape().begin() + 2, w.shape().end()}, k.where());
    k.set(te::conv_transpose_nd(k.in(0), w, win.params(k.node().attr_int("group", 1)), k.opt_in(2),
                                s == 2 ? "conv_transpose2d" : "conv_transpose3d"));
}

using K = Attribute::Kind;

} // namespace

} // namespace tessera::graph::detail

namespace tessera::graph::ops {

using namespace detail;

const OpDef ConvTranspose = OpDef(Op::ConvTranspose)
                                .onnx(1, 2, 3, 1,
                                      {{"auto_pad", K::String},
                                       {"dilations", K::Ints},
                                       {"group", K::Int},
                                       {"kernel_shape", K::Ints},
                                       {"output_padding", K::Ints},
                                       {"output_shape", K::Ints},
                                       {"pads", K::Ints},
                                       {"strides", K::Ints}})
                                .import_with(import_conv_transpose)
                                .types(conv_transpose_types)
                                .eval(eval_conv_transpose)
                                .fuses_as(FusionKind::OutFusable)
                                .named("conv_transpose")
                                .builds(conv_transpose_kernel);

} // namespace tessera::graph::ops
