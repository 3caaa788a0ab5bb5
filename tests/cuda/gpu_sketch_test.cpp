// GPU sketches (TargetKind::Gpu) and their annotation: structure of the sketches, bindings and
// device limits of sampled schedules, and that sampled schedules of the canonical workloads
// generate CUDA that NVRTC compiles (and, for small ones, compute the reference through the
// CPU emulation of the generated CUDA).
#include <gtest/gtest.h>

#include <set>

#include "gpu_schedules.h"
#include "tessera/backends/cuda.h"
#include "tessera/schedule/gpu_sampling.h"
#include "tessera/schedule/sketch.h"
#include "tessera/te/op_registry.h"

namespace tessera::testing {
namespace {

namespace cuda = backend::cuda;

bool has_shared_stage(const sched::State& s) {
    for (const sched::Stage& st : s.stages)
        if (st.scope == sched::StageScope::Shared)
            return true;
    return false;
}

TEST(GpuSketch, MatmulGetsLocalCacheAndSharedCopies) {
    const te::Compute c = te::make_op("matmul:m=512,n=512,k=512").compute;
    const std::vector<sched::State> sketches = sched::generate_sketches(c, gpu_sketch_options());
    // Shared copies of a, of b, of both, of neither.
    ASSERT_EQ(sketches.size(), 4u);
    int with_shared = 0;
    for (const sched::State& s : sketches) {
        with_shared += has_shared_stage(s);
        bool local = false;
        for (const sched::Stage& st : s.stages)
            local = local || st.scope == sched::StageScope::Local;
        EXPECT_TRUE(local) << sched::to_string(s);
    }
    EXPECT_EQ(with_shared, 3);
}

TEST(GpuSketch, SampledMatmulBindsBlocksVthreadsAndThreadsWithinLimits) {
    const te::Compute c = te::make_op("matmul:m=512,n=512,k=512").compute;
    const std::vector<sched::State> sketches = sched::generate_sketches(c, gpu_sketch_options());
    Rng rng(17);
    const sched::GpuSampleOptions lim;
    std::set<int64_t> thread_counts;
    for (int i = 0; i < 24; ++i) {
        const sched::State s = sched::sample_initial_gpu_state(sketches[i % sketches.size()], rng);
        const int out = s.stage_id_of(s.compute.outputs[0]);
        int64_t threads = 1;
        bool block = false, vthread = false;
        for (const sched::Iterator& it : s.stages[out].iters) {
            block = block || it.annotation == sched::IterAnnotation::BlockX;
            vthread = vthread || it.annotation == sched::IterAnnotation::VThread;
            if (it.annotation == sched::IterAnnotation::ThreadX)
                threads *= it.extent;
        }
        EXPECT_TRUE(block && vthread) << sched::to_string(s);
        EXPECT_LE(threads, lim.max_threads_per_block);
        thread_counts.insert(threads);
        const cuda::CudaSource src = cuda::codegen_cuda(lower_gpu(s, "mm"));
        ASSERT_EQ(src.kernels.size(), 1u);
        EXPECT_EQ(src.kernels[0].dims.threads_per_block(), threads);
        EXPECT_LE(src.kernels[0].shared_bytes, lim.max_shared_bytes);
    }
    EXPECT_GE(thread_counts.size(), 3u) << "thread counts are sampled";
}

/// Registry specs of the canonical workloads at small odd sizes.
const char* const kWorkloads[] = {
    "matmul:m=127,n=67,k=13",  "dense:m=7,n=13,k=127,bias=1,relu=1",
    "batch_matmul:b=2,m=13,n=7,k=13", "conv2d:n=1,c=7,h=13,w=13,k=13,pad=1",
    "depthwise_conv2d:c=7,h=13,w=13,pad=1", "max_pool2d:c=7,h=13,w=13",
    "softmax:m=7,n=13",        "layer_norm:m=13,n=7",
    "reduce_sum:m=13,n=7",     "gelu:m=7,n=13",
    "transpose:m=7,n=13",      "add:m=13,n=7,broadcast=1"};

TEST(GpuSketch, SampledSchedulesOfCanonicalWorkloadsCompileWithNvrtc) {
    Rng rng(23);
    for (const char* spec : kWorkloads) {
        SCOPED_TRACE(spec);
        const te::OpInstance op = te::make_op(spec);
        const std::vector<sched::State> sketches = sched::generate_sketches(op.compute, gpu_sketch_options());
        ASSERT_GE(sketches.size(), 1u);
        const sched::State s = sched::sample_initial_gpu_state(sketches[0], rng);
        const cuda::CudaSource src = cuda::codegen_cuda(lower_gpu(s, op.name));
        EXPECT_NO_THROW(cuda::nvrtc_compile(src.code, op.name, {"sm_90", false, false}))
            << src.code;
    }
}

TEST(GpuSketch, SampledSchedulesComputeTheReferenceInEmulation) {
    // One OS thread per CUDA thread: small workloads, one sample each.
    Rng rng(29);
    for (const char* spec : {"matmul:m=37,n=29,k=13", "softmax:m=7,n=13"}) {
        SCOPED_TRACE(spec);
        const te::OpInstance op = te::make_op(spec);
        const std::vector<sched::State> sketches =
            sched::generate_sketches(op.compute, gpu_sketch_options());
        // The matmul sketch with both shared copies (the last one with any), else the first.
        size_t pick = 0;
        for (size_t i = 0; i < sketches.size(); ++i) {
            if (has_shared_stage(sketches[i]))
                pick = i;
        }
        const sched::State s = sched::sample_initial_gpu_state(sketches[pick], rng);
        SCOPED_TRACE(sched::to_string(s));
        EXPECT_EQ(has_shared_stage(s), op.name == "matmul");
        expect_emulation_matches(s, lower_gpu(s, "emu"), 4);
    }
}

/// The shared stage that is a copy of the padding of conv2d's input, or -1.
int padded_copy(const sched::State& s) {
    for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid)
        if (s.stages[sid].scope == sched::StageScope::Shared &&
            s.stages[sid].tensor.name() == "conv2d_pad.shared")
            return sid;
    return -1;
}

TEST(GpuSketch, APaddedInputIsComputedIntoItsReadersSharedCopy) {
    const te::OpInstance op = te::make_op("conv2d:n=1,c=7,h=13,w=13,k=13,pad=1");
    const std::vector<sched::State> sketches =
        sched::generate_sketches(op.compute, gpu_sketch_options());
    int with = -1, without = 0;
    for (size_t i = 0; i < sketches.size(); ++i) {
        if (padded_copy(sketches[i]) < 0) {
            ++without; // always_inline's variant: the pad read through the conv's loads
            continue;
        }
        with = static_cast<int>(i);
        const sched::State& s = sketches[i];
        for (const sched::Stage& st : s.stages) {
            if (st.tensor.name() == "conv2d_pad") {
                EXPECT_EQ(st.location.kind, sched::ComputeLocKind::Inlined)
                    << sched::to_string(s);
            }
        }
        // Attached inside the conv's register tile computation, at its outer reduce tile.
        const sched::Stage& copy = s.stages[padded_copy(s)];
        ASSERT_EQ(copy.location.kind, sched::ComputeLocKind::At);
        EXPECT_EQ(s.stages[copy.location.stage].iters[copy.location.iter].kind,
                  sched::IterKind::Reduce);
    }
    ASSERT_GE(with, 0) << "no sketch copies the padded input";
    EXPECT_GE(without, 1);
    Rng rng(31);
    const sched::State s = sched::sample_initial_gpu_state(sketches[with], rng);
    SCOPED_TRACE(sched::to_string(s));
    expect_emulation_matches(s, lower_gpu(s, "emu"), 5);
}

TEST(GpuSketch, ImpossibleLimitsAreScheduleErrors) {
    const te::Compute c = te::make_op("matmul:m=64,n=64,k=64").compute;
    const std::vector<sched::State> sketches = sched::generate_sketches(c, gpu_sketch_options());
    sched::GpuSampleOptions tiny;
    tiny.max_local_bytes = 0; // no register tile fits
    tiny.max_tries = 4;
    Rng rng(3);
    EXPECT_THROW(sched::sample_initial_gpu_state(sketches[0], rng, tiny), ScheduleError);
}

} // namespace
} // namespace tessera::testing
