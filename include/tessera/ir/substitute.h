// Substitution of variables by expressions in loop IR.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "tessera/ir/functor.h"
#include "tessera/ir/op.h"
#include "tessera/ir/simplify.h"

namespace tessera::ir {

/// Replaces each variable that `values` names by its expression (not re-visited: values are
/// taken as they are); every other node is rebuilt only where a child changed.
class Substituter : public IRMutator {
  public:
    using IRMutator::visit;
    std::unordered_map<const Variable*, Expr> values;
    Expr visit(const Variable* op) override {
        auto it = values.find(op);
        return it == values.end() ? Expr(op) : it->second;
    }
};

/// e with variable v replaced by value.
inline Expr substitute(const Expr& e, const Variable* v, const Expr& value) {
    Substituter s;
    s.values[v] = value;
    return s.mutate(e);
}

/// The constant c with e(v + 1) - e(v) == c for every v (simplify proves it), when there is
/// one: v's coefficient in an index linear in v.
inline std::optional<int64_t> coefficient(const Expr& e, const Var& v) {
    const Expr d = simplify(substitute(e, v.get(), v + Expr(int64_t(1))) - e);
    if (const IntImm* c = d.as<IntImm>())
        return c->value;
    return std::nullopt;
}

} // namespace tessera::ir
