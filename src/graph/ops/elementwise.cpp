// The elementwise ops: unary math and activations, broadcasting binary arithmetic, Pow, Mod,
// PRelu, variadic Max, Min, Sum and Mean, comparisons, logical ops, Where, Clip and Cast.
// Canonical forms (opset 17 style; every attribute's default is made explicit on import):
//   Clip(X, min?, max?)   bounds are operands (attributes before opset 11 become constants)
//   LeakyRelu alpha; HardSigmoid alpha, beta; Elu alpha; Selu alpha, gamma; Celu alpha;
//     ThresholdedRelu alpha
//   Gelu approximate = "none" (erf form) or "tanh"; recognize_patterns also makes Gelu (without
//     the attribute, read as "none") from the decomposed erf form of models before opset 20
//   Mod(A, B) fmod = 0 (floor modulo, the divisor's sign, as Python's %) or 1 (C's fmod, the
//     dividend's sign), for floats and integers alike
//   PRelu(X, slope)   slope broadcasts to X's shape (the output has X's shape)
//   Cast(X) to = dtype name ("f32", "i64", ...); saturate = 0 only where it matters (to an
//     8-bit float, non-saturating; absent means saturating)
//   binary ops broadcast numpy-style; Max, Min, Sum and Mean take one or more operands
//   And, Or, Xor, Not on bool; comparisons give bool
// Every op here imports at every model opset: later versions only add types (and Cast's
// `saturate` and `round_mode`, which only the 8-bit floats and float8e8m0 read).
// Old opsets: `consumed_inputs` (before opset 6) is dropped. Before opset 7 the binary ops
// broadcast only with broadcast = 1, B aligned with A's trailing dims or B of one element; that
// is numpy's broadcast there, and is accepted; B placed elsewhere by `axis` is refused. PRelu
// before opset 7 takes a one-element slope or one of X's shape (the per-channel reading of
// other shapes is refused). Sum, Mean, Max and Min before opset 8 require equal shapes; models
// that break this are accepted with numpy broadcasting.
// Integer division by zero (Div, Mod) is undefined in ONNX: the evaluator refuses it, a kernel's
// Div is undefined and its Mod gives 0.
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
#include "round_half_even.h"
#include "tessera/graph/fusion.h"
#include "tessera/ir/op.h"
#include "tessera/te/narrow_cast.h"
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
    Reciprocal,
    Abs,
    Sign,
    Floor,
    Ceil,
    Round,
    Softplus,
    Softsign,
    Elu,
    Selu,
    Celu,
    Mish,
    ThresholdedRelu
};
enum class ArithFn { Add, Sub, Mul, Div, Max, Min };
enum class CompareFn { Equal, Less, Greater, LessOrEqual, GreaterOrEqual };
enum class LogicFn { And, Or, Xor };

// Selu's default alpha and gamma (ONNX's values, exactly representable as f32).
constexpr float kSeluAlpha = 1.67326319217681884765625f;
constexpr float kSeluGamma = 1.05070102214813232421875f;
// sqrt(2 / pi), the scale inside Gelu's tanh approximation.
constexpr double kSqrt2OverPi = 0.79788456080286535587989211986876;

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
    // At least 32 bits: narrower unsigned values promote to int, whose overflow is undefined.
    using U = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;
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

// The attributes of a unary function, read once per node (defaults as in ONNX, for graphs
// built without the importer).
struct UnaryParams {
    float alpha = 0, beta = 0, gamma = 0;
    bool tanh_gelu = false; // Gelu approximate = "tanh"
};

UnaryParams unary_params(UnaryFn fn, const Node& n) {
    UnaryParams p;
    switch (fn) {
    case UnaryFn::LeakyRelu:
        p.alpha = n.attr_float("alpha", 0.01f);
        break;
    case UnaryFn::HardSigmoid:
        p.alpha = n.attr_float("alpha", 0.2f);
        p.beta = n.attr_float("beta", 0.5f);
        break;
    case UnaryFn::Elu:
    case UnaryFn::Celu:
    case UnaryFn::ThresholdedRelu:
        p.alpha = n.attr_float("alpha", 1.0f);
        break;
    case UnaryFn::Selu:
        p.alpha = n.attr_float("alpha", kSeluAlpha);
        p.gamma = n.attr_float("gamma", kSeluGamma);
        break;
    case UnaryFn::Gelu:
        p.tanh_gelu = n.attr_string("approximate", "none") == "tanh";
        break;
    default:
        break;
    }
    return p;
}

// log(1 + exp(v)) without overflow for large v.
template <typename T> static T softplus(T v) {
    return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
}

