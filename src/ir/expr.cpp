// Constructors and type rules of expression nodes, Var, Buffer and Tensor.
#include "tessera/ir/expr.h"

#include <cmath>

#include "tessera/ir/functor.h"
#include "tessera/ir/printer.h"
#include "tessera/support/error.h"

namespace tessera::ir {

const char* node_type_name(IRNodeType t) {
    switch (t) {
#define TESSERA_EXPR_NODE(X)                                                                   \
    case IRNodeType::X:                                                                        \
        return #X;
#define TESSERA_STMT_NODE(X)                                                                   \
    case IRNodeType::X:                                                                        \
        return #X;
#include "tessera/ir/ir_nodes.def"
    }
    return "?";
}

Expr::Expr(int v) : Expr(IntImm::make(DataType::i64(), v)) {}
Expr::Expr(int64_t v) : Expr(IntImm::make(DataType::i64(), v)) {}
Expr::Expr(float v) : Expr(FloatImm::make(DataType::f32(), v)) {}

Var::Var(const std::string& name_hint, DataType t) {
    auto* n = new Variable;
    n->name = name_hint;
    n->type = t;
    *this = Var(n);
}

const char* to_string(MemoryScope s) {
    switch (s) {
    case MemoryScope::Heap: return "heap";
    case MemoryScope::Stack: return "stack";
    case MemoryScope::Shared: return "shared";
    case MemoryScope::Local: return "local";
    }
    return "?";
}

int64_t BufferNode::num_elements() const {
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    return n;
}

Buffer Buffer::make(const std::string& name, DataType dtype, std::vector<int64_t> shape) {
    TESSERA_CHECK(dtype.is_scalar()) << "buffer " << name << " of vector type " << dtype;
    for (int64_t e : shape) TESSERA_CHECK(e > 0) << "buffer " << name << " extent " << e;
    auto* n = new BufferNode;
    n->name = name;
    n->dtype = dtype;
    n->shape = std::move(shape);
    return Buffer(n);
}

Expr Tensor::operator()(std::vector<Expr> indices) const {
    return TensorRead::make(*this, std::move(indices));
}
const std::string& Tensor::name() const { return get()->name; }
const std::vector<int64_t>& Tensor::shape() const { return get()->shape; }
DataType Tensor::dtype() const { return get()->dtype; }

std::vector<Tensor> TensorNode::inputs() const {
    struct Collect : IRVisitor {
        using IRVisitor::visit;
        std::vector<Tensor> found;
        void visit(const TensorRead* op) override {
            bool seen = false;
            for (const auto& t : found) seen = seen || t.same_as(op->tensor);
            if (!seen) found.push_back(op->tensor);
            IRVisitor::visit(op);
        }
    } c;
    c.visit(body);
    return c.found;
}

// ---------------------------------------------------------------------------------------------

template <typename T> static Expr finish(T* n) {
    Expr owner(n); // owns n before the type rule may throw, so a rejected node is freed
    n->type = n->infer_type();
    return owner;
}

Expr IntImm::make(DataType t, int64_t value) {
    TESSERA_CHECK(t.is_scalar() && !t.is_float()) << "IntImm of type " << t;
    auto* n = new IntImm;
    n->type = t;
    // Wrap to the type's width so equal values have equal representations.
    if (t.is_bool()) value = value != 0;
    else if (t.bits < 64) {
        int sh = 64 - t.bits;
        value = t.is_int() ? (int64_t)((uint64_t)value << sh) >> sh
                           : (int64_t)(((uint64_t)value << sh) >> sh);
    }
    n->value = value;
    return Expr(n);
}

Expr FloatImm::make(DataType t, double value) {
    TESSERA_CHECK(t.is_scalar() && t.is_float()) << "FloatImm of type " << t;
    auto* n = new FloatImm;
    n->type = t;
    n->value = t.bits == 32 ? (double)(float)value : value;
    return Expr(n);
}

Expr Cast::make(DataType t, Expr value) {
    TESSERA_CHECK(value.defined());
    auto* n = new Cast;
    n->type = t;
    n->value = std::move(value);
    return finish(n);
}
DataType Cast::infer_type() const {
    TESSERA_CHECK(type.lanes == value.type().lanes)
        << "cast of " << value.type() << " to " << type << " changes lanes";
    return type;
}

static DataType same_type(const char* what, const Expr& a, const Expr& b) {
    TESSERA_CHECK(a.defined() && b.defined()) << what << " with undefined operand";
    TESSERA_CHECK(a.type() == b.type())
        << what << " of mismatched types " << a.type() << " and " << b.type() << ": " << a
        << " and " << b;
    return a.type();
}

#define TESSERA_DEFINE_BINARY(Name, result)                                                    \
    Expr Name::make(Expr a, Expr b) {                                                          \
        auto* n = new Name;                                                                    \
        n->a = std::move(a);                                                                   \
        n->b = std::move(b);                                                                   \
        return finish(n);                                                                      \
    }                                                                                          \
    DataType Name::infer_type() const {                                                        \
        DataType t = same_type(#Name, a, b);                                                   \
        if (IRNodeType::Name == IRNodeType::And || IRNodeType::Name == IRNodeType::Or) {       \
            TESSERA_CHECK(t.is_bool()) << #Name " of " << t;                                   \
        }                                                                                      \
        return result;                                                                         \
    }
TESSERA_DEFINE_BINARY(Add, t)
TESSERA_DEFINE_BINARY(Sub, t)
TESSERA_DEFINE_BINARY(Mul, t)
TESSERA_DEFINE_BINARY(Div, t)
TESSERA_DEFINE_BINARY(Mod, t)
TESSERA_DEFINE_BINARY(Min, t)
TESSERA_DEFINE_BINARY(Max, t)
TESSERA_DEFINE_BINARY(EQ, DataType::boolean(t.lanes))
TESSERA_DEFINE_BINARY(NE, DataType::boolean(t.lanes))
TESSERA_DEFINE_BINARY(LT, DataType::boolean(t.lanes))
TESSERA_DEFINE_BINARY(LE, DataType::boolean(t.lanes))
TESSERA_DEFINE_BINARY(GT, DataType::boolean(t.lanes))
TESSERA_DEFINE_BINARY(GE, DataType::boolean(t.lanes))
TESSERA_DEFINE_BINARY(And, t)
TESSERA_DEFINE_BINARY(Or, t)
#undef TESSERA_DEFINE_BINARY

Expr Not::make(Expr a) {
    auto* n = new Not;
    n->a = std::move(a);
    return finish(n);
}
DataType Not::infer_type() const {
    TESSERA_CHECK(a.defined() && a.type().is_bool()) << "Not of non-bool";
    return a.type();
}

Expr Select::make(Expr c, Expr t, Expr f) {
    auto* n = new Select;
    n->condition = std::move(c);
    n->true_value = std::move(t);
    n->false_value = std::move(f);
    return finish(n);
}
DataType Select::infer_type() const {
    DataType t = same_type("Select", true_value, false_value);
    TESSERA_CHECK(condition.defined() && condition.type().is_bool() &&
                  (condition.type().lanes == t.lanes || condition.type().lanes == 1))
        << "Select condition of type " << (condition.defined() ? to_string(condition.type()) : "?")
        << " for values of type " << t;
    return t;
}

Expr Load::make(Buffer buffer, Expr index) {
    auto* n = new Load;
    n->buffer = std::move(buffer);
    n->index = std::move(index);
    return finish(n);
}
DataType Load::infer_type() const {
    TESSERA_CHECK(buffer.defined() && index.defined()) << "Load with undefined part";
    TESSERA_CHECK(index.type().is_int() && index.type().bits == 64)
        << "Load of " << buffer.name() << " with index type " << index.type() << ": " << index;
    return buffer.dtype().with_lanes(index.type().lanes);
}

Expr Ramp::make(Expr base, Expr stride, int lanes) {
    auto* n = new Ramp;
    n->base = std::move(base);
    n->stride = std::move(stride);
    n->lanes = lanes;
    return finish(n);
}
DataType Ramp::infer_type() const {
    DataType t = same_type("Ramp", base, stride);
    TESSERA_CHECK(t.is_scalar() && lanes > 1) << "Ramp of " << t << " with " << lanes << " lanes";
    return t.with_lanes(lanes);
}

Expr Broadcast::make(Expr value, int lanes) {
    auto* n = new Broadcast;
    n->value = std::move(value);
    n->lanes = lanes;
    return finish(n);
}
DataType Broadcast::infer_type() const {
    TESSERA_CHECK(value.defined() && value.type().is_scalar() && lanes > 1)
        << "Broadcast to " << lanes << " lanes";
    return value.type().with_lanes(lanes);
}

const char* to_string(ReduceOp op) {
    switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
    }
    return "?";
}

Expr VectorReduce::make(ReduceOp op, Expr value, int lanes) {
    auto* n = new VectorReduce;
    n->op = op;
    n->value = std::move(value);
    n->lanes = lanes;
    return finish(n);
}
DataType VectorReduce::infer_type() const {
    TESSERA_CHECK(value.defined() && lanes >= 1 && value.type().lanes % lanes == 0)
        << "VectorReduce to " << lanes << " lanes";
    return value.type().with_lanes(lanes);
}

const char* to_string(CallOp op) {
    switch (op) {
    case CallOp::Exp: return "exp";
    case CallOp::Log: return "log";
    case CallOp::Sqrt: return "sqrt";
    case CallOp::Tanh: return "tanh";
    case CallOp::Erf: return "erf";
    case CallOp::Abs: return "abs";
    case CallOp::Floor: return "floor";
    case CallOp::Ceil: return "ceil";
    case CallOp::RoundEven: return "round_even";
    case CallOp::Pow: return "pow";
    case CallOp::Ldexp: return "ldexp";
    case CallOp::Prefetch: return "prefetch";
    case CallOp::GpuBlockSum: return "gpu_block_sum";
    case CallOp::GpuBlockMax: return "gpu_block_max";
    case CallOp::GpuBlockMin: return "gpu_block_min";
    case CallOp::Dot4U8S8: return "dot4_u8s8";
    case CallOp::Dot2BF16: return "dot2_bf16";
    case CallOp::TileMatmulU8S8: return "tile_matmul_u8s8";
    case CallOp::TileMatmulBF16: return "tile_matmul_bf16";
    case CallOp::BytesAsWord: return "bytes_as_word";
    case CallOp::WarpMma: return "warp_mma";
    }
    return "?";
}

Expr Call::make(CallOp op, std::vector<Expr> args) {
    auto* n = new Call;
    n->op = op;
    n->args = std::move(args);
    return finish(n);
}
DataType Call::infer_type() const {
    if (is_tile_matmul(op)) { // TileMatmul::from_call checks the arguments
        TESSERA_CHECK(args.size() >= 15)
            << to_string(op) << " with " << args.size() << " arguments";
        return DataType::i32();
    }
    if (op == CallOp::WarpMma) { // WarpMma::from_call checks the arguments
        TESSERA_CHECK(args.size() >= 11) << "warp_mma with " << args.size() << " arguments";
        return DataType::i32();
    }
    size_t want = op == CallOp::Pow || op == CallOp::Ldexp || op == CallOp::Dot4U8S8 ||
                          op == CallOp::Dot2BF16
                      ? 2
                      : 1;
    TESSERA_CHECK(args.size() == want) << to_string(op) << " takes " << want << " arguments";
    for (const auto& a : args) TESSERA_CHECK(a.defined()) << to_string(op) << " of undefined";
    if (op == CallOp::Prefetch) {
        TESSERA_CHECK(args[0].as<Load>()) << "prefetch of a non-Load";
        return DataType::i32();
    }
    if (op == CallOp::BytesAsWord) {
        const DataType e = args[0].type().element_of();
        TESSERA_CHECK((args[0].as<Load>() || args[0].as<TensorRead>()) &&
                      (e == DataType::u8() || e == DataType::bf16()))
            << "bytes_as_word of " << args[0].type() << " (a u8 or bf16 Load or TensorRead)";
        return DataType::i32(args[0].type().lanes);
    }
    DataType t = args[0].type();
    if (op == CallOp::Pow) same_type("pow", args[0], args[1]);
    if (op == CallOp::Ldexp) {
        const DataType k = args[1].type();
        TESSERA_CHECK(k.is_int() && k.bits == 32 && k.lanes == t.lanes)
            << "ldexp of " << t << " by " << k << " (an i32 exponent of the same lanes)";
    }
    if (op == CallOp::Dot4U8S8) {
        same_type("dot4_u8s8", args[0], args[1]);
        TESSERA_CHECK(t.is_int() && t.bits == 32) << "dot4_u8s8 of " << t << " (i32 words)";
        return t;
    }
    if (op == CallOp::Dot2BF16) {
        same_type("dot2_bf16", args[0], args[1]);
        TESSERA_CHECK(t.is_int() && t.bits == 32) << "dot2_bf16 of " << t << " (i32 words)";
        return DataType::f32(t.lanes);
    }
    TESSERA_CHECK(t.is_float() || op == CallOp::Abs) << to_string(op) << " of " << t;
    TESSERA_CHECK(!is_gpu_block_reduce(op) || (t.is_scalar() && t.bits >= 32))
        << to_string(op) << " of " << t << " (accumulate in f32)";
    return t;
}

Expr Let::make(Var var, Expr value, Expr body) {
    auto* n = new Let;
    n->var = std::move(var);
    n->value = std::move(value);
    n->body = std::move(body);
    return finish(n);
}
DataType Let::infer_type() const {
    TESSERA_CHECK(var.defined() && value.defined() && body.defined()) << "Let with undefined part";
    TESSERA_CHECK(var.type() == value.type())
        << "Let " << var.name() << " of type " << var.type() << " bound to " << value.type();
    return body.type();
}

Expr TensorRead::make(Tensor tensor, std::vector<Expr> indices) {
    auto* n = new TensorRead;
    n->tensor = std::move(tensor);
    n->indices = std::move(indices);
    return finish(n);
}
DataType TensorRead::infer_type() const {
    TESSERA_CHECK(tensor.defined()) << "read of undefined tensor";
    TESSERA_CHECK(indices.size() == tensor.ndim())
        << "tensor " << tensor.name() << " of rank " << tensor.ndim() << " read with "
        << indices.size() << " indices";
    for (const auto& i : indices)
        TESSERA_CHECK(i.defined() && i.type() == DataType::i64())
            << "tensor " << tensor.name() << " index of type "
            << (i.defined() ? to_string(i.type()) : "undefined");
    return tensor.dtype();
}

Expr Reduce::make(ReduceOp op, Expr source, std::vector<IterVar> axes) {
    auto* n = new Reduce;
    n->op = op;
    n->source = std::move(source);
    n->axes = std::move(axes);
    return finish(n);
}
DataType Reduce::infer_type() const {
    TESSERA_CHECK(source.defined() && source.type().is_scalar()) << "Reduce of non-scalar";
    TESSERA_CHECK(!axes.empty()) << "Reduce without axes";
    for (const auto& a : axes) TESSERA_CHECK(a.extent > 0) << "Reduce axis extent " << a.extent;
    return source.type();
}

Expr reduce_identity(ReduceOp op, DataType t) {
    switch (op) {
    case ReduceOp::Sum:
        return t.is_float() ? FloatImm::make(t, 0.0) : IntImm::make(t, 0);
    case ReduceOp::Max:
        return t.is_float() ? FloatImm::make(t, -INFINITY)
                            : IntImm::make(t, t.is_int() ? INT64_MIN >> (64 - t.bits) : 0);
    case ReduceOp::Min:
        return t.is_float() ? FloatImm::make(t, INFINITY)
                            : IntImm::make(t, t.is_int() ? INT64_MAX >> (64 - t.bits) : -1);
    }
    TESSERA_UNREACHABLE();
}

Expr reduce_combine(ReduceOp op, Expr acc, Expr x) {
    switch (op) {
    case ReduceOp::Sum: return Add::make(std::move(acc), std::move(x));
    case ReduceOp::Max: return Max::make(std::move(acc), std::move(x));
    case ReduceOp::Min: return Min::make(std::move(acc), std::move(x));
    }
    TESSERA_UNREACHABLE();
}

CallOp gpu_block_reduce_op(ReduceOp op) {
    switch (op) {
    case ReduceOp::Sum: return CallOp::GpuBlockSum;
    case ReduceOp::Max: return CallOp::GpuBlockMax;
    case ReduceOp::Min: return CallOp::GpuBlockMin;
    }
    TESSERA_UNREACHABLE();
}

bool is_gpu_block_reduce(CallOp op) {
    return op == CallOp::GpuBlockSum || op == CallOp::GpuBlockMax || op == CallOp::GpuBlockMin;
}

bool is_tile_matmul(CallOp op) {
    return op == CallOp::TileMatmulU8S8 || op == CallOp::TileMatmulBF16;
}

} // namespace tessera::ir
