// Division and power with the integer semantics of ONNX (truncation toward zero), which the
// IR's floor-rounding integer Div does not give directly.
#include "op_util.h"
#include "tessera/te/ops_extra.h"

namespace tessera::te {

using namespace detail;

Tensor truncating_divide(const Tensor& a, const Tensor& b) {
    check_defined(a, "divide", "first");
    check_defined(b, "divide", "second");
    if (!a.dtype().is_int())
        return divide(a, b);
    return broadcast_binary(
        a, b,
        [](Expr x, Expr y) {
            // Floor division rounds one lower than truncation exactly when the division is
            // inexact and the operands have opposite signs.
            const Expr zero = ir::make_zero(x.type());
            const Expr q = x / y;
            const Expr inexact = ir::ne(x % y, zero);
            const Expr opposite = ir::ne(x < zero, y < zero);
            return ir::select(ir::logical_and(inexact, opposite), q + ir::make_one(x.type()), q);
        },
        "divide");
}

Tensor power(const Tensor& a, const Tensor& b) {
    const std::string op = "pow";
    check_defined(a, op, "base");
    check_defined(b, op, "exponent");
    for (const Tensor* t : {&a, &b})
        if (t->dtype().is_bool())
            throw UserError() << op << ": input '" << t->name() << "' must be numeric, got bool";
    const DataType out = a.dtype();
    // A float base computes in its own type; an integer base in f64. Operands of another type
    // are converted per element first (stages a schedule inlines).
    const DataType work = out.is_float() ? out : DataType::f64();
    auto convert = [&](const Tensor& t, const std::string& name) {
        return t.dtype() == work ? t
                                 : unary(
                                       t, [&](Expr v) { return ir::cast(work, v); }, name);
    };
    Tensor y = broadcast_binary(
        convert(a, "pow_base"), convert(b, "pow_exponent"),
        [](Expr x, Expr e) { return ir::pow(x, e); }, op);
    if (work == out)
        return y;
    // Back to the integer type: truncation toward zero that saturates.
    return unary(
        y, [&](Expr v) { return ir::cast(out, v); }, "pow_cast");
}

} // namespace tessera::te
