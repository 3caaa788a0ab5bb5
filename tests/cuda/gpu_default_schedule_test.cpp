// The GPU default schedule (sched::default_schedule with TargetKind::Gpu): every registry op and
// canonical workload gets a schedule that replays from its steps, lowers, passes the CUDA
// codegen's limits and compiles with NVRTC; tiled reductions get the shared-memory, register-tile
// structure with tiles sized by the output; small odd shapes compute the reference under the CPU
// emulation of the generated CUDA.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gpu_schedules.h"
#include "tessera/backends/cuda.h"
#include "tessera/schedule/default_schedule.h"
#include "tessera/schedule/gpu_sampling.h"
#include "tessera/schedule/schedule.h"
#include "tessera/te/op_library.h"
#include "tessera/te/op_registry.h"
#include "tessera/te/tensor.h"

namespace tessera::testing {
namespace {

namespace cuda = backend::cuda;

/// NCHW[b]c convolution, 3x3: x [1, cb, h, w, b], w [kb, cb, 3, 3, b, b] (the layout the
/// graph's layout pass gives CPU convolutions; a model built for CUDA may still carry it).
te::Compute nchwc_conv(int64_t cb, int64_t kb, int64_t h, int64_t w, int64_t b, int64_t pad) {
    const ir::Tensor x = te::placeholder({1, cb, h, w, b}, ir::DataType::f32(), "x");
    const ir::Tensor wt = te::placeholder({kb, cb, 3, 3, b, b}, ir::DataType::f32(), "w");
    return te::make_compute({x, wt}, {te::conv2d_nchwc(x, wt, te::Conv2dParams::make(1, pad))});
}

/// The stages of s in a scope.
int count_scope(const sched::State& s, sched::StageScope scope) {
    int n = 0;
    for (const sched::Stage& st : s.stages)
        n += st.scope == scope && st.location.kind == sched::ComputeLocKind::At;
    return n;
}

bool has_pragma(const sched::State& s, int64_t value) {
    for (const sched::Step& st : s.steps)
        if (st.kind == sched::StepKind::Pragma && st.pragma == "auto_unroll_max_step" &&
            st.value == value)
            return true;
    return false;
}

/// The checks every default schedule passes: replay from JSON, the device limits, lowering,
/// codegen limits and (with `compile`) NVRTC. Returns the generated source.
cuda::CudaSource expect_valid(const sched::State& s, const std::string& name, bool compile = true) {
    const sched::State again =
        sched::replay(s.compute, sched::steps_from_json(sched::steps_to_json(s.steps)));
    EXPECT_EQ(sched::steps_to_json(again.steps), sched::steps_to_json(s.steps));
    EXPECT_EQ(sched::gpu_limit_violation(s), "");
    const cuda::CudaSource src = cuda::codegen_cuda(lower_gpu(again, name));
    if (compile) {
        EXPECT_NO_THROW(cuda::nvrtc_compile(src.code, name, {"sm_90", false, false})) << src.code;
    }
    return src;
}

TEST(GpuDefaultSchedule, EveryRegistryOpReplaysLowersAndCompiles) {
    const std::vector<std::string> specs = registry_specs(13);
    ASSERT_GE(specs.size(), 20u);
    for (const std::string& spec : specs) {
        SCOPED_TRACE(spec);
        const te::OpInstance op = te::make_op(spec);
        const sched::State s = sched::default_schedule(op.compute, gpu_default_options());
        const cuda::CudaSource src = expect_valid(s, op.name);
        // Every kernel runs on more than one thread (13 x 13 outputs at least).
        for (const cuda::KernelInfo& k : src.kernels)
            EXPECT_GT(k.dims.threads_per_block() * k.dims.grid[0], 1) << k.name << "\n" << src.code;
    }
}

TEST(GpuDefaultSchedule, TiledReductionsGetSharedCopiesRegisterTilesAndUnroll) {
    struct Case {
        std::string name;
        te::Compute compute;
        int shared; // inputs of the reduction copied to shared memory
    };
    // A padded input's pad stage is computed into its own shared copy
    // (gpu_shared_computed_read), next to the weights' copy.
    std::vector<Case> cases;
    for (const auto& [spec, shared] :
         std::vector<std::pair<const char*, int>>{{"matmul:m=512,n=512,k=512", 2},
                                                  {"dense:m=64,n=1000,k=512,bias=1,relu=1", 2},
                                                  {"batch_matmul:b=12,m=128,n=128,k=64", 2},
                                                  {"conv2d:n=1,c=64,h=56,w=56,k=64", 2},
                                                  {"conv2d:n=1,c=64,h=56,w=56,k=64,pad=1", 2},
                                                  {"depthwise_conv2d:c=32,h=112,w=112,pad=1", 2}})
        cases.push_back({spec, te::make_op(spec).compute, shared});
    cases.push_back({"nchwc conv", nchwc_conv(8, 8, 56, 56, 8, 0), 2});
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        const sched::State s = sched::default_schedule(c.compute, gpu_default_options());
        EXPECT_EQ(count_scope(s, sched::StageScope::Shared), c.shared) << sched::to_string(s);
        EXPECT_GE(
            count_scope(s, sched::StageScope::Local) + count_scope(s, sched::StageScope::Global), 1)
            << "the register tile is computed at the thread level";
        EXPECT_TRUE(has_pragma(s, 512)) << sched::to_string(s);
        // Each copy sits at a reduce loop with a next iteration where one encloses it (a
        // window's extent-1 loops left for the channel loop around them), pipelined.
        for (const sched::Stage& st : s.stages) {
            if (st.scope != sched::StageScope::Shared)
                continue;
            const std::vector<sched::Iterator>& loops = s.stages[st.location.stage].iters;
            bool longer = false;
            for (int i = 0; i <= st.location.iter; ++i)
                longer = longer ||
                         (loops[i].kind == sched::IterKind::Reduce && loops[i].extent > 1);
            if (!longer)
                continue; // a depthwise window lies whole in one tile: nothing to overlap
            EXPECT_GT(loops[st.location.iter].extent, 1) << sched::to_string(s);
            EXPECT_EQ(loops[st.location.iter].annotation, sched::IterAnnotation::Pipeline)
                << sched::to_string(s);
        }
        // The reduction computed inside a thread's tile runs that tile once: its spatial loops
        // above the reduce loops (the block, vthread and thread levels its consumer binds)
        // iterate once each.
        for (const sched::Stage& st : s.stages) {
            const bool reduces =
                std::any_of(st.iters.begin(), st.iters.end(), [](const sched::Iterator& it) {
                    return it.kind == sched::IterKind::Reduce;
                });
            if (st.location.kind != sched::ComputeLocKind::At || !reduces)
                continue;
            for (const sched::Iterator& it : st.iters) {
                if (it.kind == sched::IterKind::Reduce)
                    break;
                EXPECT_EQ(it.extent, 1) << it.name << " of " << st.tensor.name() << "\n"
                                        << sched::to_string(s);
            }
        }
        // NVRTC for the first only (the registry test compiles every op; this keeps it quick).
        const cuda::CudaSource src = expect_valid(s, "tiled", &c == &cases.front());
        ASSERT_EQ(src.kernels.size(), 1u) << src.code;
        const cuda::KernelInfo& k = src.kernels[0];
        EXPECT_GE(k.dims.threads_per_block(), 32) << src.code;
        EXPECT_LE(k.dims.threads_per_block(), 256);
        EXPECT_GT(k.shared_bytes, 0);
        EXPECT_GE(k.local_bytes, 4 * 4) << "a register tile of at least 2x2";
        EXPECT_EQ(k.dims.block[1] * k.dims.block[2], 1);
    }
}

TEST(GpuDefaultSchedule, BlockTilesShrinkUntilTheGridFillsTheDevice) {
    // (size, threads per block, register tile floats, grid): 128x128 tiles of 16x16 threads
    // with 8x8 registers when that gives a block per SM (132), else 64x64 with 4x4, then 64x32,
    // 32x32 with 8x8 threads, down to 8x8 with one element per thread (127: imperfect tiles).
    struct Case {
        int64_t n, threads, local_floats, grid;
    };
    for (const Case& c : {Case{2048, 256, 64, 256}, Case{1024, 256, 16, 256},
                          Case{512, 64, 16, 256}, Case{127, 64, 1, 256}}) {
        SCOPED_TRACE(c.n);
        const std::string spec = "matmul:m=" + std::to_string(c.n) + ",n=" + std::to_string(c.n) +
                                 ",k=" + std::to_string(c.n);
        const sched::State s = sched::default_schedule(te::make_op(spec).compute, gpu_default_options());
        const cuda::CudaSource src = cuda::codegen_cuda(lower_gpu(s, "mm"));
        ASSERT_EQ(src.kernels.size(), 1u);
        EXPECT_EQ(src.kernels[0].dims.threads_per_block(), c.threads) << sched::to_string(s);
        // Square block tiles; both shared copies hold 8 steps of k, and each thread stages its
        // share of the next step's copies in registers (the pipelined k loop).
        const int64_t side = static_cast<int64_t>(std::sqrt(double(c.threads * c.local_floats)));
        EXPECT_EQ(src.kernels[0].local_bytes,
                  (c.local_floats + (2 * side * 8 + c.threads - 1) / c.threads) * 4);
        EXPECT_EQ(src.kernels[0].dims.grid[0], c.grid);
        EXPECT_EQ(src.kernels[0].shared_bytes, 2 * side * 8 * 4);
    }
}

TEST(GpuDefaultSchedule, LongReductionsWithSmallOutputsAreCrossThread) {
    // (spec, threads per block, grid): a block per output element, whole warps up to 256.
    struct Case {
        const char* spec;
        int64_t threads, grid;
    };
    for (const Case& c :
         {Case{"reduce_sum:m=64,n=1000", 256, 64}, Case{"reduce_max:m=7,n=127", 128, 7},
          Case{"matmul:m=1,n=64,k=1024", 256, 64}, Case{"reduce_sum:m=13,n=7", 13, 1}}) {
        SCOPED_TRACE(c.spec);
        const sched::State s = sched::default_schedule(te::make_op(c.spec).compute, gpu_default_options());
        const cuda::CudaSource src = expect_valid(s, "red", false);
        ASSERT_EQ(src.kernels.size(), 1u) << src.code;
        EXPECT_EQ(src.kernels[0].dims.threads_per_block(), c.threads) << src.code;
        EXPECT_EQ(src.kernels[0].dims.grid[0], c.grid) << src.code;
    }
}

TEST(GpuDefaultSchedule, IsDeterministicAndKeepsTighterLimits) {
    const te::Compute c = te::make_op("conv2d:n=1,c=64,h=56,w=56,k=64").compute;
    const sched::State a = sched::default_schedule(c, gpu_default_options());
    const sched::State b = sched::default_schedule(c, gpu_default_options());
    EXPECT_EQ(sched::steps_to_json(a.steps), sched::steps_to_json(b.steps));
    // Less shared memory than the default copies need: smaller tiles, still within limits.
    sched::DefaultScheduleOptions tight = gpu_default_options();
    tight.gpu.max_shared_bytes = 2 * 1024;
    tight.gpu.max_threads_per_block = 64;
    const sched::State t = sched::default_schedule(c, tight);
    EXPECT_EQ(sched::gpu_limit_violation(t, tight.gpu), "") << sched::to_string(t);
    EXPECT_NE(sched::steps_to_json(t.steps), sched::steps_to_json(a.steps));
    EXPECT_EQ(count_scope(t, sched::StageScope::Shared), 2) << "still tiled through shared memory";
    const cuda::CudaSource src = cuda::codegen_cuda(lower_gpu(t, "conv"));
    EXPECT_LE(src.kernels[0].shared_bytes, 2 * 1024);
    EXPECT_LE(src.kernels[0].dims.threads_per_block(), 64);
}

TEST(GpuDefaultSchedule, ComputesTheReferenceInEmulation) {
    // Odd sizes (1, 7, 13, 127) and imperfect tiles everywhere; small enough for one OS thread
    // per CUDA thread.
    std::vector<std::pair<std::string, te::Compute>> cases;
    for (const char* spec :
         {"matmul:m=127,n=7,k=13", "matmul:m=1,n=13,k=127", "dense:m=7,n=13,k=127,bias=1,relu=1",
          "batch_matmul:b=2,m=13,n=7,k=13", "conv2d:n=1,c=7,h=13,w=13,k=13,pad=1",
          // Channels in chunks under the unroll budget, the copies pipelined over them.
          "conv2d:n=1,c=19,h=9,w=9,k=5,pad=1",
          "depthwise_conv2d:c=7,h=13,w=13,pad=1", "softmax:m=7,n=13", "softmax:m=7,n=127"})
        cases.push_back({spec, te::make_op(spec).compute});
    cases.push_back({"nchwc conv", nchwc_conv(2, 2, 7, 7, 4, 1)});
    uint64_t seed = 11;
    for (const auto& [name, c] : cases) {
        SCOPED_TRACE(name);
        const sched::State s = sched::default_schedule(c, gpu_default_options());
        SCOPED_TRACE(sched::to_string(s));
        expect_emulation_matches(s, lower_gpu(s, "emu"), seed++);
    }
}

} // namespace
} // namespace tessera::testing
