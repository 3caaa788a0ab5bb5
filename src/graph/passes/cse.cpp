// Common-subexpression elimination: equal constants first (so that nodes reading copies of the
// same weights compare equal), then nodes with the same op, attributes and inputs, visited in
// topological order so that merging cascades down a duplicated subgraph in one sweep.
#include <cstring>
#include <map>
#include <sstream>
#include <unordered_map>

#include "pass_util.h"

namespace tessera::graph {

using namespace detail;

namespace {

uint64_t content_hash(const TensorData& t) {
    // FNV-1a style mixing over 8-byte words (then the tail bytes): weights are megabytes.
    uint64_t h = static_cast<uint64_t>(t.dtype()) + 0x9e3779b97f4a7c15ull;
    for (int64_t d : t.shape())
        h = (h ^ static_cast<uint64_t>(d)) * 0x100000001b3ull;
    const uint8_t* p = t.raw();
    const size_t n = t.nbytes(), words = n / 8;
    for (size_t i = 0; i < words; ++i) {
        uint64_t w;
        std::memcpy(&w, p + 8 * i, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (size_t i = 8 * words; i < n; ++i)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

// Every constant read by a live node or a graph output, each once, in ascending id order.
std::vector<ValueId> used_constants(const Graph& g) {
    std::vector<uint8_t> seen(g.num_values(), 0);
    auto mark = [&](ValueId v) {
        if (v != kNoValue && g.value(v).is_constant())
            seen[v] = 1;
    };
    for (NodeId id : g.node_ids())
        for (ValueId v : g.node(id).inputs)
            mark(v);
    for (ValueId v : g.outputs)
        mark(v);
    std::vector<ValueId> out;
    for (size_t v = 0; v < seen.size(); ++v)
        if (seen[v])
            out.push_back(static_cast<ValueId>(v));
    return out;
}

} // namespace

PassResult eliminate_common_subexpressions(Graph& g) {
    PassResult r = begin_pass("cse", g);
    int merged_constants = 0, merged_nodes = 0;

    // Constants are grouped by dtype and shape first, so only the bytes of constants that
    // share both are hashed (weights are large and mostly unique in shape).
    std::map<std::pair<DType, Shape>, std::vector<ValueId>> by_type;
    for (ValueId v : used_constants(g))
        by_type[{g.value(v).dtype, g.value(v).shape}].push_back(v);
    for (const auto& [type, group] : by_type) {
        if (group.size() < 2)
            continue;
        std::unordered_map<uint64_t, std::vector<ValueId>> constants;
        for (ValueId v : group) { // ascending ids: the first of equal constants stays
            const TensorData& t = *g.value(v).constant;
            std::vector<ValueId>& bucket = constants[content_hash(t)];
            ValueId same = kNoValue;
            for (ValueId c : bucket)
                if (*g.value(c).constant == t) {
                    same = c;
                    break;
                }
            if (same == kNoValue) {
                bucket.push_back(v);
            } else if (!is_graph_output(g, v)) { // keep distinct named outputs apart
                g.replace_all_uses(v, same);
                ++merged_constants;
            }
        }
    }

    std::unordered_map<uint64_t, std::vector<NodeId>> nodes;
    for (NodeId id : g.topological_order()) {
        const Node& n = g.node(id);
        uint64_t h = static_cast<uint64_t>(n.op) * 0x9e3779b97f4a7c15ull + n.outputs.size();
        for (ValueId v : n.inputs)
            h = (h ^ static_cast<uint64_t>(v + 2)) * 0x100000001b3ull;
        std::vector<NodeId>& bucket = nodes[h];
        NodeId same = kNoNode;
        for (NodeId c : bucket) {
            const Node& m = g.node(c);
            if (m.op == n.op && m.inputs == n.inputs && m.outputs.size() == n.outputs.size() &&
                m.attrs == n.attrs) {
                same = c;
                break;
            }
        }
        if (same == kNoNode) {
            bucket.push_back(id);
            continue;
        }
        bool output_clash = false;
        for (ValueId v : n.outputs)
            output_clash = output_clash || is_graph_output(g, v);
        if (output_clash)
            continue;
        const std::vector<ValueId> from = n.outputs, to = g.node(same).outputs;
        g.remove_node(id);
        for (size_t i = 0; i < from.size(); ++i)
            g.replace_all_uses(from[i], to[i]);
        ++merged_nodes;
    }
    r.changes = merged_constants + merged_nodes;
    std::ostringstream s;
    s << "merged " << merged_nodes << " nodes and " << merged_constants << " constants";
    return end_pass(r, g, s.str());
}

} // namespace tessera::graph
