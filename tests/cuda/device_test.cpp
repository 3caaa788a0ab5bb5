// Kernels on a real GPU through the driver API: hand-written GPU schedules against the
// reference on random inputs of odd sizes. Without a driver or a device every test skips with
// "[SKIP] <reason>".
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "common/op_runner.h"
#include "common/test_util.h"
#include "gpu_schedules.h"
#include "require_gpu.h"
#include "tessera/backends/cuda_driver.h"
#include "tessera/ir/op.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/support/rng.h"
#include "tessera/te/op_registry.h"
#include "tessera/te/tensor.h"

namespace tessera::testing {
namespace {

namespace cuda = backend::cuda;

Executor cuda_executor() {
    return [](const ir::LoweredFunc& f, std::vector<void*>& args) {
        cuda::run_on_device(f, args);
    };
}

/// Runs the state on the GPU and compares every output with the default lowering.
void expect_gpu_matches(const sched::State& s, double tol, uint64_t seed = 11) {
    const auto inputs = random_inputs(s.compute, seed);
    const auto want = run_compute(s.compute, inputs);
    const auto got = run_lowered(lower_gpu(s, "gpu"), inputs, cuda_executor());
    ASSERT_EQ(got.size(), want.size());
    for (size_t o = 0; o < got.size(); ++o)
        EXPECT_LE(max_rel_error(got[o], want[o]), tol) << "output " << o;
}

TEST(CudaDevice, ReportsTheDevice) {
    TESSERA_REQUIRE_GPU();
    const cuda::DeviceInfo& d = cuda::CudaDriver::get().device();
    std::printf("device: %s %s, %d SMs, %.1f GiB, driver %d\n", d.name.c_str(), d.arch().c_str(),
                d.sm_count, d.total_memory_bytes / double(1 << 30), d.driver_version);
    EXPECT_FALSE(d.name.empty());
    EXPECT_GE(d.cc_major, 7);
    EXPECT_GT(d.sm_count, 0);
    EXPECT_GE(d.max_threads_per_block, 1024);
}

TEST(CudaDevice, ElementwiseMatchesReference) {
    TESSERA_REQUIRE_GPU();
    for (const char* spec : {"relu:m=7,n=13", "gelu:m=127,n=13", "add:m=13,n=127,broadcast=1",
                             "relu:m=1,n=1"}) {
        SCOPED_TRACE(spec);
        expect_gpu_matches(gpu_bind_elementwise(te::make_op(spec).compute, 64), 1e-5);
    }
}

TEST(CudaDevice, TiledMatmulMatchesReference) {
    TESSERA_REQUIRE_GPU();
    for (const char* spec : {"matmul:m=127,n=67,k=13", "matmul:m=256,n=256,k=256",
                             "matmul:m=1,n=7,k=1"}) {
        SCOPED_TRACE(spec);
        expect_gpu_matches(gpu_tiled_matmul(te::make_op(spec).compute), 1e-4);
    }
}

TEST(CudaDevice, ReductionsAndMultiKernelOpsMatchReference) {
    TESSERA_REQUIRE_GPU();
    for (const char* spec : {"reduce_sum:m=127,n=13", "softmax:m=7,n=13", "layer_norm:m=13,n=7",
                             "conv2d:n=1,c=7,h=13,w=13,k=13,pad=1", "max_pool2d:c=7,h=13,w=13"}) {
        SCOPED_TRACE(spec);
        expect_gpu_matches(gpu_bind_elementwise(te::make_op(spec).compute, 128), 1e-4);
    }
}

TEST(CudaDevice, HalfPrecisionElementwise) {
    TESSERA_REQUIRE_GPU();
    const ir::Tensor x = te::placeholder({13, 7}, ir::DataType::f16(), "x");
    const ir::Tensor y = te::compute(
        {13, 7},
        [&](const std::vector<ir::Var>& i) {
            ir::Expr v = x(i[0], i[1]);
            return v * v + ir::FloatImm::make(ir::DataType::f16(), 0.5);
        },
        "y");
    const te::Compute c = te::make_compute({x}, {y});
    const ir::LoweredFunc f = lower_gpu(gpu_bind_elementwise(c, 32), "half");
    // f16 bits of small random values: sign, exponent 14 (0.5..1), random mantissa.
    Rng rng(5);
    std::vector<uint16_t> in(91), out(91, 0x7e00);
    for (auto& h : in)
        h = static_cast<uint16_t>((rng.next() & 0x83ff) | (14 << 10));
    std::vector<void*> args = {in.data(), out.data()};
    cuda::run_on_device(f, args);
    auto to_float = [](uint16_t h) {
        const int e = (h >> 10) & 31, m = h & 1023;
        const float v = std::ldexp(1.0f + m / 1024.0f, e - 15);
        return (h & 0x8000) ? -v : v;
    };
    for (size_t i = 0; i < in.size(); ++i) {
        const float v = to_float(in[i]);
        EXPECT_NEAR(to_float(out[i]), v * v + 0.5f, 2e-3) << "element " << i;
    }
}

TEST(CudaDevice, EventTimingIsPositive) {
    TESSERA_REQUIRE_GPU();
    const te::Compute c = te::make_op("matmul:m=256,n=256,k=256").compute;
    const ir::LoweredFunc f = lower_gpu(gpu_tiled_matmul(c), "mm");
    const cuda::CudaSource src = cuda::codegen_cuda(f);
    cuda::NvrtcOptions o;
    o.arch = cuda::CudaDriver::get().device().arch();
    o.want_ptx = false;
    cuda::DeviceFunction fn(src, cuda::nvrtc_compile(src.code, "mm", o).cubin);
    EXPECT_GT(fn.time_ms(3), 0.0);
}

/// Times the hand-written tiled schedule at sgemm 4096^3 (scripts/gpu_check.sh prints it next
/// to cuBLAS). Asserts nothing about speed; checks a sample of outputs against a double sum.
TEST(CudaDevice, TiledMatmul4096Throughput) {
    TESSERA_REQUIRE_GPU();
    const int64_t n = 4096;
    const te::Compute c = te::make_op("matmul:m=4096,n=4096,k=4096").compute;
    const ir::LoweredFunc f = lower_gpu(gpu_tiled_matmul(c), "sgemm4096");
    const cuda::CudaSource src = cuda::codegen_cuda(f);
    cuda::NvrtcOptions o;
    o.arch = cuda::CudaDriver::get().device().arch();
    o.want_ptx = false;
    cuda::DeviceFunction fn(src, cuda::nvrtc_compile(src.code, "sgemm4096", o).cubin);
    const std::vector<float> a = random_floats(n * n, 1, -1.0f, 1.0f);
    const std::vector<float> b = random_floats(n * n, 2, -1.0f, 1.0f);
    std::vector<float> out(n * n, 0.0f);
    fn.copy_in(0, a.data());
    fn.copy_in(1, b.data());
    const double ms = fn.time_ms(5);
    fn.copy_out(2, out.data());
    std::printf("tessera hand-written tiled sgemm 4096^3: %.3f ms, %.1f GFLOP/s\n", ms,
                2.0 * n * n * n / (ms * 1e6));
    EXPECT_GT(ms, 0.0);
    Rng rng(9);
    for (int t = 0; t < 16; ++t) {
        const int64_t i = rng.uniform_int(0, n - 1), j = rng.uniform_int(0, n - 1);
        double want = 0;
        for (int64_t k = 0; k < n; ++k)
            want += double(a[i * n + k]) * b[k * n + j];
        EXPECT_NEAR(out[i * n + j], want, 1e-3 * std::sqrt(double(n))) << i << "," << j;
    }
}

TEST(CudaDevice, UnavailableDriverSaysWhy) {
    const cuda::CudaDriver& d = cuda::CudaDriver::get();
    if (d.available()) {
        EXPECT_TRUE(d.unavailable_reason().empty());
        return;
    }
    EXPECT_FALSE(d.unavailable_reason().empty());
    EXPECT_THROW(d.device(), UserError);
    EXPECT_THROW(cuda::DeviceBuffer(16), UserError);
}

} // namespace
} // namespace tessera::testing
