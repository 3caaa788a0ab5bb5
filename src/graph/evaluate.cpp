// The evaluator's driver: each node by its op's evaluator (the table, ops/op_def.h), and the
// whole-graph run with liveness-based freeing.
#include "tessera/graph/evaluate.h"

#include "ops/op_def.h"

namespace tessera::graph {

using namespace detail;

std::vector<TensorData> evaluate_node(const Node& n, const std::vector<const TensorData*>& in,
                                      NodeId id) {
    const std::string where = describe_node(n, id);
    const size_t nout = n.outputs.size();
    EvalOutputs outs = op_def(n.op).evaluate(n, in, where);
    // Kernels with optional outputs (LayerNormalization) compute them all; keep what the node
    // declares.
    if (outs.size() > nout)
        outs.resize(nout);
    TESSERA_CHECK(outs.size() == nout)
        << where << " produced " << outs.size() << " outputs, the node has " << nout;
    return outs;
}

std::vector<TensorData> evaluate(const Graph& g, const std::vector<TensorData>& inputs) {
    if (inputs.size() != g.inputs.size())
        throw UserError() << "graph '" << g.name << "' takes " << g.inputs.size() << " inputs, got "
                          << inputs.size();
    std::vector<std::shared_ptr<const TensorData>> vals(g.num_values());
    for (size_t i = 0; i < inputs.size(); ++i) {
        const Value& v = g.value(g.inputs[i]);
        if (v.typed && (v.dtype != inputs[i].dtype() || v.shape != inputs[i].shape()))
            throw UserError() << "input '" << v.name << "' expects " << dtype_name(v.dtype)
                              << shape_str(v.shape) << ", got " << dtype_name(inputs[i].dtype())
                              << shape_str(inputs[i].shape());
        vals[g.inputs[i]] = std::make_shared<const TensorData>(inputs[i]);
    }
    for (size_t i = 0; i < g.num_values(); ++i)
        if (g.value(static_cast<ValueId>(i)).is_constant())
            vals[i] = g.value(static_cast<ValueId>(i)).constant;

    // Remaining reads per value; a computed value is freed when they reach zero.
    std::vector<int> reads(g.num_values(), 0);
    std::vector<NodeId> order = g.topological_order();
    for (NodeId id : order)
        for (ValueId v : g.node(id).inputs)
            if (v != kNoValue)
                ++reads[v];
    std::vector<bool> keep(g.num_values(), false);
    for (ValueId v : g.outputs)
        keep[v] = true;

    for (NodeId id : order) {
        const Node& n = g.node(id);
        std::vector<const TensorData*> ins;
        for (ValueId v : n.inputs) {
            if (v == kNoValue) {
                ins.push_back(nullptr);
                continue;
            }
            TESSERA_CHECK(vals[v] != nullptr) << describe_node(n, id) << " reads '"
                                              << g.value(v).name << "' before it is computed";
            ins.push_back(vals[v].get());
        }
        std::vector<TensorData> outs = evaluate_node(n, ins, id);
        for (size_t i = 0; i < outs.size(); ++i) {
            const Value& v = g.value(n.outputs[i]);
            TESSERA_CHECK(!v.typed || (v.dtype == outs[i].dtype() && v.shape == outs[i].shape()))
                << describe_node(n, id) << " output '" << v.name << "' is "
                << dtype_name(outs[i].dtype()) << shape_str(outs[i].shape())
                << " but its value says " << dtype_name(v.dtype) << shape_str(v.shape);
            if (reads[n.outputs[i]] > 0 || keep[n.outputs[i]])
                vals[n.outputs[i]] = std::make_shared<const TensorData>(std::move(outs[i]));
        }
        for (ValueId v : n.inputs)
            if (v != kNoValue && --reads[v] == 0 && !keep[v] && !g.value(v).is_constant())
                vals[v].reset();
    }
    std::vector<TensorData> result;
    for (ValueId v : g.outputs) {
        TESSERA_CHECK(vals[v] != nullptr)
            << "graph output '" << g.value(v).name << "' was not computed";
        result.push_back(*vals[v]);
    }
    return result;
}

} // namespace tessera::graph
