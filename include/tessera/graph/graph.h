// The graph IR: a value-type graph of operator nodes over typed values, with integer ids.
//
// A Graph owns Values (name, dtype, static shape, constant data for initializers) and Nodes
// (op, attributes, input and output value ids). Every value is defined once: by a node output,
// as a graph input or as a constant. Ids are dense indices that stay valid while the graph is
// rewritten (removed nodes leave a hole until compact()); iteration is always in id order or
// in topological order, never in pointer order, so every output is deterministic.
//
// Canonical operator form: what import_onnx produces and shape inference, the reference
// evaluator and the kernels accept; operands and attribute names follow ONNX opset 17. Each
// op's form is documented with its definition in the file of its family under src/graph/ops/
// (the operator table, src/graph/ops/op_def.h); 2-D windows carry explicit pads (auto_pad
// resolved at import), attributes with defaults are made explicit.
// An absent optional input is kNoValue; trailing absent inputs are dropped.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tessera/graph/tensor_data.h"

namespace tessera::graph {

/// Graph operators (see ops.def).
enum class Op : uint8_t {
#define TESSERA_GRAPH_OP(name) name,
#include "tessera/graph/ops.def"
#undef TESSERA_GRAPH_OP
};

/// The op's name ("Conv"), which is also its ONNX op_type.
const char* op_name(Op op);
/// The op named `name` (ONNX op_type), or nullopt.
std::optional<Op> op_from_name(const std::string& name);
std::ostream& operator<<(std::ostream& os, Op op);

using ValueId = int32_t;
using NodeId = int32_t;
constexpr ValueId kNoValue = -1;
constexpr NodeId kNoNode = -1;

/// A node attribute: one of int, float, ints, floats, string or tensor.
struct Attribute {
    enum class Kind : uint8_t { Int, Float, Ints, Floats, String, Tensor };
    Kind kind = Kind::Int;
    int64_t i = 0;
    float f = 0;
    std::vector<int64_t> ints;
    std::vector<float> floats;
    std::string s;
    std::shared_ptr<const TensorData> t;

    static Attribute of_int(int64_t v);
    static Attribute of_float(float v);
    static Attribute of_ints(std::vector<int64_t> v);
    static Attribute of_floats(std::vector<float> v);
    static Attribute of_string(std::string v);
    static Attribute of_tensor(TensorData v);
    /// Same kind and value (tensors compared by content).
    bool operator==(const Attribute& o) const;
    bool operator!=(const Attribute& o) const { return !(*this == o); }
};
const char* attribute_kind_name(Attribute::Kind k);
using Attributes = std::map<std::string, Attribute>; // ordered: deterministic printing

/// A typed value. `typed` is false until shape inference (or the importer) sets dtype and shape.
struct Value {
    std::string name;
    DType dtype = DType::F32;
    Shape shape;
    bool typed = false;
    /// Initializer data: set for constants (then dtype and shape equal the data's).
    std::shared_ptr<const TensorData> constant;
    /// An F32 constant that a built library stores in f16 (set by the fp16 precision pass).
    /// Its data then holds f16 values exactly, so evaluating the graph computes what the
    /// kernels do: they read the stored f16 values and widen them to f32 (exact).
    bool stored_f16 = false;
    /// The node whose output this is; kNoNode for graph inputs and constants. Maintained by
    /// Graph::add_node / remove_node.
    NodeId producer = kNoNode;

    bool is_constant() const { return constant != nullptr; }
};

/// An operator application. Inputs may be edited freely through Graph::node(); outputs are
/// fixed by add_node (remove the node and add another to change them).
struct Node {
    Op op = Op::Identity;
    std::string name; // from the model, may be empty; for messages only
    Attributes attrs;
    std::vector<ValueId> inputs; // kNoValue for an absent optional input
    std::vector<ValueId> outputs;

