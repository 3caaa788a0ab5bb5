// NCHW[x]c conversions, the reference kernels and the shape rules of the blocked-layout ops.
#include "blocked_layout.h"

#include <cstring>
#include <optional>

#include "../op_util.h"
#include "conv_pool.h"
#include "node_kernel.h"
#include "node_types.h"
#include "tessera/te/op_library.h"

namespace tessera::graph::detail {

int64_t channel_blocks(int64_t channels, int64_t block) { return ceil_div(channels, block); }

TensorData to_blocked(const TensorData& x, int64_t block) {
    TESSERA_CHECK(x.rank() == 4 && block > 0) << "to_blocked of " << shape_str(x.shape());
    const int64_t N = x.shape()[0], C = x.shape()[1], HW = x.shape()[2] * x.shape()[3];
    const int64_t CB = channel_blocks(C, block);
    TensorData out(x.dtype(), {N, CB, x.shape()[2], x.shape()[3], block});
    const size_t es = dtype_size(x.dtype());
    const uint8_t* src = x.raw();
    uint8_t* dst = out.raw();
    for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
            const uint8_t* plane = src + static_cast<size_t>((n * C + c) * HW) * es;
            uint8_t* base =
                dst + static_cast<size_t>(((n * CB + c / block) * HW) * block + c % block) * es;
            for (int64_t p = 0; p < HW; ++p)
                std::memcpy(base + static_cast<size_t>(p * block) * es, plane + p * es, es);
        }
    return out;
}

TensorData from_blocked(const TensorData& x, int64_t channels) {
    TESSERA_CHECK(x.rank() == 5 && channels <= x.shape()[1] * x.shape()[4])
        << "from_blocked of " << shape_str(x.shape()) << " to " << channels << " channels";
    const int64_t N = x.shape()[0], CB = x.shape()[1], block = x.shape()[4];
    const int64_t HW = x.shape()[2] * x.shape()[3];
    TensorData out(x.dtype(), {N, channels, x.shape()[2], x.shape()[3]});
    const size_t es = dtype_size(x.dtype());
    const uint8_t* src = x.raw();
    uint8_t* dst = out.raw();
    for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < channels; ++c) {
            uint8_t* plane = dst + static_cast<size_t>((n * channels + c) * HW) * es;
            const uint8_t* base =
                src + static_cast<size_t>(((n * CB + c / block) * HW) * block + c % block) * es;
            for (int64_t p = 0; p < HW; ++p)
                std::memcpy(plane + p * es, base + static_cast<size_t>(p * block) * es, es);
        }
    return out;
}

TensorData block_conv_weight(const TensorData& w, int64_t block, bool depthwise, int64_t in_block) {
    TESSERA_CHECK(w.rank() == 4 && w.dtype() == DType::F32)
        << "conv weight " << shape_str(w.shape());
    const int64_t K = w.shape()[0], C = w.shape()[1], R = w.shape()[2], S = w.shape()[3];
    const int64_t KB = channel_blocks(K, block);
    const int64_t xc = depthwise ? 1 : in_block > 0 ? in_block : block;
    const int64_t CB = depthwise ? 1 : channel_blocks(C, xc);
    TensorData out(DType::F32, {KB, CB, R, S, xc, block});
    const float* src = w.data<float>();
    float* dst = out.data<float>();
    for (int64_t k = 0; k < K; ++k)
        for (int64_t c = 0; c < C; ++c)
            for (int64_t r = 0; r < R; ++r)
                for (int64_t s = 0; s < S; ++s) {
                    const int64_t cb = depthwise ? 0 : c / xc, ci = depthwise ? 0 : c % xc;
                    dst[((((k / block) * CB + cb) * R + r) * S + s) * xc * block + ci * block +
                        k % block] = src[((k * C + c) * R + r) * S + s];
                }
    return out;
}

TensorData block_diagonal_conv_weight(const TensorData& w, int64_t block) {
    TESSERA_CHECK(w.rank() == 4 && w.dtype() == DType::F32)
        << "conv weight " << shape_str(w.shape());
    const int64_t K = w.shape()[0], width = w.shape()[1], R = w.shape()[2], S = w.shape()[3];
    TESSERA_CHECK(width > 0 && block % width == 0)
        << "groups of " << width << " channels do not divide blocks of " << block;
    const int64_t KB = channel_blocks(K, block);
    TensorData out(DType::F32, {KB, 1, R, S, block, block});
    const float* src = w.data<float>();
    float* dst = out.data<float>();
    for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < width; ++j) {
            // Input channel c = (k / width) * width + j lies in k's block: width divides it.
            const int64_t ci = ((k / width) * width + j) % block;
            for (int64_t r = 0; r < R; ++r)
                for (int64_t s = 0; s < S; ++s)
                    dst[(((k / block) * R + r) * S + s) * block * block + ci * block + k % block] =
                        src[((k * width + j) * R + r) * S + s];
        }
    return out;
}

