// Operator fusion partitioning: splits a graph's nodes into groups that a code generator can
// emit as one kernel each (an anchor op with its elementwise epilogue, an elementwise chain, an
// injective prologue feeding a reduction).
//
// Each node gets a fusion pattern (OpPattern), ordered from the most to the least fusable:
//   Elementwise      one output element from the same-index elements of same-shaped inputs
//   Broadcast        elementwise with numpy broadcasting of some input
//   Injective        each output element reads one input element (Reshape, Transpose, Slice...)
//   Reduction        an output element reads many (ReduceSum, pools, Softmax, LayerNorm)
//   OutFusable       an anchor whose output can absorb an elementwise epilogue (Conv, Gemm,
//                    MatMul)
//   Opaque           nothing fuses with it (Shape, Range, multi-output nodes, constants)
//
// Grouping rules, applied to nodes in topological order, each node joining at most one
// producer's group (the first legal one, in input order) or starting its own:
//  - an anchor group absorbs Elementwise/Broadcast nodes whose output has the anchor's output
//    shape (Conv+Add(bias)+Relu, Gemm+Relu, MatMul+Add);
//  - a group of only Elementwise/Broadcast/Injective nodes absorbs further such nodes, and a
//    Reduction, which then closes the group;
//  - an anchor joins no existing group except a lone LayoutToBlocked that only it reads (the
//    image's conversion into a conv reading its few channels as one block, which inlines into
//    the conv's padding stage), and nothing joins a closed (reduction) group or an opaque one,
//    except that a group closed by a normalization (a reduction whose output has its input's
//    shape: Softmax, LayerNorm) absorbs Elementwise/Broadcast nodes over that shape (a bf16
//    build's cast of the probabilities, computed as they are stored);
//  - the value linking the producer to the node must have that node as its only user and
//    come from a single-output node, so a value with several consumers ends its group;
//  - a merge that would make the groups cyclic is refused.
// Then an open group of Elementwise/Broadcast/Injective nodes whose values only one other
// open group without an anchor reads merges into it, unless a reader is a Concat along an
// axis other than its last (whose kernel evaluates every part per element): the second
// operand chain of a Concat or an Add, which the greedy pass left as a kernel of its own
// (the two sub-block views of a blocked channel shuffle). And a group of Elementwise/Broadcast
// nodes over an anchor's output shape whose values only
// that anchor group's epilogue reads (not the anchor itself) merges into it: an int8 conv's
// residual, dequantized on its own, is read as u8 by the conv's epilogue instead of as f32.
#pragma once

#include <string>
#include <vector>

#include "tessera/graph/graph.h"

namespace tessera::graph {

enum class OpPattern : uint8_t { Elementwise, Broadcast, Injective, Reduction, OutFusable, Opaque };

/// "elementwise", "broadcast", "injective", "reduction", "out-fusable", "opaque".
const char* op_pattern_name(OpPattern p);

/// The fusion pattern of live node `id` of g (Elementwise vs Broadcast from its input and
/// output shapes; an untyped elementwise node counts as Broadcast).
OpPattern node_pattern(const Graph& g, NodeId id);

/// Short lower-case kernel name of an op, used in group patterns: "conv2d", "gemm", "add".
std::string fused_op_name(Op op);

/// One fused kernel.
struct FusedGroup {
    /// Member nodes in the graph's topological order.
    std::vector<NodeId> nodes;
    /// Values the members read that no member defines (graph inputs, constants, outputs of
    /// earlier groups), each once, in first-use order.
    std::vector<ValueId> inputs;
    /// Values members define that are read outside the group or are graph outputs, in
    /// definition order.
    std::vector<ValueId> outputs;
    /// The OutFusable member, or kNoNode.
    NodeId anchor = kNoNode;
    /// The group's kind: OutFusable with an anchor, Reduction when it contains one, otherwise
    /// the least fusable member pattern.
    OpPattern kind = OpPattern::Elementwise;
    /// fused_op_name of the members joined by '+', e.g. "conv2d+add+relu".
    std::string pattern;
    /// A lone node whose output is its operands' bytes laid end to end, so that they are
    /// stored in place in it (each at its byte offset): a Concat on contiguous slices (nothing
    /// outside the concat axis longer than 1), or a PackU8Words that only reinterprets its
    /// bytes as words. The groups that define the operands write there, and this group runs
    /// nothing (no task, no call). See concat_views.cpp for the conditions.
    bool operands_in_place = false;
};

/// Partitions the live nodes of g (shape-inferred, verifying) into fused groups. Post: every
/// live node is in exactly one group; groups are in a topological order (every group input is
/// a graph input, a constant or an output of an earlier group); groups whose operands can be
/// stored in place are marked (mark_in_place_operands). Deterministic.
std::vector<FusedGroup> fuse_ops(const Graph& g);

/// Marks each group whose operands can live inside its output (FusedGroup::operands_in_place):
/// one Concat with every dimension before the concat axis 1 (so each operand is one
/// contiguous slice) and each operand's slice at a multiple of 64 bytes, or one PackU8Words
/// without padding whose words block is its input's channel block (its words are the input's
/// bytes in the same order); the output and the operands are neither graph inputs, outputs
/// nor constants, each operand is defined by an earlier group that is not itself such a
/// group, and no operand appears twice or in two such groups. Deterministic.
void mark_in_place_operands(const Graph& g, std::vector<FusedGroup>& groups);

/// The byte offset of each input of an in-place group inside its output, in the order of
/// group.inputs (the node's operand order). Pre: group.operands_in_place.
std::vector<int64_t> operand_view_offsets(const Graph& g, const FusedGroup& group);

/// "conv2d+add+relu f32[1,64,56,56]": the pattern and the group's first output type; identical
/// signatures describe groups a code generator can share a kernel between.
std::string group_signature(const Graph& g, const FusedGroup& group);

} // namespace tessera::graph
