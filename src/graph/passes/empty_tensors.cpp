// Empty tensors: values with a zero extent hold no data, so no kernel computes or reads them.
// Their content is known at compile time (nothing), which makes them constants; the nodes
// they feed fold or lose them. Kernels (te) then never see a zero extent.
#include <sstream>

#include "../op_util.h"
#include "pass_util.h"
#include "tessera/graph/evaluate.h"

namespace tessera::graph {

using namespace detail;

namespace {

bool is_empty(const Value& v) { return v.typed && shape_numel(v.shape) == 0; }

// Replaces a non-constant empty value's uses by an empty constant of its type.
void make_constant(Graph& g, ValueId v) {
    const Value& val = g.value(v);
    const ValueId c = g.add_constant(val.name, TensorData(val.dtype, val.shape));
    g.replace_all_uses(v, c);
}

// Split with some empty parts: those become constants, the node splits into the others. The
// sizes of the parts kept are their extents (the sizes operand may not be folded yet).
void drop_empty_parts(Graph& g, NodeId id) {
    const Node n = g.node(id);
    const int64_t rank = static_cast<int64_t>(g.value(n.inputs[0]).shape.size());
    const int64_t axis = normalize_axis(n.attr_int("axis", 0), rank, "empty-tensors");
    std::vector<ValueId> outputs;
    std::vector<int64_t> kept;
    for (ValueId v : n.outputs)
        if (!is_empty(g.value(v))) {
            outputs.push_back(v);
            kept.push_back(g.value(v).shape.at(static_cast<size_t>(axis)));
        }
    g.remove_node(id);
    for (ValueId v : n.outputs)
        if (is_empty(g.value(v)))
            make_constant(g, v);
    const std::string sizes_name = n.name.empty() ? "split" : n.name;
    const ValueId sizes =
        g.add_constant(sizes_name + "/nonempty_sizes",
                       TensorData::from_vector<int64_t>({static_cast<int64_t>(kept.size())}, kept));
    g.add_node(Op::Split, {n.inputs[0], sizes}, outputs, n.attrs, n.name);
}

} // namespace

bool has_empty_values(const Graph& g) {
    for (ValueId v : g.inputs)
        if (is_empty(g.value(v)))
            return true;
    for (NodeId id : g.node_ids())
        for (ValueId v : g.node(id).outputs)
            if (v != kNoValue && is_empty(g.value(v)))
                return true;
    return false;
}

PassResult drop_empty_tensors(Graph& g) {
    PassResult r = begin_pass("empty-tensors", g);
    int folded = 0, dropped = 0;
    for (ValueId v : g.inputs)
        if (is_empty(g.value(v))) {
            make_constant(g, v);
            ++r.changes;
        }
    for (NodeId id : g.topological_order()) {
        const Node& n = g.node(id);
        bool outputs_empty = true, any_output_empty = false, empty_input = false;
        bool all_const = true;
        for (ValueId v : n.outputs) {
            outputs_empty = outputs_empty && is_empty(g.value(v));
            any_output_empty = any_output_empty || is_empty(g.value(v));
        }
        for (ValueId v : n.inputs) {
            if (v == kNoValue)
                continue;
            empty_input = empty_input || is_empty(g.value(v));
            all_const = all_const && g.value(v).is_constant();
        }
        if (outputs_empty) {
            std::vector<TensorData> outs;
            for (ValueId v : n.outputs)
                outs.emplace_back(g.value(v).dtype, g.value(v).shape);
            replace_by_constants(g, id, std::move(outs));
            ++folded;
        } else if (empty_input && all_const) {
            // Reductions of empty sets and the like: the evaluator knows their identities.
            std::vector<const TensorData*> ins;
            for (ValueId v : n.inputs)
                ins.push_back(v == kNoValue ? nullptr : g.value(v).constant.get());
            std::vector<TensorData> outs = evaluate_node(n, ins, id);
            replace_by_constants(g, id, std::move(outs));
            ++folded;
        } else if (empty_input && n.op == Op::Concat) {
            std::vector<ValueId> kept;
            for (ValueId v : n.inputs)
                if (!is_empty(g.value(v)))
                    kept.push_back(v);
            g.node(id).inputs = kept;
            ++dropped;
        } else if (any_output_empty && n.op == Op::Split) {
            drop_empty_parts(g, id);
            ++dropped;
        }
    }
    r.changes += folded + dropped;
    std::ostringstream s;
    s << "folded " << folded << " nodes with empty tensors into constants, dropped empty operands"
      << " of " << dropped;
    return end_pass(r, g, s.str());
}

} // namespace tessera::graph
