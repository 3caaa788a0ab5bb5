// Partial sums in lowering (LowerOptions::partial_sums): a long float sum in a register tile
// adds its terms block by block into the tile, and so rounds less than one running sum, while
// computing the same values as the naive nest.
#include <cmath>
#include <cstdio>

#include "common/jit_executor.h"
#include "schedule_test_util.h"
#include "tessera/ir/printer.h"
#include "tessera/schedule/default_schedule.h"

namespace tessera::testing {
namespace {

sched::DefaultScheduleOptions options() {
    sched::DefaultScheduleOptions o;
    o.num_cores = 2;
    o.vector_lanes = 16; // AVX-512: 16 lanes, 32 registers
    o.vector_registers = 32;
    return o;
}

sched::LowerOptions partial_sums(bool on) {
    sched::LowerOptions o;
    o.partial_sums = on;
    return o;
}

/// The largest absolute error of `got` against the float64 product a (m x k) times b (k x n).
double max_error_vs_f64(const std::vector<float>& a, const std::vector<float>& b,
                        const std::vector<float>& got, int64_t m, int64_t n, int64_t k) {
    double worst = 0;
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            double sum = 0;
            for (int64_t r = 0; r < k; ++r)
                sum += double(a[size_t(i * k + r)]) * double(b[size_t(r * n + j)]);
            worst = std::max(worst, std::abs(sum - double(got[size_t(i * n + j)])));
        }
    return worst;
}

TEST(PartialSums, ALongSumAddsBlocksIntoItsTileAndRoundsLess) {
    // 4099 positive terms per output: one running sum grows to ~1600, where a float's spacing
    // is 1.2e-4, and each of its adds rounds at that scale; blocks of a few hundred terms
    // round at the scale of their own, smaller sums.
    // The default schedule sums into a register tile; the naive nest (k innermost, a prime
    // 4099 terms: guarded last block) into the output itself, one element per block.
    const int64_t m = 19, n = 37, k = 4099;
    const te::Compute c = op_compute("matmul:m=19,n=37,k=4099");
    const auto inputs = random_inputs(c, 11, 0.25f, 1.0f);
    for (const bool naive : {false, true}) {
        SCOPED_TRACE(naive ? "naive nest" : "default schedule");
        const sched::State s =
            naive ? sched::make_initial_state(c) : sched::default_schedule(c, options());
        const auto packed = pack_inputs(s, inputs);
        double error[2] = {0, 0};
        for (const bool on : {false, true}) {
            SCOPED_TRACE(on ? "partial sums" : "one running sum");
            const ir::LoweredFunc f = sched::lower_state(s, "matmul", partial_sums(on));
            EXPECT_EQ(ir::to_string(f.body).find("_part") != std::string::npos, on);
            for (const auto& [name, exec] : {std::make_pair("interpreter", interpreter_executor()),
                                             std::make_pair("llvm-jit", jit_executor())}) {
                const auto got = run_lowered(f, packed, exec);
                ASSERT_EQ(got.size(), 1u);
                const double e = max_error_vs_f64(inputs[0], inputs[1], got[0], m, n, k);
                error[on] = std::max(error[on], e);
            }
        }
        EXPECT_LT(error[1], 0.5 * error[0])
            << "partial sums " << error[1] << ", one running sum " << error[0];
        std::printf("[ INFO     ] %s, largest error against float64: %.6g partial sums, %.6g "
                    "one running sum\n",
                    naive ? "naive nest" : "default schedule", error[1], error[0]);
    }
}

TEST(PartialSums, BlockedConvsAndProductsMatchTheNaiveNest) {
    // Reductions of 1179 (131 channels x 3 x 3) and 1031 (prime) terms over tiles that do not
    // divide the outputs, and a short one (576 terms) that keeps one running sum.
    for (const char* spec :
         {"conv2d:n=1,c=131,h=9,w=7,k=19,r=3,pad=1", "dense:m=5,n=23,k=1031,bias=1,relu=1",
          "batch_matmul:b=3,m=7,n=33,k=1031", "conv2d:n=1,c=64,h=9,w=7,k=19,r=3,pad=1"}) {
        SCOPED_TRACE(spec);
        const te::Compute c = op_compute(spec);
        const sched::State s = sched::default_schedule(c, options());
        const ir::LoweredFunc f = sched::lower_state(s, "op", partial_sums(true));
        const bool long_sum = std::string(spec).find("c=64") == std::string::npos;
        EXPECT_EQ(ir::to_string(f.body).find("_part") != std::string::npos, long_sum);
        expect_state_matches(s, 5, false, 1e-4, partial_sums(true));
    }
}

} // namespace
} // namespace tessera::testing
