// Shape inference: fills the dtype and static shape of every node output, and propagates small
// compile-time values (shapes, axes, index tensors) so that ops whose output shape depends on
// an input's value (Reshape, Expand, Slice, ConstantOfShape, Range, ...) get static shapes.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "tessera/graph/graph.h"

namespace tessera::graph {

/// Largest tensor (in elements) whose value shape inference computes at compile time.
constexpr int64_t kMaxStaticValueElements = 4096;

/// Incremental shape inference over one graph. It remembers the compile-time values it has
/// computed, so inferring nodes one by one in topological order (as the importer does) costs
/// the same as one whole-graph pass.
class ShapeInferer {
  public:
    explicit ShapeInferer(Graph& g);

    /// Sets the types of node `id`'s outputs from its (typed) inputs and attributes, then
    /// computes the outputs' values when all inputs are known and the outputs are small.
    /// Returns the number of output values whose type was set or changed. Throws UserError
    /// naming the node on a rank, shape or dtype mismatch, a bad attribute, or a shape operand
    /// (Reshape's shape, Slice's starts, ...) that is not a compile-time value.
    int infer(NodeId id);

    /// The compile-time value of v: a constant's data or a value computed by infer(); null
    /// when unknown.
    const TensorData* known_value(ValueId v) const;

  private:
    Graph& g_;
    std::vector<std::shared_ptr<const TensorData>> known_; // index = ValueId
};

/// Infers every node in topological order (graph inputs and constants must be typed).
/// Returns the number of values whose type was set or changed (0: the graph was up to date).
int infer_shapes(Graph& g);

/// The compile-time value of v (see ShapeInferer::known_value), computed over v's ancestors;
/// nullopt when it depends on a graph input's data or is larger than kMaxStaticValueElements.
/// Pre: the graph is shape-inferred.
std::optional<TensorData> static_value(const Graph& g, ValueId v);

} // namespace tessera::graph
