// The importer's per-node state, shared by import_onnx.cpp (model, initializers, inputs,
// outputs) and import_onnx_node.cpp (one ONNX node to canonical graph nodes).
#pragma once

#include <string>
#include <unordered_map>

#include "onnx/onnx.pb.h"
#include "tessera/graph/graph.h"
#include "tessera/graph/shape_inference.h"

namespace tessera::graph::detail {

struct ImportContext {
    Graph& g;
    ShapeInferer& inf;
    int64_t opset;
    std::string base_dir;                           // for external data; may be empty
    std::unordered_map<std::string, ValueId> names; // ONNX value name -> value

    /// Defines `name` as v; a second definition is an error.
    void define(const std::string& name, ValueId v, const std::string& where);
    /// Adds a node and infers its output types.
    NodeId emit(Op op, std::vector<ValueId> inputs, std::vector<ValueId> outputs, Attributes attrs,
                const std::string& name);
};

/// Imports ONNX node `np` (index `index` in the graph's node list, for messages), appending
/// canonical nodes (or a constant value for Constant) to ctx.g.
void import_node(ImportContext& ctx, const onnx::NodeProto& np, int index);

/// Imports the quantized ops of ONNX's QOperator format (MatMulInteger, ConvInteger,
/// QLinearMatMul, QLinearConv, DynamicQuantizeLinear) as the standard nodes that compute them
/// (import_onnx_expand.cpp); returns false, doing nothing, for every other op. Throws
/// UserError naming the node on bad operand counts or an opset without the op.
bool import_expanded_node(ImportContext& ctx, const onnx::NodeProto& np, int index);

} // namespace tessera::graph::detail
