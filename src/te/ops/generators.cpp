// Tensors that read no input (ConstantOfShape, Range, Shape, small Constants): their values are
// baked into the expression.
#include "op_util.h"
#include "tessera/te/ops_extra.h"

namespace tessera::te {

using namespace detail;

// Throws unless e is a scalar immediate.
static void check_immediate(const Expr& e, const std::string& op, const char* role) {
    if (!e.defined() || !e.type().is_scalar() || (!ir::as_const_int(e) && !ir::as_const_float(e)))
        throw UserError() << op << ": " << role << " must be a scalar immediate";
}

Tensor full(const std::vector<int64_t>& shape, Expr value) {
    check_immediate(value, "full", "value");
    return compute(
        shape, [&](const std::vector<Var>&) { return value; }, "full");
}

Tensor arange(Expr start, Expr delta, int64_t count) {
    const std::string op = "range";
    check_immediate(start, op, "start");
    check_immediate(delta, op, "delta");
    if (start.type() != delta.type())
        throw UserError() << op << ": start is " << start.type() << " but delta is "
                          << delta.type();
    if (count <= 0)
        throw UserError() << op << ": " << count << " elements; the result must not be empty";
    const DataType t = start.type();
    return compute(
        {count},
        [&](const std::vector<Var>& i) {
            const Expr k = t == DataType::i64() ? Expr(i[0]) : ir::cast(t, i[0]);
            return start + k * delta;
        },
        op);
}

// The element of `values` at flat index `flat`, known to lie in [lo, hi): a balanced select
// tree, so its depth is log2 of the table size.
static Expr table_lookup(const std::vector<Expr>& values, const Expr& flat, size_t lo, size_t hi) {
    if (hi - lo == 1)
        return values[lo];
    const size_t mid = lo + (hi - lo) / 2;
    return ir::select(flat < Expr(static_cast<int64_t>(mid)), table_lookup(values, flat, lo, mid),
                      table_lookup(values, flat, mid, hi));
}

Tensor constant_table(const std::vector<int64_t>& shape, const std::vector<Expr>& values) {
    const std::string op = "table";
    const int64_t n = num_elements(shape);
    if (static_cast<int64_t>(values.size()) != n)
        throw UserError() << op << ": " << values.size() << " values for shape "
                          << shape_to_string(shape);
    if (n > kMaxTableElements)
        throw UserError() << op << ": " << n << " elements, at most " << kMaxTableElements
                          << " are baked into an expression";
    for (const Expr& v : values) {
        check_immediate(v, op, "a value");
        if (v.type() != values[0].type())
            throw UserError() << op << ": values of types " << values[0].type() << " and "
                              << v.type();
    }
    return compute(
        shape,
        [&](const std::vector<Var>& i) {
            Expr flat(int64_t(0));
            for (size_t d = 0; d < shape.size(); ++d)
                flat = d == 0 ? Expr(i[d]) : flat * Expr(shape[d]) + Expr(i[d]);
            return table_lookup(values, flat, 0, values.size());
        },
        op);
}

} // namespace tessera::te
