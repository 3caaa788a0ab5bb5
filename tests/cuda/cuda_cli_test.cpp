// `--target cuda` of `tessera op run` and `tessera tune --op`, through the built binary.
// Without a device: both commands fail with one line naming the driver's reason, and a
// simulated tune (no device needed) records GPU sketches under "simulated:cuda -arch=sm_XX".
// With a device (else "[SKIP] <reason>"): op run checks and times a matmul on the GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tessera/backends/cuda_driver.h"
#include "tessera/te/op_registry.h"
#include "tessera/te/workload_key.h"
#include "tessera/tuner/database.h"
#include "common/tessera_process.h"

namespace {

namespace fs = std::filesystem;
namespace cuda = tessera::backend::cuda;

using Output = tessera::testing::ProcessOutput;

/// `tessera ARGS`, stdout and stderr together in `out`.
Output run_tessera(const std::string& args) { return tessera::testing::capture_tessera(args); }

/// Exit 1 and exactly one line, "error: ..." containing `fragment`.
void expect_one_line_error(const std::string& args, const std::string& fragment) {
    const Output o = run_tessera(args);
    EXPECT_EQ(o.code, 1) << args << "\n" << o.out;
    EXPECT_EQ(o.out.rfind("error: ", 0), 0u) << args << "\n" << o.out;
    EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << args << "\n" << o.out;
    EXPECT_NE(o.out.find(fragment), std::string::npos) << args << "\n" << o.out;
}

/// The last line of s (the --json summary).
std::string last_line(const std::string& s) {
    const size_t end = s.find_last_not_of('\n');
    if (end == std::string::npos)
        return "";
    const size_t start = s.rfind('\n', end);
    const size_t from = start == std::string::npos ? 0 : start + 1;
    return s.substr(from, end - from + 1);
}

/// A fresh directory per test, removed afterwards.
class CudaCli : public ::testing::Test {
  protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::path(::testing::TempDir()) /
               ("tessera_cuda_cli_" + std::to_string(::getpid()) + "_" + info->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    fs::path dir_;
};

constexpr const char* kSpec = "matmul:m=127,n=67,k=13";

TEST_F(CudaCli, WithoutADeviceBothCommandsFailWithTheReason) {
    const cuda::CudaDriver& d = cuda::CudaDriver::get();
    if (d.available())
        GTEST_SKIP() << "[SKIP] a CUDA device is present: the no-device path is not reachable";
    const std::string reason = d.unavailable_reason();
    expect_one_line_error(std::string("op run ") + kSpec + " --target cuda",
                          "--target cuda: " + reason);
    expect_one_line_error(std::string("tune --op ") + kSpec + " --target cuda --trials 4 --db " +
                              path("t.db"),
                          "--target cuda: " + reason);
    expect_one_line_error("tune " + path("model.onnx") + " --target cuda --trials 4 --db " +
                              path("t.db"),
                          "--target cuda: " + reason);
    EXPECT_FALSE(fs::exists(path("t.db"))) << "no database is created when nothing can run";
}

TEST_F(CudaCli, BadTargetsAreOneLineErrors) {
    expect_one_line_error(std::string("op run ") + kSpec + " --target rocm", "'rocm'");
    expect_one_line_error(std::string("tune --op ") + kSpec + " --target rocm --db " + path("t.db"),
                          "'rocm'");
}

/// A model's tasks tuned for the GPU are those `build --target cuda` makes (no NCHW[x]c layout
/// pass): with synthetic times no device is needed, and every record binds blocks and threads.
TEST_F(CudaCli, SimulatedModelTuneTakesTheCudaBuildsTasks) {
    const std::string model = std::string(TESSERA_SOURCE_DIR) + "/../shared/models/mlp/model.onnx";
    if (!fs::exists(model))
        GTEST_SKIP() << "shared models absent: " << model;
    const std::string db = path("model.db");
    const Output o = run_tessera("tune " + model +
                                 " --target cuda --runner simulated --model random --trials 24 "
                                 "--population 16 --generations 1 --measure-per-round 8 --json "
                                 "--db " + db);
    ASSERT_EQ(o.code, 0) << o.out;
    const nlohmann::json j = nlohmann::json::parse(last_line(o.out));
    EXPECT_EQ(std::string(j["target"]).rfind("simulated:cuda -arch=sm_", 0), 0u) << o.out;
    const Output b = run_tessera("build " + model + " --target cuda --no-db --json -o " +
                                 path("mlp.cuda.so"));
    ASSERT_EQ(b.code, 0) << b.out;
    tessera::tune::TuningDatabase d(db);
    const nlohmann::json build = nlohmann::json::parse(b.out); // outlives the loop below
    ASSERT_FALSE(build["tasks"].empty()) << b.out;
    int records = 0;
    for (const auto& t : build["tasks"])
        for (const auto& r : d.records_of(t["workload_key"].get<std::string>())) {
            ++records;
            EXPECT_NE(r.schedule_json.find("blockIdx.x"), std::string::npos) << r.schedule_json;
        }
    EXPECT_EQ(records, 24) << "every record belongs to a task of the CUDA build";
}

/// Records of a simulated GPU tune: no device needed (synthetic times of GPU sketches).
TEST_F(CudaCli, SimulatedTuneRecordsUnderTheSimulatedCudaTarget) {
    const std::string db = path("sim.db");
    const Output o = run_tessera(std::string("tune --op ") + kSpec +
                                 " --target cuda --runner simulated --model random --trials 16 "
                                 "--population 32 --generations 1 --measure-per-round 8 --json "
                                 "--db " + db);
    ASSERT_EQ(o.code, 0) << o.out;
    const nlohmann::json j = nlohmann::json::parse(last_line(o.out));
    const std::string target = j["target"];
    EXPECT_EQ(target.rfind("simulated:cuda -arch=sm_", 0), 0u) << target;
    EXPECT_EQ(j["trials"], 16);

    tessera::tune::TuningDatabase d(db);
    const std::string key = tessera::te::workload_key(tessera::te::make_op(kSpec).compute);
    int records = 0, ok = 0;
    for (const auto& r : d.records_of(key)) {
        ++records;
        EXPECT_EQ(r.target, target);
        ok += r.error_code == tessera::tune::MeasureError::Ok;
    }
    EXPECT_EQ(records, 16);
    EXPECT_GT(ok, 0);
}

/// Enabled once tune_task samples GPU sketches with sample_initial_gpu_state (SearchOptions'
/// sketch target Gpu): every measured schedule then binds blocks and threads.
TEST_F(CudaCli, SimulatedTuneMeasuresGpuBoundSchedules) {
    const std::string db = path("sim.db");
    const Output o = run_tessera(std::string("tune --op ") + kSpec +
                                 " --target cuda --runner simulated --model random --trials 8 "
                                 "--population 16 --generations 1 --measure-per-round 8 --db " +
                                 db);
    ASSERT_EQ(o.code, 0) << o.out;
    tessera::tune::TuningDatabase d(db);
    const std::string key = tessera::te::workload_key(tessera::te::make_op(kSpec).compute);
    int records = 0;
    for (const auto& r : d.records_of(key)) {
        ++records;
        EXPECT_NE(r.schedule_json.find("blockIdx.x"), std::string::npos) << r.schedule_json;
        EXPECT_NE(r.schedule_json.find("threadIdx.x"), std::string::npos) << r.schedule_json;
    }
    EXPECT_EQ(records, 8);
}

TEST_F(CudaCli, OpRunChecksAndTimesOnTheDevice) {
    const cuda::CudaDriver& d = cuda::CudaDriver::get();
    if (!d.available())
        GTEST_SKIP() << "[SKIP] " << d.unavailable_reason();
    for (const std::string extra : {"", " --naive"}) {
        SCOPED_TRACE(extra);
        const Output o =
            run_tessera(std::string("op run ") + kSpec + " --target cuda --repeat 3 --json" + extra);
        ASSERT_EQ(o.code, 0) << o.out;
        const nlohmann::json j = nlohmann::json::parse(last_line(o.out));
        EXPECT_TRUE(j["passed"].get<bool>()) << o.out;
        EXPECT_EQ(j["target"], "cuda");
        EXPECT_NE(j["device"].get<std::string>().find(d.device().arch()), std::string::npos);
        EXPECT_EQ(j["checked_elements"], j["total_elements"]);
        EXPECT_GT(j["median_ms"].get<double>(), 0);
        if (extra.empty()) { // no record, no schedule file: what an untuned CUDA build runs
            EXPECT_NE(j["schedule"].get<std::string>().find("GPU default schedule"),
                      std::string::npos)
                << o.out;
        }
    }
}

TEST_F(CudaCli, TuneOnTheDeviceThenOpRunServesTheRecord) {
    const cuda::CudaDriver& d = cuda::CudaDriver::get();
    if (!d.available())
        GTEST_SKIP() << "[SKIP] " << d.unavailable_reason();
    const std::string db = path("gpu.db");
    const Output t = run_tessera(std::string("tune --op ") + kSpec +
                                 " --target cuda --model random --trials 16 --population 32 "
                                 "--generations 1 --measure-per-round 8 --json --db " + db);
    ASSERT_EQ(t.code, 0) << t.out;
    const nlohmann::json j = nlohmann::json::parse(last_line(t.out));
    EXPECT_EQ(j["target"], "cuda -arch=" + d.device().arch());
    ASSERT_FALSE(j["best_record_id"].is_null()) << t.out;

    const Output r =
        run_tessera(std::string("op run ") + kSpec + " --target cuda --json --db " + db);
    ASSERT_EQ(r.code, 0) << r.out;
    const nlohmann::json rj = nlohmann::json::parse(last_line(r.out));
    EXPECT_EQ(rj["tier"], "exact") << r.out;
    EXPECT_EQ(rj["record_id"], j["best_record_id"]);
    EXPECT_TRUE(rj["passed"].get<bool>()) << r.out;
}

} // namespace
