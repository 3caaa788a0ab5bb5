// The elementwise ops: unary math and activations, broadcasting binary arithmetic, Pow,
// variadic Max and Min, comparisons, Not, Where, Clip and Cast. Canonical forms (opset 17):
//   Clip(X, min?, max?)   bounds are operands (attributes before opset 11 become constants)
//   LeakyRelu alpha; HardSigmoid alpha, beta   (defaults made explicit)
//   Cast(X) to = dtype name ("f32", "i64", ...)
//   binary ops broadcast numpy-style; Max and Min take one or more operands
// Gelu is not an ONNX op before opset 20: recognize_patterns makes it from its decomposed form.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "../onnx_dtype.h"
#include "../op_util.h"
#include "eval_util.h"
#include "node_kernel.h"
#include "node_types.h"
#include "op_import.h"
#include "tessera/ir/op.h"
#include "tessera/te/op_library.h"
#include "tessera/te/ops_extra.h"

namespace tessera::graph::detail {

namespace {

// The evaluator's functions, as small enums so their switches stay exhaustive.
enum class UnaryFn {
    Relu,
    LeakyRelu,
    Sigmoid,
    HardSigmoid,
    HardSwish,
    Tanh,
    Erf,
    Gelu,
    Sqrt,
    Exp,
    Log,
    Neg,
    Reciprocal
};
enum class ArithFn { Add, Sub, Mul, Div, Max, Min };
enum class CompareFn { Equal, Less, Greater };

// Elementwise result of f over broadcast a and b, written into out (already shaped).
template <typename TA, typename TB, typename TO, typename F>
static void broadcast_apply(const TensorData& a, const TensorData& b, TensorData& out, F f) {
    const TA* pa = a.data<TA>();
    const TB* pb = b.data<TB>();
    TO* po = out.data<TO>();
    const int64_t n = out.numel();
    if (a.shape() == out.shape() && b.shape() == out.shape()) {
        for (int64_t i = 0; i < n; ++i)
            po[i] = f(pa[i], pb[i]);
    } else if (a.shape() == out.shape() && b.numel() == 1) {
        const TB bv = pb[0];
        for (int64_t i = 0; i < n; ++i)
            po[i] = f(pa[i], bv);
    } else {
        for_each_index<2>(
            out.shape(),
            {broadcast_strides(a.shape(), out.shape()), broadcast_strides(b.shape(), out.shape())},
            {0, 0}, [&](int64_t o, const std::array<int64_t, 2>& off) {
                po[o] = f(pa[off[0]], pb[off[1]]);
            });
    }
}

// Integer arithmetic that wraps instead of overflowing (signed overflow is undefined).
template <typename T> static T wrap_add(T a, T b) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <typename T> static T wrap_sub(T a, T b) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <typename T> static T wrap_mul(T a, T b) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}

EvalOutputs eval_not(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    require_dtype(x, {DType::Bool}, "input", where);
    TensorData out(DType::Bool, x.shape());
    const uint8_t* px = x.data<uint8_t>();
    uint8_t* po = out.data<uint8_t>();
    for (int64_t i = 0; i < x.numel(); ++i)
        po[i] = px[i] ? 0 : 1;
    return {std::move(out)};
}

// One unary function on a float of type T (math in T, as ONNX runtimes do).
template <typename T> static T unary(UnaryFn fn, T v, T alpha, T beta) {
    switch (fn) {
    case UnaryFn::Relu:
        return v > 0 ? v : T(0);
    case UnaryFn::Neg:
        return -v;
    case UnaryFn::LeakyRelu:
        return v >= 0 ? v : alpha * v;
    case UnaryFn::Sigmoid:
        return T(1) / (T(1) + std::exp(-v));
    case UnaryFn::HardSigmoid:
        return std::clamp(alpha * v + beta, T(0), T(1));
    case UnaryFn::HardSwish:
        return v * std::clamp(v / T(6) + T(0.5), T(0), T(1));
    case UnaryFn::Tanh:
        return std::tanh(v);
    case UnaryFn::Erf:
        return std::erf(v);
    case UnaryFn::Gelu: // x * 0.5 * (1 + erf(x / sqrt(2))), the exact (erf) form
        return v * T(0.5) * (T(1) + std::erf(v / std::sqrt(T(2))));
    case UnaryFn::Sqrt:
        return std::sqrt(v);
    case UnaryFn::Exp:
        return std::exp(v);
    case UnaryFn::Log:
        return std::log(v);
    case UnaryFn::Reciprocal:
        return T(1) / v;
    }
    TESSERA_UNREACHABLE();
    return v;
}

EvalOutputs eval_unary(const Node& n, const EvalInputs& in, UnaryFn fn, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    const bool int_ok = fn == UnaryFn::Relu || fn == UnaryFn::Neg;
    if (int_ok)
        require_dtype(x, {DType::F32, DType::F64, DType::I32, DType::I64}, "input", where);
    else
        require_dtype(x, {DType::F32, DType::F64}, "input", where);
    TensorData out(x.dtype(), x.shape());
    const float alpha = n.attr_float("alpha", fn == UnaryFn::HardSigmoid ? 0.2f : 0.01f);
    const float beta = n.attr_float("beta", 0.5f);
    dispatch(x.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        if constexpr (std::is_same_v<T, uint8_t>) {
            TESSERA_UNREACHABLE();
        } else {
            const T* px = x.data<T>();
            T* po = out.data<T>();
            if constexpr (std::is_integral_v<T>) {
                for (int64_t i = 0; i < x.numel(); ++i)
                    po[i] = fn == UnaryFn::Relu ? std::max(px[i], T(0)) : wrap_sub(T(0), px[i]);
            } else {
                for (int64_t i = 0; i < x.numel(); ++i)
                    po[i] = unary(fn, px[i], T(alpha), T(beta));
            }
        }
        return 0;
    });
    return {std::move(out)};
}

