// CUDA C generation and NVRTC compilation (no GPU needed): hand-written GPU schedules of the
// canonical workloads become CUDA C that NVRTC compiles to an sm_90 cubin and to PTX, with the
// launch dimensions, shared memory and barriers the schedule asks for.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/reference_ops.h"
#include "common/test_util.h"
#include "gpu_schedules.h"
#include "tessera/backends/cuda.h"
#include "tessera/ir/functor.h"
#include "tessera/ir/op.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/te/op_registry.h"
#include "tessera/te/tensor.h"

namespace tessera::testing {
namespace {

namespace cuda = backend::cuda;


/// Generates and compiles; checks the cubin and that the PTX defines every kernel.
cuda::CudaSource expect_compiles(const ir::LoweredFunc& f) {
    cuda::CudaSource src = cuda::codegen_cuda(f);
    cuda::NvrtcResult r;
    EXPECT_NO_THROW(r = cuda::nvrtc_compile(src.code, f.name)) << src.code;
    EXPECT_GT(r.cubin.size(), 0u);
    EXPECT_NE(r.ptx.find(".target sm_90"), std::string::npos);
    for (const cuda::KernelInfo& k : src.kernels)
        EXPECT_NE(r.ptx.find(".entry " + k.name), std::string::npos) << k.name;
    return src;
}

TEST(CudaCodegen, ElementwiseBindsBlocksAndThreads) {
    const te::Compute c = te::make_op("relu:m=7,n=13").compute;
    const cuda::CudaSource src = expect_compiles(lower_gpu(gpu_bind_elementwise(c, 64), "relu"));
    ASSERT_EQ(src.kernels.size(), 1u);
    EXPECT_EQ(src.kernels[0].dims.grid[0], 2); // ceil(91 / 64)
    EXPECT_EQ(src.kernels[0].dims.block[0], 64);
    EXPECT_EQ(src.kernels[0].shared_bytes, 0);
    EXPECT_NE(src.code.find("blockIdx.x"), std::string::npos);
    EXPECT_NE(src.code.find("threadIdx.x"), std::string::npos);
    EXPECT_EQ(count_occurrences(src.code, "__syncthreads"), 0);
}

// Names the prelude reserves (its tessera_ prefix, keywords) still give valid, distinct names:
// a function called tessera_kernel_3 once made the name search loop forever.
TEST(CudaCodegen, ReservedNamesArePrefixed) {
    const te::Compute c = te::make_op("relu:m=7,n=13").compute;
    for (const char* name : {"tessera_kernel_3", "float", "__x"}) {
        const cuda::CudaSource src = expect_compiles(lower_gpu(gpu_bind_elementwise(c, 64), name));
        ASSERT_EQ(src.kernels.size(), 1u) << name;
        EXPECT_NE(src.code.find(src.kernels[0].name + "("), std::string::npos) << src.code;
    }
}

TEST(CudaCodegen, IndicesAre32BitUnlessABufferNeeds64) {
    const te::Compute small = te::make_op("relu:m=7,n=13").compute;
    const std::string code = cuda::codegen_cuda(lower_gpu(gpu_bind_elementwise(small, 64), "s")).code;
    EXPECT_NE(code.find("const int "), std::string::npos) << code;
    EXPECT_EQ(code.find("long long"), std::string::npos) << code;
    // 2^30 elements: index arithmetic could pass 2^31, so it stays 64-bit.
    const te::Compute big = te::make_op("relu:m=32768,n=32768").compute;
    const std::string wide = cuda::codegen_cuda(lower_gpu(gpu_bind_elementwise(big, 256), "b")).code;
    EXPECT_NE(wide.find("const long long "), std::string::npos) << wide;
    expect_compiles(lower_gpu(gpu_bind_elementwise(big, 256), "b"));
}

TEST(CudaCodegen, TiledMatmulFetchesIntoSharedMemoryBetweenBarriers) {
    for (const char* spec : {"matmul:m=256,n=256,k=256", "matmul:m=127,n=67,k=13"}) {
        SCOPED_TRACE(spec);
        const te::Compute c = te::make_op(spec).compute;
        const cuda::CudaSource src = expect_compiles(lower_gpu(gpu_tiled_matmul(c), "mm"));
        ASSERT_EQ(src.kernels.size(), 1u);
        const cuda::KernelInfo& k = src.kernels[0];
        EXPECT_EQ(k.dims.block[0], 256);
        EXPECT_EQ(k.dims.threads_per_block(), 256);
        EXPECT_EQ(k.dims.grid[0], ((c.outputs[0].shape()[0] + 63) / 64) *
                                      ((c.outputs[0].shape()[1] + 63) / 64));
        EXPECT_EQ(k.shared_bytes, (64 * 8 + 8 * 64) * 4);
        EXPECT_EQ(k.local_bytes, 16 * 4);
        EXPECT_EQ(count_occurrences(src.code, "__shared__"), 2);
        // Before the two fetches (the previous step's reads are done), after them (complete).
        EXPECT_EQ(count_occurrences(src.code, "__syncthreads"), 2) << src.code;
        const size_t first = src.code.find("__syncthreads");
        const size_t second = src.code.find("__syncthreads", first + 1);
        const std::string between = src.code.substr(first, second - first);
        EXPECT_EQ(count_occurrences(between, "a_shared["), 1)
            << "the fetch of a sits between the barriers";
        EXPECT_EQ(count_occurrences(between, "b_shared["), 1)
            << "the fetch of b sits between the barriers";
        EXPECT_EQ(count_occurrences(src.code.substr(second), "_shared["), 2)
            << "reads after the barrier";
    }
}

TEST(CudaCodegen, HalfPrecisionElementwise) {
    const ir::Tensor x = te::placeholder({7, 13}, ir::DataType::f16(), "x");
    const ir::Tensor y = te::compute(
        {7, 13},
        [&](const std::vector<ir::Var>& i) {
            ir::Expr v = ir::TensorRead::make(x, {i[0], i[1]});
            return v * v + ir::FloatImm::make(ir::DataType::f16(), 0.5);
        },
        "y");
    const te::Compute c = te::make_compute({x}, {y});
    const cuda::CudaSource src = expect_compiles(lower_gpu(gpu_bind_elementwise(c, 32), "half"));
    EXPECT_NE(src.code.find("__half* __restrict__ x"), std::string::npos) << src.code;
    EXPECT_NE(src.code.find("__float2half_rn(0.5f)"), std::string::npos) << src.code;
}

TEST(CudaCodegen, Dot4U8S8IsOneMixedSignDp4a) {
    // The int8 convolution's inner product, out[m] = acc[m] + sum_k dot4_u8s8(x[m, k], w[k]),
    // one thread per output of each stage: NVRTC compiles the helper to PTX's dp4a with unsigned a
    // and signed b bytes, and the CPU emulation (the helper's portable loop) matches the reference.
    const int64_t M = 37, K = 11;
    const ir::DataType i32 = ir::DataType::i32();
    const ir::Tensor x = te::placeholder({M, K}, i32, "x");
    const ir::Tensor w = te::placeholder({K}, i32, "w");
    const ir::Tensor acc = te::placeholder({M}, i32, "acc");
    const ir::IterVar k = te::reduce_axis(K, "k");
    const ir::Tensor dots = te::compute(
        {M},
        [&](const std::vector<ir::Var>& i) {
            return te::sum(ir::dot4_u8s8(x(i[0], k.var), w(k.var)), {k});
        },
        "dots");
    const ir::Tensor out = te::compute(
        {M}, [&](const std::vector<ir::Var>& i) { return acc(i[0]) + dots(i[0]); }, "out");
    const te::Compute c = te::make_compute({x, w, acc}, {out});
    const ir::LoweredFunc f = lower_gpu(gpu_bind_elementwise(c, 32), "dot4");
    const cuda::CudaSource src = expect_compiles(f);
    EXPECT_NE(src.code.find("tessera_dot4_u8s8("), std::string::npos) << src.code;
    const cuda::NvrtcResult r = cuda::nvrtc_compile(src.code, "dot4");
    EXPECT_NE(r.ptx.find("dp4a.u32.s32"), std::string::npos) << r.ptx;

    auto xv = random_words(M * K, 4), wv = random_words(K, 5), av = random_words(M, 6);
    std::vector<int32_t> got(M, 0x5a5a5a5a);
    std::vector<void*> args;
    for (const ir::Buffer& b : src.params)
        args.push_back(b.name() == "x"     ? (void*)xv.data()
                       : b.name() == "w"   ? (void*)wv.data()
                       : b.name() == "acc" ? (void*)av.data()
                                           : (void*)got.data());
    EmulatedCuda(src).run(args);
    for (int64_t m = 0; m < M; ++m) {
        uint32_t want = static_cast<uint32_t>(av[m]); // i32 adds wrap
        for (int64_t j = 0; j < K; ++j)
            want += static_cast<uint32_t>(ref::dot4_u8s8(xv[m * K + j], wv[j]));
        EXPECT_EQ(got[m], static_cast<int32_t>(want)) << m;
    }
}

TEST(CudaCodegen, RowReductionAndMultiStageOps) {
    for (const char* spec : {"reduce_sum:m=127,n=13", "softmax:m=7,n=13", "layer_norm:m=13,n=7"}) {
        SCOPED_TRACE(spec);
        const te::Compute c = te::make_op(spec).compute;
        const cuda::CudaSource src = expect_compiles(lower_gpu(gpu_bind_elementwise(c, 32), "r"));
        EXPECT_GE(src.kernels.size(), 1u);
    }
}

TEST(CudaCodegen, EveryRegistryOpCompilesWithAGpuBinding) {
    const std::vector<std::string> specs = registry_specs(13);
    ASSERT_GE(specs.size(), 20u);
    for (const std::string& spec : specs) {
        SCOPED_TRACE(spec);
        const te::OpInstance op = te::make_op(spec);
        expect_compiles(lower_gpu(gpu_bind_elementwise(op.compute, 128), op.name));
    }
}

TEST(CudaCodegen, HandwrittenScheduleWorkloadsCompileWithGpuSchedules) {
    int seen = 0;
    for (const auto& e : std::filesystem::directory_iterator(TESSERA_SOURCE_DIR "/schedules")) {
        if (e.path().extension() != ".json")
            continue;
        std::ifstream in(e.path());
        const auto doc = nlohmann::json::parse(in);
        const std::string workload = doc.at("workload").get<std::string>();
        SCOPED_TRACE(workload);
        const te::OpInstance op = te::make_op(workload);
        const sched::State s = op.name == "matmul" ? gpu_tiled_matmul(op.compute)
                                                   : gpu_bind_elementwise(op.compute, 256);
        expect_compiles(lower_gpu(s, op.name));
        ++seen;
    }
    EXPECT_GE(seen, 2);
}

TEST(CudaCodegen, DeviceLimitsAreScheduleErrors) {
    const te::Compute c = te::make_op("relu:m=64,n=64").compute;
    const ir::LoweredFunc f = lower_gpu(gpu_bind_elementwise(c, 2048), "big");
    try {
        cuda::codegen_cuda(f);
        FAIL() << "2048 threads per block accepted";
    } catch (const ScheduleError& e) {
        EXPECT_NE(std::string(e.what()).find("2048 threads per block"), std::string::npos)
            << e.what();
    }
    cuda::DeviceLimits small;
    small.max_shared_bytes = 1024;
    const ir::LoweredFunc mm =
        lower_gpu(gpu_tiled_matmul(te::make_op("matmul:m=64,n=64,k=64").compute), "mm");
    EXPECT_THROW(cuda::codegen_cuda(mm, small), ScheduleError);
}

TEST(CudaCodegen, ThreadBoundReductionIsRejectedWhenLowering) {
    sched::State s = sched::make_initial_state(te::make_op("reduce_sum:m=7,n=13").compute);
    const int sid = s.stage_id_of(s.compute.outputs[0]);
    // The reduce loop on threadIdx.y: only threadIdx.x reductions are lowered (cross-thread).
    sched::annotate(s, sid, 1, sched::IterAnnotation::ThreadY);
    sched::LowerOptions o;
    o.gpu = true;
    EXPECT_THROW(sched::lower_state(s, "red", o), ScheduleError);
}

TEST(CudaCodegen, CpuLoweringKeepsGpuAnnotationsSerial) {
    const te::Compute c = te::make_op("relu:m=7,n=13").compute;
    const ir::LoweredFunc f = sched::lower_state(gpu_bind_elementwise(c, 64), "cpu");
    struct Kinds : ir::IRVisitor {
        bool gpu = false;
        using ir::IRVisitor::visit;
        void visit(const ir::For* op) override {
            gpu = gpu || ir::is_gpu_kind(op->kind);
            ir::IRVisitor::visit(op);
        }
    } k;
    k.visit(f.body);
    EXPECT_FALSE(k.gpu);
    const ir::LoweredFunc g = lower_gpu(gpu_bind_elementwise(c, 64), "gpu");
    k.visit(g.body);
    EXPECT_TRUE(k.gpu);
}

TEST(CudaCodegen, NvrtcErrorsCarryTheLog) {
    try {
        cuda::nvrtc_compile("extern \"C\" __global__ void k() { undefined_name = 1; }", "bad");
        FAIL() << "bad code compiled";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("undefined_name"), std::string::npos) << e.what();
    }
    EXPECT_THROW(cuda::nvrtc_compile("", "x", cuda::NvrtcOptions{"compute_90", true, false}),
                 UserError);
    EXPECT_FALSE(cuda::nvrtc_version().empty());
}

} // namespace
} // namespace tessera::testing
