// `tessera tune MODEL` end to end through the built binary: every task of the shared models
// gets committed records, progress and curve follow the rounds, the same seed gives the same
// database, Ctrl-C (SIGINT) stops after the round in progress with everything committed, and
// bad option combinations are one-line errors. Tuning uses --runner simulated and the random
// model (no compilation, no training) so that each test takes seconds.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/tessera_process.h"
#include "tessera/tuner/database.h"

namespace {

namespace fs = std::filesystem;

/// The simulated runner with a tiny search: 8 candidates per round.
constexpr const char* kQuickOptions = " --runner simulated --model random --population 24 "
                                      "--generations 1 --measure-per-round 8";

std::string model_path(const std::string& name) {
    return TESSERA_SOURCE_DIR "/../shared/models/" + name + "/model.onnx";
}

class TuneModelCli : public ::testing::Test {
  protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::path(::testing::TempDir()) /
               ("tessera_tune_model_" + std::to_string(::getpid()) + "_" + info->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }
    /// Skips the test when the shared model is absent.
    bool have_model(const std::string& name) const { return fs::exists(model_path(name)); }

    fs::path dir_;
};

using Output = tessera::testing::ProcessOutput;
using tessera::testing::lines_of;
using tessera::testing::read_text;
using tessera::testing::run_tessera;
using tessera::testing::start_tessera;
using tessera::testing::wait_tessera;

nlohmann::json parse_one_json_line(const Output& o) {
    const std::vector<std::string> lines = lines_of(o.out);
    EXPECT_EQ(lines.size(), 1u) << "stdout of --json must be one JSON line:\n" << o.out;
    return nlohmann::json::parse(lines.empty() ? "{}" : lines.back());
}

/// Every record by id: (workload, schedule, median, error), without the creation time.
std::map<int64_t, std::string> snapshot(const std::string& db_path) {
    tessera::tune::TuningDatabase db(db_path);
    std::map<int64_t, std::string> all;
    for (const std::string& key : db.workload_keys())
        for (const auto& r : db.records_of(key))
            all[r.id] =
                nlohmann::json({key, r.schedule_json, r.median_secs, int(r.error_code)}).dump();
    return all;
}

/// The tasks `tessera inspect` lists for the model at -O3: workload key -> count.
std::map<std::string, int> inspected_tasks(const std::string& model, const std::string& scratch) {
    const Output o = run_tessera("inspect " + model + " -O3 --json", scratch);
    EXPECT_EQ(o.code, 0) << o.err;
    const nlohmann::json j = nlohmann::json::parse(o.out);
    std::map<std::string, int> tasks;
    for (const auto& t : j.at("tasks").at("list"))
        tasks[t.at("workload_key").get<std::string>()] = t.at("count").get<int>();
    return tasks;
}

} // namespace

