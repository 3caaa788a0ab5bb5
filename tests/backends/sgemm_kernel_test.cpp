// The hand-built sgemm IR (bench/sgemm_ir.h) compiled by the LLVM JIT: exact enough against a
// naive matmul on random inputs, for sizes that do and do not fill the register and cache tiles.
#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "sgemm_ir.h"
#include "tessera/backends/llvm.h"
#include "tessera/ir/interpreter.h"
#include "tessera/lower/lower_for_codegen.h"
#include "tessera/runtime/thread_pool.h"
#include "tessera/support/error.h"

namespace {

using tessera::bench::SgemmConfig;
using tessera::bench::build_sgemm_ir;

struct Size {
    int64_t m, n, k;
};

std::vector<float> naive_matmul(const std::vector<float>& a, const std::vector<float>& b, Size s) {
    std::vector<float> c(s.m * s.n);
    for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < s.n; ++j) {
            double acc = 0;
            for (int64_t k = 0; k < s.k; ++k) acc += double(a[i * s.k + k]) * b[k * s.n + j];
            c[i * s.n + j] = static_cast<float>(acc);
        }
    return c;
}

/// Max relative error of the JIT-compiled sgemm against the naive matmul. C starts as NaN so
/// an element the kernel forgets to write shows up.
double jit_error(Size s, const SgemmConfig& cfg, uint64_t seed) {
    std::vector<float> a = tessera::testing::random_floats(s.m * s.k, seed);
    std::vector<float> b = tessera::testing::random_floats(s.k * s.n, seed + 1);
    std::vector<float> c(s.m * s.n, std::numeric_limits<float>::quiet_NaN());
    tessera::ir::LoweredFunc f =
        tessera::lower::prepare_for_codegen(build_sgemm_ir(s.m, s.n, s.k, cfg, "sgemm_test"));
    std::unique_ptr<tessera::backend::JitModule> module = tessera::backend::JitModule::compile({f});
    tessera::backend::JitModule::KernelFn fn = module->get("sgemm_test");
    void* args[3] = {a.data(), b.data(), c.data()};
    fn(args);
    return tessera::testing::max_rel_error(c, naive_matmul(a, b, s));
}

const std::vector<Size> kSizes = {{1, 1, 1}, {7, 13, 127}, {127, 7, 13}, {64, 48, 96}, {257, 129, 300}};

TEST(SgemmKernel, DefaultConfigMatchesNaiveMatmul) {
    tessera::runtime::set_num_threads(2);
    for (const Size& s : kSizes)
        EXPECT_LT(jit_error(s, SgemmConfig{}, 11), 1e-4) << s.m << "x" << s.n << "x" << s.k;
    // Three K blocks of the default kc (512), the last one ragged: C is stored, then added to.
    EXPECT_LT(jit_error({33, 70, 1100}, SgemmConfig{}, 12), 1e-4);
}

TEST(SgemmKernel, Avx2TileMatchesNaiveMatmul) {
    tessera::runtime::set_num_threads(2);
    const SgemmConfig cfg = tessera::bench::sgemm_config_for(256, 2);
    EXPECT_EQ(cfg.lanes, 8);
    for (const Size& s : kSizes)
        EXPECT_LT(jit_error(s, cfg, 23), 1e-4) << s.m << "x" << s.n << "x" << s.k;
}

TEST(SgemmKernel, SmallBlocksAndOddUnrollMatchNaiveMatmul) {
    // Many K blocks with a ragged last one, a K tail after the unrolled loop, M blocks that
    // do not divide evenly and three threads.
    tessera::runtime::set_num_threads(3);
    SgemmConfig cfg;
    cfg.lanes = 4;
    cfg.mr = 5;
    cfg.nr_vectors = 3;
    cfg.kc = 7;
    cfg.mc = 10;
    cfg.threads = 3;
    cfg.k_unroll = 3;
    for (const Size& s : kSizes)
        EXPECT_LT(jit_error(s, cfg, 37), 1e-4) << s.m << "x" << s.n << "x" << s.k;
    tessera::runtime::set_num_threads(2);
}

TEST(SgemmKernel, InterpreterAgreesOnTheIr) {
    // The IR itself is right (independently of the backend) on sizes with edge tiles.
    for (const Size& s : std::vector<Size>{{1, 1, 1}, {7, 13, 127}, {127, 7, 13}}) {
        std::vector<float> a = tessera::testing::random_floats(s.m * s.k, 5);
        std::vector<float> b = tessera::testing::random_floats(s.k * s.n, 6);
        std::vector<float> c(s.m * s.n, std::numeric_limits<float>::quiet_NaN());
        tessera::ir::interpret(build_sgemm_ir(s.m, s.n, s.k), {a.data(), b.data(), c.data()});
        EXPECT_LT(tessera::testing::max_rel_error(c, naive_matmul(a, b, s)), 1e-4)
            << s.m << "x" << s.n << "x" << s.k;
    }
}

TEST(SgemmKernel, RejectsBadSizesAndConfigs) {
    EXPECT_THROW(build_sgemm_ir(0, 4, 4), tessera::UserError);
    SgemmConfig cfg;
    cfg.lanes = 1;
    EXPECT_THROW(build_sgemm_ir(4, 4, 4, cfg), tessera::UserError);
}

} // namespace
