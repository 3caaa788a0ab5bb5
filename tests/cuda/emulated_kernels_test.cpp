// Generated CUDA run on the CPU through the emulation shim (cpu_emulation.h), against the
// reference on random inputs of odd sizes: checks index binding, guards, shared-memory regions
// and barrier placement where no GPU is present. One OS thread per CUDA thread, so sizes stay
// small.
#include <gtest/gtest.h>

#include <unistd.h>

#include "common/op_runner.h"
#include "common/test_util.h"
#include "cpu_emulation.h"
#include "gpu_schedules.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/te/op_registry.h"

namespace tessera::testing {
namespace {

Executor emulated_cuda_executor() {
    return [](const ir::LoweredFunc& f, std::vector<void*>& args) {
        emulate_on_cpu(backend::cuda::codegen_cuda(f), args);
    };
}

void expect_emulation_matches(const sched::State& s, double tol) {
    sched::LowerOptions o;
    o.gpu = true;
    const auto inputs = random_inputs(s.compute, 3);
    const auto want = run_compute(s.compute, inputs);
    const auto got =
        run_lowered(sched::lower_state(s, "emu", o), inputs, emulated_cuda_executor());
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
        EXPECT_LE(max_rel_error(got[i], want[i]), tol) << "output " << i;
}

TEST(CudaEmulated, MultiKernelSoftmax) {
    // Four kernels (max, exp, sum, divide), reductions serial per thread, guards on 91 rows.
    expect_emulation_matches(gpu_bind_elementwise(te::make_op("softmax:m=7,n=13").compute, 32),
                             1e-5);
}

TEST(CudaEmulated, SharedMemoryTiledMatmul) {
    // Imperfect tiles in every dimension; two k steps, so the barrier before the second
    // step's fetch matters (removing it makes this fail).
    expect_emulation_matches(gpu_tiled_matmul(te::make_op("matmul:m=127,n=67,k=13").compute),
                             1e-5);
}

} // namespace
} // namespace tessera::testing