TEST_F(TuneModelCli, EveryTaskOfMlpAndSmallCnnGetsCommittedRecords) {
    for (const std::string name : {"mlp", "small_cnn"}) {
        if (!have_model(name))
            GTEST_SKIP() << "shared model " << model_path(name) << " is absent";
        const std::map<std::string, int> expected = inspected_tasks(model_path(name), path("i"));
        ASSERT_FALSE(expected.empty());
        const int trials = 8 * int(expected.size()) + 24;
        const std::string db = path(name + ".db");
        const Output o = run_tessera("tune " + model_path(name) + kQuickOptions + " --trials " +
                                         std::to_string(trials) + " --json --db " + db,
                                     path(name));
        ASSERT_EQ(o.code, 0) << o.out << o.err;
        const nlohmann::json j = parse_one_json_line(o);
        EXPECT_EQ(j.at("trials").get<int>(), trials);
        EXPECT_FALSE(j.at("interrupted").get<bool>());
        EXPECT_TRUE(j.at("estimated_ms_before").is_null()) << "a fresh database has no estimate";
        ASSERT_TRUE(j.at("estimated_ms_after").is_number()) << o.out;

        tessera::tune::TuningDatabase d(db);
        std::map<std::string, int> tuned;
        int sum_trials = 0;
        double estimate = 0;
        for (const auto& t : j.at("tasks")) {
            const std::string key = t.at("workload_key").get<std::string>();
            tuned[key] = t.at("count").get<int>();
            EXPECT_EQ(t.at("key").get<std::string>(), key.substr(0, 12));
            const int n = t.at("trials").get<int>();
            EXPECT_GE(n, 1) << name << " task " << t.dump();
            EXPECT_EQ(int(d.records_of(key).size()), n) << name << " task " << t.dump();
            ASSERT_TRUE(t.at("best_ms").is_number()) << t.dump();
            estimate += t.at("count").get<int>() * t.at("best_ms").get<double>();
            sum_trials += n;
        }
        EXPECT_EQ(tuned, expected) << "tune and inspect (build) must see the same tasks";
        EXPECT_EQ(sum_trials, trials);
        EXPECT_EQ(d.num_records(), trials);
        EXPECT_NEAR(j.at("estimated_ms_after").get<double>(), estimate, 1e-9 * estimate);

        // A rerun resumes from the database: its estimate before is this run's after.
        const Output again = run_tessera("tune " + model_path(name) + kQuickOptions +
                                             " --trials 8 --json --db " + db,
                                         path(name + "_again"));
        ASSERT_EQ(again.code, 0) << again.err;
        const nlohmann::json ja = parse_one_json_line(again);
        EXPECT_NEAR(ja.at("estimated_ms_before").get<double>(),
                    j.at("estimated_ms_after").get<double>(), 1e-9 * estimate);
        EXPECT_EQ(tessera::tune::TuningDatabase(db).num_records(), trials + 8);

        // db verify: a model tune's records name no op, so only the model rebuilds their
        // workloads; without it nothing is checked, and that is a failure, not a pass.
        const Output blind = run_tessera("db verify --json --db " + db, path(name + "_v0"));
        EXPECT_EQ(blind.code, 1) << blind.out << blind.err;
        const nlohmann::json jb = parse_one_json_line(blind);
        EXPECT_EQ(jb.at("verified").get<int>(), 0);
        EXPECT_EQ(jb.at("unverifiable").get<size_t>(), expected.size()) << jb.dump();
        const Output seen = run_tessera(
            "db verify --json --tasks-of " + model_path(name) + " --db " + db, path(name + "_v1"));
        EXPECT_EQ(seen.code, 0) << seen.out << seen.err;
        const nlohmann::json js = parse_one_json_line(seen);
        EXPECT_EQ(js.at("verified").get<size_t>(), expected.size()) << js.dump();
        EXPECT_EQ(js.at("unverifiable").get<int>(), 0) << js.dump();
    }
}

TEST_F(TuneModelCli, ProgressNamesTheTaskAndTheCurveHasOneRowPerRound) {
    if (!have_model("mlp"))
        GTEST_SKIP() << "shared model " << model_path("mlp") << " is absent";
    const Output o =
        run_tessera("tune " + model_path("mlp") + kQuickOptions + " --trials 48 --db " +
                        path("t.db") + " --curve " + path("curve.csv"),
                    path("run"));
    ASSERT_EQ(o.code, 0) << o.out << o.err;
    // Not a terminal: one line at the start and one per committed round: four seed rounds (a
    // default schedule each), each best measured once more (4 trials, no round), then five
    // searched rounds of 8.
    const std::vector<std::string> progress = lines_of(o.err);
    ASSERT_EQ(progress.size(), 1u + 9) << o.err;
    EXPECT_NE(progress[1].find("round 1 tuned task 1/4 gemm+relu"), std::string::npos) << o.err;
    EXPECT_NE(progress[4].find("round 4 tuned task 4/4 softmax"), std::string::npos) << o.err;
    EXPECT_NE(progress.back().find("48/48 trials"), std::string::npos) << o.err;
    EXPECT_NE(progress.back().find("e2e "), std::string::npos) << o.err;
    const std::vector<std::string> curve = lines_of(read_text(path("curve.csv")));
    ASSERT_EQ(curve.size(), 1u + 9);
    EXPECT_EQ(curve[0], "round,trials,seconds,estimated_ms");
    EXPECT_EQ(curve[4].rfind("4,4,", 0), 0u) << curve[4];
    EXPECT_EQ(curve[5].rfind("5,16,", 0), 0u) << curve[5]; // 4 seeds, 4 retimes, 8 searched
    EXPECT_EQ(curve[9].rfind("9,48,", 0), 0u) << curve[9];
    // The text summary: the estimate and one row per task.
    EXPECT_NE(o.out.find("estimate  - before -> "), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("softmax"), std::string::npos) << o.out;
}

