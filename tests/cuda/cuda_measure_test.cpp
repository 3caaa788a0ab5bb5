// The CUDA measurer (tuner/cuda_measure.h). Without a device: its options are checked and
// constructing it is a one-line UserError with the driver's reason. With a device (else
// "[SKIP] <reason>"): a correct GPU schedule is measured Ok, a wrong one is a WrongAnswer that is
// never timed, a schedule beyond the device limits is an Instantiation error, a checked run past
// run_timeout_secs is a RunTimeout that is never timed, and tuning a
// 127x67x13 matmul for 16 trials commits Ok records.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "gpu_schedules.h"
#include "require_gpu.h"
#include "tessera/backends/cuda_driver.h"
#include "tessera/cost_model/cost_model.h"
#include "tessera/ir/op.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/support/error.h"
#include "tessera/te/op_registry.h"
#include "tessera/te/tensor.h"
#include "tessera/tuner/cuda_measure.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/fingerprint.h"
#include "tessera/tuner/tune_task.h"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;
namespace cuda = backend::cuda;

constexpr const char* kSpec = "matmul:m=127,n=67,k=13";

/// C[i,j] = sum over k < K-1 of a[i,k] b[k,j]: the matmul's shapes, one product short.
te::Compute matmul_missing_last_k(int64_t m, int64_t n, int64_t k) {
    te::Tensor a = te::placeholder({m, k}, ir::DataType::f32(), "a");
    te::Tensor b = te::placeholder({k, n}, ir::DataType::f32(), "b");
    te::IterVar r = te::reduce_axis(k - 1, "k");
    te::Tensor c = te::compute(
        {m, n},
        [&](const std::vector<ir::Var>& i) { return te::sum(a(i[0], r.var) * b(r.var, i[1]), {r}); },
        "C");
    return te::make_compute({a, b}, {c});
}

TEST(CudaMeasure, OptionsOutOfRangeAreNamed) {
    auto expect_bad = [](tune::CudaMeasureOptions o, const std::string& name) {
        try {
            tune::validate(o);
            ADD_FAILURE() << name << " was accepted";
        } catch (const UserError& e) {
            EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
        }
    };
    tune::CudaMeasureOptions o;
    EXPECT_NO_THROW(tune::validate(o));
    o.min_repeats = 0;
    expect_bad(o, "min_repeats");
    o = {};
    o.max_repeats = 2;
    expect_bad(o, "max_repeats");
    o = {};
    o.tolerance = -1;
    expect_bad(o, "tolerance");
    o = {};
    o.slow_factor = 0.5;
    expect_bad(o, "slow_factor");
    o = {};
    o.build_threads = -1;
    expect_bad(o, "build_threads");
    o = {};
    o.run_timeout_secs = 0;
    expect_bad(o, "run_timeout_secs");
}

TEST(CudaMeasure, WithoutADeviceConstructionIsOneLineUserError) {
    const cuda::CudaDriver& d = cuda::CudaDriver::get();
    if (d.available())
        GTEST_SKIP() << "[SKIP] a CUDA device is present: the no-device path is not reachable";
    try {
        tune::CudaMeasurer m;
        ADD_FAILURE() << "constructed without a device";
    } catch (const UserError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(d.unavailable_reason()), std::string::npos) << what;
        EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
}