TensorData unblock_conv_weight(const TensorData& w, bool depthwise) {
    TESSERA_CHECK(w.rank() == 6 && w.dtype() == DType::F32)
        << "blocked weight " << shape_str(w.shape());
    const int64_t KB = w.shape()[0], CB = w.shape()[1], R = w.shape()[2], S = w.shape()[3];
    const int64_t xc = w.shape()[4], block = w.shape()[5];
    const int64_t K = KB * block, C = depthwise ? 1 : CB * xc;
    TensorData out(DType::F32, {K, C, R, S});
    const float* src = w.data<float>();
    float* dst = out.data<float>();
    for (int64_t k = 0; k < K; ++k)
        for (int64_t c = 0; c < C; ++c)
            for (int64_t r = 0; r < R; ++r)
                for (int64_t s = 0; s < S; ++s)
                    dst[((k * C + c) * R + r) * S + s] =
                        src[((((k / block) * CB + c / xc) * R + r) * S + s) * xc * block +
                            (c % xc) * block + k % block];
    return out;
}

TensorData block_channel_vector(const TensorData& v, int64_t block) {
    const int64_t K = v.numel();
    const int64_t KB = channel_blocks(K, block);
    TensorData out(v.dtype(), {KB, block});
    const size_t es = dtype_size(v.dtype());
    std::memcpy(out.raw(), v.raw(), static_cast<size_t>(K) * es);
    return out;
}

namespace {

int64_t block_attr(const Node& n, const std::string& where) {
    const int64_t block = n.attr_int("block", 0);
    if (block < 1)
        throw UserError() << where << ": block " << block << " must be positive";
    return block;
}

void require_rank_of(const Shape& s, size_t rank, const char* what, const std::string& where) {
    if (s.size() != rank)
        throw UserError() << where << ": " << what << " must have rank " << rank << ", got "
                          << shape_str(s);
}

// The NCHW Conv node equivalent to a ConvBlocked node on its unblocked operands.
Node plain_conv(const Node& n, int64_t channels) {
    Node conv;
    conv.op = Op::Conv;
    conv.name = n.name;
    for (const char* key : {"kernel_shape", "strides", "dilations", "pads"})
        if (n.has_attr(key))
            conv.attrs[key] = n.attrs.at(key);
    conv.attrs["group"] =
        Attribute::of_int(n.attr_int("depthwise", 0) ? channels : n.attr_int("groups", 1));
    return conv;
}

EvalOutputs eval_layout_to_blocked(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    require_rank_of(x.shape(), 4, "X", where);
    return {to_blocked(x, block_attr(n, where))};
}

EvalOutputs eval_layout_from_blocked(const Node& n, const EvalInputs& in,
                                     const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    require_rank_of(x.shape(), 5, "X", where);
    const int64_t block = block_attr(n, where), channels = n.attr_int("channels", 0);
    if (x.shape()[4] != block || channels < 1 || channels > x.shape()[1] * block)
        throw UserError() << where << ": X " << shape_str(x.shape()) << " does not hold "
                          << channels << " channels in blocks of " << block;
    return {from_blocked(x, channels)};
}

EvalOutputs eval_conv_blocked(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    const TensorData& w = require_input(in, 1, where);
    const TensorData* bias = in.size() > 2 ? in[2] : nullptr;
    std::vector<const Value*> types;
    std::vector<Value> vals(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
        if (!in[i]) {
            types.push_back(nullptr);
            continue;
        }
        vals[i].dtype = in[i]->dtype();
        vals[i].shape = in[i]->shape();
        vals[i].typed = true;
        types.push_back(&vals[i]);
    }
    blocked_layout_types(n, types, where); // validates the operands
    // The blocked conv is the NCHW conv of the unblocked operands (padding channels included,
    // whose weights are 0), laid out again: the evaluator stays one proven conv kernel.
    const bool depthwise = n.attr_int("depthwise", 0) != 0;
    const int64_t channels = x.shape()[1] * x.shape()[4];
    const TensorData xn = from_blocked(x, channels);
    const TensorData wn = unblock_conv_weight(w, depthwise);
    std::optional<TensorData> bn;
    if (bias)
        bn = bias->reshaped({bias->numel()});
    EvalInputs conv_in = {&xn, &wn};
    if (bn)
        conv_in.push_back(&*bn);
    EvalOutputs y = op_def(Op::Conv).evaluate(plain_conv(n, channels), conv_in, where);
    return {to_blocked(y[0], block_attr(n, where))};
}

EvalOutputs eval_pool_blocked(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    require_rank_of(x.shape(), 5, "X", where);
    const int64_t block = block_attr(n, where);
    if (x.shape()[4] != block)
        throw UserError() << where << ": X " << shape_str(x.shape()) << " is not in blocks of "
                          << block;
    // Pooling never mixes channels: the NCHW pool of every channel (padding ones included,
    // which stay 0), laid out again.
    Node pool = n;
    pool.op = n.op == Op::MaxPoolBlocked ? Op::MaxPool : Op::AveragePool;
    pool.attrs.erase("block");
    const TensorData xn = from_blocked(x, x.shape()[1] * block);
    EvalOutputs y = op_def(pool.op).evaluate(pool, {&xn}, where);
    return {to_blocked(y[0], block)};
}

} // namespace

