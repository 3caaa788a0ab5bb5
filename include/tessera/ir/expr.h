// Expression nodes of the loop IR and the tensor-expression language, plus Var, Buffer, Tensor.
//
// Semantics common to all nodes:
// - Integer arithmetic is two's complement in the node's bit width. Integer Div and Mod round
//   toward negative infinity (floor division), so Mod's result has the divisor's sign; the
//   divisor must be non-zero. Float arithmetic is IEEE in the node's width.
// - Binary operands have the same type; a scalar is never mixed with a vector implicitly
//   (use Broadcast). Comparisons yield bool with the operands' lanes.
// - Evaluation has no side effects except Call(Prefetch), Call(TileMatmul*) and
//   Call(WarpMma), which are only valid in Evaluate.
// - Variables are identified by object identity; their names are hints for printing only.
#pragma once

#include <string>
#include <vector>

#include "tessera/ir/node.h"

namespace tessera::ir {

// ---------------------------------------------------------------------------------------------
// Variables, buffers and tensors.

/// A variable: a loop index, a Let binding or a free symbol. Identity is the node object.
struct Variable : ExprNode<Variable> {
    static constexpr IRNodeType kNodeType = IRNodeType::Variable;
    std::string name; ///< Hint for printing; not unique.
    DataType infer_type() const { return type; }
    template <typename S, typename V> static void reflect(S& s, V&& v) { v("name", s.name); }
};

/// Handle to a Variable node; constructing a Var makes a fresh variable.
class Var : public Expr {
public:
    Var() = default;
    explicit Var(const std::string& name_hint, DataType t = DataType::i64());
    explicit Var(const Variable* n) : Expr(n) {}
    const Variable* get() const { return static_cast<const Variable*>(Expr::get()); }
    const Variable* operator->() const { return get(); }
    const std::string& name() const { return get()->name; }
};

/// Where an Allocate places its buffer.
enum class MemoryScope : uint8_t {
    Heap,  ///< Large temporaries: 64-byte aligned heap memory.
    Stack, ///< Small per-thread temporaries (register tiles); promoted to registers by LLVM.
    Shared, ///< GPU only: shared by the threads of one block (__shared__). CPU backends reject it.
    Local,  ///< GPU only: private to one thread (registers or local memory).
};
const char* to_string(MemoryScope s);

/// A flat, dense array of `dtype` elements; shape and row-major strides are informational
/// (Load/Store index it with one flat element index). Identity is the node object.
struct BufferNode : RefCounted {
    std::string name; ///< Hint for printing; not unique.
    DataType dtype;   ///< Element type (scalar).
    std::vector<int64_t> shape;
    int64_t num_elements() const;
};

class Buffer : public IntrusivePtr<const BufferNode> {
public:
    Buffer() = default;
    explicit Buffer(const BufferNode* n) : IntrusivePtr(const_cast<BufferNode*>(n)) {}
    /// Pre: dtype is scalar; every extent > 0.
    static Buffer make(const std::string& name, DataType dtype, std::vector<int64_t> shape);
    const std::string& name() const { return get()->name; }
    DataType dtype() const { return get()->dtype; }
    const std::vector<int64_t>& shape() const { return get()->shape; }
};

/// A reduction or data-parallel axis: var ranges over [0, extent).
struct IterVar {
    Var var;
    int64_t extent = 0;
};

struct TensorNode;
/// Handle to a tensor of the tensor-expression language.
class Tensor : public IntrusivePtr<const TensorNode> {
public:
    Tensor() = default;
    explicit Tensor(const TensorNode* n) : IntrusivePtr(const_cast<TensorNode*>(n)) {}
    /// An element read `T(i, j)` as a TensorRead expression. Pre: one index per dimension.
    Expr operator()(std::vector<Expr> indices) const;
    template <typename... Args> Expr operator()(Args... idx) const {
        return (*this)(std::vector<Expr>{Expr(idx)...});
    }
    const std::string& name() const;
    const std::vector<int64_t>& shape() const;
    DataType dtype() const;
    size_t ndim() const { return shape().size(); }
};

/// A tensor: either a placeholder (an input; body undefined) or a compute tensor whose element
/// at `axes` is `body`. The body may read other tensors through TensorRead and may be one
/// top-level Reduce. Built by te::placeholder and te::compute.
struct TensorNode : RefCounted {
    std::string name;
    DataType dtype;
    std::vector<int64_t> shape;
    std::vector<Var> axes; ///< One per dimension; empty for placeholders.
    Expr body;             ///< Undefined for placeholders.
    bool is_placeholder() const { return !body.defined(); }
    /// Tensors read by the body, in first-read order, without duplicates.
    std::vector<Tensor> inputs() const;
};

// ---------------------------------------------------------------------------------------------
// Leaves.

struct IntImm : ExprNode<IntImm> {
    static constexpr IRNodeType kNodeType = IRNodeType::IntImm;
    int64_t value = 0;
    /// Pre: t is a scalar int, uint or bool type.
    static Expr make(DataType t, int64_t value);
    DataType infer_type() const { return type; }
    template <typename S, typename V> static void reflect(S& s, V&& v) { v("value", s.value); }
};

struct FloatImm : ExprNode<FloatImm> {
    static constexpr IRNodeType kNodeType = IRNodeType::FloatImm;
    double value = 0;
    /// Pre: t is a scalar float type. The value is rounded to t.
    static Expr make(DataType t, double value);
    DataType infer_type() const { return type; }
    template <typename S, typename V> static void reflect(S& s, V&& v) { v("value", s.value); }
};

// ---------------------------------------------------------------------------------------------
// Arithmetic and logic.

/// Converts `value` to `type` (same lanes). Float to int truncates toward zero.
struct Cast : ExprNode<Cast> {
    static constexpr IRNodeType kNodeType = IRNodeType::Cast;
    Expr value;
    static Expr make(DataType t, Expr value);
    DataType infer_type() const;
    template <typename S, typename V> static void reflect(S& s, V&& v) { v("value", s.value); }
};

#define TESSERA_BINARY_NODE(Name)                                                              \
    struct Name : ExprNode<Name> {                                                             \
        static constexpr IRNodeType kNodeType = IRNodeType::Name;                              \
        Expr a, b;                                                                             \
        static Expr make(Expr a, Expr b);                                                      \
        DataType infer_type() const;                                                           \
        template <typename S, typename V> static void reflect(S& s, V&& v) {                   \
            v("a", s.a);                                                                       \
            v("b", s.b);                                                                       \
        }                                                                                      \
    };
TESSERA_BINARY_NODE(Add)
TESSERA_BINARY_NODE(Sub)
TESSERA_BINARY_NODE(Mul)
TESSERA_BINARY_NODE(Div) ///< Integer: floor division. Float: IEEE division.
TESSERA_BINARY_NODE(Mod) ///< Integer: floor modulo (result has the sign of b). Float: fmod-floor.
TESSERA_BINARY_NODE(Min)
TESSERA_BINARY_NODE(Max)
TESSERA_BINARY_NODE(EQ) ///< Comparisons yield bool (same lanes).
TESSERA_BINARY_NODE(NE)
TESSERA_BINARY_NODE(LT)
TESSERA_BINARY_NODE(LE)
TESSERA_BINARY_NODE(GT)
TESSERA_BINARY_NODE(GE)
TESSERA_BINARY_NODE(And) ///< Operands and result are bool.
TESSERA_BINARY_NODE(Or)
#undef TESSERA_BINARY_NODE

struct Not : ExprNode<Not> {
    static constexpr IRNodeType kNodeType = IRNodeType::Not;
    Expr a;
    static Expr make(Expr a);
    DataType infer_type() const;
    template <typename S, typename V> static void reflect(S& s, V&& v) { v("a", s.a); }
};

/// `condition ? true_value : false_value`, lane-wise. Both branches may be evaluated.
struct Select : ExprNode<Select> {
    static constexpr IRNodeType kNodeType = IRNodeType::Select;
    Expr condition, true_value, false_value;
    static Expr make(Expr condition, Expr true_value, Expr false_value);
    DataType infer_type() const;
    template <typename S, typename V> static void reflect(S& s, V&& v) {
        v("condition", s.condition);
        v("true_value", s.true_value);
        v("false_value", s.false_value);
    }
};

// ---------------------------------------------------------------------------------------------
// Memory and vectors.

/// Reads buffer[index]. A vector index (lanes > 1) gives a vector load of the same lanes; a Ramp
/// with stride 1 is a dense vector load, any other vector index is a gather.
struct Load : ExprNode<Load> {
    static constexpr IRNodeType kNodeType = IRNodeType::Load;
    Buffer buffer;
    Expr index; ///< Int(64) flat element index, scalar or vector.
    static Expr make(Buffer buffer, Expr index);
    DataType infer_type() const;
    template <typename S, typename V> static void reflect(S& s, V&& v) {
        v("buffer", s.buffer);
        v("index", s.index);
    }
};

/// The vector [base, base + stride, ..., base + (lanes-1)*stride]. base, stride scalar.
struct Ramp : ExprNode<Ramp> {
    static constexpr IRNodeType kNodeType = IRNodeType::Ramp;
    Expr base, stride;
    int lanes = 1;
    static Expr make(Expr base, Expr stride, int lanes);
    DataType infer_type() const;
    template <typename S, typename V> static void reflect(S& s, V&& v) {
        v("base", s.base);
        v("stride", s.stride);
        v("lanes", s.lanes);
    }
};

/// A scalar replicated across `lanes`.
struct Broadcast : ExprNode<Broadcast> {
    static constexpr IRNodeType kNodeType = IRNodeType::Broadcast;
    Expr value;
    int lanes = 1;
    static Expr make(Expr value, int lanes);
    DataType infer_type() const;
    template <typename S, typename V> static void reflect(S& s, V&& v) {
        v("value", s.value);
        v("lanes", s.lanes);
    }
};

/// Combiner of Reduce and VectorReduce. The identity is 0 for Sum, the type's lowest value
/// (-inf for floats) for Max and its highest (+inf) for Min.
enum class ReduceOp : uint8_t { Sum, Max, Min };
const char* to_string(ReduceOp op);

/// Reduces each group of value.lanes / lanes adjacent lanes to one lane.
struct VectorReduce : ExprNode<VectorReduce> {
    static constexpr IRNodeType kNodeType = IRNodeType::VectorReduce;
    ReduceOp op = ReduceOp::Sum;
    Expr value;
    int lanes = 1; ///< Result lanes; divides value's lanes.
    static Expr make(ReduceOp op, Expr value, int lanes);
    DataType infer_type() const;
    template <typename S, typename V> static void reflect(S& s, V&& v) {
        v("op", s.op);
        v("value", s.value);
        v("lanes", s.lanes);
    }
};

// ---------------------------------------------------------------------------------------------
// Calls and bindings.

/// Pure math intrinsics (lane-wise, float args and result) and the Prefetch side effect.
enum class CallOp : uint8_t {
    Exp,
    Log,
    Sqrt,
    Tanh,
    Erf,
    Abs,   ///< Also valid on ints.
    Floor,
    Ceil,
    Pow,   ///< Two args.
    Prefetch, ///< Prefetch(Load): hint that the loaded address will be read soon. Type: i32.
    /// GPU cross-thread reductions (GPU lowering only; the CPU backends, the interpreter and
    /// tensor expressions reject them): x combined over all threads of the block along
    /// threadIdx.x (blockDim.y = blockDim.z = 1), every thread receiving the result. Type of x
    /// (f32 or f64). Every thread of the block must evaluate it in uniform control flow (it
    /// contains barriers): the CUDA backend rejects it inside a thread-dependent branch.
    GpuBlockSum,
    GpuBlockMax,
    GpuBlockMin,
    /// dot4_u8s8(a, b): the four bytes of i32 a read as unsigned, those of b as signed, their
    /// four products summed, an i32 (scalar or lane-wise vector; both args i32 of the same
    /// lanes). The int8 kernels' multiply: acc + dot4_u8s8(a, b) is one AVX-512 VNNI / AVX-VNNI
    /// vpdpbusd per vector on CPUs that have it. Exact (|sum| <= 4 * 255 * 128).
    Dot4U8S8,
    /// dot2_bf16(a, b): the two bf16 halves of i32 a (the low half is the first element) times
    /// those of b, the two products (exact in f32) summed: an f32 (scalar or lane-wise vector;
    /// both args i32 of the same lanes). The bf16 kernels' multiply: acc + dot2_bf16(a, b) is
    /// one AVX512-BF16 vdpbf16ps per vector on CPUs that have it (which adds the products to
    /// acc one at a time, so results may differ in the last bit of the sum's rounding).
    Dot2BF16,
    /// bytes_as_word(x): the i32 whose little-endian bytes are those of the consecutive
    /// elements starting at x, 4 u8 or 2 bf16 (a Load of such a buffer, or a TensorRead of such a
    /// tensor whose last index steps through them), i.e. those bytes reinterpreted. Lane-wise
    /// on a vector Load. Pre: the elements exist (same last dimension). Packing elements into
    /// the words dot4_u8s8 and dot2_bf16 read: a dense vector load where each lane's address
    /// is 4 bytes past the previous.
    BytesAsWord,
    /// A block of 8-bit matrix products on matrix tiles (tile_matmul.h: TileMatmul gives its
    /// arguments and meaning). Only valid in an Evaluate; made by lowering (lower/tile_matmul.h).
    /// Type i32 (a statement; its value means nothing).
    TileMatmulU8S8,
    /// The same with bf16 pairs (dot2_bf16) summed into f32 accumulators.
    TileMatmulBF16,
    /// round_even(x): x rounded to the nearest integer, halves to even (nearbyint in the
    /// default rounding mode; one vrndscaleps or roundps on x86). Float; infinities and NaN
    /// come out unchanged.
    RoundEven,
    /// ldexp(x, k): x * 2^k, exactly (unless it overflows or underflows, as std::ldexp): float
    /// x, integer k (i32) of the same lanes. Conversions between float formats and the narrow
    /// float codes (te/narrow_cast.h) scale by powers of two with it.
    Ldexp,
    /// One warp-level tensor-core matrix product (GPU lowering only; ir/warp_mma.h: WarpMma
    /// gives its arguments, the fragment layouts and its meaning). Only valid in an Evaluate,
    /// reached by all 32 lanes of a warp together; made by lowering (lower/warp_mma.h). Type
    /// i32 (a statement; its value means nothing).
    WarpMma,
};
const char* to_string(CallOp op);

struct Call : ExprNode<Call> {
    static constexpr IRNodeType kNodeType = IRNodeType::Call;
    CallOp op = CallOp::Exp;
    std::vector<Expr> args;
    static Expr make(CallOp op, std::vector<Expr> args);
    DataType infer_type() const;
    template <typename S, typename V> static void reflect(S& s, V&& v) {
        v("op", s.op);
        v("args", s.args);
    }
};

/// `let var = value in body`.
struct Let : ExprNode<Let> {
    static constexpr IRNodeType kNodeType = IRNodeType::Let;
    Var var;
    Expr value, body;
    static Expr make(Var var, Expr value, Expr body);
    DataType infer_type() const;
    template <typename S, typename V> static void reflect(S& s, V&& v) {
        v("var", s.var);
        v("value", s.value);
        v("body", s.body);
    }
};

// ---------------------------------------------------------------------------------------------
// Tensor-expression nodes (before lowering only).

/// tensor[indices...]: a multi-dimensional element read of a Tensor. Indices are Int(64).
struct TensorRead : ExprNode<TensorRead> {
    static constexpr IRNodeType kNodeType = IRNodeType::TensorRead;
    Tensor tensor;
    std::vector<Expr> indices;
    static Expr make(Tensor tensor, std::vector<Expr> indices);
    DataType infer_type() const;
    template <typename S, typename V> static void reflect(S& s, V&& v) {
        v("tensor", s.tensor);
        v("indices", s.indices);
    }
};

/// op over `axes` of `source` (a commutative reduction, starting from op's identity). Only valid
/// as the whole body of a compute tensor.
struct Reduce : ExprNode<Reduce> {
    static constexpr IRNodeType kNodeType = IRNodeType::Reduce;
    ReduceOp op = ReduceOp::Sum;
    Expr source;
    std::vector<IterVar> axes;
    static Expr make(ReduceOp op, Expr source, std::vector<IterVar> axes);
    DataType infer_type() const;
    template <typename S, typename V> static void reflect(S& s, V&& v) {
        v("op", s.op);
        v("source", s.source);
        v("axes", s.axes);
    }
};

/// The identity value of `op` in scalar type t (0, lowest, highest).
Expr reduce_identity(ReduceOp op, DataType t);
/// One reduction step: acc + x, max(acc, x) or min(acc, x). Pre: acc and x have one type.
Expr reduce_combine(ReduceOp op, Expr acc, Expr x);
/// The cross-thread reduction call of `op` (CallOp::GpuBlockSum/Max/Min).
CallOp gpu_block_reduce_op(ReduceOp op);
/// True for GpuBlockSum, GpuBlockMax and GpuBlockMin.
bool is_gpu_block_reduce(CallOp op);
/// True for TileMatmulU8S8 and TileMatmulBF16.
bool is_tile_matmul(CallOp op);

} // namespace tessera::ir
