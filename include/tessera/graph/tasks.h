// Task extraction: each fused group becomes a tensor program (te::Compute) built from the
// operator library, and groups with the same workload key become one tuning task.
//
// A group's Compute has one placeholder per group input that a member reads as data (graph
// inputs, outputs of earlier groups and constants alike: weights stay data, so two groups that
// differ only in their weights share a key), in group-input order, with the value's shape and
// dtype. Operands that only steer shapes (Reshape's shape, Slice's starts/ends/axes/steps,
// Pad's pads, Squeeze/Unsqueeze/ReduceSum axes, Clip's bounds, Expand's shape) must be
// compile-time values and are baked into the expressions instead. Its outputs are the group's
// outputs, in order.
//
// Covered ops: Conv (groups 1, depthwise, or any grouping conv2d takes), ConvBlocked,
// LayoutToBlocked, LayoutFromBlocked, Gemm, MatMul, the unary and binary elementwise ops
// (numpy broadcasting), Clip, LeakyRelu, HardSigmoid, HardSwish, Gelu, MaxPool, AveragePool,
// GlobalAveragePool, Softmax, LayerNormalization (output Y only), ReduceSum/Mean/Max,
// Flatten, Reshape, Squeeze, Unsqueeze, Transpose, Concat, Slice, Gather, Pad (constant mode),
// Expand, Cast, Equal, Less, Greater, Not, Identity, Dropout (Y only). Other ops (Where,
// BatchNormalization, Split, Shape, Range, ConstantOfShape, non-constant Pad modes; none is
// left in the shared models after -O2) are a UserError naming the op and the node.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/graph/fusion.h"
#include "tessera/te/compute.h"

namespace tessera::graph {

/// The tensor program of one fused group.
struct GroupCompute {
    te::Compute compute;
    /// The group input each Compute input stands for, in parameter order.
    std::vector<ValueId> inputs;
    /// The group outputs, in the order of compute.outputs (the group's output order).
    std::vector<ValueId> outputs;
};

/// Builds the Compute of `group` (a group of fuse_ops(g); g shape-inferred). Throws UserError
/// naming the op and node when a member has no tensor-expression definition yet, or when a
/// shape operand is not a compile-time value.
GroupCompute group_compute(const Graph& g, const FusedGroup& group);

/// One tuning task: the groups whose Computes share a workload key.
struct Task {
    std::string workload_key; ///< te::workload_key of the Compute
    std::string pattern;      ///< the first group's pattern, e.g. "conv2d_nchwc+add+relu"
    int64_t flops = 0;        ///< te::count_flops of one run of the Compute
    std::vector<int> groups;  ///< indices into the groups, ascending
    GroupCompute compute;     ///< the first group's program
    /// How many groups run this task per model run.
    int count() const { return static_cast<int>(groups.size()); }
};

/// One task per distinct workload key, in order of first occurrence among `groups` (which
/// must be fuse_ops(g)). Deterministic. Throws as group_compute does.
std::vector<Task> extract_tasks(const Graph& g, const std::vector<FusedGroup>& groups);

} // namespace tessera::graph