std::vector<std::pair<DType, Shape>> blocked_layout_types(const Node& n,
                                                          const std::vector<const Value*>& inputs,
                                                          const std::string& where) {
    auto input = [&](size_t i, const char* what) -> const Value& {
        if (i >= inputs.size() || !inputs[i])
            throw UserError() << where << ": input " << i << " (" << what << ") is missing";
        return *inputs[i];
    };
    const int64_t block = block_attr(n, where);
    const Value& x = input(0, "X");
    switch (n.op) {
    case Op::LayoutToBlocked:
        require_rank_of(x.shape, 4, "X", where);
        return {{x.dtype,
                 {x.shape[0], channel_blocks(x.shape[1], block), x.shape[2], x.shape[3], block}}};
    case Op::LayoutFromBlocked: {
        require_rank_of(x.shape, 5, "X", where);
        const int64_t channels = n.attr_int("channels", 0);
        if (x.shape[4] != block || channels < 1 || channels > x.shape[1] * block ||
            channel_blocks(channels, block) != x.shape[1])
            throw UserError() << where << ": X " << shape_str(x.shape) << " does not hold "
                              << channels << " channels in blocks of " << block;
        return {{x.dtype, {x.shape[0], channels, x.shape[2], x.shape[3]}}};
    }
    case Op::ConvBlocked: {
        const Value& w = input(1, "W");
        if (x.dtype != DType::F32 || w.dtype != DType::F32)
            throw UserError() << where << ": X and W must be f32";
        require_rank_of(x.shape, 5, "X", where);
        require_rank_of(w.shape, 6, "W", where);
        const bool depthwise = n.attr_int("depthwise", 0) != 0;
        const int64_t CB = x.shape[1], KB = w.shape[0], groups = n.attr_int("groups", 1);
        // The input block may differ from `block` (a conv on an image's few channels). Groups
        // hold whole blocks: w.shape[1] input blocks and KB / groups output blocks each.
        const bool ok =
            w.shape[5] == block && groups >= 1 && (groups == 1 || !depthwise) &&
            (depthwise
                 ? (x.shape[4] == block && KB == CB && w.shape[1] == 1 && w.shape[4] == 1)
                 : (w.shape[1] * groups == CB && KB % groups == 0 && w.shape[4] == x.shape[4]));
        if (!ok)
            throw UserError() << where << ": X " << shape_str(x.shape) << " and W "
                              << shape_str(w.shape) << " do not match block " << block
                              << (depthwise ? " (depthwise)" : "")
                              << (groups != 1 ? " in " + std::to_string(groups) + " groups"
                                              : std::string());
        if (n.input(2) != kNoValue && inputs.size() > 2 && inputs[2]) {
            const Value& b = *inputs[2];
            if (b.dtype != DType::F32 || b.shape != Shape{KB, block})
                throw UserError() << where << ": B has shape " << shape_str(b.shape)
                                  << ", expected [" << KB << "," << block << "]";
        }
        Window2d win = window_of(n, {w.shape[2], w.shape[3]}, where);
        if (win.kernel[0] != w.shape[2] || win.kernel[1] != w.shape[3])
            throw UserError() << where << ": kernel_shape differs from W " << shape_str(w.shape);
        Shape out = {x.shape[0], KB, 0, 0, block};
        for (int d = 0; d < 2; ++d)
            out[2 + d] =
                window_output_dim(x.shape[2 + d], win.kernel[d], win.stride[d], win.dilation[d],
                                  win.pads[d], win.pads[2 + d], false, where);
        return {{DType::F32, out}};
    }
    case Op::MaxPoolBlocked:
    case Op::AveragePoolBlocked: {
        if (x.dtype != DType::F32 && (x.dtype != DType::U8 || n.op != Op::MaxPoolBlocked))
            throw UserError() << where << ": X must be f32"
                              << (n.op == Op::MaxPoolBlocked ? " or u8" : "");
        require_rank_of(x.shape, 5, "X", where);
        if (x.shape[4] != block)
            throw UserError() << where << ": X " << shape_str(x.shape) << " is not in blocks of "
                              << block;
        Window2d win = window_of(n, {0, 0}, where);
        Shape out = x.shape;
        for (int d = 0; d < 2; ++d)
            out[2 + d] =
                window_output_dim(x.shape[2 + d], win.kernel[d], win.stride[d], win.dilation[d],
                                  win.pads[d], win.pads[2 + d], win.ceil_mode, where);
        return {{x.dtype, out}};
    }
    default:
        break;
    }
    TESSERA_UNREACHABLE();
}

