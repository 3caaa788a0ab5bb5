// The quantized-ops pass: a QDQ model's DequantizeLinear -> Conv becomes the 8-bit QConv on
// the quantized operands themselves, DQ -> MaxPool -> Q a MaxPool on the bytes (passes.h states
// the patterns). The DequantizeLinear nodes
// stay for their other readers; dead ones go with dead-code elimination.
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "../ops/quantized_conv.h"
#include "../ops/quantized_matmul.h"
#include "rewrite.h"

namespace tessera::graph {

using namespace detail;

namespace {

// A DequantizeLinear's operands when they are compile-time values (scale and zero point
// always; the data too when `constant_data`).
struct Dequantized {
    ValueId data = kNoValue;
    const TensorData* values = nullptr; // data's constant, when it is one
    std::vector<double> scale, zero_point;
    Shape scale_shape;
};

bool dequantized(const Graph& g, ValueId v, bool constant_data, Dequantized* out) {
    const Node* dq = producer_op(g, v, Op::DequantizeLinear);
    if (!dq || dq->inputs.size() != 3)
        return false;
    const Value& s = g.value(dq->input(1));
    const Value& zp = g.value(dq->input(2));
    if (!s.is_constant() || !zp.is_constant())
        return false;
    const Value& data = g.value(dq->input(0));
    if (constant_data && !data.is_constant())
        return false;
    out->data = dq->input(0);
    out->values = data.is_constant() ? &*data.constant : nullptr;
    out->scale = s.constant->as_f64();
    out->scale_shape = s.shape;
    out->zero_point = zp.constant->as_f64();
    return true;
}

bool all_zero(const std::vector<double>& v) {
    for (double x : v)
        if (x != 0)
            return false;
    return true;
}

// A product node's quantized operands: input 0 DequantizeLinear(u8, per tensor), input 1
// DequantizeLinear(an i8 constant of rank w_rank, zero point 0). False for anything else.
bool quantized_operands(const Graph& g, const Node& n, size_t w_rank, Dequantized* x,
                        Dequantized* w) {
    if (!dequantized(g, n.inputs[0], false, x) || !dequantized(g, n.inputs[1], true, w))
        return false;
    const Value& xv = g.value(x->data);
    const Value& wv = g.value(w->data);
    return xv.dtype == DType::U8 && !xv.shape.empty() && x->scale.size() == 1 &&
           wv.dtype == DType::I8 && wv.shape.size() == w_rank && all_zero(w->zero_point);
}

// The sum of each output's weights: output o's `count` weights lie at o * out_stride +
// i * in_stride of the i8 tensor w.
std::vector<int64_t> weight_sums(const TensorData& w, int64_t outputs, int64_t out_stride,
                                 int64_t in_stride, int64_t count) {
    std::vector<int64_t> sums(outputs, 0);
    const int8_t* pw = w.data<int8_t>();
    for (int64_t o = 0; o < outputs; ++o)
        for (int64_t i = 0; i < count; ++i)
            sums[o] += pw[o * out_stride + i * in_stride];
    return sums;
}

// The dequantization of an 8-bit product per output o: Scale[o] = x_scale * w_scale[o] in f32,
// as the dequantized operands multiply, and Offset[o] = -x_zero_point * sum(W[o]). False when
// a scale is not positive and finite.
bool product_params(const Dequantized& x, const std::vector<double>& w_scale,
                    const std::vector<int64_t>& wsum, TensorData* scale, TensorData* offset) {
    const int64_t n = static_cast<int64_t>(wsum.size());
    *scale = TensorData(DType::F32, {n});
    *offset = TensorData(DType::I32, {n});
    const auto xzp = static_cast<int64_t>(x.zero_point[0]);
    for (int64_t o = 0; o < n; ++o) {
        const float s = static_cast<float>(x.scale[0]) *
                        static_cast<float>(w_scale[w_scale.size() == 1 ? 0 : o]);
        if (!(s > 0) || !std::isfinite(s))
            return false;
        scale->data<float>()[o] = s;
        offset->data<int32_t>()[o] = static_cast<int32_t>(-xzp * wsum[o]);
    }
    return true;
}

// Adds bias (a graph value, [n] after dropping leading 1s) to offset in units of scale: an
// i32 bias dequantized by exactly scale[o] (what quantizers write) adds exactly; another
// (f32, or an i32 one of other scales) is rounded to the nearest unit, an error of at most
// half of scale[o]. False when the bias is not a constant of that form.
bool add_bias(const Graph& g, ValueId bias, const TensorData& scale, TensorData* offset) {
    const int64_t n = scale.numel();
    Dequantized b;
    std::vector<double> real; // the bias's value, when it is not exact in units
    std::vector<double> q;
    if (dequantized(g, bias, true, &b)) {
        q = b.values->as_f64();
        if (static_cast<int64_t>(q.size()) != n ||
            (b.scale.size() != 1 && static_cast<int64_t>(b.scale.size()) != n) ||
            (b.zero_point.size() != 1 && static_cast<int64_t>(b.zero_point.size()) != n))
            return false;
        for (int64_t o = 0; o < n; ++o) {
            const double zp = b.zero_point[b.zero_point.size() == 1 ? 0 : o];
            const double sc = b.scale[b.scale.size() == 1 ? 0 : o];
            real.push_back(zp == 0 && static_cast<float>(sc) == scale.data<float>()[o]
                               ? std::nan("") // exact: q[o] units
                               : (q[o] - zp) * sc);
        }
    } else {
        const Value& v = g.value(bias);
        if (!v.is_constant() || shape_numel(v.shape) != n || v.shape.empty() || v.shape.back() != n)
            return false;
        real = v.constant->as_f64();
    }
    for (int64_t o = 0; o < n; ++o) {
        const double units =
            std::isnan(real[o]) ? q[o] : std::nearbyint(real[o] / scale.data<float>()[o]);
        if (std::fabs(units) > 1 << 30)
            return false;
        offset->data<int32_t>()[o] += static_cast<int32_t>(units);
    }
    return true;
}

// MatMul(DQ(x u8, per tensor), DQ(w i8 constant [K, N], zero point 0, per tensor or per
// column)) -> QMatMul with the weights packed into words; Gemm (alpha and beta 1, transA 0,
// A of rank 2) likewise, its transB weights transposed and its C folded into the offset.
bool fold_matmul(Graph& g, NodeId id) {
    const Node n = g.node(id);
    const bool gemm = n.op == Op::Gemm;
    if (!is_plain_product(n))
        return false;
    const bool trans_b = gemm && n.attr_int("transB", 0) != 0;
    Dequantized x, w;
    if (!quantized_operands(g, n, 2, &x, &w))
        return false;
    const Value xv = g.value(x.data);
    const Value wv = g.value(w.data);
    const TensorData wkn = trans_b ? transposed_matrix(*w.values) : *w.values;
    const int64_t K = wkn.shape()[0], N = wkn.shape()[1];
    if (K != xv.shape.back() || (gemm && xv.shape.size() != 2))
        return false;
    // A scale per output: per column of [K, N], per row of transB's [N, K].
    if (w.scale.size() != 1 && w.scale_shape != (trans_b ? Shape{N, 1} : Shape{1, N}))
        return false;
    TensorData scale, offset;
    if (!product_params(x, w.scale, weight_sums(wkn, N, 1, N, K), &scale, &offset))
        return false;
    if (gemm && n.input(2) != kNoValue && !add_bias(g, n.inputs[2], scale, &offset))
        return false;
    const std::string base = g.value(n.outputs[0]).name;
    const ValueId words = g.add_constant(wv.name + "_words", pack_matmul_weight_words(wkn));
    const ValueId off = g.add_constant(base + "_qoffset", std::move(offset));
    const ValueId sc = g.add_constant(base + "_qscale", std::move(scale));
    replace_node(g, id, Op::QMatMul, {x.data, words, off, sc}, {});
    return true;
}

// MatMul(DQ(x u8, per tensor), DQ(y u8, per tensor)) of two computed operands of one rank >= 2,
// the same batch dimensions and an inner dimension that is a multiple of 4 (attention's
// products) -> QMatMulActivations on the bytes, scaled by x_scale * y_scale in f32.
bool fold_activation_matmul(Graph& g, NodeId id) {
    const Node n = g.node(id);
    if (n.op != Op::MatMul || !is_plain_product(n))
        return false;
    Dequantized x, y;
    if (!dequantized(g, n.inputs[0], false, &x) || !dequantized(g, n.inputs[1], false, &y) ||
        x.values || y.values || x.scale.size() != 1 || y.scale.size() != 1)
        return false;
    const Value xv = g.value(x.data);
    const Value yv = g.value(y.data);
    const size_t r = xv.shape.size();
    if (xv.dtype != DType::U8 || yv.dtype != DType::U8 || r < 2 || yv.shape.size() != r ||
        yv.shape[r - 2] != xv.shape[r - 1] || xv.shape[r - 1] % 4 != 0 ||
        !std::equal(xv.shape.begin(), xv.shape.end() - 2, yv.shape.begin()))
        return false;
    const float scale = static_cast<float>(x.scale[0]) * static_cast<float>(y.scale[0]);
    if (!(scale > 0) || !std::isfinite(scale))
        return false;
    const ValueId sc = g.add_constant(g.value(n.outputs[0]).name + "_qscale",
                                      TensorData::from_vector<float>({1}, {scale}));
    replace_node(g, id, Op::QMatMulActivations, {x.data, y.data, sc},
                 {{"x_zero_point", Attribute::of_int(static_cast<int64_t>(x.zero_point[0]))},
                  {"y_zero_point", Attribute::of_int(static_cast<int64_t>(y.zero_point[0]))}});
    return true;
}

// The largest magnitude below which every integer is exact in f32.
constexpr int64_t kExactInF32 = int64_t{1} << 24;

// Conv(DQ(x u8, per tensor), DQ(w i8 constant, zero point 0, per tensor or per output channel),
// B?) -> QConv, of group 1 or depthwise (group == C == K). A depthwise conv's blocked form sums
// in f32 (ops.def, QDepthwiseBlocked), so it folds only where that sum is exact: at most 513
// taps (each product below 2^15) and offsets below 2^24. Copies, not references: adding values
// below may move the graph's storage.
bool fold_conv(Graph& g, NodeId id) {
    const Node n = g.node(id);
    if (n.outputs.size() != 1 || n.inputs.size() < 2)
        return false;
    Dequantized x, w;
    if (!quantized_operands(g, n, 4, &x, &w) || g.value(x.data).shape.size() != 4)
        return false;
    const Value wv = g.value(w.data);
    const int64_t K = wv.shape[0];
    const int64_t group = n.attr_int("group", 1);
    const bool depthwise = group != 1;
    if (depthwise && !(group == g.value(x.data).shape[1] && group == K && wv.shape[1] == 1 &&
                       wv.shape[2] * wv.shape[3] * 255 * 128 < kExactInF32))
        return false;
    const int64_t per_k = static_cast<int64_t>(w.scale.size());
    if (per_k != 1 && w.scale_shape != Shape{K, 1, 1, 1})
        return false; // per-axis along another axis than the output channels
    const int64_t xzp = static_cast<int64_t>(x.zero_point[0]);
    const int64_t per_out = shape_numel(wv.shape) / K;
    TensorData scale, offset;
    if (!product_params(x, w.scale, weight_sums(*w.values, K, per_out, 1, per_out), &scale,
                        &offset))
        return false;
    if (n.input(2) != kNoValue && !add_bias(g, n.inputs[2], scale, &offset))
        return false;
    if (depthwise)
        for (int64_t o = 0; o < K; ++o)
            if (std::llabs(offset.data<int32_t>()[o]) > kExactInF32)
                return false;
    Attributes attrs;
    for (const char* key : {"kernel_shape", "strides", "dilations", "pads"})
        if (n.has_attr(key))
            attrs[key] = n.attrs.at(key);
    attrs["x_zero_point"] = Attribute::of_int(xzp);
    if (depthwise)
        attrs["group"] = Attribute::of_int(group);
    const std::string base = g.value(n.outputs[0]).name;
    const ValueId off = g.add_constant(base + "_qoffset", std::move(offset));
    const ValueId sc = g.add_constant(base + "_qscale", std::move(scale));
    replace_node(g, id, Op::QConv, {x.data, w.data, off, sc}, std::move(attrs));
    return true;
}

// QuantizeLinear(MaxPool(DQ(x u8, per tensor)), the same scale and zero point) -> MaxPool(x):
// dequantizing is increasing, so the maximum commutes with it, and quantizing a dequantized
// byte with its own parameters gives it back. The pool reads and writes bytes.
bool fold_max_pool(Graph& g, NodeId id) {
    const Node q = g.node(id);
    if (q.inputs.size() != 3 || q.outputs.size() != 1 || g.value(q.outputs[0]).dtype != DType::U8)
        return false;
    const Node* pool = producer_op(g, q.inputs[0], Op::MaxPool);
    Dequantized x;
    if (!pool || pool->outputs.size() != 1 || !dequantized(g, pool->inputs[0], false, &x) ||
        g.value(x.data).dtype != DType::U8 || x.scale.size() != 1)
        return false;
    double q_scale = 0, q_zero_point = 0;
    if (!constant_scalar(g, q.inputs[1], &q_scale) ||
        !constant_scalar(g, q.inputs[2], &q_zero_point) ||
        static_cast<float>(q_scale) != static_cast<float>(x.scale[0]) ||
        q_zero_point != x.zero_point[0])
        return false;
    const Attributes attrs = pool->attrs;
    replace_node(g, id, Op::MaxPool, {x.data}, attrs);
    return true;
}

// QuantizeLinear q (node id) made to read x with a unit scale (shaped as its scale), which its
// kernel does not divide by: what the two folds below leave once the scale has moved into x.
void quantize_with_unit_scale(Graph& g, NodeId id, const Node& q, ValueId x,
                              const std::string& base) {
    TensorData one(DType::F32, g.value(q.inputs[1]).shape);
    one.data<float>()[0] = 1.0f;
    const ValueId unit = g.add_constant(base + "_unit_scale", std::move(one));
    replace_node(g, id, Op::QuantizeLinear, {x, unit, q.inputs[2]}, q.attrs);
}

// QuantizeLinear(QConv, QMatMul or QMatMulActivations y, per-tensor scale s, zero point) where
// only the quantize reads y: the product's dequantizing scale becomes scale[o] / s and the
// quantize's scale 1. The requantization is then one multiply per output channel instead of
// a multiply and a division per element (MobileNetV2's 8-bit 1x1 convs, whose 16-96 channel
// sums leave the epilogue most of their time, ran 5% faster without the division). The
// rounding differs from dividing only where the scaled sum lies within an f32 ulp of a half
// step: one quantization step there.
bool fold_requantize(Graph& g, NodeId id) {
    const Node q = g.node(id);
    if (q.inputs.size() != 3 || q.outputs.size() != 1)
        return false;
    const NodeId pid = g.value(q.inputs[0]).producer;
    if (pid == kNoNode || use_count(g, q.inputs[0]) != 1)
        return false;
    const Node p = g.node(pid);
    // The scale is the last operand of each.
    const bool product = p.op == Op::QConv || p.op == Op::QMatMul || p.op == Op::QMatMulActivations;
    if (!product || p.inputs.size() != (p.op == Op::QMatMulActivations ? 3u : 4u))
        return false;
    double q_scale = 0;
    const Value& ps = g.value(p.inputs.back());
    if (!constant_scalar(g, q.inputs[1], &q_scale) || q_scale == 1.0 || !(q_scale > 0) ||
        !std::isfinite(q_scale) || !ps.is_constant() || ps.dtype != DType::F32)
        return false;
    TensorData scale = *ps.constant;
    for (int64_t o = 0; o < scale.numel(); ++o) {
        const float r = static_cast<float>(static_cast<double>(scale.data<float>()[o]) /
                                           static_cast<float>(q_scale));
        if (!(r > 0) || !std::isfinite(r))
            return false;
        scale.data<float>()[o] = r;
    }
    const std::string base = g.value(p.outputs[0]).name;
    std::vector<ValueId> inputs = p.inputs;
    inputs.back() = g.add_constant(base + "_requant_scale", std::move(scale));
    replace_node(g, pid, p.op, inputs, p.attrs);
    quantize_with_unit_scale(g, id, q, q.inputs[0], base);
    return true;
}

// QuantizeLinear(x f32, per-tensor constant scale s, zero point) -> QuantizeLinear(x * RN(1/s),
// 1, zero point): a multiply instead of a division per element (a vdivps costs several
// multiplies' time and, in a chain of quantize-dequantize pairs, its latency is the chain's).
// As in fold_requantize, the rounding differs from dividing only where x / s lies within an
// f32 ulp or so of a half step: one quantization step there.
bool fold_reciprocal_scale(Graph& g, NodeId id) {
    const Node q = g.node(id);
    double s = 0;
    if (q.inputs.size() != 3 || q.outputs.size() != 1 || !constant_scalar(g, q.inputs[1], &s) ||
        s == 1.0 || g.value(q.inputs[0]).dtype != DType::F32)
        return false;
    const float r = 1.0f / static_cast<float>(s);
    if (!(s > 0) || !std::isnormal(r))
        return false;
    TensorData reciprocal(DType::F32, g.value(q.inputs[1]).shape);
    reciprocal.data<float>()[0] = r;
    const std::string base = g.value(q.outputs[0]).name;
    const ValueId rc = g.add_constant(base + "_reciprocal_scale", std::move(reciprocal));
    const ValueId scaled = g.add_value(base + "/scaled", DType::F32, g.value(q.inputs[0]).shape);
    g.add_node(Op::Mul, {q.inputs[0], rc}, {scaled}, {}, q.name);
    quantize_with_unit_scale(g, id, q, scaled, base);
    return true;
}

// DequantizeLinear(QuantizeLinear(x f32, scale 1, zero point z), scale s, zero point z),
// per tensor, where only the dequantize reads the bytes (an 8-bit conv's output requantized
// before the residual Add that dequantizes it again): Clip(Round(x), lo - z, hi - z) * s, with
// lo..hi the byte type's range. The quantize's byte is saturate(round(x) + z) and the
// dequantize gives (byte - z) * s; round(x) clipped to lo - z..hi - z is that byte minus z, an
// integer below 2^8 that f32 holds exactly, so the values are the same to the bit (a NaN,
// which has no byte, stays NaN). The kernel's epilogue then stays in f32 instead of
// converting to i32, to bytes and back.
//
// Not where a user of the dequantized values also reads a value computed after x (position:
// each value's producer in a topological order, -1 for inputs and constants): that user
// cannot join x's kernel, so the pair's value crosses from one kernel to another, and as
// bytes it is a quarter of the f32 (int8 resnet50's first downsample conv wrote 3.2 MB of f32
// for the residual Add in the block's last conv).
bool fold_quantize_dequantize(Graph& g, NodeId id, const std::vector<int64_t>& position) {
    const Node dq = g.node(id);
    if (dq.inputs.size() != 3 || dq.outputs.size() != 1)
        return false;
    const Node* q = producer_op(g, dq.inputs[0], Op::QuantizeLinear);
    const ValueId bytes = dq.inputs[0];
    const DType t = g.value(bytes).dtype;
    if (!q || q->inputs.size() != 3 || q->outputs.size() != 1 || use_count(g, bytes) != 1 ||
        is_graph_output(g, bytes) || (t != DType::U8 && t != DType::I8) ||
        g.value(q->inputs[0]).dtype != DType::F32 || g.value(dq.outputs[0]).dtype != DType::F32)
        return false;
    auto at = [&](ValueId v) {
        return static_cast<size_t>(v) < position.size() ? position[static_cast<size_t>(v)] : -1;
    };
    if (read_beside_a_later_value(g, g.users(dq.outputs[0]), dq.outputs[0], at(q->inputs[0]), at))
        return false;
    double q_scale = 0, q_zero = 0, dq_scale = 0, dq_zero = 0;
    if (!constant_scalar(g, q->inputs[1], &q_scale) || q_scale != 1.0 ||
        !constant_scalar(g, q->inputs[2], &q_zero) ||
        !constant_scalar(g, dq.inputs[1], &dq_scale) ||
        !constant_scalar(g, dq.inputs[2], &dq_zero) || q_zero != dq_zero)
        return false;
    const double lo = t == DType::U8 ? 0 : -128, hi = t == DType::U8 ? 255 : 127;
    const ValueId x = q->inputs[0];
    const std::string base = g.value(bytes).name;
    const Shape shape = g.value(x).shape;
    const ValueId rounded = g.add_value(base + "/rounded", DType::F32, shape);
    g.add_node(Op::Round, {x}, {rounded}, {}, base + "/round");
    const ValueId low = g.add_constant(base + "_low", TensorData::scalar(float(lo - q_zero)));
    const ValueId high = g.add_constant(base + "_high", TensorData::scalar(float(hi - q_zero)));
    const ValueId clipped = g.add_value(base + "/clipped", DType::F32, shape);
    g.add_node(Op::Clip, {rounded, low, high}, {clipped}, {}, base + "/clip");
    replace_node(g, id, Op::Mul, {clipped, dq.inputs[1]}, {});
    return true;
}

} // namespace

PassResult fold_quantized_ops(Graph& g) {
    PassResult r = begin_pass("quantized-ops", g);
    int convs = 0, matmuls = 0, activation_matmuls = 0, pools = 0, requantized = 0, reciprocals = 0;
    for (NodeId id : g.topological_order()) {
        if (!g.is_live(id))
            continue;
        if (g.node(id).op == Op::Conv) {
            convs += fold_conv(g, id);
        } else if (g.node(id).op == Op::MatMul || g.node(id).op == Op::Gemm) {
            if (fold_matmul(g, id))
                ++matmuls;
            else
                activation_matmuls += fold_activation_matmul(g, id);
        } else if (g.node(id).op == Op::QuantizeLinear) {
            if (fold_max_pool(g, id))
                ++pools;
            else if (fold_requantize(g, id))
                ++requantized;
            else
                reciprocals += fold_reciprocal_scale(g, id);
        }
    }
    // After the folds above, which give quantizations a unit scale and may still read the
    // dequantized values they match.
    int pairs = 0;
    const std::vector<NodeId> topological = g.topological_order();
    std::vector<int64_t> position(g.num_values(), -1); // by ValueId
    for (size_t i = 0; i < topological.size(); ++i)
        for (ValueId v : g.node(topological[i]).outputs)
            position[static_cast<size_t>(v)] = static_cast<int64_t>(i);
    for (NodeId id : topological)
        if (g.is_live(id) && g.node(id).op == Op::DequantizeLinear)
            pairs += fold_quantize_dequantize(g, id, position);
    r.changes = convs + matmuls + activation_matmuls + pools + requantized + reciprocals + pairs;
    std::ostringstream os;
    os << convs << " convs to 8-bit QConv, " << matmuls << " matmuls to QMatMul, "
       << activation_matmuls << " to QMatMulActivations, " << pools << " max pools on bytes, "
       << requantized << " requantizations into their products, " << reciprocals
       << " quantizations by a reciprocal, " << pairs << " quantize-dequantize pairs in f32";
    return end_pass(r, g, os.str());
}

} // namespace tessera::graph