// One arithmetic function on two numbers of type T.
template <typename T> static T arith(ArithFn fn, T a, T b, const std::string& where) {
    if constexpr (std::is_integral_v<T>) {
        switch (fn) {
        case ArithFn::Add:
            return wrap_add(a, b);
        case ArithFn::Sub:
            return wrap_sub(a, b);
        case ArithFn::Mul:
            return wrap_mul(a, b);
        case ArithFn::Div:
            if (b == 0)
                throw UserError() << where << ": integer division by zero";
            if (b == -1)
                return wrap_sub(T(0), a); // avoids INT_MIN / -1
            return a / b;                 // truncation, as C and ONNX runtimes do
        case ArithFn::Max:
            return std::max(a, b);
        case ArithFn::Min:
            return std::min(a, b);
        }
    } else {
        switch (fn) {
        case ArithFn::Add:
            return a + b;
        case ArithFn::Sub:
            return a - b;
        case ArithFn::Mul:
            return a * b;
        case ArithFn::Div:
            return a / b;
        // NaN in either operand gives NaN (std::max would drop it depending on the order).
        case ArithFn::Max:
            return (a != a || b != b) ? a + b : std::max(a, b);
        case ArithFn::Min:
            return (a != a || b != b) ? a + b : std::min(a, b);
        }
    }
    TESSERA_UNREACHABLE();
    return T(0);
}

static TensorData binary_arith(ArithFn fn, const TensorData& a, const TensorData& b,
                               const std::string& where) {
    require_dtype(a, {DType::F32, DType::F64, DType::I32, DType::I64}, "input 0", where);
    if (b.dtype() != a.dtype())
        throw UserError() << where << ": input dtypes differ (" << dtype_name(a.dtype()) << " and "
                          << dtype_name(b.dtype()) << ")";
    TensorData out(a.dtype(), broadcast_shapes({a.shape(), b.shape()}, where));
    dispatch(a.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        if constexpr (std::is_same_v<T, uint8_t>) {
            TESSERA_UNREACHABLE();
        } else {
            broadcast_apply<T, T, T>(a, b, out, [&](T x, T y) { return arith(fn, x, y, where); });
        }
        return 0;
    });
    return out;
}

EvalOutputs eval_arith(const Node& n, const EvalInputs& in, ArithFn fn, const std::string& where) {
    return {binary_arith(fn, require_input(in, 0, where), require_input(in, 1, where), where)};
}

