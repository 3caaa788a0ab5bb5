// Constant folding: evaluates nodes whose inputs are all compile-time constants with the
// reference evaluator (the same code the tests trust), and Shape of statically shaped values.
#include <sstream>

#include "../op_util.h"
#include "pass_util.h"
#include "tessera/graph/evaluate.h"
#include "tessera/graph/shape_inference.h"

namespace tessera::graph {

using namespace detail;

namespace {

// Output elements of node n once typed; -1 when some output is untyped.
int64_t output_elements(const Graph& g, const Node& n) {
    int64_t total = 0;
    for (ValueId v : n.outputs) {
        if (!g.value(v).typed)
            return -1;
        total += shape_numel(g.value(v).shape);
    }
    return total;
}

} // namespace

PassResult fold_constants(Graph& g) {
    PassResult r = begin_pass("constant-folding", g);
    int folded_shape = 0;
    for (NodeId id : g.topological_order()) {
        const Node n = g.node(id); // copy: the node is removed below
        std::vector<TensorData> outs;
        if (n.op == Op::Shape) {
            const Value& x = g.value(n.inputs.at(0));
            if (!x.typed)
                continue;
            // Shape only reads its input's type: no need to materialize the input.
            const auto [start, end] = shape_range(n, static_cast<int64_t>(x.shape.size()));
            const std::vector<int64_t> dims(x.shape.begin() + start, x.shape.begin() + end);
            outs.push_back(TensorData::from_vector<int64_t>({end - start}, dims));
            ++folded_shape;
        } else if (n.op == Op::Size) {
            // Size, like Shape, only reads its input's type.
            const Value& x = g.value(n.inputs.at(0));
            if (!x.typed)
                continue;
            outs.push_back(TensorData::scalar<int64_t>(shape_numel(x.shape)));
            ++folded_shape;
        } else {
            bool all_const = !n.inputs.empty() || n.op == Op::Constant;
            std::vector<const TensorData*> ins;
            for (ValueId v : n.inputs) {
                if (v == kNoValue) {
                    ins.push_back(nullptr);
                    continue;
                }
                if (!g.value(v).is_constant()) {
                    all_const = false;
                    break;
                }
                ins.push_back(g.value(v).constant.get());
            }
            if (!all_const)
                continue;
            const int64_t elems = output_elements(g, n);
            if (elems < 0 || elems > kMaxFoldElements)
                continue;
            outs = evaluate_node(n, ins, id);
        }
        g.remove_node(id);
        for (size_t i = 0; i < n.outputs.size(); ++i) {
            const ValueId old = n.outputs[i];
            const Value& ov = g.value(old);
            TESSERA_CHECK(!ov.typed || (ov.dtype == outs[i].dtype() && ov.shape == outs[i].shape()))
                << describe_node(n, id) << " folded to " << dtype_name(outs[i].dtype())
                << shape_str(outs[i].shape()) << " but its output " << ov.name << " is typed "
                << dtype_name(ov.dtype) << shape_str(ov.shape);
            const ValueId c = g.add_constant(g.value(old).name, std::move(outs[i]));
            g.replace_all_uses(old, c);
        }
        ++r.changes;
    }
    std::ostringstream s;
    s << "folded " << r.changes << " nodes into constants (" << folded_shape << " Shape or Size)";
    return end_pass(r, g, s.str());
}

} // namespace tessera::graph
