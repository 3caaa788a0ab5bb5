// Task extraction: each fused group becomes a tensor program (te::Compute) built from the
// operator library, and groups with the same workload key become one tuning task.
//
// A group's Compute has one placeholder per group input that a member reads as data (graph
// inputs, outputs of earlier groups and constants alike: weights stay data, so two groups that
// differ only in their weights share a key), in group-input order, with the value's shape and
// dtype. The inputs that are graph constants are marked as weights (Compute::weight_inputs, part
// of the key), so schedules may pack them ahead of time. Operands that only steer shapes
// (Reshape's shape, Slice's starts/ends/axes/steps, Pad's pads, Squeeze/Unsqueeze/ReduceSum
// axes, Split's sizes, Clip's bounds, Expand's shape, Range's operands) must be
// compile-time values and are baked into the expressions instead. Its outputs are the group's
// outputs, in order.
//
// Every op of ops.def has a definition (tests/graph/op_compute_test.cpp checks each against the
// graph evaluator): the anchors (Conv, ConvBlocked, Gemm, MatMul), the elementwise ops with numpy
// broadcasting (integer Div rounds toward zero, Pow's exponent may have another dtype, Where,
// Cast between any dtypes, comparisons producing bool, an unfolded BatchNormalization), pools,
// reductions, Softmax, LayerNormalization (Mean and InvStdDev as outputs too, when read), the
// data movement ops (Pad in constant, edge and reflect mode, Gather with negative indices,
// Split with one output per part) and the tensors made from compile-time values (Shape, Range,
// ConstantOfShape, small Constant nodes; their operands are compile-time values like the shape
// operands above). Dropout is Y = data with an all-true mask. A UserError names the op and node
// when an operand that must be static is not, a Pad mode is unknown, or a Constant node is too
// large to bake into an expression (te::kMaxTableElements; the importer makes initializers of
// constants instead).
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

/// Whether nodes of `op` have a kernel. An op without one (its reference evaluator only) is
/// accepted by import and must be folded into a constant before task extraction.
bool op_has_kernel(Op op);

/// Builds the Compute of `group` (a group of fuse_ops(g); g shape-inferred). Throws UserError
/// naming the node when its op has no kernel, a shape operand is not a compile-time value, an
/// attribute is one the definition does not take (a Pad mode), a Constant node is too large,
/// or an op library builder rejects the operands.
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
/// must be fuse_ops(g)); in-place concats run nothing and get none. Deterministic. Throws as
/// group_compute does.
std::vector<Task> extract_tasks(const Graph& g, const std::vector<FusedGroup>& groups);

} // namespace tessera::graph