namespace {

TypeList blocked_types(const NodeTypes& t) {
    std::vector<const Value*> ins;
    for (size_t i = 0; i < t.num_inputs(); ++i)
        ins.push_back(t.has(i) ? &t.in(i, "input") : nullptr);
    return blocked_layout_types(t.node(), ins, t.where());
}

// Made by the layout pass only: no ONNX opset defines it.
OpDef blocked_op(Op op, EvalOutputs (*eval)(const Node&, const EvalInputs&, const std::string&),
                 FusionKind fusion, const char* name, void (*kernel)(NodeKernel&)) {
    return pass_made_op(op, 1, 3, blocked_types, eval, fusion, name, kernel);
}

} // namespace

} // namespace tessera::graph::detail

namespace tessera::graph::ops {

using namespace detail;

const OpDef LayoutToBlocked = blocked_op(
    Op::LayoutToBlocked, eval_layout_to_blocked, FusionKind::Injective, "to_nchwc",
    [](NodeKernel& k) { k.set(te::layout_to_nchwc(k.in(0), k.node().attr_int("block", 0))); });
const OpDef LayoutFromBlocked = blocked_op(
    Op::LayoutFromBlocked, eval_layout_from_blocked, FusionKind::Injective, "from_nchwc",
    [](NodeKernel& k) { k.set(te::layout_from_nchwc(k.in(0), k.node().attr_int("channels", 0))); });
const OpDef ConvBlocked = blocked_op(
    Op::ConvBlocked, eval_conv_blocked, FusionKind::OutFusable, "conv2d_nchwc", [](NodeKernel& k) {
        const te::Tensor w = k.in(1);
        te::Conv2dParams p = conv2d_params(k.node(), {w.shape()[2], w.shape()[3]}, k.where());
        p.groups = k.node().attr_int("groups", 1); // groups of whole blocks, not ONNX's `group`
        k.set(te::conv2d_nchwc(k.in(0), w, p, k.opt_in(2), k.node().attr_int("depthwise", 0) != 0));
    });
const OpDef MaxPoolBlocked =
    blocked_op(Op::MaxPoolBlocked, eval_pool_blocked, FusionKind::Reduction, "max_pool2d_nchwc",
               [](NodeKernel& k) {
                   k.set(te::max_pool2d_nchwc(k.in(0), pool2d_params(k.node(), k.where())));
               });
const OpDef AveragePoolBlocked =
    blocked_op(Op::AveragePoolBlocked, eval_pool_blocked, FusionKind::Reduction, "avg_pool2d_nchwc",
               [](NodeKernel& k) {
                   k.set(te::avg_pool2d_nchwc(k.in(0), pool2d_params(k.node(), k.where())));
               });

} // namespace tessera::graph::ops
