// Elementwise operators: numpy-broadcast binary ops and unary activations / math.
#include "op_util.h"

#include <cmath>

namespace tessera::te {

using namespace detail;

std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                      const std::string& op) {
    size_t rank = std::max(a.size(), b.size());
    std::vector<int64_t> out(rank);
    for (size_t d = 0; d < rank; ++d) {
        // Align trailing dims; a missing leading dim acts as 1.
        int64_t da = d + a.size() >= rank ? a[d + a.size() - rank] : 1;
        int64_t db = d + b.size() >= rank ? b[d + b.size() - rank] : 1;
        if (da != db && da != 1 && db != 1)
            throw UserError() << op << ": shapes " << shape_to_string(a) << " and "
                              << shape_to_string(b) << " do not broadcast (dim " << d << ": " << da
                              << " vs " << db << ")";
        out[d] = da == 1 ? db : da;
    }
    return out;
}

/// The indices into a tensor of shape `own` for output indices `i` of the broadcast shape.
static std::vector<Expr> broadcast_index(const std::vector<int64_t>& own,
                                         const std::vector<Var>& i) {
    std::vector<Expr> idx;
    size_t skip = i.size() - own.size();
    for (size_t d = 0; d < own.size(); ++d)
        idx.push_back(own[d] == 1 ? Expr(0) : Expr(i[skip + d]));
    return idx;
}

Tensor unary(const Tensor& x, const std::function<Expr(Expr)>& f, const std::string& name) {
    check_defined(x, name, "input");
    return compute(
        x.shape(), [&](const std::vector<Var>& i) { return f(x(as_exprs(i))); }, name);
}

Tensor broadcast_map(const std::vector<Tensor>& ins,
                     const std::function<Expr(const std::vector<Expr>&)>& f,
                     const std::string& name) {
    std::vector<int64_t> shape;
    for (const Tensor& t : ins) {
        check_defined(t, name, "operand");
        shape = broadcast_shapes(shape, t.shape(), name);
    }
    return compute(
        shape,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> vals;
            for (const Tensor& t : ins)
                vals.push_back(t(broadcast_index(t.shape(), i)));
            return f(vals);
        },
        name);
}

Tensor broadcast_binary(const Tensor& a, const Tensor& b, const std::function<Expr(Expr, Expr)>& f,
                        const std::string& name) {
    check_defined(a, name, "first");
    check_defined(b, name, "second");
    check_same_dtype(a, b, name);
    return broadcast_map(
        {a, b}, [&](const std::vector<Expr>& v) { return f(v[0], v[1]); }, name);
}

Tensor add(const Tensor& a, const Tensor& b) {
    return broadcast_binary(
        a, b, [](Expr x, Expr y) { return x + y; }, "add");
}
Tensor subtract(const Tensor& a, const Tensor& b) {
    return broadcast_binary(
        a, b, [](Expr x, Expr y) { return x - y; }, "subtract");
}
Tensor multiply(const Tensor& a, const Tensor& b) {
    return broadcast_binary(
        a, b, [](Expr x, Expr y) { return x * y; }, "multiply");
}
Tensor divide(const Tensor& a, const Tensor& b) {
    return broadcast_binary(
        a, b, [](Expr x, Expr y) { return x / y; }, "divide");
}
Tensor maximum(const Tensor& a, const Tensor& b) {
    return broadcast_binary(
        a, b, [](Expr x, Expr y) { return ir::max(x, y); }, "maximum");
}
Tensor minimum(const Tensor& a, const Tensor& b) {
    return broadcast_binary(
        a, b, [](Expr x, Expr y) { return ir::min(x, y); }, "minimum");
}

Tensor relu(const Tensor& x) {
    check_defined(x, "relu", "input");
    DataType t = x.dtype();
    return unary(
        x, [t](Expr v) { return ir::max(v, constant(t, 0.0)); }, "relu");
}

Tensor clip(const Tensor& x, double lo, double hi) {
    check_defined(x, "clip", "input");
    if (!(lo <= hi))
        throw UserError() << "clip: min " << lo << " greater than max " << hi;
    DataType t = x.dtype();
    return unary(
        x, [t, lo, hi](Expr v) { return ir::min(ir::max(v, constant(t, lo)), constant(t, hi)); },
        "clip");
}

Tensor leaky_relu(const Tensor& x, double alpha) {
    check_defined(x, "leaky_relu", "input");
    check_float(x, "leaky_relu");
    DataType t = x.dtype();
    return unary(
        x,
        [t, alpha](Expr v) { return ir::select(v > constant(t, 0.0), v, v * constant(t, alpha)); },
        "leaky_relu");
}

/// A float-only unary op.
static Tensor float_unary(const Tensor& x, const std::function<Expr(Expr)>& f,
                          const std::string& name) {
    check_defined(x, name, "input");
    check_float(x, name);
    return unary(x, f, name);
}

Tensor sigmoid(const Tensor& x) {
    return float_unary(
        x,
        [](Expr v) {
            DataType t = v.type();
            return constant(t, 1.0) / (constant(t, 1.0) + ir::exp(-v));
        },
        "sigmoid");
}
Tensor tanh(const Tensor& x) {
    return float_unary(
        x, [](Expr v) { return ir::tanh(v); }, "tanh");
}
Tensor erf(const Tensor& x) {
    return float_unary(
        x, [](Expr v) { return ir::erf(v); }, "erf");
}
Tensor exp(const Tensor& x) {
    return float_unary(
        x, [](Expr v) { return ir::exp(v); }, "exp");
}
Tensor sqrt(const Tensor& x) {
    return float_unary(
        x, [](Expr v) { return ir::sqrt(v); }, "sqrt");
}

Tensor gelu(const Tensor& x) {
    return float_unary(
        x,
        [](Expr v) {
            DataType t = v.type();
            return constant(t, 0.5) * v *
                   (constant(t, 1.0) + ir::erf(v * constant(t, 1.0 / std::sqrt(2.0))));
        },
        "gelu");
}

} // namespace tessera::te