    /// Input i, or kNoValue when the node has fewer inputs.
    ValueId input(size_t i) const { return i < inputs.size() ? inputs[i] : kNoValue; }
    bool has_attr(const std::string& key) const { return attrs.count(key) != 0; }
    /// Typed attribute access with a default for an absent attribute; an attribute of another
    /// kind is a UserError naming the node and attribute.
    int64_t attr_int(const std::string& key, int64_t def) const;
    float attr_float(const std::string& key, float def) const;
    std::vector<int64_t> attr_ints(const std::string& key, std::vector<int64_t> def = {}) const;
    std::vector<float> attr_floats(const std::string& key, std::vector<float> def = {}) const;
    std::string attr_string(const std::string& key, std::string def = {}) const;
    /// nullptr when absent.
    const TensorData* attr_tensor(const std::string& key) const;
};

/// "node 'name' (Op)", or "node #id (Op)" when the node has no name: the prefix of every
/// message about a node.
std::string describe_node(const Node& n, NodeId id);

class Graph {
  public:
    std::string name;
    /// The ai.onnx opset the model was imported from (informational; the IR is canonical).
    int64_t opset = 17;
    /// Graph inputs (runtime-fed values, no constants) and outputs, in order.
    std::vector<ValueId> inputs;
    std::vector<ValueId> outputs;

    // ---- values ----
    /// A new value with a known dtype and shape.
    ValueId add_value(std::string name, DType dtype, Shape shape);
    /// A new value whose type shape inference fills later.
    ValueId add_value(std::string name);
    /// A new constant value holding `data` (typed from it).
    ValueId add_constant(std::string name, TensorData data);
    ValueId add_constant(std::string name, std::shared_ptr<const TensorData> data);
    const Value& value(ValueId id) const;
    Value& value(ValueId id);
    /// Number of value slots (ids are 0 .. num_values()-1; some may be unused).
    size_t num_values() const { return values_.size(); }
    /// The first value named `name`, or kNoValue.
    ValueId find_value(const std::string& name) const;

    // ---- nodes ----
    /// Adds a node defining `outputs` (values without a producer, not graph inputs or
    /// constants: checked).
    NodeId add_node(Op op, std::vector<ValueId> inputs, std::vector<ValueId> outputs,
                    Attributes attrs = {}, std::string name = {});
    /// Removes the node; its outputs lose their producer (the caller rewires their uses).
    void remove_node(NodeId id);
    bool is_live(NodeId id) const;
    const Node& node(NodeId id) const;
    Node& node(NodeId id);
    /// Live node ids in ascending order.
    std::vector<NodeId> node_ids() const;
    size_t num_nodes() const { return live_count_; }
    /// Number of node slots (ids are 0 .. node_capacity()-1; removed ones are not live).
    size_t node_capacity() const { return nodes_.size(); }

    // ---- rewriting helpers ----
    /// Live nodes reading v, ascending, each once.
    std::vector<NodeId> users(ValueId v) const;
    /// users() of every value at once: index = ValueId.
    std::vector<std::vector<NodeId>> all_users() const;
    /// Makes every node input and graph output that reads `from` read `to` instead. Returns
    /// the number of uses replaced.
    int replace_all_uses(ValueId from, ValueId to);
    /// Live nodes in a topological order; ties broken by ascending id (so a graph built in
    /// order keeps its order). Throws UserError naming a node on a cycle or an input that no
    /// node, graph input or constant defines.
    std::vector<NodeId> topological_order() const;
    /// Removes every node none of whose outputs is needed by a graph output. Returns the
    /// number removed.
    int remove_dead_nodes();
    /// Renumbers: nodes in topological order, values as graph inputs, then constants and node
    /// outputs in first-use order; drops removed nodes and unreferenced values. Ids change.
    void compact();
    /// Checks the structure: ids in range, each value defined once, producers consistent, no
    /// cycle, graph outputs defined. Throws InternalError naming the problem.
    void verify() const;

  private:
    std::vector<Value> values_;
    std::vector<Node> nodes_;
    std::vector<uint8_t> live_;
    size_t live_count_ = 0;
};

/// Text form, one line per value or node in topological order, e.g.
///   %7 conv1_out: f32[1,64,112,112] = Conv(%0, %1, %2) {group=1, ...}  # node 'Conv_0'
void print(std::ostream& os, const Graph& g);
std::string to_string(const Graph& g);

/// Count of live nodes per op name, ordered by name (for reports and tests).
std::map<std::string, int> op_histogram(const Graph& g);

} // namespace tessera::graph
