// TileMatmul: a block of 8-bit or bf16 matrix products on matrix tiles, the loop IR's one
// statement that stands for a whole loop nest (CallOp::TileMatmulU8S8 or TileMatmulBF16 in an
// Evaluate).
//
// It is what lowering makes of a loop nest annotated `tile_matmul` (lower/tile_matmul.h) and
// what a CPU with matrix tiles (x86 AMX: tileloadd, tdpbusd or tdpbf16ps, tilestored) runs as
// a few tile instructions, its accumulators kept in tile registers across all its reduce
// steps. Where no such unit exists, expand() gives the loops it stands for (the interpreter
// and the backends without tiles run those), so the call has one meaning everywhere.
//
// Meaning (offsets and strides in elements of the buffers; words hold 4 bytes):
//   for each reduce step r = (r_0, ..., r_{L-1}) over loops[0..L) (outermost first),
//   for mt < m_tiles, nt < n_tiles, i < m, j < n, w < k:
//     C[c + mt*c_m_tile + nt*c_n_tile + i*ldc + j] +=
//       dot4_u8s8(A[a + sum(r_l*loops[l].a_stride) + mt*a_m_tile + i*lda + w*e],
//                 B[b + sum(r_l*loops[l].b_stride) + nt*b_n_tile + w*ldb + j])
// (e = 1; with A in bytes, e = 4 and the word is bytes_as_word of the 4 bytes there)
// i.e. per tile an (m x 4k) u8 by (4k x n) s8 product accumulated into (m x n) i32, B's rows
// holding 4 consecutive reduce bytes of each column (the layout tdpbusd reads). With the bf16
// product, dot2_bf16 replaces dot4_u8s8, C holds f32 accumulators, words hold 2 bf16 values
// and A may be bf16 elements (e = 2): per tile an (m x 2k) by (2k x n) bf16 product into f32
// (tdpbf16ps).
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/ir/stmt.h"

namespace tessera::ir {

struct TileMatmul {
    /// One reduce loop the tiles accumulate over (beyond the k words of one tile step).
    struct ReduceLoop {
        int64_t extent = 1;
        int64_t a_stride = 0, b_stride = 0;
    };

    /// The word product: CallOp::Dot4U8S8 (u8 x s8 bytes, i32 C) or Dot2BF16 (bf16 pairs,
    /// f32 C).
    CallOp product = CallOp::Dot4U8S8;
    /// Scalar Loads whose buffer and index name the first element of C (the accumulators), A
    /// (i32 words, or the elements themselves, u8 or bf16: then A's offsets and strides count
    /// elements, 4 or 2 per word) and B (i32 words). Their values are never read as such.
    Expr c, a, b;
    int64_t m = 1, n = 1, k = 1;        ///< Tile rows, columns (i32) and words (4 bytes).
    int64_t m_tiles = 1, n_tiles = 1;   ///< Tiles of rows and of columns per call.
    int64_t ldc = 1, lda = 1, ldb = 1;  ///< Row strides of C, A and B.
    int64_t c_m_tile = 0, c_n_tile = 0; ///< Offsets between C tiles.
    int64_t a_m_tile = 0, b_n_tile = 0; ///< Offsets between A tiles, between B tiles.
    std::vector<ReduceLoop> loops;

    /// Limits of one x86 AMX unit: 16 rows of 64 bytes per tile, 8 tile registers.
    static constexpr int64_t kMaxRows = 16, kMaxColumnWords = 16, kTileRegisters = 8;

    /// Elements of A per word: 4 when A is bytes, 2 when it is bf16, else 1.
    int64_t a_elements_per_word() const;
    /// Elements per word of the product: 4 (u8 x s8) or 2 (bf16).
    int64_t word_elements() const { return product == CallOp::Dot2BF16 ? 2 : 4; }
    /// Tile registers one call holds at once: accumulators, A tiles and B tiles.
    int64_t tile_registers() const { return m_tiles * n_tiles + m_tiles + n_tiles; }
    /// Multiply-adds (element products) of one call.
    int64_t products() const;

    /// The Evaluate statement holding the call. Throws InternalError when a field is out of
    /// range (sizes < 1 or above the limits, more tile registers than 8, non-Load operands).
    Stmt to_stmt() const;
    /// The fields of a TileMatmulU8S8 / TileMatmulBF16 call. Throws InternalError on a
    /// malformed one.
    static TileMatmul from_call(const Call& call);
    /// The plain loops and stores the call stands for (the meaning above, in that loop order).
    Stmt expand() const;
};

} // namespace tessera::ir
