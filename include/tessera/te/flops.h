// Arithmetic operation counts of tensor programs (for task weights and GFLOP/s reports).
#pragma once

#include <cstdint>

#include "tessera/te/compute.h"

namespace tessera::te {

/// The arithmetic operations of one run of `c`, summed over its stages. Per output
/// element, a stage counts its body's float arithmetic nodes (+, -, *, /, min, max, and each
/// math call such as exp or erf: 1 each; integer index arithmetic, comparisons, selects and
/// reads: 0). A reduction counts its source's operations plus 1 for the combine, times the
/// product of its reduction extents, so a multiply-add counts 2 and a matmul [M,K]x[K,N]
/// counts 2*M*N*K (dot2_bf16 counts 3, its two products and their sum, so that a bf16 matmul
/// counts the same; dot4_u8s8 counts 7 and its integer reduction's combine 1, so that an
/// 8-bit matmul also counts 2*M*N*K: its multiply-adds, as GOPS for int8 are counted). Data
/// movement stages (pads, reshapes, layout changes) count 0.
int64_t count_flops(const Compute& c);

} // namespace tessera::te
