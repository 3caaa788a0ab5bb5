#include "pass_util.h"

#include <algorithm>
#include <cstring>

namespace tessera::graph::detail {

bool is_constant_splat(const Graph& g, ValueId v, double x) {
    if (v == kNoValue || !g.value(v).is_constant())
        return false;
    const TensorData& t = *g.value(v).constant;
    if (t.dtype() == DType::Bool)
        return false;
    std::vector<double> e = t.as_f64();
    return std::all_of(e.begin(), e.end(), [x](double d) { return d == x; });
}

bool constant_scalar(const Graph& g, ValueId v, double* out) {
    if (v == kNoValue || !g.value(v).is_constant())
        return false;
    const TensorData& t = *g.value(v).constant;
    if (t.numel() != 1 || t.dtype() == DType::Bool)
        return false;
    *out = t.as_f64()[0];
    return true;
}

ValueId add_int64s(Graph& g, const std::string& name, std::vector<int64_t> v) {
    const int64_t n = static_cast<int64_t>(v.size());
    return g.add_constant(name, TensorData::from_vector<int64_t>({n}, std::move(v)));
}

ValueId add_slice(Graph& g, ValueId x, std::vector<int64_t> starts, std::vector<int64_t> ends,
                  std::vector<int64_t> axes, const std::string& name, std::optional<Shape> shape) {
    std::vector<ValueId> ins = {x, add_int64s(g, name + "/starts", std::move(starts)),
                                add_int64s(g, name + "/ends", std::move(ends)),
                                add_int64s(g, name + "/axes", std::move(axes))};
    const ValueId out =
        shape ? g.add_value(name, g.value(x).dtype, std::move(*shape)) : g.add_value(name);
    g.add_node(Op::Slice, std::move(ins), {out}, {}, name);
    return out;
}

bool is_graph_output(const Graph& g, ValueId v) {
    return std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
}

TensorData transposed_matrix(const TensorData& m) {
    TESSERA_CHECK(m.rank() == 2) << "transpose of a rank-" << m.rank() << " tensor";
    const int64_t R = m.shape()[0], C = m.shape()[1];
    const size_t e = dtype_size(m.dtype());
    TensorData t(m.dtype(), {C, R});
    const auto* src = static_cast<const uint8_t*>(m.raw());
    auto* dst = static_cast<uint8_t*>(t.raw());
    for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < C; ++c)
            std::memcpy(dst + (c * R + r) * e, src + (r * C + c) * e, e);
    return t;
}

bool is_plain_product(const Node& n) {
    const bool gemm = n.op == Op::Gemm;
    if ((n.op != Op::MatMul && !gemm) || n.outputs.size() != 1 || n.inputs.size() < 2 ||
        (!gemm && n.inputs.size() != 2))
        return false;
    return !gemm || (n.attr_float("alpha", 1.0f) == 1.0f && n.attr_float("beta", 1.0f) == 1.0f &&
                     n.attr_int("transA", 0) == 0);
}

void replace_by_constants(Graph& g, NodeId id, std::vector<TensorData> outs) {
    const Node n = g.node(id); // copy: the node is removed below
    g.remove_node(id);
    for (size_t i = 0; i < n.outputs.size(); ++i) {
        const ValueId old = n.outputs[i];
        const Value& ov = g.value(old);
        TESSERA_CHECK(!ov.typed || (ov.dtype == outs[i].dtype() && ov.shape == outs[i].shape()))
            << describe_node(n, id) << " folded to " << dtype_name(outs[i].dtype())
            << shape_str(outs[i].shape()) << " but its output " << ov.name << " is typed "
            << dtype_name(ov.dtype) << shape_str(ov.shape);
        const ValueId c = g.add_constant(ov.name, std::move(outs[i]));
        g.replace_all_uses(old, c);
    }
}

} // namespace tessera::graph::detail
