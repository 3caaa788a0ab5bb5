// In-place concats: a Concat whose operands are contiguous slices of its output (every
// dimension before the axis is 1: a batch-1 channel concat in NCHW or NCHW[x]c) needs no copy
// when the groups that define the operands write them at their offsets in the output's
// buffer. SqueezeNet's eight Fire-module concats copied 4% of the model's time so. The memory
// plan places the operands (memory_plan.cpp); the group gets no task and no call.
#include <algorithm>
#include <set>

#include "tessera/graph/fusion.h"
#include "tessera/support/error.h"

namespace tessera::graph {

namespace {

/// Slices must start where the runtime's tensors may: on a 64-byte boundary.
constexpr int64_t kSliceAlignment = 64;

int64_t value_bytes(const Value& v) {
    return shape_numel(v.shape) * static_cast<int64_t>(dtype_size(v.dtype));
}

/// The byte offset of each operand of concat `n` in its output, then where the last one ends.
std::vector<int64_t> operand_offsets(const Graph& g, const Node& n) {
    std::vector<int64_t> offsets{0};
    for (ValueId v : n.inputs)
        offsets.push_back(offsets.back() + value_bytes(g.value(v)));
    return offsets;
}

/// The concat node of a group that is one Concat whose operands are contiguous slices of its
/// output, each at an aligned offset; nullptr otherwise.
const Node* sliced_concat(const Graph& g, const FusedGroup& group) {
    if (group.nodes.size() != 1)
        return nullptr;
    const Node& n = g.node(group.nodes[0]);
    if (n.op != Op::Concat || n.outputs.size() != 1 || n.inputs.empty())
        return nullptr;
    const Value& out = g.value(n.outputs[0]);
    if (!out.typed)
        return nullptr;
    const int64_t rank = static_cast<int64_t>(out.shape.size());
    int64_t axis = n.attr_int("axis", 0);
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis >= rank)
        return nullptr;
    for (int64_t d = 0; d < axis; ++d)
        if (out.shape[static_cast<size_t>(d)] != 1)
            return nullptr;
    for (ValueId v : n.inputs)
        if (!g.value(v).typed || g.value(v).dtype != out.dtype)
            return nullptr;
    const std::vector<int64_t> offsets = operand_offsets(g, n);
    for (size_t k = 0; k + 1 < offsets.size(); ++k)
        if (offsets[k] % kSliceAlignment != 0)
            return nullptr;
    return offsets.back() == value_bytes(out) ? &n : nullptr;
}

} // namespace

void mark_in_place_concats(const Graph& g, std::vector<FusedGroup>& groups) {
    std::set<ValueId> graph_values(g.inputs.begin(), g.inputs.end());
    graph_values.insert(g.outputs.begin(), g.outputs.end());
    // Which group defines each value, and whether that group is an in-place concat.
    std::vector<int> defined_by(g.num_values(), -1);
    for (size_t gi = 0; gi < groups.size(); ++gi)
        for (ValueId v : groups[gi].outputs)
            defined_by[v] = static_cast<int>(gi);
    std::set<ValueId> viewed; // operands already placed in some concat's output
    for (size_t gi = 0; gi < groups.size(); ++gi) {
        const Node* n = sliced_concat(g, groups[gi]);
        if (!n || graph_values.count(n->outputs[0]))
            continue;
        std::set<ValueId> seen;
        bool ok = true;
        for (ValueId v : n->inputs) {
            const int def = defined_by[v];
            ok = ok && !graph_values.count(v) && !g.value(v).is_constant() && def >= 0 &&
                 def < static_cast<int>(gi) && !groups[static_cast<size_t>(def)].in_place_concat &&
                 !viewed.count(v) && seen.insert(v).second;
        }
        if (!ok)
            continue;
        groups[gi].in_place_concat = true;
        viewed.insert(n->inputs.begin(), n->inputs.end());
    }
}

std::vector<int64_t> concat_view_offsets(const Graph& g, const FusedGroup& group) {
    TESSERA_CHECK(group.in_place_concat && group.nodes.size() == 1)
        << "concat_view_offsets of a group that is not an in-place concat";
    const Node& n = g.node(group.nodes[0]);
    TESSERA_CHECK(group.inputs == n.inputs) << "an in-place concat reads its operands in order";
    std::vector<int64_t> offsets = operand_offsets(g, n);
    offsets.pop_back(); // where the last operand ends
    return offsets;
}

} // namespace tessera::graph