// One unary function on a float of type T (math in T, as ONNX runtimes do).
template <typename T> static T unary(UnaryFn fn, T v, const UnaryParams& p) {
    const T alpha = T(p.alpha);
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
        return std::clamp(alpha * v + T(p.beta), T(0), T(1));
    case UnaryFn::HardSwish:
        return v * std::clamp(v / T(6) + T(0.5), T(0), T(1));
    case UnaryFn::Tanh:
        return std::tanh(v);
    case UnaryFn::Erf:
        return std::erf(v);
    case UnaryFn::Gelu:
        if (p.tanh_gelu) // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
            return T(0.5) * v * (T(1) + std::tanh(T(kSqrt2OverPi) * (v + T(0.044715) * v * v * v)));
        // x * 0.5 * (1 + erf(x / sqrt(2))), the exact (erf) form
        return v * T(0.5) * (T(1) + std::erf(v / std::sqrt(T(2))));
    case UnaryFn::Sqrt:
        return std::sqrt(v);
    case UnaryFn::Exp:
        return std::exp(v);
    case UnaryFn::Log:
        return std::log(v);
    case UnaryFn::Reciprocal:
        return T(1) / v;
    case UnaryFn::Abs:
        return std::fabs(v);
    case UnaryFn::Sign: // NaN stays NaN, zeros keep their sign
        return v > 0 ? T(1) : v < 0 ? T(-1) : v;
    case UnaryFn::Floor:
        return std::floor(v);
    case UnaryFn::Ceil:
        return std::ceil(v);
    case UnaryFn::Round: // halves to even: nearbyint in the default rounding mode
        return std::nearbyint(v);
    case UnaryFn::Softplus:
        return softplus(v);
    case UnaryFn::Softsign:
        return v / (T(1) + std::fabs(v));
    case UnaryFn::Elu:
        return v < 0 ? alpha * (std::exp(v) - T(1)) : v;
    case UnaryFn::Selu:
        return v > 0 ? T(p.gamma) * v : T(p.gamma) * (alpha * std::exp(v) - alpha);
    case UnaryFn::Celu:
        return std::max(T(0), v) + std::min(T(0), alpha * (std::exp(v / alpha) - T(1)));
    case UnaryFn::Mish:
        return v * std::tanh(softplus(v));
    case UnaryFn::ThresholdedRelu:
        return v > alpha ? v : T(0);
    }
    TESSERA_UNREACHABLE();
    return v;
}

// The unary functions defined on integers too (two's complement: Neg and Abs of the lowest
// value wrap to itself, as numpy does).
bool int_unary_ok(UnaryFn fn) {
    return fn == UnaryFn::Relu || fn == UnaryFn::Neg || fn == UnaryFn::Abs || fn == UnaryFn::Sign;
}
template <typename T> static T int_unary(UnaryFn fn, T v) {
    switch (fn) {
    case UnaryFn::Relu:
        return std::max(v, T(0));
    case UnaryFn::Neg:
        return wrap_sub(T(0), v);
    case UnaryFn::Abs:
        return v < 0 ? wrap_sub(T(0), v) : v;
    case UnaryFn::Sign:
        return static_cast<T>((v > 0) - (v < 0));
    default:
        break;
    }
    TESSERA_UNREACHABLE();
    return v;
}

EvalOutputs eval_unary(const Node& n, const EvalInputs& in, UnaryFn fn, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    if (int_unary_ok(fn))
        require_dtype(x, kNumeric, "input", where);
    else
        require_dtype(x, {DType::F32, DType::F64}, "input", where);
    TensorData out(x.dtype(), x.shape());
    const UnaryParams params = unary_params(fn, n);
    visit_computed(x.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        const T* px = x.data<T>();
        T* po = out.data<T>();
        if constexpr (std::is_integral_v<T>) {
            for (int64_t i = 0; i < x.numel(); ++i)
                po[i] = int_unary(fn, px[i]);
        } else {
            for (int64_t i = 0; i < x.numel(); ++i)
                po[i] = unary(fn, px[i], params);
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
            if (std::is_signed_v<T> && b == T(-1))
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
    require_dtype(a, kNumeric, "input 0", where);
    if (b.dtype() != a.dtype())
        throw UserError() << where << ": input dtypes differ (" << dtype_name(a.dtype()) << " and "
                          << dtype_name(b.dtype()) << ")";
    TensorData out(a.dtype(), broadcast_shapes({a.shape(), b.shape()}, where));
    visit_computed(a.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        broadcast_apply<T, T, T>(a, b, out, [&](T x, T y) { return arith(fn, x, y, where); });
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
    const std::initializer_list<DType>& numeric = kNumeric;
    require_dtype(a, numeric, "base", where);
    require_dtype(b, numeric, "exponent", where);
    TensorData out(a.dtype(), broadcast_shapes({a.shape(), b.shape()}, where));
    TensorData b64 = b.cast(DType::F64);
    visit_computed(a.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        broadcast_apply<T, double, T>(a, b64, out, [](T x, double y) {
            double r = std::pow(static_cast<double>(x), y);
            if constexpr (std::is_integral_v<T>)
                return static_cast<T>(std::trunc(r));
            else
                return static_cast<T>(r);
        });
        return 0;
    });
    return {std::move(out)};
}

EvalOutputs eval_variadic(const Node& n, const EvalInputs& in, ArithFn fn,
                          const std::string& where) {
    TensorData acc = require_input(in, 0, where);
    require_dtype(acc, kNumeric, "input 0", where);
    for (size_t i = 1; i < in.size(); ++i)
        acc = binary_arith(fn, acc, require_input(in, i, where), where);
    return {std::move(acc)};
}

// Sum and Mean: float operands broadcast together; Mean divides the sum (in T) by the count,
// as ONNX's reference does.
EvalOutputs eval_sum_mean(const Node& n, const EvalInputs& in, bool mean,
                          const std::string& where) {
    TensorData acc = require_input(in, 0, where);
    require_dtype(acc, {DType::F32, DType::F64}, "input 0", where);
    for (size_t i = 1; i < in.size(); ++i)
        acc = binary_arith(ArithFn::Add, acc, require_input(in, i, where), where);
    if (mean) {
        visit_computed(acc.dtype(), [&](auto tag) {
            using T = std::remove_pointer_t<decltype(tag)>;
            T* p = acc.data<T>();
            for (int64_t i = 0; i < acc.numel(); ++i)
                p[i] = static_cast<T>(p[i] / static_cast<T>(in.size()));
            return 0;
        });
    }
    return {std::move(acc)};
}

// a mod b: fmod = 0 floor modulo (the result has b's sign, as Python's % and numpy.mod),
// fmod = 1 C's fmod (a's sign, as numpy.fmod).
template <typename T> static T mod(T a, T b, bool c_fmod, const std::string& where) {
    if constexpr (std::is_integral_v<T>) {
        if (b == 0)
            throw UserError() << where << ": integer modulo by zero";
        const T r =
            std::is_signed_v<T> && b == T(-1) ? T(0) : static_cast<T>(a % b); // INT_MIN % -1
        return !c_fmod && r != 0 && ((r < 0) != (b < 0)) ? static_cast<T>(r + b) : r;
    } else {
        const T r = std::fmod(a, b); // exact
        return !c_fmod && r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
    }
}

EvalOutputs eval_mod(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& a = require_input(in, 0, where);
    const TensorData& b = require_input(in, 1, where);
    require_dtype(a, kNumeric, "input 0", where);
    if (b.dtype() != a.dtype())
        throw UserError() << where << ": input dtypes differ (" << dtype_name(a.dtype()) << " and "
                          << dtype_name(b.dtype()) << ")";
    const int64_t fmod = n.attr_int("fmod", 0);
    if (fmod != 0 && fmod != 1)
        throw UserError() << where << ": attribute 'fmod' must be 0 or 1, got " << fmod;
    TensorData out(a.dtype(), broadcast_shapes({a.shape(), b.shape()}, where));
    visit_computed(a.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        broadcast_apply<T, T, T>(a, b, out, [&](T x, T y) { return mod(x, y, fmod == 1, where); });
        return 0;
    });
    return {std::move(out)};
}

// PRelu: x < 0 ? slope * x : x, the slope broadcast to x's shape (and only in that direction).
EvalOutputs eval_prelu(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    const TensorData& slope = require_input(in, 1, where);
    require_dtype(x, kNumeric, "X", where);
    if (slope.dtype() != x.dtype())
        throw UserError() << where << ": slope is " << dtype_name(slope.dtype()) << " but X is "
                          << dtype_name(x.dtype());
    if (broadcast_shapes({x.shape(), slope.shape()}, where) != x.shape())
        throw UserError() << where << ": slope of shape " << shape_str(slope.shape())
                          << " does not broadcast to X's shape " << shape_str(x.shape());
    TensorData out(x.dtype(), x.shape());
    visit_computed(x.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        broadcast_apply<T, T, T>(x, slope, out, [](T v, T s) {
            if constexpr (std::is_integral_v<T>)
                return v < 0 ? wrap_mul(s, v) : v;
            else
                return v < 0 ? s * v : v;
        });
        return 0;
    });
    return {std::move(out)};
}

