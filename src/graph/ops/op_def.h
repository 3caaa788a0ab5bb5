// The operator table: everything tessera knows about one graph op, in one entry.
//
// Each op of ops.def is defined once, in the file of its family under src/graph/ops/
// (elementwise.cpp, conv_pool.cpp, ...), as `const OpDef ops::<Name>`. The entry says how the
// ONNX node is imported (first opset, operand counts, attributes per opset, canonicalization),
// how its output types are inferred, how the reference evaluator computes it, how fusion treats
// it and how its tensor expression is built. Import, shape inference, evaluation, fusion and
// task extraction look the op up with op_def() instead of switching on it.
//
// Adding an op: one line in include/tessera/graph/ops.def, its entry in the family's file,
// its tests. A missing entry is a link error (op_table.cpp names every op of ops.def).
#pragma once

#include <climits>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "tessera/graph/graph.h"

namespace tessera::graph::detail {

class OpImport;
class NodeTypes;
class NodeKernel;

using EvalInputs = std::vector<const TensorData*>;
using EvalOutputs = std::vector<TensorData>;
using TypeList = std::vector<std::pair<DType, Shape>>;

/// How fusion treats a node of the op (fusion.h has the rules; Elementwise ops become
/// Broadcast when an operand's shape differs from the output's, their static operands aside;
/// Broadcast ops, such as BatchNormalization's per-channel parameters, always are).
enum class FusionKind { Elementwise, Broadcast, Injective, Reduction, OutFusable, Opaque };

/// An attribute the op defines in ONNX opsets [since, until).
struct AttrSpec {
    const char* name;
    Attribute::Kind kind;
    int since = 1;
    int until = INT_MAX;
};

/// One op's entry. Built with the chained setters below; `infer` and `evaluate` must be set
/// (checked on every lookup), the other function pointers are optional.
struct OpDef {
    static constexpr int kAnyCount = INT_MAX;
    /// `since` of the ops only passes create: no ONNX opset defines them.
    static constexpr int kNotOnnx = INT_MAX;
    static constexpr size_t kNoStaticOperand = SIZE_MAX;

    Op op;
    // ---- import ----
    int since = 1;
    /// The model opsets the entry imports the op at (with `since`; the importer's global range
    /// bounds both). An op's later versions have so far only added types, attributes or
    /// operands, which the entry refuses unless it lists them, so the default is every opset;
    /// an entry narrows it (.opsets()) where a version changed the meaning of what it accepts.
    int min_opset = 1, max_opset = INT_MAX;
    int min_inputs = 1, max_inputs = 1, max_outputs = 1;
    std::vector<AttrSpec> attrs;
    /// Rewrites the model's attributes and operands into the canonical form (absent: no
    /// attribute is kept, operands as given). It may emit nodes itself (OpImport::emit).
    void (*canonicalize)(OpImport&) = nullptr;
    // ---- semantics ----
    /// The output dtypes and shapes; throws UserError naming the node on bad operands.
    TypeList (*infer)(const NodeTypes&) = nullptr;
    /// The reference evaluator: naive loops, independent of code generation.
    EvalOutputs (*evaluate)(const Node&, const EvalInputs&, const std::string& where) = nullptr;
    /// For ops whose result depends only on their operands' types (Shape, Size): the result
    /// from the operand shapes, so that it is a compile-time value whatever the operands hold
    /// (shape inference and constant folding use it). Absent for every other op.
    TensorData (*value_from_types)(const Node&, const std::vector<graph::Shape>&) = nullptr;
    /// The op only moves, selects or describes elements (Reshape, Gather, Shape, Cast): it
    /// runs on f16 operands as they are. Every other op computes on f16 operands in f32: the
    /// importer puts Casts around it (ImportContext::emit), as one rounding per op.
    bool any_element_type = false;
    /// A unary elementwise op that maps finite values to finite values (Relu, Tanh, Round;
    /// not Log or Reciprocal, which make inf out of 0): the layout pass keeps it in NCHW[x]c,
    /// where the padding channels' finite values then stay finite and the zero weights of the
    /// next conv cancel them.
    bool keeps_finite = false;
    // ---- fusion and kernels ----
    FusionKind fusion = FusionKind::Opaque;
    /// The op's name in task names ("conv2d"); empty: the op name in lower case.
    std::string kernel_name;
    /// Operands from this index on are read at compile time only (shapes, axes, scalar
    /// parameters): they are not inputs of the kernel.
    size_t static_operands_from = kNoStaticOperand;
    /// Static operands from this index on are scalar parameters (Clip's bounds, Pad's constant
    /// value) that may also be runtime values: one that is not a compile-time value is a
    /// kernel input (NodeKernel::runtime_scalar).
    size_t runtime_scalars_from = kNoStaticOperand;
    /// An operand that is a small coefficient table read by broadcast (a Winograd transform's
    /// matrix), not a weight: as a weight, sketches would vectorize along its rows and scatter
    /// every store.
    size_t table_operand = kNoStaticOperand;
    /// Builds the node's tensor expressions; absent: the op has no kernel, it must be folded
    /// into a constant before task extraction (constant_folding).
    void (*kernel)(NodeKernel&) = nullptr;

