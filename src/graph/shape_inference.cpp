// Shape inference per op, and compile-time value propagation through small tensors.
#include "tessera/graph/shape_inference.h"

#include <algorithm>

#include "ops/node_types.h"
#include "tessera/graph/evaluate.h"

namespace tessera::graph {

using namespace detail;

namespace {

// The shapes of n's operands (all typed: shape inference visits producers first).
std::vector<Shape> input_shapes(const Graph& g, const Node& n) {
    std::vector<Shape> shapes;
    for (ValueId v : n.inputs) {
        TESSERA_CHECK(v != kNoValue && g.value(v).typed)
            << describe_node(n, kNoNode) << ": operand without a type";
        shapes.push_back(g.value(v).shape);
    }
    return shapes;
}

} // namespace

ShapeInferer::ShapeInferer(Graph& g) : g_(g) {}

const TensorData* ShapeInferer::known_value(ValueId v) const {
    if (v == kNoValue)
        return nullptr;
    const Value& val = g_.value(v);
    if (val.is_constant())
        return val.constant.get();
    return static_cast<size_t>(v) < known_.size() ? known_[v].get() : nullptr;
}

int ShapeInferer::infer(NodeId id) {
    const Node& n = g_.node(id);
    TypeList types = op_def(n.op).infer(NodeTypes(g_, n, id, *this));
    TESSERA_CHECK(types.size() >= n.outputs.size())
        << describe_node(n, id) << ": inferred " << types.size() << " outputs for "
        << n.outputs.size();
    int changed = 0;
    bool small = true;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
        Value& v = g_.value(n.outputs[i]);
        if (!v.typed || v.dtype != types[i].first || v.shape != types[i].second)
            ++changed;
        v.typed = true;
        v.dtype = types[i].first;
        v.shape = types[i].second;
        small = small && shape_numel(v.shape) <= kMaxStaticValueElements;
    }
    if (known_.size() < g_.num_values())
        known_.resize(g_.num_values());
    for (ValueId o : n.outputs)
        known_[o].reset();
    // Propagate compile-time values: Shape and Size need only their inputs' types
    // (OpDef::value_from_types); others all inputs.
    std::vector<const TensorData*> ins;
    bool all_known = true;
    for (ValueId v : n.inputs) {
        const TensorData* t = known_value(v);
        if (v != kNoValue && !t)
            all_known = false;
        ins.push_back(t);
    }
    const OpDef& def = op_def(n.op);
    if (def.value_from_types) {
        known_[n.outputs[0]] =
            std::make_shared<const TensorData>(def.value_from_types(n, input_shapes(g_, n)));
    } else if (all_known && small) {
        std::vector<TensorData> outs = evaluate_node(n, ins, id);
        for (size_t i = 0; i < outs.size(); ++i) {
            TESSERA_CHECK(outs[i].shape() == g_.value(n.outputs[i]).shape &&
                          outs[i].dtype() == g_.value(n.outputs[i]).dtype)
                << describe_node(n, id) << ": evaluated output " << i << " disagrees with its "
                << "inferred type";
            known_[n.outputs[i]] = std::make_shared<const TensorData>(std::move(outs[i]));
        }
    }
    return changed;
}

int infer_shapes(Graph& g) {
    for (ValueId v : g.inputs)
        if (!g.value(v).typed)
            throw UserError() << "graph input '" << g.value(v).name << "' has no static type";
    ShapeInferer inf(g);
    int changed = 0;
    for (NodeId id : g.topological_order())
        changed += inf.infer(id);
    return changed;
}

std::optional<TensorData> static_value(const Graph& g, ValueId v) {
    const Value& val = g.value(v);
    if (val.is_constant())
        return *val.constant;
    // Ancestors of v through small typed values, computed producers first.
    std::vector<std::shared_ptr<const TensorData>> known(g.num_values());
    std::vector<uint8_t> visiting(g.node_capacity(), 0);
    std::vector<std::pair<NodeId, size_t>> stack;
    auto small = [&](ValueId x) {
        const Value& xv = g.value(x);
        return xv.typed && shape_numel(xv.shape) <= kMaxStaticValueElements;
    };
    if (val.producer == kNoNode || !small(v))
        return std::nullopt;
    stack.push_back({val.producer, 0});
    visiting[val.producer] = 1;
    while (!stack.empty()) {
        auto& [id, next] = stack.back();
        const Node& n = g.node(id);
        const bool from_types = op_def(n.op).value_from_types != nullptr;
        if (!from_types && next < n.inputs.size()) {
            ValueId in = n.inputs[next++];
            if (in == kNoValue || g.value(in).is_constant())
                continue;
            NodeId p = g.value(in).producer;
            if (p != kNoNode && !visiting[p] && small(in)) {
                visiting[p] = 1;
                stack.push_back({p, 0});
            }
            continue;
        }
        // All inputs visited: evaluate when every one is known.
        std::vector<const TensorData*> ins;
        bool ok = true;
        for (ValueId in : n.inputs) {
            if (in == kNoValue) {
                ins.push_back(nullptr);
                continue;
            }
            const TensorData* t =
                g.value(in).is_constant() ? g.value(in).constant.get() : known[in].get();
            ok = ok && t != nullptr;
            ins.push_back(t);
        }
        bool outs_small = true;
        for (ValueId o : n.outputs)
            outs_small = outs_small && small(o);
        bool typed = true;
        for (ValueId in : n.inputs)
            typed = typed && in != kNoValue && g.value(in).typed;
        if (from_types && typed) {
            known[n.outputs[0]] = std::make_shared<const TensorData>(
                op_def(n.op).value_from_types(n, input_shapes(g, n)));
        } else if (!from_types && ok && outs_small) {
            std::vector<TensorData> outs = evaluate_node(n, ins, id);
            for (size_t i = 0; i < outs.size(); ++i)
                known[n.outputs[i]] = std::make_shared<const TensorData>(std::move(outs[i]));
        }
        stack.pop_back();
    }
    if (!known[v])
        return std::nullopt;
    return *known[v];
}

} // namespace tessera::graph
