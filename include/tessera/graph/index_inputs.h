// Model inputs that index into tensors. A compiled gather clamps an index into range (a kernel
// must never read outside its tensor), which would turn a bad token id into a silent wrong
// answer; so the runtime checks the values of these inputs before a run instead, and refuses
// one out of range naming the input, the element and the op.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/graph/graph.h"

namespace tessera::graph {

/// A graph input whose values index an axis of `bound` elements.
struct IndexInput {
    size_t input = 0;     ///< Position in Graph::inputs.
    int64_t bound = 0;    ///< Valid values: -bound <= v < bound (ONNX: negatives count back).
    std::string consumer; ///< The indexing node, as describe_node, with the axis.
};

/// The graph inputs of an integer type that are the indices of a Gather or GatherElements
/// node, directly or through Reshape, Unsqueeze, Squeeze, Flatten, Identity or
/// integer-to-integer Cast nodes (which keep the values), each with the smallest bound of the
/// axes it indexes (the strictest check; its node named). Pre: the graph is typed (shape
/// inference ran). Ordered by input position.
std::vector<IndexInput> index_inputs(const Graph& g);

} // namespace tessera::graph
