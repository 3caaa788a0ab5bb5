// Pipelined fetches (lower/pipeline_fetches.h): the GPU default schedule's shared copies loaded
// one k step ahead through registers compute the reference under the CPU emulation (imperfect
// tiles, so the copies carry guards), the generated code stages them in per-thread arrays
// between two barriers, and a pipelined loop without copies is a plain loop.
#include <gtest/gtest.h>

#include "common/op_runner.h"
#include "common/test_util.h"
#include "cpu_emulation.h"
#include "gpu_schedules.h"
#include "tessera/ir/op.h"
#include "tessera/lower/pipeline_fetches.h"
#include "tessera/schedule/default_schedule.h"
#include "tessera/schedule/schedule.h"
#include "tessera/te/op_registry.h"

namespace tessera::testing {
namespace {

namespace cuda = backend::cuda;

/// s's steps without the `pipeline` annotations, replayed.
sched::State without_pipeline(const sched::State& s) {
    std::vector<sched::Step> steps;
    for (const sched::Step& st : s.steps)
        if (!(st.kind == sched::StepKind::Annotate &&
              st.annotation == sched::IterAnnotation::Pipeline))
            steps.push_back(st);
    return sched::replay(s.compute, steps);
}

TEST(PipelineFetches, DefaultScheduleStagesTheNextTileAndMatchesTheReference) {
    // k = 37 in steps of 8: five steps, the last partial (guarded copies).
    const te::Compute c = te::make_op("matmul:m=67,n=45,k=37").compute;
    const sched::State s = sched::default_schedule(c, gpu_default_options());
    const sched::State plain = without_pipeline(s);
    ASSERT_LT(plain.steps.size(), s.steps.size()) << "the default pipelines its k loop";
    const std::string code = cuda::codegen_cuda(lower_gpu(s, "mm")).code;
    const std::string plain_code = cuda::codegen_cuda(lower_gpu(plain, "mm")).code;
    EXPECT_GT(count_occurrences(code, "_next["), 0) << code;
    EXPECT_EQ(count_occurrences(plain_code, "_next["), 0);
    // The codegen's barriers around each statement that stores shared memory: pipelined,
    // around the first step's copies and around the staged stores in the k loop;
    // unpipelined, around the copies in the k loop.
    EXPECT_EQ(count_occurrences(code, "__syncthreads"), 4) << code;
    EXPECT_EQ(count_occurrences(plain_code, "__syncthreads"), 2) << plain_code;
    expect_emulation_matches(s, lower_gpu(s, "mm"), 5, 1e-5, " (pipelined)");
}

TEST(PipelineFetches, ALoopWithoutCopiesStaysAPlainLoop) {
    const ir::Buffer out = ir::Buffer::make("out", ir::DataType::f32(), {7});
    ir::Var i("i");
    const ir::Stmt loop =
        ir::For::make(i, ir::Expr(int64_t(0)), ir::Expr(int64_t(7)), ir::ForKind::Pipelined,
                      ir::Store::make(out, ir::cast(ir::DataType::f32(), i), i));
    const ir::Stmt lowered = lower::pipeline_fetches(loop);
    ASSERT_TRUE(lowered.as<ir::For>());
    EXPECT_EQ(lowered.as<ir::For>()->kind, ir::ForKind::Serial);
    // A non-constant trip count cannot be pipelined.
    ir::Var n("n");
    EXPECT_THROW(
        lower::pipeline_fetches(ir::For::make(i, ir::Expr(int64_t(0)), n, ir::ForKind::Pipelined,
                                              ir::Store::make(out, ir::Expr(1.0f), i))),
        ScheduleError);
}

} // namespace
} // namespace tessera::testing
