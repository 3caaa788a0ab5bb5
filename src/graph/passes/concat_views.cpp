// In-place operands: a Concat whose operands are contiguous slices of its output (every
// dimension before the axis is 1: a batch-1 channel concat in NCHW or NCHW[x]c) needs no copy
// when the groups that define the operands write them at their offsets in the output's
// buffer. SqueezeNet's eight Fire-module concats copied 4% of the model's time so. A
// PackU8Words without padding whose words come in its input's channel blocks is the same
// bytes read as words (the input of an 8-bit 1x1 conv): its operand lives in its output the
// same way (int8 MobileNetV2 copied 17 of them, 0.05 ms of 2.6 at 1 thread). The memory plan
// places the operands (memory_plan.cpp); the group gets no task and no call.
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

/// The byte offset of each operand of `n` laid end to end, then where the last one ends.
std::vector<int64_t> operand_offsets(const Graph& g, const Node& n) {
    std::vector<int64_t> offsets{0};
    for (ValueId v : n.inputs)
        offsets.push_back(offsets.back() + value_bytes(g.value(v)));
    return offsets;
}

/// Whether n is a PackU8Words whose output is its input's bytes: no padding, and words in
/// blocks of the input's channel block ([N, CB, H, W, xb] bytes as [N, CB, H, W, xb / 4]).
bool reinterpreting_pack(const Graph& g, const Node& n) {
    if (n.op != Op::PackU8Words || n.inputs.size() != 1 || n.outputs.size() != 1)
        return false;
    const Value& x = g.value(n.inputs[0]);
    if (!x.typed || x.shape.size() != 5)
        return false;
    for (int64_t p : n.attr_ints("pads", {0, 0, 0, 0}))
        if (p != 0)
            return false;
    return n.attr_int("words_block", x.shape[4]) == x.shape[4];
}

/// The node of a group that is one node whose operands lie end to end in its output, each at
/// an aligned offset (a Concat on contiguous slices, a reinterpreting PackU8Words); nullptr
/// otherwise.
const Node* in_place_node(const Graph& g, const FusedGroup& group) {
    if (group.nodes.size() != 1)
        return nullptr;
    const Node& n = g.node(group.nodes[0]);
    if (n.outputs.size() != 1 || !g.value(n.outputs[0]).typed)
        return nullptr;
    const Value& out = g.value(n.outputs[0]);
    if (reinterpreting_pack(g, n))
        return operand_offsets(g, n).back() == value_bytes(out) ? &n : nullptr;
    if (n.op != Op::Concat || n.inputs.empty())
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

void mark_in_place_operands(const Graph& g, std::vector<FusedGroup>& groups) {
    std::set<ValueId> graph_values(g.inputs.begin(), g.inputs.end());
    graph_values.insert(g.outputs.begin(), g.outputs.end());
    // Which group defines each value, and whether that group keeps its operands in place.
    std::vector<int> defined_by(g.num_values(), -1);
    for (size_t gi = 0; gi < groups.size(); ++gi)
        for (ValueId v : groups[gi].outputs)
            defined_by[v] = static_cast<int>(gi);
    std::set<ValueId> viewed; // operands already placed in some concat's output
    for (size_t gi = 0; gi < groups.size(); ++gi) {
        const Node* n = in_place_node(g, groups[gi]);
        if (!n || graph_values.count(n->outputs[0]))
            continue;
        std::set<ValueId> seen;
        bool ok = true;
        for (ValueId v : n->inputs) {
            const int def = defined_by[v];
            ok = ok && !graph_values.count(v) && !g.value(v).is_constant() && def >= 0 &&
                 def < static_cast<int>(gi) &&
                 !groups[static_cast<size_t>(def)].operands_in_place && !viewed.count(v) &&
                 seen.insert(v).second;
        }
        if (!ok)
            continue;
        groups[gi].operands_in_place = true;
        viewed.insert(n->inputs.begin(), n->inputs.end());
    }
}

std::vector<int64_t> operand_view_offsets(const Graph& g, const FusedGroup& group) {
    TESSERA_CHECK(group.operands_in_place && group.nodes.size() == 1)
        << "operand_view_offsets of a group whose operands are not in place";
    const Node& n = g.node(group.nodes[0]);
    TESSERA_CHECK(group.inputs == n.inputs) << "an in-place group reads its operands in order";
    std::vector<int64_t> offsets = operand_offsets(g, n);
    offsets.pop_back(); // where the last operand ends
    return offsets;
}

} // namespace tessera::graph