EvalOutputs eval_pow(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& a = require_input(in, 0, where);
    const TensorData& b = require_input(in, 1, where);
    // The exponent may have another numeric dtype; computed in double.
    const std::initializer_list<DType> numeric = {DType::F32, DType::F64, DType::I32, DType::I64};
    require_dtype(a, numeric, "base", where);
    require_dtype(b, numeric, "exponent", where);
    TensorData out(a.dtype(), broadcast_shapes({a.shape(), b.shape()}, where));
    TensorData b64 = b.cast(DType::F64);
    dispatch(a.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        if constexpr (std::is_same_v<T, uint8_t>) {
            TESSERA_UNREACHABLE();
        } else {
            broadcast_apply<T, double, T>(a, b64, out, [](T x, double y) {
                double r = std::pow(static_cast<double>(x), y);
                if constexpr (std::is_integral_v<T>)
                    return static_cast<T>(std::trunc(r));
                else
                    return static_cast<T>(r);
            });
        }
        return 0;
    });
    return {std::move(out)};
}

EvalOutputs eval_variadic(const Node& n, const EvalInputs& in, ArithFn fn,
                          const std::string& where) {
    TensorData acc = require_input(in, 0, where);
    require_dtype(acc, {DType::F32, DType::F64, DType::I32, DType::I64}, "input 0", where);
    for (size_t i = 1; i < in.size(); ++i)
        acc = binary_arith(fn, acc, require_input(in, i, where), where);
    return {std::move(acc)};
}

EvalOutputs eval_compare(const Node& n, const EvalInputs& in, CompareFn fn,
                         const std::string& where) {
    const TensorData& a = require_input(in, 0, where);
    const TensorData& b = require_input(in, 1, where);
    if (a.dtype() != b.dtype())
        throw UserError() << where << ": input dtypes differ (" << dtype_name(a.dtype()) << " and "
                          << dtype_name(b.dtype()) << ")";
    if (fn != CompareFn::Equal)
        require_dtype(a, {DType::F32, DType::F64, DType::I32, DType::I64}, "input", where);
    TensorData out(DType::Bool, broadcast_shapes({a.shape(), b.shape()}, where));
    dispatch(a.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        broadcast_apply<T, T, uint8_t>(a, b, out, [fn](T x, T y) -> uint8_t {
            switch (fn) {
            case CompareFn::Equal:
                return x == y;
            case CompareFn::Less:
                return x < y;
            case CompareFn::Greater:
                return x > y;
            }
            return 0;
        });
        return 0;
    });
    return {std::move(out)};
}

EvalOutputs eval_where(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& c = require_input(in, 0, where);
    const TensorData& x = require_input(in, 1, where);
    const TensorData& y = require_input(in, 2, where);
    require_dtype(c, {DType::Bool}, "condition", where);
    if (x.dtype() != y.dtype())
        throw UserError() << where << ": X is " << dtype_name(x.dtype()) << " but Y is "
                          << dtype_name(y.dtype());
    Shape shape = broadcast_shapes({c.shape(), x.shape(), y.shape()}, where);
    TensorData out(x.dtype(), shape);
    dispatch(x.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        const uint8_t* pc = c.data<uint8_t>();
        const T* px = x.data<T>();
        const T* py = y.data<T>();
        T* po = out.data<T>();
        for_each_index<3>(shape,
                          {broadcast_strides(c.shape(), shape), broadcast_strides(x.shape(), shape),
                           broadcast_strides(y.shape(), shape)},
                          {0, 0, 0}, [&](int64_t o, const std::array<int64_t, 3>& off) {
                              po[o] = pc[off[0]] ? px[off[1]] : py[off[2]];
                          });
        return 0;
    });
    return {std::move(out)};
}

