// Lowering of `tile_matmul` loop nests (ForKind::TileMatmul) to TileMatmul statements
// (ir/tile_matmul.h): the step that puts 8-bit and bf16 products on CPU matrix tiles.
#pragma once

#include "tessera/ir/stmt.h"

namespace tessera::lower {

/// s with every loop of kind TileMatmul replaced by one TileMatmul statement.
///
/// Pre: such a loop roots a perfect nest (Lets are substituted, loops of extent 1 dropped) of
/// constant-extent loops starting at 0 around one scalar store
///   C[ic] = C[ic] + dot4_u8s8(A[ia], B[ib])   (or bytes_as_word(A[ia]) of a u8 A; i32 C)
///   C[ic] = C[ic] + dot2_bf16(A[ia], B[ib])   (or bytes_as_word(A[ia]) of a bf16 A; f32 C)
/// whose indices are linear in the loop variables. Each loop variable is classified by its
/// coefficients in (ic, ia, ib): a reduce loop (0 in ic; the innermost with coefficient 1 in
/// ia, 4 for bytes, 2 for bf16, is the words loop k, at most 16 long), the columns loop (1 in
/// ic and ib, 0 in ia; at most 16), rows (a loop with ib 0, at most 16; a second such loop is
/// a loop over 2 row tiles), one loop over column tiles (ia 0), within the 8 tile registers.
/// Every order of these loops means the same sums (exactly for integers, up to f32 rounding
/// for bf16), so the tile order is free. A nest whose store computes no word product (the
/// accumulators' zeroing, which shares a spatial root loop) stays plain loops.
/// Throws ScheduleError naming the loop (or the statement) that does not fit.
ir::Stmt lower_tile_matmuls(const ir::Stmt& s);

} // namespace tessera::lower
