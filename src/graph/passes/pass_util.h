// Helpers shared by the graph passes: result bookkeeping and small pattern-matching queries.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tessera/graph/graph.h"
#include "tessera/graph/passes.h"

namespace tessera::graph::detail {

/// A PassResult named `pass` with nodes_before set from g.
inline PassResult begin_pass(const char* pass, const Graph& g) {
    PassResult r;
    r.pass = pass;
    r.nodes_before = static_cast<int>(g.num_nodes());
    return r;
}
/// Sets nodes_after and the summary.
inline PassResult end_pass(PassResult r, const Graph& g, std::string summary) {
    r.nodes_after = static_cast<int>(g.num_nodes());
    r.summary = std::move(summary);
    return r;
}

/// The live node producing v, or nullptr (graph input, constant, absent).
inline const Node* producer_of(const Graph& g, ValueId v) {
    if (v == kNoValue)
        return nullptr;
    NodeId p = g.value(v).producer;
    return p == kNoNode ? nullptr : &g.node(p);
}
/// The producer of v when it is a node of op `op`.
inline const Node* producer_op(const Graph& g, ValueId v, Op op) {
    const Node* n = producer_of(g, v);
    return n && n->op == op ? n : nullptr;
}

/// True when v is a constant whose every element equals `x` (any numeric dtype).
bool is_constant_splat(const Graph& g, ValueId v, double x);
/// The single element of a constant with one element, when v is one.
bool constant_scalar(const Graph& g, ValueId v, double* out);

/// Removes node `id` and makes every use of its output i read a new constant holding outs[i]
/// (named as the output). InternalError when a typed output's dtype or shape differs from its
/// constant's.
void replace_by_constants(Graph& g, NodeId id, std::vector<TensorData> outs);

/// A new 1-D int64 constant `name` holding v (a Slice's starts, ends or axes; a shape).
ValueId add_int64s(Graph& g, const std::string& name, std::vector<int64_t> v);

/// A new value `name`: x sliced to [starts[i], ends[i]) along axes[i] (a Slice node of that
/// name, its bounds constants "name/starts", "name/ends" and "name/axes"); typed with x's dtype
/// and `shape` when shape is given (the caller's, not checked), else untyped until shape
/// inference.
ValueId add_slice(Graph& g, ValueId x, std::vector<int64_t> starts, std::vector<int64_t> ends,
                  std::vector<int64_t> axes, const std::string& name,
                  std::optional<Shape> shape = std::nullopt);

/// True when v is a graph output.
bool is_graph_output(const Graph& g, ValueId v);

/// The transpose of a rank-2 constant of any dtype (the weights of Gemm's transB).
TensorData transposed_matrix(const TensorData& m);

/// A plain matrix product: a MatMul of two operands, or a Gemm with alpha and beta 1 and
/// transA 0 (transB and C allowed), with one output. The form the 8-bit and bf16 product
/// rewrites take.
bool is_plain_product(const Node& n);

/// Whether one of `readers` (nodes reading v) also reads another value that `position` puts
/// after `since`; position(value) is the topological rank of the value's producer, -1 for graph
/// inputs and constants. Such a reader cannot join the kernel that computes v at `since`: a
/// dequantization of bytes for it stays apart from the bytes' producer (fold_quantized_ops,
/// fuse_ops), so that the bytes, not their f32, cross between the kernels.
template <typename Position>
bool read_beside_a_later_value(const Graph& g, const std::vector<NodeId>& readers, ValueId v,
                               int64_t since, Position position) {
    for (NodeId reader : readers)
        for (ValueId in : g.node(reader).inputs)
            if (in != kNoValue && in != v && position(in) > since)
                return true;
    return false;
}

} // namespace tessera::graph::detail