EvalOutputs eval_clip(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    require_dtype(x, {DType::F32, DType::F64, DType::I32, DType::I64}, "input", where);
    auto bound = [&](size_t i, const char* what) -> const TensorData* {
        if (i >= in.size() || in[i] == nullptr)
            return nullptr;
        if (in[i]->dtype() != x.dtype() || in[i]->numel() != 1)
            throw UserError() << where << ": " << what << " must be a " << dtype_name(x.dtype())
                              << " scalar, got " << dtype_name(in[i]->dtype())
                              << shape_str(in[i]->shape());
        return in[i];
    };
    const TensorData* lo = bound(1, "min");
    const TensorData* hi = bound(2, "max");
    TensorData out(x.dtype(), x.shape());
    dispatch(x.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        const T* px = x.data<T>();
        T* po = out.data<T>();
        for (int64_t i = 0; i < x.numel(); ++i) {
            T v = px[i];
            if (lo && v < lo->data<T>()[0])
                v = lo->data<T>()[0];
            if (hi && v > hi->data<T>()[0])
                v = hi->data<T>()[0];
            po[i] = v;
        }
        return 0;
    });
    return {std::move(out)};
}

EvalOutputs eval_cast(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    std::string to = n.attr_string("to");
    std::optional<DType> t = parse_dtype(to);
    if (!t)
        throw UserError() << where << ": cannot cast to '" << to << "'";
    return {x.cast(*t)};
}

template <UnaryFn F>
EvalOutputs eval_unary_as(const Node& n, const EvalInputs& in, const std::string& where) {
    return eval_unary(n, in, F, where);
}
template <ArithFn F>
EvalOutputs eval_arith_as(const Node& n, const EvalInputs& in, const std::string& where) {
    return eval_arith(n, in, F, where);
}
template <ArithFn F>
EvalOutputs eval_variadic_as(const Node& n, const EvalInputs& in, const std::string& where) {
    return eval_variadic(n, in, F, where);
}
template <CompareFn F>
EvalOutputs eval_compare_as(const Node& n, const EvalInputs& in, const std::string& where) {
    return eval_compare(n, in, F, where);
}

// ---- type inference ----

// Add, Sub, Mul, Div, Max, Min: one numeric dtype, broadcast shapes.
TypeList arith_types(const NodeTypes& t) {
    std::vector<Shape> shapes = t.input_shapes();
    const Value& a = t.in(0, "input");
    t.dtype(a, kNumeric, "input");
    for (size_t i = 1; i < t.num_inputs(); ++i)
        t.same_dtype(a, t.in(i, "input"));
    return {{a.dtype, broadcast_shapes(shapes, t.where())}};
}

template <bool NumericOnly> TypeList compare_types(const NodeTypes& t) {
    std::vector<Shape> shapes = t.input_shapes();
    const Value& a = t.in(0, "input");
    if (NumericOnly)
        t.dtype(a, kNumeric, "input");
    t.same_dtype(a, t.in(1, "input"));
    return {{DType::Bool, broadcast_shapes(shapes, t.where())}};
}

const std::initializer_list<DType> kBool = {DType::Bool};

TypeList clip_types(const NodeTypes& t) {
    const Value& x = t.in(0, "input");
    t.dtype(x, kNumeric, "input");
    if (t.has(1))
        t.scalar_of(t.in(1, "min"), x.dtype, "min");
    if (t.has(2))
        t.scalar_of(t.in(2, "max"), x.dtype, "max");
    return {{x.dtype, x.shape}};
}

TypeList pow_types(const NodeTypes& t) {
    const Value& a = t.in(0, "base");
    t.dtype(a, kNumeric, "base");
    t.dtype(t.in(1, "exponent"), kNumeric, "exponent");
    return {{a.dtype, broadcast_shapes(t.input_shapes(), t.where())}};
}

TypeList where_types(const NodeTypes& t) {
    t.dtype(t.in(0, "condition"), kBool, "condition");
    t.same_dtype(t.in(1, "X"), t.in(2, "Y"));
    return {{t.in(1, "X").dtype, broadcast_shapes(t.input_shapes(), t.where())}};
}

TypeList cast_types(const NodeTypes& t) {
    const Value& x = t.in(0, "input");
    std::string to = t.node().attr_string("to");
    std::optional<DType> d = parse_dtype(to);
    if (!d)
        t.fail("cannot cast to '" + to + "'");
    return {{*d, x.shape}};
}

// ---- import ----

