// The CUDA backend, code side: a lowered function (lowered with sched::LowerOptions::gpu) to
// CUDA C kernels, and NVRTC compilation of that source to PTX and a cubin. No GPU is needed
// for either; running the kernels is cuda_driver.h.
//
// Input contract (ir::LoweredFunc): each top-level statement of the body (inside the Heap
// Allocates of root temporaries, which become device workspaces) becomes one kernel, launched
// in order. Inside a kernel:
// - GpuBlockX..Z / GpuThreadX..Z loops bind their variable to that hardware index (plus min);
//   loops of one kind share the index, so the launch dimension is the largest extent among
//   them and smaller ones are guarded. Extents must be constant. A kernel without bound loops
//   runs on one thread (grid 1, block 1).
// - GpuVThread, Vectorized and Unrolled loops are serial loops marked `#pragma unroll`;
//   Serial and Parallel loops are plain loops. (Vector IR - Ramp, Broadcast, VectorReduce -
//   is rejected: run no vectorize pass before this backend.) Exception: a Vectorized loop of 2
//   or 4 lanes from 0 whose body is one Store, with an access contiguous along the loop
//   variable at a base provably a multiple of the lanes, uses float2/float4/__half2 loads and
//   stores for such accesses of global and shared buffers (the others, and per-thread arrays,
//   stay scalar). Every buffer must be 16-byte aligned
//   (cudaMalloc'd params and workspaces are).
// - CallOp::GpuBlockSum/Max/Min (cross-thread reductions from sched::lower_state) become a
//   warp-shuffle and shared-memory block reduction over threadIdx.x; every thread of the block
//   must reach it: inside a thread-dependent branch, outside the thread-bound loops, or in a
//   block with threadIdx.y/z it is a ScheduleError.
// - Shared Allocates become __shared__ arrays, Local and Stack ones per-thread arrays; a Heap
//   Allocate inside a kernel is rejected.
// - Barriers are inserted here, not written in the IR: inside thread-bound code, a statement
//   of a Seq that stores to a Shared buffer (a cooperative fetch) gets __syncthreads() before
//   it (the previous iteration's readers are done) and after it (the data is complete);
//   adjacent fetches share their barriers.
// - CallOp::Dot4U8S8 is a prelude helper: one PTX dp4a.u32.s32 (unsigned bytes of a, signed
//   bytes of b) from sm_61 on, a loop over the bytes before.
// - Integer Div/Mod keep the IR's floor semantics (helpers in the generated prelude); f16 is
//   __half from cuda_fp16.h with math done in f32. The IR's i64 (indices) becomes 32-bit int
//   when every buffer has under 2^30 elements and none holds 64-bit integers, else long long.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/ir/stmt.h"

namespace tessera::backend::cuda {

/// Launch configuration of one kernel.
struct LaunchDims {
    std::array<int64_t, 3> grid{1, 1, 1};  ///< Blocks in x, y, z.
    std::array<int64_t, 3> block{1, 1, 1}; ///< Threads per block in x, y, z.
    int64_t threads_per_block() const { return block[0] * block[1] * block[2]; }
    int64_t blocks() const { return grid[0] * grid[1] * grid[2]; }
};

/// One generated kernel. Every kernel of a module takes the same arguments: the function's
/// params in order, then the workspaces, each as a device pointer.
struct KernelInfo {
    std::string name;         ///< The `extern "C" __global__` symbol.
    LaunchDims dims;
    int64_t shared_bytes = 0; ///< Static shared memory of the kernel.
    int64_t local_bytes = 0;  ///< Per-thread array bytes (register tiles), an upper bound.
};

/// The CUDA C translation unit of a lowered function.
struct CudaSource {
    std::string func_name;
    std::string code;                   ///< Prelude plus every kernel; compiles with NVRTC.
    std::vector<KernelInfo> kernels;    ///< In launch order.
    std::vector<ir::Buffer> params;     ///< The function's params (user-visible buffers).
    std::vector<ir::Buffer> workspaces; ///< Device temporaries the caller allocates.
};

/// Limits of the device that the cheap validity checks use (defaults: sm_90, H100/H200).
struct DeviceLimits {
    int64_t max_threads_per_block = 1024;
    std::array<int64_t, 3> max_block{1024, 1024, 64};
    std::array<int64_t, 3> max_grid{2147483647, 65535, 65535};
    int64_t max_shared_bytes = 48 * 1024; ///< Static __shared__ per block.
    /// Per-thread array bytes above which a register tile certainly spills (255 registers).
    int64_t max_local_bytes = 1024;
};

/// Generates CUDA C for f (see the input contract above). Throws ScheduleError when the
/// function breaks a device limit or needs what the backend cannot do (a barrier in a branch
/// that threads may take differently, a block-bound loop inside a serial one, a non-constant
/// bound extent), so the search can count and skip it; InternalError on IR that no lowering
/// produces (tensor-expression nodes, vector IR).
CudaSource codegen_cuda(const ir::LoweredFunc& f, const DeviceLimits& limits = {});

/// NVRTC options.
struct NvrtcOptions {
    std::string arch = "sm_90"; ///< A real architecture: a cubin is produced.
    bool want_ptx = true;       ///< Also return the PTX the cubin was assembled from.
    bool fast_math = false;     ///< --use_fast_math.
};

/// What NVRTC produced.
struct NvrtcResult {
    std::string ptx;
    std::string cubin; ///< Binary bytes.
    std::string log;   ///< Compiler warnings, if any.
};

/// Compiles CUDA C with NVRTC (include path: the toolkit's headers). Throws UserError with the
/// NVRTC log when compilation fails or produces an empty cubin. Thread-safe.
NvrtcResult nvrtc_compile(const std::string& code, const std::string& program_name,
                          const NvrtcOptions& opts = {});

/// NVRTC's version as "major.minor".
std::string nvrtc_version();

} // namespace tessera::backend::cuda
