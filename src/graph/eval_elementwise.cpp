// Reference kernels of the elementwise ops: unary math, broadcasting binary arithmetic,
// comparisons, Where, Clip and Cast.
#include "eval_ops.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "op_util.h"

namespace tessera::graph::detail {

const TensorData& require_input(const EvalInputs& in, size_t i, const std::string& where) {
    if (i >= in.size() || in[i] == nullptr)
        throw UserError() << where << ": input " << i << " is missing";
    return *in[i];
}

void require_dtype(const TensorData& t, std::initializer_list<DType> allowed, const char* what,
                   const std::string& where) {
    for (DType d : allowed)
        if (t.dtype() == d)
            return;
    std::string names;
    for (DType d : allowed)
        names += std::string(names.empty() ? "" : " or ") + dtype_name(d);
    throw UserError() << where << ": " << what << " is " << dtype_name(t.dtype()) << ", expected "
                      << names;
}

std::vector<int64_t> int_elements(const TensorData& t, const char* what, const std::string& where) {
    require_dtype(t, {DType::I64, DType::I32}, what, where);
    if (t.rank() > 1)
        throw UserError() << where << ": " << what << " must be 1-D, got shape "
                          << shape_str(t.shape());
    return t.as_i64();
}

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

} // namespace tessera::graph::detail
