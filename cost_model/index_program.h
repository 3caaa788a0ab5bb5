// Internal: an integer index expression compiled once and evaluated at many values of the
// loop variables (guard shares, measured strides), without walking the IR each time.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "tessera/ir/expr.h"

namespace tessera::cost {

class IndexProgram {
  public:
    /// Compiles e. level_of(v) is the loop level of a loop variable (its slot in the values
    /// passed to run) or -1; let_value(v) is the value a Let-bound variable stands for, or
    /// null. Other variables, loads, calls and float parts evaluate to 0.
    IndexProgram(const ir::Expr& e, const std::function<int(const ir::Variable*)>& level_of,
                 const std::function<const ir::Expr*(const ir::Variable*)>& let_value);

    /// The value with the loop variables at `values` (one per level). Integer division and
    /// modulo round toward negative infinity as in the IR; by zero they give 0.
    int64_t run(const std::vector<int64_t>& values) const;

  private:
    enum class Op : uint8_t {
        Const,
        Loop,
        Add,
        Sub,
        Mul,
        Div,
        Mod,
        Min,
        Max,
        EQ,
        NE,
        LT,
        LE,
        GT,
        GE,
        And,
        Or,
        Not,
        Select,
    };
    struct Instr {
        Op op;
        int64_t arg; ///< Const: the value; Loop: the level.
    };
    void compile(const ir::Expr& e, const std::function<int(const ir::Variable*)>& level_of,
                 const std::function<const ir::Expr*(const ir::Variable*)>& let_value);

    std::vector<std::pair<const ir::Variable*, ir::Expr>> inner_lets_; ///< Let nodes inside e.
    std::vector<Instr> code_;                                          ///< Postfix.
    mutable std::vector<int64_t> stack_;
};

} // namespace tessera::cost
