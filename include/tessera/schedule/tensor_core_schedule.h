// Tensor-core schedules of matrix products on NVIDIA GPUs: `warp_mma` nests (lower/warp_mma.h)
// over shared-memory copies of the operands, with the tile sizes given. The GPU default schedule
// (default_schedule.h) picks the tiles; these entry points let a search or a benchmark try
// others.
#pragma once

#include <cstdint>
#include <optional>

#include "tessera/schedule/state.h"
#include "tessera/te/compute.h"

namespace tessera::sched {

/// The tiles of a tensor-core schedule. The block computes a (wi * 16 * mi) x (wj * 8 * nj)
/// tile of the output with wi x wj warps (threadIdx.y; threadIdx.x the 32 lanes), each warp
/// mi x nj mma tiles of 16 x 8 (mi * nj * 4 f32 accumulators per lane); k advances by
/// k_steps mma steps (16 for f16, 8 for TF32) per shared-memory fetch.
struct TensorCoreTiles {
    int64_t wi = 2, wj = 2, mi = 4, nj = 8, k_steps = 2;
    /// Pad each shared row by one 4-byte word (fewer bank conflicts on the fragment loads).
    bool pad_rows = true;
    /// Load the next k tile from global memory into registers while the tensor cores work
    /// on this one (`pipeline` on the k loop of the fetches, lower/pipeline_fetches.h).
    bool pipeline = true;
    int64_t rows() const { return wi * 16 * mi; }
    int64_t columns() const { return wj * 8 * nj; }
};

/// Whether c is a matrix product a tensor-core schedule applies to: one compute stage (f32)
/// reducing one axis of two input operands of one type, f16 or (with tf32) f32, the last two
/// output axes the rows and columns, whole 16 x 8 tiles and whole k steps; either the output
/// itself or followed by elementwise stages of its shape (bias, activation, residual: inlined
/// into the output, which then copies the accumulators out).
bool is_tensor_core_product(const te::Compute& c, bool tf32);

/// The tensor-core schedule of c with `tiles`. Throws ScheduleError when c is not such a
/// product (is_tensor_core_product), the tiles do not divide its rows, columns or k (a partial
/// tile would put the warp's mma under a guard), or a step is illegal. The result lowers with
/// LowerOptions::gpu; whether it fits a device is gpu_limit_violation's to say.
State tensor_core_schedule(const te::Compute& c, const TensorCoreTiles& tiles, bool tf32);

} // namespace tessera::sched
