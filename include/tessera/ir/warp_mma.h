// WarpMma: one warp-level tensor-core matrix product (PTX mma.sync), the loop IR's statement for
// a 16 x 8 tile of products accumulated in f32 over one k step of 16 (f16 inputs) or 8 (f32
// inputs rounded to TF32), held in an Evaluate of CallOp::WarpMma.
//
// It is what lowering makes of a loop nest annotated `warp_mma` (lower/warp_mma.h) and what the
// CUDA backend emits as one mma.sync.aligned.m16n8k16 / m16n8k8 instruction. Only GPU code has
// it: the interpreter and the CPU backends reject it.
//
// Meaning. All 32 lanes of a warp (threadIdx.x = lane, blockDim.x = 32) execute the statement
// together, each with its own argument values. Let g = lane / 4 and t = lane % 4. The lanes'
// `a` values together form a 16 x K tile A and their `b` values a K x 8 tile B, placed as the
// PTX ISA lays out mma fragments ("matrix fragments for mma.m16n8k16 / m16n8k8"):
//   f16  (K = 16): a[q] is A[g + 8 * ((q >> 1) & 1)][2t + (q & 1) + 8 * (q >> 2)], q < 8;
//                  b[q] is B[2t + (q & 1) + 8 * (q >> 1)][g], q < 4;
//   tf32 (K = 8):  a[q] is A[g + 8 * (q & 1)][t + 4 * (q >> 1)], q < 4;
//                  b[q] is B[t + 4 * q][g], q < 2 (values rounded to TF32 first).
// Then each lane adds to its accumulator c[q] (q < 4) the element D[g + 8 * (q >> 1)][2t + (q & 1)]
// of D = A B (products exact, sums in f32 in an order the hardware chooses).
//
// The fragment functions below give these coordinates; lowering builds each lane's argument
// loads from them, so a nest whose per-lane arithmetic is the same product lowers to the call.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/ir/stmt.h"

namespace tessera::ir {

/// Which tensor-core product a WarpMma is.
enum class MmaKind : uint8_t {
    F16,  ///< m16n8k16: f16 A and B, f32 accumulators.
    TF32, ///< m16n8k8: f32 A and B rounded to TF32 (10-bit mantissa), f32 accumulators.
};
const char* to_string(MmaKind k);

struct WarpMma {
    MmaKind kind = MmaKind::F16;
    /// Scalar Loads (read and written): this lane's four f32 accumulators c[0..3].
    std::vector<Expr> c;
    /// Scalar values (Loads, usually) of this lane's A fragment (a_elements(kind) of them, f16
    /// or f32) and B fragment (b_elements(kind)).
    std::vector<Expr> a, b;

    static constexpr int64_t kRows = 16, kColumns = 8, kLanes = 32;
    /// The k extent of one product: 16 (F16) or 8 (TF32).
    static int64_t k_of(MmaKind k);
    /// Elements of A and of B one lane holds: 8 and 4 (F16), 4 and 2 (TF32).
    static int a_elements(MmaKind k);
    static int b_elements(MmaKind k);
    /// The element type of A and B: f16 or f32.
    static DataType input_type(MmaKind k);

    /// Fragment coordinates of lane (g, t): element q of A at row g + 8 * a_row_half(k, q),
    /// column k_per_t(k) * t + a_k_offset(k, q); element q of B at row
    /// k_per_t(k) * t + b_k_offset(k, q), column g; accumulator q at row g + 8 * (q >> 1),
    /// column 2t + (q & 1).
    static int64_t k_per_t(MmaKind k);
    static int64_t a_row_half(MmaKind k, int q);
    static int64_t a_k_offset(MmaKind k, int q);
    static int64_t b_k_offset(MmaKind k, int q);

    /// The Evaluate statement holding the call. Throws InternalError when an operand count or
    /// type does not fit the kind or an accumulator is not a scalar f32 Load.
    Stmt to_stmt() const;
    /// The fields of a WarpMma call. Throws InternalError on a malformed one.
    static WarpMma from_call(const Call& call);
};

} // namespace tessera::ir
