// A hand-built, cache-blocked sgemm in tessera's loop IR: the speed the LLVM backend can reach
// before any schedule language exists, and the yardstick for what tuned schedules must match.
#pragma once

#include <cstdint>

#include "tessera/ir/stmt.h"

namespace tessera::bench {

/// Blocking and register-tile parameters of build_sgemm_ir. The defaults fit one AVX-512 core
/// with 32 vector registers: a 6 x 64 tile = 24 accumulators, 4 B vectors and a broadcast.
/// Measured on a 2-core AVX-512 Xeon, 6 x 64 beat 12 x 32, 8 x 48 and 14 x 32 by 3-10%, and
/// kc = 512 beat 256 at 2048^3 (fewer passes over C). See sgemm_config_for for other ISAs.
struct SgemmConfig {
    int lanes = 16;     ///< Floats per vector: 16 (AVX-512) or 8 (AVX2); any value > 1 is valid.
    int mr = 6;         ///< Rows of C per register tile.
    int nr_vectors = 4; ///< Vectors per tile row: the tile is mr x NR, NR = nr_vectors * lanes.
    int kc = 512;       ///< K block: packed A panel (mr x kc) and B panel (kc x NR) per tile.
    int mc = 192;       ///< Target rows per M block (one packed A block, mc x kc, stays in L2).
    int threads = 2;    ///< The number of M blocks is a multiple of this (balanced parallel loop).
    int k_unroll = 4;   ///< The k loop of the micro-kernel is unrolled this many times (>= 1).
    bool prefetch_c = true; ///< Prefetch each C tile before its k loop.
};

/// A good configuration for a CPU whose widest vectors have `vector_bits` bits (512: the
/// defaults; 256: the AVX2 6 x 16 tile, 12 accumulators of 16 registers; 128: 6 x 8) and for
/// `threads` threads.
SgemmConfig sgemm_config_for(int vector_bits, int threads);

/// C[M,N] = A[M,K] * B[K,N], row-major f32, as loop IR written directly with vector nodes (Ramp,
/// Broadcast, vector Load/Store); needs no vectorize or unroll pass.
///
/// Structure: B is packed once into NR-wide column panels (heap, parallel over chunks of its
/// rows; columns past N are 0). Then a parallel loop over M blocks; each block packs its rows of A
/// per K block into mr-row panels (rows past M repeat row M-1) and runs, for every N panel and
/// every A panel, the register-tile micro-kernel: mr x NR accumulators in a Stack buffer indexed
/// only by constants (so LLVM keeps them in registers), updated by Broadcast(A) * Load(B) + acc.
/// Tiles that overrun M or N store only their valid rows and columns.
///
/// Params, in order: A, B, C (each a flat row-major buffer). C is fully overwritten.
/// Pre: M, N, K >= 1; config fields >= 1 (lanes >= 2). Throws UserError otherwise.
ir::LoweredFunc build_sgemm_ir(int64_t M, int64_t N, int64_t K, const SgemmConfig& config = {},
                               const char* name = "sgemm");

} // namespace tessera::bench