TEST(CudaMeasure, CorrectWrongAndOversizedCandidates) {
    TESSERA_REQUIRE_GPU();
    const te::Compute c = te::make_op(kSpec).compute;
    tune::CudaMeasureOptions o;
    o.min_repeats = 3;
    o.min_repeat_secs = 0;
    tune::CudaMeasurer m(o);

    std::vector<tune::MeasureCandidate> cands;
    cands.push_back(tune::cuda_candidate_from_state(gpu_tiled_matmul(c)));
    cands.push_back(tune::cuda_candidate_from_state(gpu_tiled_matmul(matmul_missing_last_k(127, 67, 13))));
    // 2048 threads per block: beyond every device's limit, rejected before compiling.
    cands.push_back(tune::cuda_candidate_from_state(gpu_bind_elementwise(c, 2048)));
    const std::vector<tune::MeasureResult> r = m.measure_candidates(c, cands);
    ASSERT_EQ(r.size(), 3u);

    EXPECT_EQ(r[0].error, tune::MeasureError::Ok) << r[0].error_message;
    EXPECT_GE(r[0].run_secs.size(), 3u);
    for (double s : r[0].run_secs)
        EXPECT_GT(s, 0);
    EXPECT_LE(r[0].max_rel_error, o.tolerance);

    EXPECT_EQ(r[1].error, tune::MeasureError::WrongAnswer) << r[1].error_message;
    EXPECT_TRUE(r[1].run_secs.empty());
    EXPECT_GT(r[1].max_rel_error, o.tolerance);

    EXPECT_EQ(r[2].error, tune::MeasureError::Instantiation) << r[2].error_message;
}

TEST(CudaMeasure, ACheckedRunPastTheTimeLimitIsARunTimeoutNeverTimed) {
    TESSERA_REQUIRE_GPU();
    const te::Compute c = te::make_op(kSpec).compute;
    const tune::MeasureCandidate cand = tune::cuda_candidate_from_state(gpu_tiled_matmul(c));
    tune::CudaMeasureOptions o;
    o.min_repeat_secs = 0;
    o.run_timeout_secs = 1e-9; // shorter than any launch and copy-back
    const std::vector<tune::MeasureResult> late =
        tune::CudaMeasurer(o).measure_candidates(c, {cand});
    ASSERT_EQ(late.size(), 1u);
    EXPECT_EQ(late[0].error, tune::MeasureError::RunTimeout) << late[0].error_message;
    EXPECT_NE(late[0].error_message.find("run_timeout_secs"), std::string::npos);
    EXPECT_TRUE(late[0].run_secs.empty());
    // The same candidate within the default limit is measured.
    o.run_timeout_secs = tune::CudaMeasureOptions().run_timeout_secs;
    const std::vector<tune::MeasureResult> ok = tune::CudaMeasurer(o).measure_candidates(c, {cand});
    EXPECT_EQ(ok[0].error, tune::MeasureError::Ok) << ok[0].error_message;
    EXPECT_FALSE(ok[0].run_secs.empty());
}

TEST(CudaMeasure, TuningAMatmulCommitsOkRecords) {
    TESSERA_REQUIRE_GPU();
    const fs::path db_path = fs::path(::testing::TempDir()) /
                             ("tessera_cuda_measure_" + std::to_string(::getpid()) + ".db");
    fs::remove(db_path);
    {
        const te::OpInstance inst = te::make_op(kSpec);
        tune::TuningDatabase db(db_path.string());
        auto model = cost::make_model("random", 1);
        tune::CudaMeasurer measurer;
        tune::SearchOptions so;
        so.num_trials = 16;
        so.population = 32;
        so.generations = 1;
        so.measure_per_round = 8;
        so.seed = 1;
        so.sketch.target = so.defaults.target = sched::TargetKind::Gpu;
        so.seed_default_schedule = false;
        so.mutation_probability = 0;
        tune::TuneTarget target;
        target.target = tune::cuda_target_string();
        target.fingerprint = tune::host_fingerprint().hash();
        target.isa_class = "cuda;" + cuda::CudaDriver::get().device().arch();
        const tune::TuneResult r =
            tune::tune_task(inst.compute, inst.flops, target, db, *model, measurer, so);
        EXPECT_EQ(r.trials, 16);
        ASSERT_TRUE(r.best.has_value());
        int ok = 0;
        for (const tune::TuningRecord& rec : db.records_of(r.workload_key)) {
            EXPECT_EQ(rec.target, target.target);
            if (rec.error_code == tune::MeasureError::Ok) {
                ++ok;
                EXPECT_GT(rec.median_secs, 0);
            }
        }
        EXPECT_GT(ok, 0);
        std::printf("cuda tune %s: %d of 16 ok, best %.4f ms\n", kSpec, ok,
                    r.best->median_secs * 1e3);
    }
    fs::remove(db_path);
}

} // namespace
} // namespace tessera::testing
