// The graph printer: one line per value or node, in topological order.
#include "tessera/graph/graph.h"

#include <sstream>

namespace tessera::graph {

static void print_type(std::ostream& os, const Value& v) {
    if (!v.typed) {
        os << "?";
        return;
    }
    os << dtype_name(v.dtype) << shape_str(v.shape);
}

// Up to `limit` elements of t, "[1,2,3]" (or "[1,2,...]" when longer).
static void print_elements(std::ostream& os, const TensorData& t, size_t limit) {
    std::vector<double> vals = t.as_f64();
    os << "[";
    for (size_t i = 0; i < vals.size() && i < limit; ++i)
        os << (i ? "," : "") << vals[i];
    if (vals.size() > limit)
        os << ",...";
    os << "]";
}

static void print_attr(std::ostream& os, const Attribute& a) {
    switch (a.kind) {
    case Attribute::Kind::Int:
        os << a.i;
        return;
    case Attribute::Kind::Float:
        os << a.f;
        return;
    case Attribute::Kind::Ints:
        os << shape_str(a.ints);
        return;
    case Attribute::Kind::Floats:
        os << "[";
        for (size_t i = 0; i < a.floats.size(); ++i)
            os << (i ? "," : "") << a.floats[i];
        os << "]";
        return;
    case Attribute::Kind::String:
        os << '"' << a.s << '"';
        return;
    case Attribute::Kind::Tensor:
        os << dtype_name(a.t->dtype()) << shape_str(a.t->shape());
        print_elements(os, *a.t, 8);
        return;
    }
    TESSERA_UNREACHABLE();
}

void print(std::ostream& os, const Graph& g) {
    os << "graph '" << g.name << "' (opset " << g.opset << ", " << g.num_nodes() << " nodes)\n";
    for (ValueId v : g.inputs) {
        os << "  input %" << v << " " << g.value(v).name << ": ";
        print_type(os, g.value(v));
        os << "\n";
    }
    // Constants that some live node reads, in id order.
    std::vector<std::vector<NodeId>> users = g.all_users();
    for (size_t i = 0; i < g.num_values(); ++i) {
        const Value& v = g.value(static_cast<ValueId>(i));
        bool is_output = false;
        for (ValueId o : g.outputs)
            is_output |= o == static_cast<ValueId>(i);
        if (!v.is_constant() || (users[i].empty() && !is_output))
            continue;
        os << "  const %" << i << " " << v.name << ": ";
        print_type(os, v);
        if (v.stored_f16)
            os << " (stored f16)";
        if (v.constant->numel() <= 8) {
            os << " = ";
            print_elements(os, *v.constant, 8);
        }
        os << "\n";
    }
    for (NodeId id : g.topological_order()) {
        const Node& n = g.node(id);
        os << "  ";
        for (size_t i = 0; i < n.outputs.size(); ++i) {
            const Value& v = g.value(n.outputs[i]);
            os << (i ? ", " : "") << "%" << n.outputs[i] << " " << v.name << ": ";
            print_type(os, v);
        }
        os << " = " << op_name(n.op) << "(";
        for (size_t i = 0; i < n.inputs.size(); ++i) {
            os << (i ? ", " : "");
            if (n.inputs[i] == kNoValue)
                os << "none";
            else
                os << "%" << n.inputs[i];
        }
        os << ")";
        if (!n.attrs.empty()) {
            os << " {";
            bool first = true;
            for (const auto& [key, a] : n.attrs) {
                os << (first ? "" : ", ") << key << "=";
                print_attr(os, a);
                first = false;
            }
            os << "}";
        }
        if (!n.name.empty())
            os << "  # " << n.name;
        os << "\n";
    }
    for (ValueId v : g.outputs)
        os << "  output %" << v << " " << g.value(v).name << "\n";
}

std::string to_string(const Graph& g) {
    std::ostringstream os;
    print(os, g);
    return os.str();
}

} // namespace tessera::graph
