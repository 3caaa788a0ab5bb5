// Lowering of `warp_mma` loop nests (ForKind::WarpMma) to WarpMma statements (ir/warp_mma.h):
// the step that puts a warp's matrix products on tensor cores.
#pragma once

#include "tessera/ir/stmt.h"

namespace tessera::lower {

/// s with every loop of kind WarpMma replaced by one WarpMma statement.
///
/// Pre: such a loop lies inside a threadIdx.x loop of 32 (the lanes; its variable L) and roots
/// a perfect nest (Lets substituted, loops of extent 1 dropped) of three constant-extent loops
/// from 0 around one scalar f32 store
///   C[ic] = C[ic] + x * y     x, y: Loads of A[ia] and B[ib] (or Casts of them to f32)
/// with A and B both f16 (an F16 product, k loop 16) or both f32 (TF32, k loop 8). The loops
/// are the k loop (not in ic), the row half h of 2 (in ic and ia, not ib) and the column half
/// c of 2 (in ic and ib, not ia). The lanes' indices must fit the mma fragments: ia depends on
/// L only through L / 4 (g) and ib only through L % 4 (t), checked for all 32 lanes. Lane L's
/// nest then computes exactly what the mma gives it for row g + 8h and column 2t + c when A's
/// tile row g + 8h is the row ia reads at that h and B's tile column n is the column ib reads
/// at t = n / 2, c = n % 2; the call's operands are those loads. Every order of the three
/// loops means the same sums (up to f32 rounding).
/// Throws ScheduleError naming the loop (or the statement) that does not fit.
ir::Stmt lower_warp_mmas(const ir::Stmt& s);

} // namespace tessera::lower
