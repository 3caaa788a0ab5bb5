// The reference evaluator of the graph IR: naive, obviously correct C++ loops per op, with no
// tessera code generation in the way. Graph passes are checked against it (evaluate before and
// after a pass, compare), and shape inference uses evaluate_node to propagate small
// compile-time values such as shapes.
#pragma once

#include <vector>

#include "tessera/graph/graph.h"

namespace tessera::graph {

/// Runs g on `inputs` (one per graph input, in order; dtype and shape must match typed graph
/// inputs) and returns the graph outputs in order. Nodes run in topological order and each
/// intermediate is freed after its last use. Float ops support f32 (conv, pools, matmul and
/// the normalizations f32 only; unary math f32 and f64); index and data-movement ops support
/// every dtype. Throws UserError naming the node on bad data (an index out of range, integer
/// division by zero, a dtype an op does not take); an output whose computed shape or dtype
/// differs from its value's inferred type is an InternalError (a wrong pass or inference).
std::vector<TensorData> evaluate(const Graph& g, const std::vector<TensorData>& inputs);

/// Evaluates one node on `inputs` (in node input order; nullptr for an absent optional
/// input) and returns one tensor per node output. `id` only names the node in messages.
std::vector<TensorData>
evaluate_node(const Node& node, const std::vector<const TensorData*>& inputs, NodeId id = kNoNode);

} // namespace tessera::graph