TEST_F(TuneModelCli, SameSeedSameDatabase) {
    if (!have_model("mlp"))
        GTEST_SKIP() << "shared model " << model_path("mlp") << " is absent";
    const std::string args = "tune " + model_path("mlp") + kQuickOptions + " --trials 56 --seed 9";
    ASSERT_EQ(run_tessera(args + " --db " + path("a.db"), path("a")).code, 0);
    ASSERT_EQ(run_tessera(args + " --db " + path("b.db"), path("b")).code, 0);
    ASSERT_EQ(run_tessera("tune " + model_path("mlp") + kQuickOptions +
                              " --trials 56 --seed 10 --db " + path("c.db"),
                          path("c"))
                  .code,
              0);
    EXPECT_EQ(snapshot(path("a.db")), snapshot(path("b.db")));
    EXPECT_NE(snapshot(path("a.db")), snapshot(path("c.db")));
}

TEST_F(TuneModelCli, SigintStopsAfterTheRoundWithEverythingCommitted) {
    if (!have_model("mlp"))
        GTEST_SKIP() << "shared model " << model_path("mlp") << " is absent";
    const std::string db = path("t.db");
    { tessera::tune::TuningDatabase d(db); }
    const pid_t pid = start_tessera("tune " + model_path("mlp") + kQuickOptions +
                                        " --trials 100000 --json --db " + db,
                                    path("k.out"), path("k.err"));
    // Wait for the warm-up rounds to commit, then interrupt.
    std::map<int64_t, std::string> before;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, WNOHANG), 0)
            << "the tuner ended early: " << read_text(path("k.err"));
        before = snapshot(db);
        if (before.size() >= 32)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_GE(before.size(), 32u) << "no four rounds committed within a minute";
    ASSERT_EQ(kill(pid, SIGINT), 0);
    const Output o = wait_tessera(pid, path("k.out"), path("k.err"));
    EXPECT_EQ(o.code, 130) << o.err;
    EXPECT_NE(o.err.find("interrupted"), std::string::npos) << o.err;

    // The summary still prints, and counts exactly what the database holds.
    const nlohmann::json j = parse_one_json_line(o);
    EXPECT_TRUE(j.at("interrupted").get<bool>());
    const std::map<int64_t, std::string> after = snapshot(db);
    EXPECT_EQ(int64_t(after.size()), j.at("trials").get<int64_t>());
    EXPECT_EQ(int64_t(after.size()), j.at("db_records").get<int64_t>());
    EXPECT_LT(j.at("trials").get<int>(), 100000);
    for (const auto& [id, text] : before) {
        ASSERT_TRUE(after.count(id)) << "record " << id << " lost";
        EXPECT_EQ(after.at(id), text) << "record " << id << " changed";
    }
    // The database opens and a rerun resumes.
    const Output rerun = run_tessera(
        "tune " + model_path("mlp") + kQuickOptions + " --trials 8 --db " + db, path("r"));
    EXPECT_EQ(rerun.code, 0) << rerun.err;
    EXPECT_EQ(snapshot(db).size(), after.size() + 8);
}

TEST_F(TuneModelCli, ModelAndOpTogetherOrNeitherAreOneLineErrors) {
    const std::string db = " --db " + path("t.db") + " --runner simulated";
    const std::string mlp = model_path("mlp");
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"tune" + db, "--op"},
        {"tune " + mlp + " --op matmul:m=2,n=2,k=2" + db, "both"},
        {"tune " + mlp + " -O 7" + db, "-O"},
        {"tune " + path("missing.onnx") + db, "missing.onnx"},
        {"tune " + mlp + " --trials 0" + db, "--trials"},
    };
    for (const auto& [args, fragment] : cases) {
        const Output o = run_tessera(args, path("bad"));
        EXPECT_EQ(o.code, 1) << args << "\n" << o.out << o.err;
        EXPECT_TRUE(o.out.empty()) << args << "\n" << o.out;
        EXPECT_EQ(o.err.rfind("error: ", 0), 0u) << args << "\n" << o.err;
        EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << args << "\n" << o.err;
        EXPECT_NE(o.err.find(fragment), std::string::npos) << args << "\n" << o.err;
    }
    const Output help = run_tessera("tune --help", path("help"));
    EXPECT_EQ(help.code, 0);
    EXPECT_NE(help.out.find("130"), std::string::npos) << help.out;
    EXPECT_NE(help.out.find("MODEL"), std::string::npos) << help.out;
}
