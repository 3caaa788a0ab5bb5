// What an op's import canonicalization (OpDef::canonicalize) sees of the ONNX node it imports:
// the opset, the model's attributes, the resolved operands and outputs, and the means to add
// constants and nodes. The generic part of import (op lookup, opset range, operand counts,
// attribute names and kinds) has run before; the canonical node is emitted after, unless the
// canonicalization emitted nodes itself.
#pragma once

#include <string>
#include <vector>

#include "tessera/graph/graph.h"

namespace onnx {
class NodeProto;
}

namespace tessera::graph::detail {

struct ImportContext;

class OpImport {
  public:
    OpImport(ImportContext& ctx, const onnx::NodeProto& np, int index);

    /// Imports the node (see import_node in onnx_import.h).
    void run();

    // ---- the ONNX node ----
    Op op() const { return op_; }
    int64_t opset() const { return opset_; }
    /// "node 'name' (Op, opset N)": the prefix of messages.
    const std::string& where() const { return where_; }
    /// The ONNX op_type ("Conv").
    const std::string& op_type() const;
    [[noreturn]] void fail(const std::string& msg) const;
    /// fail() saying that operand i (`what`) must be a compile-time constant, naming the graph
    /// inputs it is computed from (must_be_constant).
    [[noreturn]] void fail_not_constant(size_t i, const std::string& what) const;

    /// The model's attributes, with typed access and defaults (source().attr_int(...)).
    const Node& source() const { return view_; }
    bool has(const char* key) const { return view_.attrs.count(key) != 0; }
    const Attribute& attr(const char* key) const { return view_.attrs.at(key); }

    // ---- the canonical node ----
    /// Copies attribute `key` from the model into the canonical set, or `def` when absent.
    void keep(const char* key, Attribute def);
    void keep_if_present(const char* key);
    void set(const char* key, Attribute a) { out_[key] = std::move(a); }

    /// Operands (kNoValue for an absent optional one); editable.
    std::vector<ValueId>& inputs() { return inputs_; }
    /// Output values (placeholders for unnamed optional outputs), made on first use;
    /// editable (shrink only).
    std::vector<ValueId>& outputs();
    const Value& input_value(size_t i) const;
    int64_t input_rank(size_t i) const;
    /// The compile-time value of operand v, or nullptr.
    const TensorData* known_value(ValueId v) const;

    /// Error unless the node has between lo and hi operands (for ops whose operand count
    /// changed between opsets).
    void expect_inputs(size_t lo, size_t hi) const;
    /// Error when an output other than the first is used (training-only extras).
    void only_first_output(const char* why) const;

    /// A new constant named after this node ("<node>/<suffix>").
    ValueId constant(const std::string& suffix, TensorData t);
    ValueId ints_constant(const std::string& suffix, const std::vector<int64_t>& v);
    /// A new untyped value named after this node.
    ValueId new_value(const std::string& suffix);
    /// Adds a node (its types inferred at once). After the first emit the node's canonical
    /// form is not emitted.
    NodeId emit(Op op, std::vector<ValueId> ins, std::vector<ValueId> outs, Attributes attrs);
    /// The node's (single) output is the constant t: no node (ONNX Constant).
    void define_output_constant(TensorData t);

  private:
    void check_op();
    void read_attributes();
    void resolve_operands();
    std::string base_name() const;

    ImportContext& ctx_;
    const onnx::NodeProto& np_;
    int64_t opset_;
    std::string label_; // "node 'name'", or "node #index" when unnamed
    std::string where_; // label_ plus op and opset: the prefix of messages
    Op op_ = Op::Identity;
    Node view_;                   // the model's attributes as a Node
    Attributes out_;              // canonical attributes
    std::vector<ValueId> inputs_; // kNoValue for "" (absent optional)
    std::vector<ValueId> outputs_;
    bool outputs_made_ = false;
    bool emitted_ = false;
};

} // namespace tessera::graph::detail