EvalOutputs eval_logic(const Node& n, const EvalInputs& in, LogicFn fn, const std::string& where) {
    const TensorData& a = require_input(in, 0, where);
    const TensorData& b = require_input(in, 1, where);
    require_dtype(a, {DType::Bool}, "input 0", where);
    require_dtype(b, {DType::Bool}, "input 1", where);
    TensorData out(DType::Bool, broadcast_shapes({a.shape(), b.shape()}, where));
    broadcast_apply<uint8_t, uint8_t, uint8_t>(a, b, out, [fn](uint8_t x, uint8_t y) -> uint8_t {
        switch (fn) {
        case LogicFn::And:
            return x && y;
        case LogicFn::Or:
            return x || y;
        case LogicFn::Xor:
            return (x != 0) != (y != 0);
        }
        return 0;
    });
    return {std::move(out)};
}

EvalOutputs eval_compare(const Node& n, const EvalInputs& in, CompareFn fn,
                         const std::string& where) {
    const TensorData& a = require_input(in, 0, where);
    const TensorData& b = require_input(in, 1, where);
    if (a.dtype() != b.dtype())
        throw UserError() << where << ": input dtypes differ (" << dtype_name(a.dtype()) << " and "
                          << dtype_name(b.dtype()) << ")";
    if (fn != CompareFn::Equal)
        require_dtype(a, kNumeric, "input", where);
    TensorData out(DType::Bool, broadcast_shapes({a.shape(), b.shape()}, where));
    visit_computed(a.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        broadcast_apply<T, T, uint8_t>(a, b, out, [fn](T x, T y) -> uint8_t {
            switch (fn) {
            case CompareFn::Equal:
                return x == y;
            case CompareFn::Less:
                return x < y;
            case CompareFn::Greater:
                return x > y;
            case CompareFn::LessOrEqual:
                return x <= y;
            case CompareFn::GreaterOrEqual:
                return x >= y;
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
    visit_computed(x.dtype(), [&](auto tag) {
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
    require_dtype(x, kNumeric, "input", where);
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
    visit_computed(x.dtype(), [&](auto tag) {
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
    const std::optional<NarrowFormat> narrow = narrow_format(*t);
    if (!narrow || n.attr_int("saturate", 1) != 0)
        return {x.cast(*t)}; // TensorData::cast saturates (NarrowValue)
    TensorData out(*t, x.shape());
    const std::vector<double> v = x.as_f64(); // exact for every source type
    for (int64_t i = 0; i < x.numel(); ++i)
        out.raw()[i] = narrow_encode(*narrow, v[static_cast<size_t>(i)], false);
    return {std::move(out)};
}

// An evaluator of a family (eval_unary, eval_arith, ...) bound to one of its functions, as the
// table's evaluator signature takes none.
template <auto Eval, auto Fn>
EvalOutputs eval_fn(const Node& n, const EvalInputs& in, const std::string& where) {
    return Eval(n, in, Fn, where);
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

// And, Or, Xor: bool operands, broadcast shapes.
TypeList logic_types(const NodeTypes& t) {
    std::vector<Shape> shapes = t.input_shapes();
    t.dtype(t.in(0, "input"), kBool, "input");
    t.dtype(t.in(1, "input"), kBool, "input");
    return {{DType::Bool, broadcast_shapes(shapes, t.where())}};
}

// Sum and Mean: like arith_types, floats only (as ONNX defines them).
TypeList float_variadic_types(const NodeTypes& t) {
    t.dtype(t.in(0, "input"), kFloat, "input");
    return arith_types(t);
}

TypeList mod_types(const NodeTypes& t) {
    const int64_t fmod = t.node().attr_int("fmod", 0);
    if (fmod != 0 && fmod != 1)
        t.fail("attribute 'fmod' must be 0 or 1, got " + std::to_string(fmod));
    return arith_types(t);
}

TypeList prelu_types(const NodeTypes& t) {
    const Value& x = t.in(0, "X");
    const Value& slope = t.in(1, "slope");
    t.dtype(x, kNumeric, "X");
    t.same_dtype(x, slope);
    if (broadcast_shapes({x.shape, slope.shape}, t.where()) != x.shape)
        t.fail("slope of shape " + shape_str(slope.shape) + " does not broadcast to X's shape " +
               shape_str(x.shape));
    return {{x.dtype, x.shape}};
}

TypeList gelu_types(const NodeTypes& t) {
    const std::string approximate = t.node().attr_string("approximate", "none");
    if (approximate != "none" && approximate != "tanh")
        t.fail("attribute 'approximate' must be \"none\" or \"tanh\", got \"" + approximate + "\"");
    return same_as_input<kFloat>(t);
}

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

// Clip before opset 11: bounds are attributes; they become operands. Opsets 6 to 10 default an
// absent bound to the lowest / highest f32 (which clamp infinities); before opset 6 an absent
// bound is none, and stays absent.
void import_clip(OpImport& im) {
    if (im.opset() >= 11)
        return;
    im.expect_inputs(1, 1);
    const DType dt = im.input_value(0).dtype;
    auto bound = [&](const char* key, float def) -> ValueId {
        if (!im.has(key) && im.opset() < 6)
            return kNoValue;
        const float v = im.has(key) ? im.attr(key).f : def;
        return im.constant(key, TensorData::scalar(v).cast(dt));
    };
    std::vector<ValueId>& ins = im.inputs();
    ins.push_back(bound("min", std::numeric_limits<float>::lowest()));
    ins.push_back(bound("max", std::numeric_limits<float>::max()));
    while (ins.back() == kNoValue)
        ins.pop_back();
}

// The binary ops before opset 7: B broadcasts to A only with broadcast = 1. Accepted where that
// is numpy's broadcast: equal shapes, a one-element B of rank <= A's, or B equal to A's trailing
// dims (`axis` absent, or the position of those dims). B placed at another axis is refused.
void import_legacy_broadcast(OpImport& im) {
    if (im.opset() >= 7)
        return;
    const Shape& a = im.input_value(0).shape;
    const Shape& b = im.input_value(1).shape;
    if (a == b)
        return;
    const std::string shapes = "A " + shape_str(a) + ", B " + shape_str(b);
    if (im.source().attr_int("broadcast", 0) == 0)
        im.fail("operand shapes differ (" + shapes +
                ") and broadcast is not 1: before opset 7 they must be equal");
    const size_t ra = a.size(), rb = b.size();
    if (rb <= ra && shape_numel(b) == 1)
        return;
    if (rb > ra || !std::equal(b.begin(), b.end(), a.end() - rb))
        im.fail("B does not broadcast to A (" + shapes +
                "): B must have one element or A's trailing dims");
    if (im.has("axis") && im.attr("axis").i != static_cast<int64_t>(ra - rb))
        im.fail("broadcast from axis " + std::to_string(im.attr("axis").i) + " (" + shapes +
                ") is not supported: only B aligned with A's trailing dims");
}

// PRelu before opset 7: a one-element slope is shared by all elements, a slope of X's shape is
// elementwise; other shapes had no numpy meaning yet and are refused.
void import_prelu(OpImport& im) {
    if (im.opset() >= 7)
        return;
    const Shape& x = im.input_value(0).shape;
    const Shape& slope = im.input_value(1).shape;
    if (slope != x && !(shape_numel(slope) == 1 && slope.size() <= x.size()))
        im.fail("slope of shape " + shape_str(slope) + " for X of shape " + shape_str(x) +
                ": before opset 7 the slope must have one element or X's shape");
}

void import_cast(OpImport& im) {
    if (!im.has("to"))
        im.fail("attribute 'to' is missing");
    const int32_t to = static_cast<int32_t>(im.attr("to").i);
    std::optional<DType> t = dtype_from_onnx(to);
    if (!t)
        im.fail("cast to " + onnx_type_name(to) + " is not supported");
    im.set("to", Attribute::of_string(dtype_name(*t)));
    // `saturate` (opset 19) reads only for the 8-bit floats; `round_mode` (opset 25) only for
    // float8e8m0, which the table lacks (refused above).
    const std::optional<NarrowFormat> narrow = narrow_format(*t);
    const bool eight_bit_float =
        narrow && narrow_format_info(*narrow).is_float && narrow_format_info(*narrow).bits == 8;
    if (eight_bit_float && im.has("saturate") && im.attr("saturate").i == 0)
        im.set("saturate", Attribute::of_int(0));
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
    // te::clip takes infinities for absent bounds: floats only (an integer type has none).
    if (!lo_in.defined() && !hi_in.defined() && k.out_type().is_float()) {
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

te::Expr imm(const te::Expr& like, double v) { return ir::make_const(like.type(), v); }

// y = f(x, node) elementwise; f reads the node's attributes.
void unary_kernel(NodeKernel& k, te::Expr (*f)(te::Expr, const Node&), const std::string& name) {
    const Node& n = k.node();
    k.set(te::unary(
        k.in(0), [f, &n](te::Expr e) { return f(e, n); }, name));
}

// log(1 + exp(x)) = max(x, 0) + log(1 + exp(-|x|)): no overflow for large x.
te::Expr softplus_expr(te::Expr e) {
    return ir::max(e, imm(e, 0)) + ir::log(imm(e, 1) + ir::exp(-ir::abs(e)));
}

te::Expr unary_expr(UnaryFn fn, te::Expr e, const Node& n) {
    const UnaryParams p = unary_params(fn, n);
    const te::Expr zero = imm(e, 0), one = imm(e, 1), alpha = imm(e, p.alpha);
    switch (fn) {
    case UnaryFn::Abs:
        return ir::abs(e);
    case UnaryFn::Sign: // integers: e is 0 in the last branch; floats: keeps -0 and NaN
        return ir::select(e > zero, one, ir::select(e < zero, imm(e, -1), e));
    case UnaryFn::Floor:
        return ir::floor(e);
    case UnaryFn::Ceil:
        return ir::ceil(e);
    case UnaryFn::Round:
        return round_half_even(e);
    case UnaryFn::Softplus:
        return softplus_expr(e);
    case UnaryFn::Softsign:
        return e / (one + ir::abs(e));
    case UnaryFn::Elu:
        return ir::select(e < zero, alpha * (ir::exp(e) - one), e);
    case UnaryFn::Selu: {
        const te::Expr gamma = imm(e, p.gamma);
        return ir::select(e > zero, gamma * e, gamma * (alpha * ir::exp(e) - alpha));
    }
    case UnaryFn::Celu:
        return ir::max(zero, e) + ir::min(zero, alpha * (ir::exp(e / alpha) - one));
    case UnaryFn::Mish:
        return e * ir::tanh(softplus_expr(e));
    case UnaryFn::ThresholdedRelu:
        return ir::select(e > alpha, e, zero);
    case UnaryFn::Gelu:
        if (p.tanh_gelu) {
            const te::Expr inner = imm(e, kSqrt2OverPi) * (e + imm(e, 0.044715) * e * e * e);
            return imm(e, 0.5) * e * (one + ir::tanh(inner));
        }
        return imm(e, 0.5) * e * (one + ir::erf(e * imm(e, 1 / std::sqrt(2.0))));
    default:
        break;
    }
    TESSERA_CHECK(false) << "no expression for unary function " << static_cast<int>(fn);
    return e;
}

template <UnaryFn F> te::Expr unary_expr_as(te::Expr e, const Node& n) {
    return unary_expr(F, e, n);
}

// fmod(a, b), the dividend's sign, for floats. a - b * trunc(a / b) is exact when the
// truncated quotient is right, which f64 arithmetic guarantees for f32 operands; f64 operands
// compute in f64, where a quotient rounded up to an integer leaves a remainder of the wrong sign
// that one divisor corrects.
te::Expr float_fmod(te::Expr a, te::Expr b) {
    const ir::DataType t = a.type();
    if (t.bits == 32) {
        const ir::DataType wide = ir::DataType::f64(t.lanes);
        return ir::cast(t, float_fmod(ir::cast(wide, a), ir::cast(wide, b)));
    }
    const te::Expr zero = imm(a, 0);
    const te::Expr q = a / b;
    const te::Expr r = a - b * ir::select(q < zero, ir::ceil(q), ir::floor(q));
    const te::Expr wrong_sign = ir::logical_and(ir::ne(r, zero), ir::ne(r < zero, a < zero));
    const te::Expr fixed =
        ir::select(wrong_sign, r + ir::select(a < zero, -ir::abs(b), ir::abs(b)), r);
    // fmod(a, +-inf) is a (the quotient 0 times inf would be NaN).
    return ir::select(ir::eq(ir::abs(b), ir::highest_value(t)), a, fixed);
}

// a mod b for integers: the IR's % is floor modulo; C's remainder moves a non-zero result of the
// other sign than a by one divisor. Divisors 0 (undefined in ONNX) and -1 (INT_MIN % -1 traps)
// become 1, so both give 0, exact for -1.
te::Expr int_mod(te::Expr a, te::Expr b, bool c_fmod) {
    const ir::DataType t = a.type();
    const te::Expr zero = ir::make_zero(t);
    const te::Expr d =
        ir::select(ir::logical_or(ir::eq(b, zero), ir::eq(b, ir::make_const(t, int64_t{-1}))),
                   ir::make_one(t), b);
    const te::Expr r = a % d;
    if (!c_fmod)
        return r;
    return ir::select(ir::logical_and(ir::ne(r, zero), ir::ne(r < zero, a < zero)), r - d, r);
}

void mod_kernel(NodeKernel& k) {
    const bool c_fmod = k.node().attr_int("fmod", 0) == 1;
    k.set(te::broadcast_binary(
        k.in(0), k.in(1),
        [c_fmod](te::Expr a, te::Expr b) {
            if (!a.type().is_float())
                return int_mod(a, b, c_fmod);
            const te::Expr r = float_fmod(a, b);
            if (c_fmod)
                return r;
            // Floor modulo: a non-zero remainder of the other sign than b moves by b.
            const te::Expr zero = imm(a, 0);
            return ir::select(ir::logical_and(ir::ne(r, zero), ir::ne(r < zero, b < zero)), r + b,
                              r);
        },
        "mod"));
}

void sum_mean_kernel(NodeKernel& k) {
    te::Tensor y = k.in(0);
    const size_t count = k.node().inputs.size();
    for (size_t i = 1; i < count; ++i)
        y = te::add(y, k.in(i));
    if (k.op() == Op::Mean)
        y = te::unary(
            y, [count](te::Expr e) { return e / imm(e, static_cast<double>(count)); }, "mean");
    else if (count == 1)
        y = te::unary(
            y, [](te::Expr e) { return e; }, "copy");
    k.set(y);
}

// x < 0 ? slope * x : x; type inference made sure the result has x's shape.
void prelu_kernel(NodeKernel& k) {
    k.set(te::broadcast_binary(
        k.in(0), k.in(1),
        [](te::Expr x, te::Expr s) { return ir::select(x < imm(x, 0), s * x, x); }, "prelu"));
}

using K = Attribute::Kind;
using FK = FusionKind;

// The attribute of opsets 1 to 5 that an in-place optimization used; ignored.
const AttrSpec kConsumedInputs = {"consumed_inputs", Attribute::Kind::Ints, 1, 6};

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

// A unary op whose evaluator and kernel are those of UnaryFn F; float operands unless
// `Allowed` says otherwise.
template <UnaryFn F, const std::initializer_list<DType>& Allowed = kFloat>
OpDef unary_fn_op(Op op, int since, std::vector<AttrSpec> attrs = {}) {
    return OpDef(op)
        .onnx(since, 1, 1, 1, std::move(attrs))
        .types(same_as_input<Allowed>)
        .eval(eval_fn<eval_unary, F>)
        .fuses_as(FK::Elementwise)
        .builds([](NodeKernel& k) { unary_kernel(k, unary_expr_as<F>, fused_op_name(k.op())); });
}

// A binary op with the `broadcast` and `axis` attributes of opsets 1 to 6 (and
// `consumed_inputs` before opset 6 where the op had it).
OpDef with_legacy_broadcast(OpDef d, bool consumed_inputs) {
    d.attrs = {{"broadcast", K::Int, 1, 7}, {"axis", K::Int, 1, 7}};
    if (consumed_inputs)
        d.attrs.push_back(kConsumedInputs);
    d.canonicalize = import_legacy_broadcast;
    return d;
}

// And, Or, Xor on bools, with the legacy broadcast of opsets before 7.
template <LogicFn F> OpDef logic_op(Op op) {
    void (*kernel)(NodeKernel&) = [](NodeKernel& k) {
        compare_kernel(
            k,
            [](te::Expr a, te::Expr b) {
                return F == LogicFn::And  ? ir::logical_and(a, b)
                       : F == LogicFn::Or ? ir::logical_or(a, b)
                                          : ir::ne(a, b);
            },
            F == LogicFn::And  ? "and"
            : F == LogicFn::Or ? "or"
                               : "xor");
    };
    return with_legacy_broadcast(binary_op(op, eval_fn<eval_logic, F>, kernel).types(logic_types),
                                 false);
}

} // namespace

// One instruction on CPUs (vrndscaleps / roundps with the nearest-even mode), rint on GPUs.
te::Expr round_half_even(te::Expr value) { return ir::round_even(std::move(value)); }

} // namespace tessera::graph::detail

namespace tessera::graph::ops {

using namespace detail;

// ---- unary math and activations ----

const OpDef Relu = unary_op(Op::Relu, 1, eval_fn<eval_unary, UnaryFn::Relu>,
                            [](NodeKernel& k) { k.set(te::relu(k.in(0))); })
                       .onnx(1, 1, 1, 1, {kConsumedInputs})
                       .types(same_as_input<kNumeric>)
                       .finite_on_finite();
const OpDef LeakyRelu =
    unary_op(
        Op::LeakyRelu, 1, eval_fn<eval_unary, UnaryFn::LeakyRelu>,
        [](NodeKernel& k) { k.set(te::leaky_relu(k.in(0), k.node().attr_float("alpha", 0.01f))); })
        .onnx(1, 1, 1, 1, {{"alpha", K::Float}, kConsumedInputs})
        .import_with([](OpImport& im) { im.keep("alpha", Attribute::of_float(0.01f)); })
        .named("leaky_relu")
        .finite_on_finite();
const OpDef Sigmoid = unary_op(Op::Sigmoid, 1, eval_fn<eval_unary, UnaryFn::Sigmoid>,
                               [](NodeKernel& k) { k.set(te::sigmoid(k.in(0))); })
                          .onnx(1, 1, 1, 1, {kConsumedInputs})
                          .finite_on_finite();
const OpDef HardSigmoid =
    unary_op(Op::HardSigmoid, 1, eval_fn<eval_unary, UnaryFn::HardSigmoid>, hard_sigmoid_kernel)
        .onnx(1, 1, 1, 1, {{"alpha", K::Float}, {"beta", K::Float}, kConsumedInputs})
        .import_with([](OpImport& im) {
            im.keep("alpha", Attribute::of_float(0.2f));
            im.keep("beta", Attribute::of_float(0.5f));
        })
        .named("hard_sigmoid")
        .finite_on_finite();
const OpDef HardSwish =
    unary_op(Op::HardSwish, 14, eval_fn<eval_unary, UnaryFn::HardSwish>, hard_sigmoid_kernel)
        .named("hard_swish")
        .finite_on_finite();
const OpDef Tanh = unary_op(Op::Tanh, 1, eval_fn<eval_unary, UnaryFn::Tanh>,
                            [](NodeKernel& k) { k.set(te::tanh(k.in(0))); })
                       .onnx(1, 1, 1, 1, {kConsumedInputs})
                       .finite_on_finite();
const OpDef Erf = unary_op(Op::Erf, 9, eval_fn<eval_unary, UnaryFn::Erf>,
                           [](NodeKernel& k) { k.set(te::erf(k.in(0))); });
// ONNX Gelu (opset 20), and the Gelu recognize_patterns makes without the attribute.
const OpDef Gelu =
    unary_fn_op<UnaryFn::Gelu>(Op::Gelu, 20, {{"approximate", K::String}})
        .import_with([](OpImport& im) { im.keep("approximate", Attribute::of_string("none")); })
        .types(gelu_types)
        .finite_on_finite();
const OpDef Sqrt = unary_op(Op::Sqrt, 1, eval_fn<eval_unary, UnaryFn::Sqrt>, [](NodeKernel& k) {
                       k.set(te::sqrt(k.in(0)));
                   }).onnx(1, 1, 1, 1, {kConsumedInputs});
const OpDef Exp = unary_op(Op::Exp, 1, eval_fn<eval_unary, UnaryFn::Exp>, [](NodeKernel& k) {
                      k.set(te::exp(k.in(0)));
                  }).onnx(1, 1, 1, 1, {kConsumedInputs});
const OpDef Log = unary_op(Op::Log, 1, eval_fn<eval_unary, UnaryFn::Log>, [](NodeKernel& k) {
                      k.set(te::unary(
                          k.in(0), [](te::Expr e) { return ir::log(e); }, "log"));
                  }).onnx(1, 1, 1, 1, {kConsumedInputs});
const OpDef Neg = unary_op(Op::Neg, 1, eval_fn<eval_unary, UnaryFn::Neg>,
                           [](NodeKernel& k) {
                               k.set(te::unary(
                                   k.in(0), [](te::Expr e) { return -e; }, "neg"));
                           })
                      .onnx(1, 1, 1, 1, {kConsumedInputs})
                      .types(same_as_input<kNumeric>)
                      .finite_on_finite();
const OpDef Reciprocal =
    unary_op(Op::Reciprocal, 1, eval_fn<eval_unary, UnaryFn::Reciprocal>, [](NodeKernel& k) {
        const ir::DataType dt = k.out_type();
        k.set(te::unary(
            k.in(0), [dt](te::Expr e) { return ir::make_one(dt) / e; }, "reciprocal"));
    }).onnx(1, 1, 1, 1, {kConsumedInputs});
const OpDef Not = unary_op(Op::Not, 1, eval_not, [](NodeKernel& k) {
                      k.set(te::unary(
                          k.in(0), [](te::Expr e) { return ir::logical_not(e); }, "not"));
                  }).types(same_as_input<kBool>);

const OpDef Abs = unary_fn_op<UnaryFn::Abs, kNumeric>(Op::Abs, 1, {kConsumedInputs});
const OpDef Sign = unary_fn_op<UnaryFn::Sign, kNumeric>(Op::Sign, 9);
const OpDef Floor = unary_fn_op<UnaryFn::Floor>(Op::Floor, 1, {kConsumedInputs});
const OpDef Ceil = unary_fn_op<UnaryFn::Ceil>(Op::Ceil, 1, {kConsumedInputs});
// Halves round to even.
const OpDef Round = unary_fn_op<UnaryFn::Round>(Op::Round, 11).finite_on_finite();
const OpDef Softplus = unary_fn_op<UnaryFn::Softplus>(Op::Softplus, 1);
const OpDef Softsign = unary_fn_op<UnaryFn::Softsign>(Op::Softsign, 1);
const OpDef Elu =
    unary_fn_op<UnaryFn::Elu>(Op::Elu, 1, {{"alpha", K::Float}, kConsumedInputs})
        .import_with([](OpImport& im) { im.keep("alpha", Attribute::of_float(1.0f)); });
const OpDef Selu = unary_fn_op<UnaryFn::Selu>(
                       Op::Selu, 1, {{"alpha", K::Float}, {"gamma", K::Float}, kConsumedInputs})
                       .import_with([](OpImport& im) {
                           im.keep("alpha", Attribute::of_float(kSeluAlpha));
                           im.keep("gamma", Attribute::of_float(kSeluGamma));
                       });
const OpDef Celu =
    unary_fn_op<UnaryFn::Celu>(Op::Celu, 12, {{"alpha", K::Float}}).import_with([](OpImport& im) {
        im.keep("alpha", Attribute::of_float(1.0f));
    });
const OpDef Mish = unary_fn_op<UnaryFn::Mish>(Op::Mish, 18);
const OpDef ThresholdedRelu =
    unary_fn_op<UnaryFn::ThresholdedRelu>(Op::ThresholdedRelu, 10, {{"alpha", K::Float}})
        .import_with([](OpImport& im) { im.keep("alpha", Attribute::of_float(1.0f)); })
        .named("thresholded_relu");

const OpDef Clip =
    OpDef(Op::Clip)
        .onnx(1, 1, 3, 1, {{"min", K::Float, 1, 11}, {"max", K::Float, 1, 11}, kConsumedInputs})
        .import_with(import_clip)
        .types(clip_types)
        .eval(eval_clip)
        .fuses_as(FK::Elementwise)
        .static_from(1)
        .runtime_scalars_from_operand(1)
        .builds(clip_kernel)
        .finite_on_finite();

// ---- broadcasting binary ops ----

const OpDef Add = with_legacy_broadcast(
    binary_op(Op::Add, eval_fn<eval_arith, ArithFn::Add>, binary_kernel), true);
const OpDef Sub = with_legacy_broadcast(
    binary_op(Op::Sub, eval_fn<eval_arith, ArithFn::Sub>, binary_kernel), true);
const OpDef Mul = with_legacy_broadcast(
    binary_op(Op::Mul, eval_fn<eval_arith, ArithFn::Mul>, binary_kernel), true);
// Integers round toward zero, as the evaluator and ONNX do.
const OpDef Div = with_legacy_broadcast(
    binary_op(Op::Div, eval_fn<eval_arith, ArithFn::Div>,
              [](NodeKernel& k) { k.set(te::truncating_divide(k.in(0), k.in(1))); }),
    true);
// The exponent may have another dtype.
const OpDef Pow = with_legacy_broadcast(
    binary_op(Op::Pow, eval_pow, [](NodeKernel& k) { k.set(te::power(k.in(0), k.in(1))); })
        .types(pow_types),
    false);
const OpDef Mod = binary_op(Op::Mod, eval_mod, mod_kernel)
                      .onnx(10, 2, 2, 1, {{"fmod", K::Int}})
                      .import_with([](OpImport& im) { im.keep("fmod", Attribute::of_int(0)); })
                      .types(mod_types);
const OpDef PRelu = binary_op(Op::PRelu, eval_prelu, prelu_kernel)
                        .onnx(1, 2, 2, 1, {kConsumedInputs})
                        .import_with(import_prelu)
                        .types(prelu_types);

// ---- variadic ops ----

const OpDef Max = binary_op(Op::Max, eval_fn<eval_variadic, ArithFn::Max>, variadic_kernel)
                      .onnx(1, 1, OpDef::kAnyCount, 1, {kConsumedInputs});
const OpDef Min = binary_op(Op::Min, eval_fn<eval_variadic, ArithFn::Min>, variadic_kernel)
                      .onnx(1, 1, OpDef::kAnyCount, 1, {kConsumedInputs});
const OpDef Sum = binary_op(Op::Sum, eval_fn<eval_sum_mean, false>, sum_mean_kernel)
                      .onnx(1, 1, OpDef::kAnyCount, 1, {kConsumedInputs})
                      .types(float_variadic_types);
const OpDef Mean = binary_op(Op::Mean, eval_fn<eval_sum_mean, true>, sum_mean_kernel)
                       .onnx(1, 1, OpDef::kAnyCount, 1, {kConsumedInputs})
                       .types(float_variadic_types);

// ---- comparisons and logic ----

const OpDef Equal = with_legacy_broadcast(
    binary_op(Op::Equal, eval_fn<eval_compare, CompareFn::Equal>,
              [](NodeKernel& k) {
                  compare_kernel(
                      k, [](te::Expr a, te::Expr b) { return ir::eq(a, b); }, "equal");
              })
        .types(compare_types<false>),
    false);
const OpDef Less = with_legacy_broadcast(
    binary_op(Op::Less, eval_fn<eval_compare, CompareFn::Less>,
              [](NodeKernel& k) {
                  compare_kernel(
                      k, [](te::Expr a, te::Expr b) { return a < b; }, "less");
              })
        .types(compare_types<true>),
    false);
const OpDef Greater = with_legacy_broadcast(
    binary_op(Op::Greater, eval_fn<eval_compare, CompareFn::Greater>,
              [](NodeKernel& k) {
                  compare_kernel(
                      k, [](te::Expr a, te::Expr b) { return a > b; }, "greater");
              })
        .types(compare_types<true>),
    false);
const OpDef LessOrEqual =
    binary_op(Op::LessOrEqual, eval_fn<eval_compare, CompareFn::LessOrEqual>,
              [](NodeKernel& k) {
                  compare_kernel(
                      k, [](te::Expr a, te::Expr b) { return a <= b; }, "less_or_equal");
              })
        .onnx(12, 2, 2, 1)
        .types(compare_types<true>)
        .named("less_or_equal");
const OpDef GreaterOrEqual =
    binary_op(Op::GreaterOrEqual, eval_fn<eval_compare, CompareFn::GreaterOrEqual>,
              [](NodeKernel& k) {
                  compare_kernel(
                      k, [](te::Expr a, te::Expr b) { return a >= b; }, "greater_or_equal");
              })
        .onnx(12, 2, 2, 1)
        .types(compare_types<true>)
        .named("greater_or_equal");
const OpDef And = logic_op<LogicFn::And>(Op::And);
const OpDef Or = logic_op<LogicFn::Or>(Op::Or);
const OpDef Xor = logic_op<LogicFn::Xor>(Op::Xor);

// ---- selection and conversion ----

const OpDef Where = OpDef(Op::Where)
                        .onnx(9, 3, 3, 1)
                        .types(where_types)
                        .eval(eval_where)
                        .fuses_as(FK::Elementwise)
                        .builds([](NodeKernel& k) { k.set(te::where(k.in(0), k.in(1), k.in(2))); });

// Cast's kernel: ir::cast between numeric types; a narrow type's codes through
// te/narrow_cast.h (a narrow-to-narrow cast through f32, exact for every pair but an 8-bit
// float to a 4-bit one, which rounds once there too).
void cast_kernel(NodeKernel& k) {
    const std::optional<NarrowFormat> from = narrow_format(k.input_value(0).dtype);
    const std::optional<NarrowFormat> to = narrow_format(k.output_value().dtype);
    const bool saturate = k.node().attr_int("saturate", 1) != 0;
    const ir::DataType out = k.out_type();
    k.set(te::unary(
        k.in(0),
        [from, to, saturate, out](te::Expr e) {
            if (from)
                e = te::narrow_decode_expr(*from, e, to ? ir::DataType::f32() : out);
            return to ? te::narrow_encode_expr(*to, e, saturate) : ir::cast(out, e);
        },
        "cast"));
}

const OpDef Cast =
    OpDef(Op::Cast)
        .onnx(1, 1, 1, 1, {{"to", K::Int}, {"saturate", K::Int, 19}, {"round_mode", K::String, 25}})
        .import_with(import_cast)
        .moves_elements()
        .types(cast_types)
        .eval(eval_cast)
        .fuses_as(FK::Elementwise)
        .builds(cast_kernel);

} // namespace tessera::graph::ops