// Clip before opset 11: bounds are attributes; they become operands, absent ones stay absent.
void import_clip(OpImport& im) {
    if (im.opset() >= 11)
        return;
    im.expect_inputs(1, 1);
    const DType dt = im.input_value(0).dtype;
    auto bound = [&](const char* key) {
        return im.constant(key, TensorData::scalar(im.attr(key).f).cast(dt));
    };
    std::vector<ValueId>& ins = im.inputs();
    ins.push_back(im.has("min") ? bound("min") : kNoValue);
    if (im.has("max"))
        ins.push_back(bound("max"));
    if (ins.back() == kNoValue)
        ins.pop_back();
}

void import_cast(OpImport& im) {
    if (!im.has("to"))
        im.fail("attribute 'to' is missing");
    const int32_t to = static_cast<int32_t>(im.attr("to").i);
    std::optional<DType> t = dtype_from_onnx(to);
    if (!t)
        im.fail("cast to " + onnx_type_name(to) + " is not supported");
    im.set("to", Attribute::of_string(dtype_name(*t)));
}

// ---- kernels ----

te::Tensor binary(Op op, const te::Tensor& a, const te::Tensor& b) {
    switch (op) {
    case Op::Add:
        return te::add(a, b);
    case Op::Sub:
        return te::subtract(a, b);
    case Op::Mul:
        return te::multiply(a, b);
    case Op::Max:
        return te::maximum(a, b);
    default:
        break;
    }
    TESSERA_CHECK(op == Op::Min) << op_name(op) << " is not a binary arithmetic op";
    return te::minimum(a, b);
}

void binary_kernel(NodeKernel& k) { k.set(binary(k.op(), k.in(0), k.in(1))); }

void variadic_kernel(NodeKernel& k) {
    te::Tensor y = k.in(0);
    for (size_t i = 1; i < k.node().inputs.size(); ++i)
        y = binary(k.op(), y, k.in(i));
    if (k.node().inputs.size() == 1)
        y = te::unary(
            y, [](te::Expr e) { return e; }, "copy");
    k.set(y);
}

// HardSigmoid max(0, min(1, alpha * x + beta)); HardSwish x * HardSigmoid(x) at 1/6, 1/2.
void hard_sigmoid_kernel(NodeKernel& k) {
    const Node& n = k.node();
    const bool swish = n.op == Op::HardSwish;
    const double alpha = swish ? 1.0 / 6 : n.attr_float("alpha", 0.2f);
    const double beta = swish ? 0.5 : n.attr_float("beta", 0.5f);
    const ir::DataType dt = k.out_type();
    k.set(te::unary(
        k.in(0),
        [=](te::Expr e) {
            te::Expr h =
                ir::max(ir::make_zero(dt), ir::min(ir::make_one(dt), ir::make_const(dt, alpha) * e +
                                                                         ir::make_const(dt, beta)));
            return swish ? e * h : h;
        },
        swish ? "hard_swish" : "hard_sigmoid"));
}

// Compile-time bounds become immediates; a runtime bound (a graph input) is read by the kernel.
void clip_kernel(NodeKernel& k) {
    const te::Expr lo_in = k.runtime_scalar(1), hi_in = k.runtime_scalar(2);
    if (!lo_in.defined() && !hi_in.defined()) {
        const double lo = k.static_scalar(1).value_or(-std::numeric_limits<double>::infinity());
        const double hi = k.static_scalar(2).value_or(std::numeric_limits<double>::infinity());
        k.set(te::clip(k.in(0), lo, hi));
        return;
    }
    const ir::DataType t = k.out_type();
    auto bound = [&](const te::Expr& runtime, size_t i) -> te::Expr {
        if (runtime.defined())
            return runtime;
        const std::optional<double> v = k.static_scalar(i);
        return v ? ir::make_const(t, *v) : te::Expr();
    };
    const te::Expr lo = bound(lo_in, 1), hi = bound(hi_in, 2);
    k.set(te::unary(
        k.in(0),
        [=](te::Expr v) {
            if (lo.defined())
                v = ir::max(v, lo);
            return hi.defined() ? ir::min(v, hi) : v;
        },
        "clip"));
}

