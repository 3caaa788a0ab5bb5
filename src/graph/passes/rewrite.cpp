#include "rewrite.h"

namespace tessera::graph::detail {

NodeId replace_node(Graph& g, NodeId id, Op op, std::vector<ValueId> inputs, Attributes attrs) {
    const std::vector<ValueId> outs = g.node(id).outputs;
    const std::string name = g.node(id).name;
    g.remove_node(id);
    return g.add_node(op, std::move(inputs), outs, std::move(attrs), name);
}

int use_count(const Graph& g, ValueId v) {
    return static_cast<int>(g.users(v).size()) + (is_graph_output(g, v) ? 1 : 0);
}

bool forward_output(Graph& g, NodeId id, ValueId to) {
    const Node& n = g.node(id);
    const ValueId out = n.outputs.at(0);
    const Value& a = g.value(out);
    const Value& b = g.value(to);
    if (is_graph_output(g, out) || !a.typed || !b.typed || a.dtype != b.dtype || a.shape != b.shape)
        return false;
    for (size_t i = 1; i < n.outputs.size(); ++i)
        if (use_count(g, n.outputs[i]) != 0)
            return false;
    g.replace_all_uses(out, to);
    g.remove_node(id);
    return true;
}

} // namespace tessera::graph::detail
