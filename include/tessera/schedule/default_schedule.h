// Rule-based default schedules: what `build` uses for a task without a tuning record, so that
// an untuned model is already fast enough to use (never the naive loop nest).
//
// Built from the sketch rules (sketch.h) without randomness, chosen from the Compute's
// structure (not from op names):
//   - a stage that needs multi-level tiling (conv2d, NCHW[x]c conv, depthwise, dense, matmul,
//     batch matmul): the "SSRSRS" tiling fused into its consumer (or a local cache) at the
//     register-tile level, with fixed lengths: a register tile of 1-4 vectors along the
//     innermost axis (a marked weight's output channels, blocked [K/b]...[b]; else the
//     contiguous axis) by up to 8 rows of the next axis, sized to the register file; channel
//     blocks added when the vector axis is shorter than two vectors (NCHW[x]c), and with
//     enough vectors a block of an axis that reuses each loaded input vector (Winograd's tile
//     positions) up to a quarter of the registers per row (a block axis: one that some read
//     of the width axis leaves out); for a conv,
//     a cache tile of up to 2048 elements around it (the window loops inside the register
//     tile, its rows - an axis the weight leaves out - repeated); for a GEMM-like stage (a long
//     reduction without a window: matmul, dense, 1x1 conv) a register tile of 6 rows x 4
//     vectors with 32 registers that accumulates over the whole reduction (inner 4 steps
//     unrolled), with as many rows of tiles around the local buffer as the parallel loops
//     allow, so a packed panel of B stays in cache while A streams past; matmul's activation B
//     packed into panels; auto_unroll_max_step 512, or 144 x the vector lanes for a tile
//     over a kernel window without a partial last tile (its window then unrolls whole);
//   - a weight in the graph's layout that a register tile reads over several blocks of
//     output channels (an NCHW[x]c conv's filters) stored, outside the call, in the tile's
//     read order: [KB/b], the reduce dimensions in the tile's loop order, [b][k];
//   - an intermediate that one tiled stage reads slice by slice (a depthwise conv's padded
//     input) inlined when the tiles together read at most twice its size (the reader reads
//     the image, zero outside it, instead of a padded copy in memory);
//   - other reductions (pools, softmax, layer norm, reduce ops) and injective stages:
//     strictly inlinable stages inlined, the innermost spatial loop vectorized (split by the
//     vector width when longer), the outer spatial loops fused and parallel; a reduction over
//     contiguous rows (softmax's max and sum, layer norm's moments, a global pool whose rows
//     are whole vectors) factored by the vector width into a vector of partials per row; a
//     reduction whose innermost output axis is contiguous in every operand (a pool or global
//     pool over NCHW[x]c) with its reduce loops outside that axis, the vector loop;
//   - in every root stage with at least 4096 loop iterations, the outer spatial loops are
//     fused and parallel up to 16 x num_cores iterations (a GEMM-like stage's up to 4 x
//     num_cores, leaving its rows of tiles a serial loop). Each thread runs one contiguous
//     chunk, so when the task's activations outweigh its weights and the outer loop is a
//     weight axis (output channel blocks), the row loop is first split into num_cores chunks,
//     outermost (each thread then reads the rows it wrote in the previous task); without an
//     even split and with weights of at most 16 KiB, the outer loops are sorted rows first.
// Sketches are ranked (blocked weight, fused tile, packed panel; one that re-lays out an
// activation last) and the first that fills and lowers wins; when none does, the default nest
// with inlining and vectors, then without inlining, then with only parallel outer loops, then
// the bare default nest. The result always lowers for a Compute that lower_default handles.
//
// For GPUs (target Gpu) the rules are the GPU sketches' (sketch.h) with fixed lengths:
//   - a tiled reduction (matmul, dense, batch matmul, conv2d, NCHW[x]c conv, depthwise):
//     "SSSRRSRS" through a local register tile fused into its copy-out (or its elementwise
//     consumer), shared copies of its inputs fetched by all threads of the block at each
//     inner reduce tile, auto_unroll_max_step 512. The block tile spans two reuse axes (the
//     innermost axis some input does not depend on, and the innermost one that other inputs
//     do not depend on: matmul's j and i, a convolution's width and output channels): 16x16
//     threads with 8x8 registers each, else 4x4, down to 8x8 threads with 1x1 as needed for
//     the grid to have a block per SM (132); threads a short axis leaves unused go to the
//     other axes.
//     Reduce axes up to 8 long (windows) lie whole in the inner reduce tile, longer ones are
//     cut into chunks of 8. No vthreads: lowering runs a vthread as a serial loop around the
//     register tile, with its own shared fetches. Tiles need not divide (guards); when a
//     candidate breaks a GpuSampleOptions limit or does not lower, smaller reduce tiles, then
//     smaller block tiles, then larger ones are tried;
//   - a reduction where the gpu_cross_thread_reduction rule applies (gpu_sampling.h: reduce
//     range above 32, or a tiled one whose output is smaller than its reduce range, as gemv):
//     one block per output element, its threads (whole warps, up to 256) splitting the range;
//   - everything else: injective stages inlined, every root stage's spatial loops fused and
//     bound blockIdx.x x threadIdx.x of 256 (fewer when smaller), one output element per
//     thread, reductions serial per thread (a full reduction to one value of at most 32
//     elements runs on one thread).
#pragma once

