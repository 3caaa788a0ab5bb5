// The hand-written matmul schedule of a vendor-library kernel: packed B panels (layout
// transform), a 6x16 register tile (cache_write) computed at the tile loop, vectorized and
// unrolled, and a parallel outer loop. Checked numerically, for the structure of its IR and
// for wide fused multiply-adds in its LLVM IR.
#include <regex>

#include "schedule_test_util.h"
#include "tessera/backends/llvm.h"
#include "tessera/ir/printer.h"

namespace tessera::testing {
namespace {

using sched::IterAnnotation;
using sched::State;

/// matmul M x N x K with B packed as [N/16][K][16] and a MR x 16 register tile.
State tiled_matmul(int64_t m, int64_t n, int64_t k, int64_t mr = 6, int64_t nr = 16) {
    te::Compute c = op_compute("matmul:m=" + std::to_string(m) + ",n=" + std::to_string(n) +
                               ",k=" + std::to_string(k));
    State s = sched::make_initial_state(c);
    const int b = 1;
    sched::transform_layout(s, b, {{1, nr}, {1, 0, 2}});
    const int local = sched::cache_write(s, 2, "local"); // matmul.local = 2, matmul = 3
    const int out = local + 1;
    // matmul: i -> (i.0, i.1), j -> (j.0, j.1); order i.0 j.0 i.1 j.1.
    sched::split(s, out, 0, {mr});
    sched::split(s, out, 2, {nr});
    sched::reorder(s, out, {0, 2, 1, 3});
    sched::parallel(s, out, 0);
    sched::vectorize(s, out, 3);
    sched::compute_at(s, local, out, 1);
    // matmul.local: i, j, k -> k, i, j with i unrolled and j vectorized.
    sched::reorder(s, local, {2, 0, 1});
    sched::unroll(s, local, 1);
    sched::vectorize(s, local, 2);
    return s;
}

TEST(MatmulTile, RegisterTileStructure) {
    State s = tiled_matmul(64, 64, 32);
    const sched::Stage& local = s.stages[2];
    ASSERT_EQ(local.iters.size(), 3u);
    EXPECT_EQ(local.iters[1].extent, 6); // region of the tile
    EXPECT_EQ(local.iters[2].extent, 16);
    ir::LoweredFunc f = sched::lower_state(s, "mm");
    const std::string text = ir::to_string(f);
    EXPECT_NE(text.find("matmul.local"), std::string::npos) << text;
    EXPECT_NE(text.find("stack"), std::string::npos) << text;
    expect_state_matches(s);
}

TEST(MatmulTile, OddSizesAreExact) {
    for (auto [m, n, k] :
         {std::tuple<int64_t, int64_t, int64_t>{7, 13, 5}, {1, 1, 1}, {13, 33, 7}, {127, 17, 3}}) {
        SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
        expect_state_matches(tiled_matmul(m, n, k));
    }
}

TEST(MatmulTile, MainBodyHasNoGuardsAndWideFma) {
    State s = tiled_matmul(64, 50, 32);
    ir::LoweredFunc f = sched::lower_state(s, "mm_tile");
    backend::CompileOptions opts;
    opts.keep_llvm_ir = true;
    auto mod = backend::JitModule::compile({lower::prepare_for_codegen(f)}, opts);
    const std::string& ll = mod->llvm_ir();
    EXPECT_TRUE(std::regex_search(ll, std::regex("fmuladd\\.v(8|16)f32")) ||
                std::regex_search(ll, std::regex("fma\\.v(8|16)f32")))
        << "no <8 x float> fused multiply-add in the kernel";
    // Loop partitioning took every imperfect-tile guard off (M = 64 = 10 * 6 + 4, N = 50):
    // the only condition left is the parallel loop's branch between its 10 full row tiles
    // and the partial one (one parallel loop, not two).
    const std::string text = ir::to_string(f);
    const size_t first_if = text.find("if (");
    EXPECT_NE(text.find("if (i0.0 < 10)"), std::string::npos) << text;
    EXPECT_EQ(text.find("if (", first_if + 1), std::string::npos) << text;
}

/// tiled_matmul plus: the two tile loops fused and parallel, and k split by 4 with the inner
/// part unrolled.
State tiled_matmul_k_unrolled(int64_t m, int64_t n, int64_t k) {
    te::Compute c = op_compute("matmul:m=" + std::to_string(m) + ",n=" + std::to_string(n) +
                               ",k=" + std::to_string(k));
    State s = sched::make_initial_state(c);
    sched::transform_layout(s, 1, {{1, 16}, {1, 0, 2}});
    const int local = sched::cache_write(s, 2, "local"), out = local + 1;
    sched::split(s, out, 0, {6});
    sched::split(s, out, 2, {16});
    sched::reorder(s, out, {0, 2, 1, 3});
    sched::fuse(s, out, {0, 1});
    sched::parallel(s, out, 0);
    sched::vectorize(s, out, 2);
    sched::compute_at(s, local, out, 0);
    sched::split(s, local, 2, {4});         // i, j, k.0, k.1
    sched::reorder(s, local, {2, 3, 0, 1}); // k.0, k.1, i, j
    sched::unroll(s, local, 1);
    sched::unroll(s, local, 2);
    sched::vectorize(s, local, 3);
    return s;
}

TEST(MatmulTile, KUnrollFusedParallelAndImperfectK) {
    // K = 37 leaves one k step: partitioning peels it, and no guard is left.
    State s = tiled_matmul_k_unrolled(30, 48, 37);
    expect_state_matches(s);
    const std::string text = ir::to_string(sched::lower_state(s, "mm_k"));
    EXPECT_EQ(text.find("if ("), std::string::npos) << text;
    // With an imperfect N under the fused parallel loop the guards are not monotone in the
    // fused index: still exact, partly guarded.
    expect_state_matches(tiled_matmul_k_unrolled(30, 40, 37));
    expect_state_matches(tiled_matmul_k_unrolled(7, 13, 3));
}

} // namespace
} // namespace tessera::testing
