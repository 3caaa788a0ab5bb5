// Constant folding: evaluates nodes whose inputs are all compile-time constants with the
// reference evaluator (the same code the tests trust), and ops whose value follows from their
// operands' types (Shape, Size: OpDef::value_from_types) of typed values.
#include <sstream>

#include "../op_util.h"
#include "../ops/op_def.h"
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
        if (const auto from_types = op_def(n.op).value_from_types) {
            // Shape and Size only read their operands' types: no need to materialize them.
            std::vector<Shape> shapes;
            bool typed = true;
            for (ValueId v : n.inputs) {
                typed = typed && g.value(v).typed;
                shapes.push_back(g.value(v).shape);
            }
            if (!typed)
                continue;
            outs.push_back(from_types(n, shapes));
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
        replace_by_constants(g, id, std::move(outs));
        ++r.changes;
    }
    std::ostringstream s;
    s << "folded " << r.changes << " nodes into constants (" << folded_shape << " Shape or Size)";
    return end_pass(r, g, s.str());
}

} // namespace tessera::graph
