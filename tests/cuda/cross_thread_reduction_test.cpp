// Cross-thread reductions on GPUs: a reduce loop bound to threadIdx.x is lowered to per-thread
// partial values combined by warp shuffles and shared memory (CallOp::GpuBlockSum/Max/Min).
// Checked without a GPU: NVRTC compiles the code (the PTX shuffles), and the CPU emulation of
// the generated CUDA (one OS thread per CUDA thread, real barriers, warp shuffles meeting at a
// per-warp barrier) matches the reference at sizes 1, 7, 13 and 127, with thread counts that
// leave threads without work (guards) and warps partly filled.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include "common/test_util.h"
#include "cpu_emulation.h"
#include "gpu_schedules.h"
#include "tessera/backends/cuda.h"
#include "tessera/ir/op.h"
#include "tessera/schedule/gpu_sampling.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"
#include "tessera/te/op_library.h"
#include "tessera/te/op_registry.h"
#include "tessera/te/tensor.h"

namespace tessera::testing {
namespace {

namespace cuda = backend::cuda;

/// The schedule the cross-thread rule and its annotation make, with a chosen thread count:
/// injective non-output stages inlined; each reduction's reduce loops fused, split by
/// `threads` with the inner part on threadIdx.x and its spatial loops fused on blockIdx.x;
/// other stages one element per thread in blocks of 32. blocks = false leaves the reductions'
/// spatial loops serial: one block reduces every row in turn.
sched::State cross_thread_schedule(const te::Compute& c, int64_t threads, bool blocks = true) {
    sched::State s = sched::make_initial_state(c);
    for (int sid = static_cast<int>(s.stages.size()) - 1; sid >= 0; --sid) {
        const sched::Stage& st = s.stages[sid];
        if (!st.is_input() && !s.is_output(sid) && !st.has_reduce() && s.is_injective(sid))
            sched::compute_inline(s, sid);
    }
    for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid) {
        const sched::Stage& st = s.stages[sid];
        if (st.is_input() || st.location.kind != sched::ComputeLocKind::Root)
            continue;
        std::vector<int> spatial, reduce;
        for (int k = 0; k < static_cast<int>(st.iters.size()); ++k)
            (st.iters[k].kind == sched::IterKind::Spatial ? spatial : reduce).push_back(k);
        if (!reduce.empty()) {
            const int r = reduce.size() > 1 ? sched::fuse(s, sid, reduce) : reduce[0];
            const std::vector<int> parts = sched::split(s, sid, r, {threads});
            sched::annotate(s, sid, parts[1], sched::IterAnnotation::ThreadX);
            if (!spatial.empty() && blocks)
                sched::annotate(s, sid, spatial.size() > 1 ? sched::fuse(s, sid, spatial) : 0,
                                sched::IterAnnotation::BlockX);
        } else if (!spatial.empty()) {
            const int f = spatial.size() > 1 ? sched::fuse(s, sid, spatial) : spatial[0];
            const std::vector<int> parts = sched::split(s, sid, f, {32});
            sched::annotate(s, sid, parts[0], sched::IterAnnotation::BlockX);
            sched::annotate(s, sid, parts[1], sched::IterAnnotation::ThreadX);
        }
    }
    return s;
}

/// NVRTC compiles the code and its PTX shuffles; the emulation matches the reference.
void expect_cross_thread_matches(const sched::State& s, double tol) {
    const ir::LoweredFunc f = lower_gpu(s, "xt");
    const cuda::CudaSource src = cuda::codegen_cuda(f);
    ASSERT_NE(src.code.find("tessera_block_reduce("), std::string::npos) << src.code;
    cuda::NvrtcResult r;
    ASSERT_NO_THROW(r = cuda::nvrtc_compile(src.code, "xt")) << src.code;
    EXPECT_NE(r.ptx.find("shfl.sync.down"), std::string::npos);
    expect_emulation_matches(s, f, 11, tol, "\n" + src.code);
}

struct Case {
    const char* spec;
    int64_t threads;
};

TEST(CudaCrossThread, RowReductionsMatchTheReference) {
    // 13 and 7 columns leave most of a warp idle; 127 over 64 threads (two warps) gives two
    // steps per thread, the second guarded; 48 threads fill one and a half warps.
    for (const Case& c : {Case{"reduce_sum:m=7,n=127", 64}, Case{"reduce_max:m=13,n=7", 48},
                          Case{"reduce_mean:m=1,n=13", 32}}) {
        SCOPED_TRACE(c.spec);
        expect_cross_thread_matches(cross_thread_schedule(te::make_op(c.spec).compute, c.threads),
                                    1e-5);
    }
    // One block, seven reductions in a row: the shared array of one must not be overwritten
    // while threads still read the previous result.
    expect_cross_thread_matches(
        cross_thread_schedule(te::make_op("reduce_sum:m=7,n=127").compute, 64, false), 1e-5);
}

TEST(CudaCrossThread, SoftmaxAndLayerNormMatchTheReference) {
    // Max, sum (softmax) and mean, variance (layer norm): one kernel per reduction, each a
    // block per row.
    for (const Case& c : {Case{"softmax:m=13,n=127", 64}, Case{"layer_norm:m=7,n=127", 96},
                          Case{"softmax:m=1,n=7", 32}}) {
        SCOPED_TRACE(c.spec);
        expect_cross_thread_matches(cross_thread_schedule(te::make_op(c.spec).compute, c.threads),
                                    1e-4);
    }
}

TEST(CudaCrossThread, PoolAndDenseBatchOneMatchTheReference) {
    // Two fused reduce axes (13 x 13), and gemv with a bias over 127 input features.
    for (const Case& c : {Case{"global_avg_pool2d:n=1,c=7,h=13,w=13", 64},
                          Case{"dense:m=1,n=13,k=127,bias=1", 32}}) {
        SCOPED_TRACE(c.spec);
        expect_cross_thread_matches(cross_thread_schedule(te::make_op(c.spec).compute, c.threads),
                                    1e-5);
    }
}

TEST(CudaCrossThread, HalfPrecisionAccumulatesInFloat) {
    const ir::Tensor x = te::placeholder({7, 127}, ir::DataType::f16(), "x");
    const te::Compute c = te::make_compute({x}, {te::reduce_sum(x, {1})});
    const ir::LoweredFunc f = lower_gpu(cross_thread_schedule(c, 64), "h");
    const cuda::CudaSource src = cuda::codegen_cuda(f);
    // The partial values are float; the result is rounded to half once.
    EXPECT_NE(src.code.find("float reduce_sum_red[1]"), std::string::npos) << src.code;
    EXPECT_NE(src.code.find("__float2half_rn"), std::string::npos) << src.code;
    cuda::NvrtcResult r;
    ASSERT_NO_THROW(r = cuda::nvrtc_compile(src.code, "h")) << src.code;
    EXPECT_NE(r.ptx.find("shfl.sync.down"), std::string::npos);
}

TEST(CudaCrossThread, HalfPrecisionMatchesAFloatReferenceInEmulation) {
    // Rows of 127 halves over 96 threads: sums accumulated in f32 and rounded once, maxima
    // exact.
    for (const auto& [m, n, threads] : {std::tuple<int64_t, int64_t, int64_t>{7, 127, 96}}) {
        const ir::Tensor x = te::placeholder({m, n}, ir::DataType::f16(), "x");
        const te::Compute c =
            te::make_compute({x}, {te::reduce_sum(x, {1}), te::reduce_max(x, {1})});
        const ir::LoweredFunc f = lower_gpu(cross_thread_schedule(c, threads), "h");
        const std::vector<float> data = random_floats(size_t(m * n), 21);
        std::vector<_Float16> in(data.begin(), data.end()), sum(m), max(m);
        std::vector<void*> args = {in.data(), sum.data(), max.data()};
        EmulatedCuda(cuda::codegen_cuda(f)).run(args); // buffers of any type
        for (int64_t i = 0; i < m; ++i) {
            double want_sum = 0, want_max = -1e30;
            for (int64_t j = 0; j < n; ++j) {
                want_sum += double(in[i * n + j]);
                want_max = std::max(want_max, double(in[i * n + j]));
            }
            EXPECT_NEAR(double(sum[i]), want_sum, 2e-3 * std::max(1.0, std::abs(want_sum)))
                << "row " << i << " of " << m << "x" << n;
            EXPECT_EQ(double(max[i]), want_max) << "row " << i;
        }
    }
}

TEST(CudaCrossThread, ThreadBoundReduceOfAnotherFormIsAScheduleError) {
    // A reduce loop on threadIdx.y is no cross-thread reduction the lowering knows.
    sched::State s = sched::make_initial_state(te::make_op("reduce_sum:m=7,n=64").compute);
    sched::annotate(s, 1, 1, sched::IterAnnotation::ThreadY);
    EXPECT_THROW(lower_gpu(s, "bad"), ScheduleError);
}

TEST(CudaCrossThread, ReductionInAThreadDependentBranchIsAScheduleError) {
    // Threads that skip the block reduction would leave the others at its barriers forever.
    const ir::Buffer in = ir::Buffer::make("in", ir::DataType::f32(), {64});
    const ir::Buffer out = ir::Buffer::make("out", ir::DataType::f32(), {1});
    const ir::Var tx("tx", ir::DataType::i64());
    const ir::Expr zero = ir::make_zero(ir::DataType::i64());
    auto kernel = [&](bool branch) {
        ir::Stmt body = ir::Store::make(
            out, ir::Call::make(ir::CallOp::GpuBlockSum, {ir::Load::make(in, tx)}), zero);
        if (branch)
            body = ir::IfThenElse::make(ir::LT::make(ir::Expr(tx), ir::Expr(32)), body);
        ir::LoweredFunc f;
        f.name = "k";
        f.params = {in, out};
        f.body = ir::For::make(tx, ir::Expr(0), ir::Expr(64), ir::ForKind::GpuThreadX, body);
        return f;
    };
    EXPECT_NO_THROW(cuda::codegen_cuda(kernel(false)));
    EXPECT_THROW(cuda::codegen_cuda(kernel(true)), ScheduleError);
}

TEST(CudaCrossThread, SketchRuleAppliesToLongReductionsAndSamplesBindThreads) {
    sched::SketchOptions o;
    o.target = sched::TargetKind::Gpu;
    // Long rows: a sketch with each reduction cross-thread; short rows: none.
    const te::Compute softmax = te::make_op("softmax:m=1,n=127").compute;
    const auto sketches = sched::generate_sketches(softmax, o);
    int all_cross = 0;
    for (const sched::State& s : sketches) {
        int cross = 0;
        for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid)
            cross += sched::cross_thread_reduce_iter(s, sid) >= 0;
        all_cross += cross == 2;
    }
    EXPECT_EQ(all_cross, 1);
    for (const sched::State& s :
         sched::generate_sketches(te::make_op("softmax:m=7,n=13").compute, o))
        for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid)
            EXPECT_LT(sched::cross_thread_reduce_iter(s, sid), 0);
    // Dense with batch 1 (a tiled reduction with little output) gets one too.
    bool dense_cross = false;
    for (const sched::State& s :
         sched::generate_sketches(te::make_op("dense:m=1,n=13,k=127").compute, o))
        for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid)
            dense_cross = dense_cross || sched::cross_thread_reduce_iter(s, sid) >= 0;
    EXPECT_TRUE(dense_cross);

    // Sampled: threads a multiple of 32 up to the row rounded up (128), rows on blocks, and
    // the emulation matches.
    Rng rng(5);
    for (const sched::State& sketch : sketches) {
        const sched::State s = sched::sample_initial_gpu_state(sketch, rng);
        for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid) {
            const int xt = sched::cross_thread_reduce_iter(s, sid);
            if (xt < 0)
                continue;
            const int64_t threads = s.stages[sid].iters[xt].extent;
            EXPECT_EQ(threads % 32, 0);
            EXPECT_LE(threads, 128);
            EXPECT_EQ(s.stages[sid].iters[0].annotation, sched::IterAnnotation::BlockX);
        }
    }
    for (const sched::State& sketch : sketches) {
        int cross = 0;
        for (int sid = 0; sid < static_cast<int>(sketch.stages.size()); ++sid)
            cross += sched::cross_thread_reduce_iter(sketch, sid) >= 0;
        if (cross == 2) // both reductions across threads
            expect_cross_thread_matches(sched::sample_initial_gpu_state(sketch, rng), 1e-4);
    }
}

} // namespace
} // namespace tessera::testing