    explicit OpDef(Op o) : op(o) {}
    OpDef& onnx(int first_opset, int min_in, int max_in, int max_out,
                std::vector<AttrSpec> attributes = {}) {
        since = first_opset;
        min_inputs = min_in;
        max_inputs = max_in;
        max_outputs = max_out;
        attrs = std::move(attributes);
        return *this;
    }
    OpDef& opsets(int min_model_opset, int max_model_opset) {
        min_opset = min_model_opset;
        max_opset = max_model_opset;
        return *this;
    }
    OpDef& import_with(void (*f)(OpImport&)) {
        canonicalize = f;
        return *this;
    }
    OpDef& types(TypeList (*f)(const NodeTypes&)) {
        infer = f;
        return *this;
    }
    OpDef& eval(EvalOutputs (*f)(const Node&, const EvalInputs&, const std::string&)) {
        evaluate = f;
        return *this;
    }
    OpDef& from_types(TensorData (*f)(const Node&, const std::vector<graph::Shape>&)) {
        value_from_types = f;
        return *this;
    }
    OpDef& moves_elements() {
        any_element_type = true;
        return *this;
    }
    OpDef& finite_on_finite() {
        keeps_finite = true;
        return *this;
    }
    OpDef& fuses_as(FusionKind k) {
        fusion = k;
        return *this;
    }
    OpDef& named(std::string name) {
        kernel_name = std::move(name);
        return *this;
    }
    OpDef& static_from(size_t operand) {
        static_operands_from = operand;
        return *this;
    }
    OpDef& runtime_scalars_from_operand(size_t operand) {
        runtime_scalars_from = operand;
        return *this;
    }
    OpDef& table_at(size_t operand) {
        table_operand = operand;
        return *this;
    }
    OpDef& builds(void (*f)(NodeKernel&)) {
        kernel = f;
        return *this;
    }
};

/// The entry of `op`.
const OpDef& op_def(Op op);

/// The entry of an op that only passes make (no ONNX opset defines it): `min_in` to `max_in`
/// operands, one output, and its semantics and kernel.
inline OpDef pass_made_op(Op op, int min_in, int max_in, TypeList (*types)(const NodeTypes&),
                          EvalOutputs (*eval)(const Node&, const EvalInputs&, const std::string&),
                          FusionKind fusion, const char* name, void (*kernel)(NodeKernel&)) {
    return OpDef(op)
        .onnx(OpDef::kNotOnnx, min_in, max_in, 1)
        .types(types)
        .eval(eval)
        .fuses_as(fusion)
        .named(name)
        .builds(kernel);
}

} // namespace tessera::graph::detail

/// The entries, one per op of ops.def, defined in the family files.
namespace tessera::graph::ops {
#define TESSERA_GRAPH_OP(Name) extern const detail::OpDef Name;
#include "tessera/graph/ops.def"
#undef TESSERA_GRAPH_OP
} // namespace tessera::graph::ops