#include <vector>

#include "tessera/schedule/gpu_sampling.h"
#include "tessera/schedule/sketch.h"
#include "tessera/schedule/state.h"
#include "tessera/te/compute.h"

namespace tessera::sched {

struct DefaultScheduleOptions {
    TargetKind target = TargetKind::Cpu; ///< Cpu or Gpu (the rules above).
    int num_cores = 8;                   ///< Parallel loops get at least 4 x this many iterations when the extent allows.
    int64_t vector_lanes = 8;            ///< f32 lanes of the widest vector register (8: AVX2, 16: AVX-512).
    /// The vector registers a register tile may fill (16: AVX2; 32: AVX-512, AArch64 NEON).
    int64_t vector_registers = 16;
    /// As SketchOptions::weight_inputs; empty: the Compute's own (te::Compute::weight_inputs).
    std::vector<int> weight_inputs;
    /// Cpu: the CPU has matrix tiles for 8-bit products (x86 AMX-INT8). A stage that sums
    /// dot4_u8s8 then gets its register tile re-cut into tiles (up to 2x2 of 16 rows x 16
    /// columns, its reduce loops inside one `tile_matmul` nest, lower/tile_matmul.h), when
    /// that lowers; otherwise the vector tile.
    bool cpu_tiles = false;
    /// Cpu: the same for bf16 products (x86 AMX-BF16): a stage that sums dot2_bf16.
    bool cpu_tiles_bf16 = false;
    /// Gpu: the device limits the schedule keeps (threads, vthreads, shared and register-tile
    /// bytes).
    GpuSampleOptions gpu;
    /// Gpu: f32 matrix products may run on tensor cores in TF32 (operands rounded to a 10-bit
    /// mantissa, about 1e-3 relative error): the default schedule of such a product then uses
    /// warp_mma like an f16 one. Off: f32 stays f32.
    bool gpu_tf32 = false;
};

/// The default schedule of c. Deterministic (no randomness, no host queries: the caller passes
/// the cores and vector width). Post: lower_state of the result succeeds, and the result
/// replays from its steps (steps_to_json / replay); for Gpu it lowers with LowerOptions::gpu
/// and fits opts.gpu (gpu_limit_violation), except the last resort, the bare nest (each kernel
/// on one thread), which fits any limits. Never throws ScheduleError.
State default_schedule(const te::Compute& c, const DefaultScheduleOptions& opts = {});

} // namespace tessera::sched
