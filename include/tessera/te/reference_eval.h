// Direct evaluation of tensor expressions from their definitions: the independent reference
// that `tessera op run` (and later the tuner) checks compiled code against.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tessera/ir/expr.h"

namespace tessera::te {

/// Evaluates elements of tensors straight from their tensor-expression definitions, in double
/// precision (f64 arithmetic for float tensors, exact int64 for integer ones), never through
/// lowering or codegen. Each element costs its own expression tree (a matmul element is K
/// multiply-adds), so callers check whole outputs of small problems and sampled elements of
/// large ones. Computed elements of intermediate tensors are memoized.
class ReferenceEvaluator {
public:
    /// Binds placeholder `t` to row-major data of its dtype (float for f32, double for f64,
    /// int32_t/int64_t for ints, uint8_t for bool). The data must outlive the evaluator.
    void bind(const ir::Tensor& t, const void* data);
    /// The element of t at idx (one index per dimension), as a double.
    /// Pre: every placeholder t depends on is bound; idx is in bounds.
    double at(const ir::Tensor& t, const std::vector<int64_t>& idx);

private:
    struct Value {
        double f = 0;
        int64_t i = 0;
        bool is_float = false;
    };
    using Env = std::vector<std::pair<const ir::Variable*, Value>>;
    Value eval(const ir::Expr& e, Env& env);
    Value element(const ir::Tensor& t, const std::vector<int64_t>& idx);

    // Keyed by node address for lookup only; nothing is ever iterated in pointer order.
    std::unordered_map<const ir::TensorNode*, const void*> inputs_;
    std::unordered_map<const ir::TensorNode*, std::unordered_map<int64_t, Value>> memo_;
};

} // namespace tessera::te
