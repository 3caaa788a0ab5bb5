// Winograd F(m x m, 3 x 3) convolution: the transform matrices, the tables the ops
// WinogradInput / WinogradOutput read (ops.def) and the compile-time weight transform of the
// winograd pass (passes.h, convert_conv_winograd).
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/graph/graph.h"

namespace tessera::graph {

/// The 1-D transforms of F(m, 3) (Lavin and Gray), row-major: Bt [alpha, alpha], G [alpha, 3],
/// At [m, alpha], alpha = m + 2.
struct WinogradMatrices {
    int64_t m = 0, alpha = 0;
    std::vector<double> bt, g, at;
};
/// The transforms for output tiles of m in {2, 4}. Throws UserError for any other m.
const WinogradMatrices& winograd_matrices(int64_t m);

/// The input table: Bt [alpha, alpha] (f32). WinogradInput applies it to rows, then columns.
TensorData winograd_input_table(int64_t m);
/// The output table: At [m, alpha] (f32). WinogradOutput applies it to columns, then rows.
TensorData winograd_output_table(int64_t m);
/// Conv weights [K, C, 3, 3] (f32) -> U [alpha^2, C, K], U[a * alpha + b][c][k] =
/// sum_ij G[a][i] * G[b][j] * w[k][c][i][j] (computed in double).
TensorData winograd_weight(const TensorData& w, int64_t m);

} // namespace tessera::graph