template <typename F> void compare_kernel(NodeKernel& k, F f, const char* name) {
    k.set(te::broadcast_binary(k.in(0), k.in(1), f, name));
}

using K = Attribute::Kind;
using FK = FusionKind;

// An elementwise op of one operand.
OpDef unary_op(Op op, int since,
               EvalOutputs (*eval)(const Node&, const EvalInputs&, const std::string&),
               void (*kernel)(NodeKernel&)) {
    return OpDef(op)
        .onnx(since, 1, 1, 1)
        .types(same_as_input<kFloat>)
        .eval(eval)
        .fuses_as(FK::Elementwise)
        .builds(kernel);
}

// A broadcasting elementwise op of two operands.
OpDef binary_op(Op op, EvalOutputs (*eval)(const Node&, const EvalInputs&, const std::string&),
                void (*kernel)(NodeKernel&)) {
    return OpDef(op)
        .onnx(1, 2, 2, 1)
        .types(arith_types)
        .eval(eval)
        .fuses_as(FK::Elementwise)
        .builds(kernel);
}

} // namespace

} // namespace tessera::graph::detail

namespace tessera::graph::ops {

using namespace detail;

const OpDef Relu = unary_op(Op::Relu, 1, eval_unary_as<UnaryFn::Relu>, [](NodeKernel& k) {
                       k.set(te::relu(k.in(0)));
                   }).types(same_as_input<kNumeric>);
const OpDef LeakyRelu =
    unary_op(
        Op::LeakyRelu, 1, eval_unary_as<UnaryFn::LeakyRelu>,
        [](NodeKernel& k) { k.set(te::leaky_relu(k.in(0), k.node().attr_float("alpha", 0.01f))); })
        .onnx(1, 1, 1, 1, {{"alpha", K::Float}})
        .import_with([](OpImport& im) { im.keep("alpha", Attribute::of_float(0.01f)); })
        .named("leaky_relu");
const OpDef Sigmoid = unary_op(Op::Sigmoid, 1, eval_unary_as<UnaryFn::Sigmoid>,
                               [](NodeKernel& k) { k.set(te::sigmoid(k.in(0))); });
const OpDef HardSigmoid =
    unary_op(Op::HardSigmoid, 1, eval_unary_as<UnaryFn::HardSigmoid>, hard_sigmoid_kernel)
        .onnx(1, 1, 1, 1, {{"alpha", K::Float}, {"beta", K::Float}})
        .import_with([](OpImport& im) {
            im.keep("alpha", Attribute::of_float(0.2f));
            im.keep("beta", Attribute::of_float(0.5f));
        })
        .named("hard_sigmoid");
const OpDef HardSwish =
    unary_op(Op::HardSwish, 14, eval_unary_as<UnaryFn::HardSwish>, hard_sigmoid_kernel)
        .named("hard_swish");
const OpDef Tanh = unary_op(Op::Tanh, 1, eval_unary_as<UnaryFn::Tanh>,
                            [](NodeKernel& k) { k.set(te::tanh(k.in(0))); });
const OpDef Erf = unary_op(Op::Erf, 9, eval_unary_as<UnaryFn::Erf>,
                           [](NodeKernel& k) { k.set(te::erf(k.in(0))); });
const OpDef Gelu = unary_op(Op::Gelu, 20, eval_unary_as<UnaryFn::Gelu>,
                            [](NodeKernel& k) { k.set(te::gelu(k.in(0))); });
const OpDef Sqrt = unary_op(Op::Sqrt, 1, eval_unary_as<UnaryFn::Sqrt>,
                            [](NodeKernel& k) { k.set(te::sqrt(k.in(0))); });
const OpDef Exp = unary_op(Op::Exp, 1, eval_unary_as<UnaryFn::Exp>,
                           [](NodeKernel& k) { k.set(te::exp(k.in(0))); });
const OpDef Log = unary_op(Op::Log, 1, eval_unary_as<UnaryFn::Log>, [](NodeKernel& k) {
    k.set(te::unary(
        k.in(0), [](te::Expr e) { return ir::log(e); }, "log"));
});
const OpDef Neg = unary_op(Op::Neg, 1, eval_unary_as<UnaryFn::Neg>, [](NodeKernel& k) {
                      k.set(te::unary(
                          k.in(0), [](te::Expr e) { return -e; }, "neg"));
                  }).types(same_as_input<kNumeric>);
const OpDef Reciprocal =
    unary_op(Op::Reciprocal, 1, eval_unary_as<UnaryFn::Reciprocal>, [](NodeKernel& k) {
        const ir::DataType dt = k.out_type();
        k.set(te::unary(
            k.in(0), [dt](te::Expr e) { return ir::make_one(dt) / e; }, "reciprocal"));
    });
const OpDef Not = unary_op(Op::Not, 1, eval_not, [](NodeKernel& k) {
                      k.set(te::unary(
                          k.in(0), [](te::Expr e) { return ir::logical_not(e); }, "not"));
                  }).types(same_as_input<kBool>);

const OpDef Clip = OpDef(Op::Clip)
                       .onnx(1, 1, 3, 1, {{"min", K::Float, 1, 11}, {"max", K::Float, 1, 11}})
                       .import_with(import_clip)
                       .types(clip_types)
                       .eval(eval_clip)
                       .fuses_as(FK::Elementwise)
                       .static_from(1)
                       .runtime_scalars_from_operand(1)
                       .builds(clip_kernel);

const OpDef Add = binary_op(Op::Add, eval_arith_as<ArithFn::Add>, binary_kernel);
const OpDef Sub = binary_op(Op::Sub, eval_arith_as<ArithFn::Sub>, binary_kernel);
const OpDef Mul = binary_op(Op::Mul, eval_arith_as<ArithFn::Mul>, binary_kernel);
// Integers round toward zero, as the evaluator and ONNX do.
const OpDef Div = binary_op(Op::Div, eval_arith_as<ArithFn::Div>,
                            [](NodeKernel& k) { k.set(te::truncating_divide(k.in(0), k.in(1))); });
// The exponent may have another dtype.
const OpDef Pow = binary_op(Op::Pow, eval_pow, [](NodeKernel& k) {
                      k.set(te::power(k.in(0), k.in(1)));
                  }).types(pow_types);
const OpDef Max = binary_op(Op::Max, eval_variadic_as<ArithFn::Max>, variadic_kernel)
                      .onnx(1, 1, OpDef::kAnyCount, 1);
const OpDef Min = binary_op(Op::Min, eval_variadic_as<ArithFn::Min>, variadic_kernel)
                      .onnx(1, 1, OpDef::kAnyCount, 1);

const OpDef Equal = binary_op(Op::Equal, eval_compare_as<CompareFn::Equal>, [](NodeKernel& k) {
                        compare_kernel(
                            k, [](te::Expr a, te::Expr b) { return ir::eq(a, b); }, "equal");
                    }).types(compare_types<false>);
const OpDef Less = binary_op(Op::Less, eval_compare_as<CompareFn::Less>, [](NodeKernel& k) {
                       compare_kernel(
                           k, [](te::Expr a, te::Expr b) { return a < b; }, "less");
                   }).types(compare_types<true>);
const OpDef Greater =
    binary_op(Op::Greater, eval_compare_as<CompareFn::Greater>, [](NodeKernel& k) {
        compare_kernel(
            k, [](te::Expr a, te::Expr b) { return a > b; }, "greater");
    }).types(compare_types<true>);

const OpDef Where = OpDef(Op::Where)
                        .onnx(9, 3, 3, 1)
                        .types(where_types)
                        .eval(eval_where)
                        .fuses_as(FK::Elementwise)
                        .builds([](NodeKernel& k) { k.set(te::where(k.in(0), k.in(1), k.in(2))); });

const OpDef Cast = OpDef(Op::Cast)
                       .onnx(1, 1, 1, 1, {{"to", K::Int}})
                       .import_with(import_cast)
                       .types(cast_types)
                       .eval(eval_cast)
                       .fuses_as(FK::Elementwise)
                       .builds([](NodeKernel& k) {
                           const ir::DataType dt = k.out_type();
                           k.set(te::unary(
                               k.in(0), [dt](te::Expr e) { return ir::cast(dt, e); }, "cast"));
                       });

} // namespace tessera::graph::ops
