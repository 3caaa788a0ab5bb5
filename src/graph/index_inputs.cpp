// Model inputs that index into tensors (index_inputs.h).
#include "tessera/graph/index_inputs.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "tessera/graph/dtype.h"

namespace tessera::graph {

namespace {

/// Whether `n` passes its first input's values through unchanged (only their shape or their
/// integer width changes).
bool keeps_index_values(const Graph& g, const Node& n) {
    switch (n.op) {
    case Op::Reshape:
    case Op::Unsqueeze:
    case Op::Squeeze:
    case Op::Flatten:
    case Op::Identity:
        return true;
    case Op::Cast:
        return is_integer(g.value(n.input(0)).dtype) && is_integer(g.value(n.outputs[0]).dtype);
    default:
        return false;
    }
}

/// The graph input position `v` comes from through value-keeping nodes, or -1.
int64_t source_input(const Graph& g, ValueId v) {
    while (v != kNoValue) {
        const Value& val = g.value(v);
        if (val.is_constant())
            return -1;
        if (val.producer == kNoNode) {
            auto it = std::find(g.inputs.begin(), g.inputs.end(), v);
            return it == g.inputs.end() ? -1 : it - g.inputs.begin();
        }
        const Node& n = g.node(val.producer);
        if (!keeps_index_values(g, n))
            return -1;
        v = n.input(0);
    }
    return -1;
}

} // namespace

std::vector<IndexInput> index_inputs(const Graph& g) {
    std::map<size_t, IndexInput> strictest; // by input position: the smallest bound
    for (NodeId id : g.node_ids()) {
        const Node& n = g.node(id);
        if (n.op != Op::Gather && n.op != Op::GatherElements)
            continue;
        const ValueId data = n.input(0), indices = n.input(1);
        if (data == kNoValue || indices == kNoValue || !is_integer(g.value(indices).dtype))
            continue;
        const int64_t input = source_input(g, indices);
        if (input < 0)
            continue;
        const Shape& shape = g.value(data).shape;
        int64_t axis = n.attr_int("axis", 0);
        if (axis < 0)
            axis += static_cast<int64_t>(shape.size());
        if (axis < 0 || axis >= static_cast<int64_t>(shape.size()) ||
            shape[static_cast<size_t>(axis)] < 0)
            continue; // shape inference refuses such a node; nothing to check here
        const int64_t bound = shape[static_cast<size_t>(axis)];
        auto it = strictest.find(static_cast<size_t>(input));
        if (it != strictest.end() && it->second.bound <= bound)
            continue; // same bound: the first node in id order names it
        strictest[static_cast<size_t>(input)] = {static_cast<size_t>(input), bound,
                                                 fmt::format("{} (axis {} of '{}', {} long)",
                                                             describe_node(n, id), axis,
                                                             g.value(data).name, bound)};
    }
    std::vector<IndexInput> out;
    for (const auto& entry : strictest)
        out.push_back(entry.second);
    return out;
}

} // namespace tessera::graph
