// Graph construction and the whole-graph rewriting helpers (users, replace, topological order,
// dead-node removal, compaction, verification).
#include "tessera/graph/graph.h"

#include <algorithm>
#include <queue>

namespace tessera::graph {

static const char* const kOpNames[] = {
#define TESSERA_GRAPH_OP(name) #name,
#include "tessera/graph/ops.def"
#undef TESSERA_GRAPH_OP
};

const char* op_name(Op op) { return kOpNames[static_cast<size_t>(op)]; }

std::optional<Op> op_from_name(const std::string& name) {
    for (size_t i = 0; i < std::size(kOpNames); ++i)
        if (name == kOpNames[i])
            return static_cast<Op>(i);
    return std::nullopt;
}

std::ostream& operator<<(std::ostream& os, Op op) { return os << op_name(op); }

// ---- attributes -------------------------------------------------------------------------------

Attribute Attribute::of_int(int64_t v) {
    Attribute a;
    a.kind = Kind::Int;
    a.i = v;
    return a;
}
Attribute Attribute::of_float(float v) {
    Attribute a;
    a.kind = Kind::Float;
    a.f = v;
    return a;
}
Attribute Attribute::of_ints(std::vector<int64_t> v) {
    Attribute a;
    a.kind = Kind::Ints;
    a.ints = std::move(v);
    return a;
}
Attribute Attribute::of_floats(std::vector<float> v) {
    Attribute a;
    a.kind = Kind::Floats;
    a.floats = std::move(v);
    return a;
}
Attribute Attribute::of_string(std::string v) {
    Attribute a;
    a.kind = Kind::String;
    a.s = std::move(v);
    return a;
}
Attribute Attribute::of_tensor(TensorData v) {
    Attribute a;
    a.kind = Kind::Tensor;
    a.t = std::make_shared<const TensorData>(std::move(v));
    return a;
}

bool Attribute::operator==(const Attribute& o) const {
    if (kind != o.kind)
        return false;
    switch (kind) {
    case Kind::Int:
        return i == o.i;
    case Kind::Float:
        return f == o.f || (f != f && o.f != o.f);
    case Kind::Ints:
        return ints == o.ints;
    case Kind::Floats:
        return floats == o.floats;
    case Kind::String:
        return s == o.s;
    case Kind::Tensor:
        return t == o.t || (t && o.t && *t == *o.t);
    }
    TESSERA_UNREACHABLE();
}

const char* attribute_kind_name(Attribute::Kind k) {
    switch (k) {
    case Attribute::Kind::Int:
        return "int";
    case Attribute::Kind::Float:
        return "float";
    case Attribute::Kind::Ints:
        return "ints";
    case Attribute::Kind::Floats:
        return "floats";
    case Attribute::Kind::String:
        return "string";
    case Attribute::Kind::Tensor:
        return "tensor";
    }
    TESSERA_UNREACHABLE();
}

// The attribute `key` of node n when present, after checking its kind.
static const Attribute* find_attr(const Node& n, const std::string& key, Attribute::Kind kind) {
    auto it = n.attrs.find(key);
    if (it == n.attrs.end())
        return nullptr;
    if (it->second.kind != kind)
        throw UserError() << (n.name.empty() ? std::string("node") : "node '" + n.name + "'")
                          << " (" << op_name(n.op) << "): attribute '" << key << "' is "
                          << attribute_kind_name(it->second.kind) << ", expected "
                          << attribute_kind_name(kind);
    return &it->second;
}

int64_t Node::attr_int(const std::string& key, int64_t def) const {
    const Attribute* a = find_attr(*this, key, Attribute::Kind::Int);
    return a ? a->i : def;
}
float Node::attr_float(const std::string& key, float def) const {
    const Attribute* a = find_attr(*this, key, Attribute::Kind::Float);
    return a ? a->f : def;
}
std::vector<int64_t> Node::attr_ints(const std::string& key, std::vector<int64_t> def) const {
    const Attribute* a = find_attr(*this, key, Attribute::Kind::Ints);
    return a ? a->ints : def;
}
std::vector<float> Node::attr_floats(const std::string& key, std::vector<float> def) const {
    const Attribute* a = find_attr(*this, key, Attribute::Kind::Floats);
    return a ? a->floats : def;
}
std::string Node::attr_string(const std::string& key, std::string def) const {
    const Attribute* a = find_attr(*this, key, Attribute::Kind::String);
    return a ? a->s : def;
}
const TensorData* Node::attr_tensor(const std::string& key) const {
    const Attribute* a = find_attr(*this, key, Attribute::Kind::Tensor);
    return a ? a->t.get() : nullptr;
}

std::string describe_node(const Node& n, NodeId id) {
    std::string s = n.name.empty() ? "node #" + std::to_string(id) : "node '" + n.name + "'";
    return s + " (" + op_name(n.op) + ")";
}

// ---- values and nodes -------------------------------------------------------------------------

ValueId Graph::add_value(std::string name, DType dtype, Shape shape) {
    Value v;
    v.name = std::move(name);
    v.dtype = dtype;
    v.shape = std::move(shape);
    v.typed = true;
    values_.push_back(std::move(v));
    return static_cast<ValueId>(values_.size() - 1);
}

ValueId Graph::add_value(std::string name) {
    Value v;
    v.name = std::move(name);
    values_.push_back(std::move(v));
    return static_cast<ValueId>(values_.size() - 1);
}

ValueId Graph::add_constant(std::string name, TensorData data) {
    return add_constant(std::move(name), std::make_shared<const TensorData>(std::move(data)));
}

ValueId Graph::add_constant(std::string name, std::shared_ptr<const TensorData> data) {
    TESSERA_CHECK(data != nullptr) << "null constant " << name;
    ValueId id = add_value(std::move(name), data->dtype(), data->shape());
    values_[id].constant = std::move(data);
    return id;
}

const Value& Graph::value(ValueId id) const {
    TESSERA_CHECK(id >= 0 && static_cast<size_t>(id) < values_.size()) << "bad value id " << id;
    return values_[id];
}

Value& Graph::value(ValueId id) {
    TESSERA_CHECK(id >= 0 && static_cast<size_t>(id) < values_.size()) << "bad value id " << id;
    return values_[id];
}

ValueId Graph::find_value(const std::string& name) const {
    for (size_t i = 0; i < values_.size(); ++i)
        if (values_[i].name == name)
            return static_cast<ValueId>(i);
    return kNoValue;
}

NodeId Graph::add_node(Op op, std::vector<ValueId> inputs, std::vector<ValueId> outputs,
                       Attributes attrs, std::string name) {
    NodeId id = static_cast<NodeId>(nodes_.size());
    for (ValueId v : inputs)
        TESSERA_CHECK(v == kNoValue || (v >= 0 && static_cast<size_t>(v) < values_.size()))
            << "bad input value id " << v << " for " << op_name(op);
    for (ValueId v : outputs) {
        Value& val = value(v);
        TESSERA_CHECK(val.producer == kNoNode && !val.is_constant())
            << "value " << v << " '" << val.name << "' is already defined";
        TESSERA_CHECK(std::find(this->inputs.begin(), this->inputs.end(), v) == this->inputs.end())
            << "value " << v << " '" << val.name << "' is a graph input";
    }
    for (ValueId v : outputs)
        values_[v].producer = id;
    Node n;
    n.op = op;
    n.name = std::move(name);
    n.attrs = std::move(attrs);
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    nodes_.push_back(std::move(n));
    live_.push_back(1);
    ++live_count_;
    return id;
}

void Graph::remove_node(NodeId id) {
    TESSERA_CHECK(is_live(id)) << "remove of dead node " << id;
    for (ValueId v : nodes_[id].outputs)
        if (values_[v].producer == id)
            values_[v].producer = kNoNode;
    live_[id] = 0;
    --live_count_;
    nodes_[id] = Node(); // release attributes and tensors
}

bool Graph::is_live(NodeId id) const {
    return id >= 0 && static_cast<size_t>(id) < nodes_.size() && live_[id];
}

const Node& Graph::node(NodeId id) const {
    TESSERA_CHECK(is_live(id)) << "bad node id " << id;
    return nodes_[id];
}

Node& Graph::node(NodeId id) {
    TESSERA_CHECK(is_live(id)) << "bad node id " << id;
    return nodes_[id];
}

std::vector<NodeId> Graph::node_ids() const {
    std::vector<NodeId> ids;
    ids.reserve(live_count_);
    for (size_t i = 0; i < nodes_.size(); ++i)
        if (live_[i])
            ids.push_back(static_cast<NodeId>(i));
    return ids;
}

// ---- rewriting helpers ------------------------------------------------------------------------

std::vector<NodeId> Graph::users(ValueId v) const {
    std::vector<NodeId> out;
    for (size_t i = 0; i < nodes_.size(); ++i) {
        if (!live_[i])
            continue;
        const auto& ins = nodes_[i].inputs;
        if (std::find(ins.begin(), ins.end(), v) != ins.end())
            out.push_back(static_cast<NodeId>(i));
    }
    return out;
}

std::vector<std::vector<NodeId>> Graph::all_users() const {
    std::vector<std::vector<NodeId>> out(values_.size());
    for (size_t i = 0; i < nodes_.size(); ++i) {
        if (!live_[i])
            continue;
        for (ValueId v : nodes_[i].inputs) {
            if (v == kNoValue)
                continue;
            auto& u = out[v];
            if (u.empty() || u.back() != static_cast<NodeId>(i))
                u.push_back(static_cast<NodeId>(i));
        }
    }
    return out;
}

int Graph::replace_all_uses(ValueId from, ValueId to) {
    int count = 0;
    for (size_t i = 0; i < nodes_.size(); ++i) {
        if (!live_[i])
            continue;
        for (ValueId& v : nodes_[i].inputs)
            if (v == from)
                v = to, ++count;
    }
    for (ValueId& v : outputs)
        if (v == from)
            v = to, ++count;
    return count;
}

std::vector<NodeId> Graph::topological_order() const {
    // Kahn's algorithm with a min-heap on node ids: deterministic, and the identity order for
    // a graph whose nodes were added producers first.
    std::vector<int> pending(nodes_.size(), 0);
    std::vector<std::vector<NodeId>> consumers(nodes_.size());
    for (NodeId id : node_ids()) {
        for (ValueId v : nodes_[id].inputs) {
            if (v == kNoValue)
                continue;
            const Value& val = value(v);
            if (val.producer == kNoNode) {
                bool is_input = std::find(inputs.begin(), inputs.end(), v) != inputs.end();
                if (!val.is_constant() && !is_input)
                    throw UserError() << describe_node(nodes_[id], id) << ": input '" << val.name
                                      << "' is not defined by any node, graph input or "
                                         "initializer";
                continue;
            }
            TESSERA_CHECK(is_live(val.producer)) << "value " << v << " produced by dead node";
            ++pending[id];
            consumers[val.producer].push_back(id);
        }
    }
    std::priority_queue<NodeId, std::vector<NodeId>, std::greater<NodeId>> ready;
    for (NodeId id : node_ids())
        if (pending[id] == 0)
            ready.push(id);
    std::vector<NodeId> order;
    order.reserve(live_count_);
    while (!ready.empty()) {
        NodeId id = ready.top();
        ready.pop();
        order.push_back(id);
        for (NodeId c : consumers[id])
            if (--pending[c] == 0)
                ready.push(c);
    }
    if (order.size() != live_count_) {
        for (NodeId id : node_ids())
            if (pending[id] > 0)
                throw UserError() << describe_node(nodes_[id], id) << " is part of a cycle";
    }
    return order;
}

int Graph::remove_dead_nodes() {
    std::vector<uint8_t> needed(nodes_.size(), 0);
    std::vector<NodeId> stack;
    auto need_value = [&](ValueId v) {
        if (v == kNoValue)
            return;
        NodeId p = values_[v].producer;
        if (p != kNoNode && !needed[p])
            needed[p] = 1, stack.push_back(p);
    };
    for (ValueId v : outputs)
        need_value(v);
    while (!stack.empty()) {
        NodeId id = stack.back();
        stack.pop_back();
        for (ValueId v : nodes_[id].inputs)
            need_value(v);
    }
    int removed = 0;
    for (NodeId id : node_ids())
        if (!needed[id])
            remove_node(id), ++removed;
    return removed;
}

void Graph::compact() {
    std::vector<NodeId> order = topological_order();
    std::vector<ValueId> remap(values_.size(), kNoValue);
    std::vector<Value> new_values;
    auto map_value = [&](ValueId v) {
        if (v == kNoValue)
            return kNoValue;
        if (remap[v] == kNoValue) {
            remap[v] = static_cast<ValueId>(new_values.size());
            new_values.push_back(values_[v]);
        }
        return remap[v];
    };
    for (ValueId& v : inputs)
        v = map_value(v);
    std::vector<Node> new_nodes;
    new_nodes.reserve(order.size());
    for (NodeId id : order) {
        Node n = std::move(nodes_[id]);
        for (ValueId& v : n.inputs)
            v = map_value(v);
        for (ValueId& v : n.outputs) {
            v = map_value(v);
            new_values[v].producer = static_cast<NodeId>(new_nodes.size());
        }
        new_nodes.push_back(std::move(n));
    }
    for (ValueId& v : outputs)
        v = map_value(v);
    values_ = std::move(new_values);
    nodes_ = std::move(new_nodes);
    live_.assign(nodes_.size(), 1);
    live_count_ = nodes_.size();
}

void Graph::verify() const {
    std::vector<int> defs(values_.size(), 0);
    for (ValueId v : inputs) {
        TESSERA_CHECK(v >= 0 && static_cast<size_t>(v) < values_.size()) << "bad graph input";
        TESSERA_CHECK(!values_[v].is_constant())
            << "graph input '" << values_[v].name << "' is a constant";
        ++defs[v];
    }
    for (size_t i = 0; i < values_.size(); ++i) {
        if (values_[i].is_constant()) {
            ++defs[i];
            TESSERA_CHECK(values_[i].typed && values_[i].dtype == values_[i].constant->dtype() &&
                          values_[i].shape == values_[i].constant->shape())
                << "constant '" << values_[i].name << "' type differs from its data";
        }
    }
    for (NodeId id : node_ids()) {
        const Node& n = nodes_[id];
        for (ValueId v : n.inputs)
            TESSERA_CHECK(v == kNoValue || (v >= 0 && static_cast<size_t>(v) < values_.size()))
                << describe_node(n, id) << " reads bad value id " << v;
        for (ValueId v : n.outputs) {
            TESSERA_CHECK(v >= 0 && static_cast<size_t>(v) < values_.size())
                << describe_node(n, id) << " writes bad value id " << v;
            TESSERA_CHECK(values_[v].producer == id)
                << describe_node(n, id) << " output '" << values_[v].name << "' has producer "
                << values_[v].producer;
            ++defs[v];
        }
    }
    for (size_t i = 0; i < values_.size(); ++i) {
        TESSERA_CHECK(defs[i] <= 1)
            << "value '" << values_[i].name << "' is defined " << defs[i] << " times";
        NodeId p = values_[i].producer;
        TESSERA_CHECK(p == kNoNode || (is_live(p) && defs[i] == 1))
            << "value '" << values_[i].name << "' has stale producer " << p;
    }
    for (ValueId v : outputs) {
        TESSERA_CHECK(v >= 0 && static_cast<size_t>(v) < values_.size()) << "bad graph output";
        TESSERA_CHECK(defs[v] == 1) << "graph output '" << values_[v].name << "' is undefined";
    }
    try {
        (void)topological_order();
    } catch (const UserError& e) {
        TESSERA_CHECK(false) << e.what();
    }
}

std::map<std::string, int> op_histogram(const Graph& g) {
    std::map<std::string, int> h;
    for (NodeId id : g.node_ids())
        ++h[op_name(g.node(id).op)];
    return h;
}

} // namespace tessera::graph
