// Rewriting primitives and the pattern recognizers used by simplify_algebra.
#pragma once

#include "pass_util.h"

namespace tessera::graph::detail {

/// Replaces node `id` by a node of `op` on `inputs` that defines the same output values
/// (names, types and uses stay). Returns the new node's id.
NodeId replace_node(Graph& g, NodeId id, Op op, std::vector<ValueId> inputs, Attributes attrs);

/// Makes the uses of `out` (output 0 of node id) read `to` and removes the node, when that is
/// type-preserving, `out` is not a graph output and the node's other outputs are unused.
bool forward_output(Graph& g, NodeId id, ValueId to);

/// The number of live users of v plus one if v is a graph output.
int use_count(const Graph& g, ValueId v);

/// Pattern recognizers; each tries to rewrite the pattern ending (or anchored) at node `id`
/// and returns true when it did. `what` names the rewrite for the summary.
bool recognize_layer_norm(Graph& g, NodeId id, std::string* what);
bool recognize_gelu(Graph& g, NodeId id, std::string* what);
bool recognize_softmax(Graph& g, NodeId id, std::string* what);

} // namespace tessera::graph::detail
