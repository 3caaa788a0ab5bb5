// The quantized-ops pass: a QDQ model's DequantizeLinear -> Conv becomes the 8-bit QConv on
// the quantized operands themselves (passes.h states the pattern). The DequantizeLinear nodes
// stay for their other readers; dead ones go with dead-code elimination.
#include <cmath>
#include <sstream>

#include "../ops/quantized_conv.h"
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

// Conv(DQ(x u8, per tensor), DQ(w i8 constant, zero point 0, per tensor or per output channel),
// B?) -> QConv. Copies, not references: adding values below may move the graph's storage.
bool fold_conv(Graph& g, NodeId id) {
    const Node n = g.node(id);
    if (n.outputs.size() != 1 || n.inputs.size() < 2 || n.attr_int("group", 1) != 1)
        return false;
    Dequantized x, w;
    if (!dequantized(g, n.inputs[0], false, &x) || !dequantized(g, n.inputs[1], true, &w))
        return false;
    const Value xv = g.value(x.data);
    const Value wv = g.value(w.data);
    if (xv.dtype != DType::U8 || xv.shape.size() != 4 || x.scale.size() != 1 ||
        wv.dtype != DType::I8 || wv.shape.size() != 4 || !all_zero(w.zero_point))
        return false;
    const int64_t K = wv.shape[0];
    const int64_t per_k = static_cast<int64_t>(w.scale.size());
    if (per_k != 1 && w.scale_shape != Shape{K, 1, 1, 1})
        return false; // per-axis along another axis than the output channels
    const int64_t xzp = static_cast<int64_t>(x.zero_point[0]);
    // scale[k] = x_scale * w_scale[k] in f32, as the dequantized operands multiply.
    TensorData scale(DType::F32, {K}), offset(DType::I32, {K});
    const int64_t per_out = shape_numel(wv.shape) / K;
    const int8_t* pw = w.values->data<int8_t>();
    for (int64_t k = 0; k < K; ++k) {
        const float s =
            static_cast<float>(x.scale[0]) * static_cast<float>(w.scale[per_k == 1 ? 0 : k]);
        if (!(s > 0) || !std::isfinite(s))
            return false;
        scale.data<float>()[k] = s;
        int64_t wsum = 0;
        for (int64_t i = 0; i < per_out; ++i)
            wsum += pw[k * per_out + i];
        offset.data<int32_t>()[k] = static_cast<int32_t>(-xzp * wsum);
    }
    // The bias in accumulator units: an i32 bias dequantized by scale[k] adds exactly;
    // another bias (f32, or an i32 one of other scales) is rounded to the nearest unit,
    // an error of at most half of x_scale * w_scale[k].
    if (n.input(2) != kNoValue) {
        Dequantized b;
        if (dequantized(g, n.inputs[2], true, &b)) {
            const std::vector<double> q = b.values->as_f64();
            if (static_cast<int64_t>(q.size()) != K ||
                (b.scale.size() != 1 && static_cast<int64_t>(b.scale.size()) != K))
                return false;
            for (int64_t k = 0; k < K; ++k) {
                const double zp = b.zero_point[b.zero_point.size() == 1 ? 0 : k];
                const double sc = b.scale[b.scale.size() == 1 ? 0 : k];
                const float unit = scale.data<float>()[k];
                offset.data<int32_t>()[k] +=
                    zp == 0 && static_cast<float>(sc) == unit
                        ? static_cast<int32_t>(q[k])
                        : static_cast<int32_t>(std::nearbyint((q[k] - zp) * sc / unit));
            }
        } else {
            const Value bv = g.value(n.inputs[2]);
            if (!bv.is_constant() || bv.shape != Shape{K})
                return false;
            const std::vector<double> bias = bv.constant->as_f64();
            for (int64_t k = 0; k < K; ++k) {
                const double units = std::nearbyint(bias[k] / scale.data<float>()[k]);
                if (std::fabs(units) > 1 << 30)
                    return false;
                offset.data<int32_t>()[k] += static_cast<int32_t>(units);
            }
        }
    }
    Attributes attrs;
    for (const char* key : {"kernel_shape", "strides", "dilations", "pads"})
        if (n.has_attr(key))
            attrs[key] = n.attrs.at(key);
    attrs["x_zero_point"] = Attribute::of_int(xzp);
    const std::string base = g.value(n.outputs[0]).name;
    const ValueId off = g.add_constant(base + "_qoffset", std::move(offset));
    const ValueId sc = g.add_constant(base + "_qscale", std::move(scale));
    replace_node(g, id, Op::QConv, {x.data, w.data, off, sc}, std::move(attrs));
    return true;
}

} // namespace

PassResult fold_quantized_ops(Graph& g) {
    PassResult r = begin_pass("quantized-ops", g);
    int convs = 0;
    for (NodeId id : g.topological_order())
        if (g.is_live(id) && g.node(id).op == Op::Conv)
            convs += fold_conv(g, id);
    r.changes = convs;
    std::ostringstream os;
    os << convs << " convs to 8-bit QConv";
    return end_pass(r, g, os.str());
}

} // namespace tessera::graph
