// The part of layer normalization that te::layer_norm and te::layer_norm_with_stats share: the
// operand checks and the two reduction stages (the row sums, then the squared deviations from
// the row means), so that both build the same statistics stages.
#pragma once

#include <cstdint>
#include <vector>

#include "op_util.h"

namespace tessera::te::detail {

struct LayerNormStats {
    size_t axis = 0;            ///< First normalized dim.
    std::vector<int64_t> outer; ///< x's dims before it (the statistics' shape).
    Tensor total;               ///< Per row: the sum of x over the normalized dims.
    Tensor var;                 ///< Per row: the sum of squared deviations from the mean.
    Expr count;                 ///< Elements per row, in x's dtype.
};

/// Checks x (float, rank >= 1), epsilon (>= 0) and gamma / beta (undefined, or x's dtype and the
/// normalized shape), naming `op`; then builds the two statistics stages.
LayerNormStats layer_norm_stats(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                int64_t axis, double epsilon, const std::string& op);

} // namespace tessera::te::detail
