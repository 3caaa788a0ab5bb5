// `tessera tune MODEL --shard I/N` through the built binary: the N shards of a model tune
// disjoint task sets whose union is every task (as `inspect` lists them), dealt in the
// documented snake order of flops x count; a shard past the model's task count tunes nothing
// and succeeds; bad --shard values are one-line errors naming the value. Tuning uses --runner
// simulated and the random model (no compilation, no training) so that each run takes seconds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tessera/tuner/database.h"
#include "common/tessera_process.h"

namespace {

namespace fs = std::filesystem;

/// The simulated runner with a tiny search: 8 candidates per round.
constexpr const char* kQuickOptions = " --runner simulated --model random --population 24 "
                                      "--generations 1 --measure-per-round 8";

std::string small_cnn() { return TESSERA_SOURCE_DIR "/../shared/models/small_cnn/model.onnx"; }

using Output = tessera::testing::ProcessOutput;
using tessera::testing::read_text;

class TuneShardCli : public ::testing::Test {
  protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::path(::testing::TempDir()) /
               ("tessera_tune_shard_" + std::to_string(::getpid()) + "_" + info->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    /// Runs `tessera ARGS`, stdout and stderr captured through files in the test's folder.
    Output run(const std::string& args) {
        const std::string out = path("run.out"), err = path("run.err");
        const std::string cmd = std::string(TESSERA_BINARY) + " " + args + " >" + out + " 2>" + err;
        const int status = std::system(cmd.c_str());
        Output o;
        o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        o.out = read_text(out);
        o.err = read_text(err);
        return o;
    }

    /// `tune small_cnn --shard SHARD --json` into `db` (8 trials per task of the model, so every
    /// task of any shard gets its warm-up round); the summary's JSON.
    nlohmann::json tune_shard(const std::string& shard, size_t model_tasks, const std::string& db) {
        const Output o =
            run("tune " + small_cnn() + kQuickOptions + " --trials " +
                std::to_string(8 * model_tasks) + " --json --shard " + shard + " --db " + db);
        EXPECT_EQ(o.code, 0) << shard << "\n" << o.out << o.err;
        EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << o.out;
        return nlohmann::json::parse(o.out.empty() ? "{}" : o.out);
    }

    fs::path dir_;
};

/// The tasks `tessera inspect` lists for the model at -O3: workload key -> count.
std::map<std::string, int> inspected_tasks(const nlohmann::json& inspect) {
    std::map<std::string, int> tasks;
    for (const auto& t : inspect.at("tasks").at("list"))
        tasks[t.at("workload_key").get<std::string>()] = t.at("count").get<int>();
    return tasks;
}

/// One tuned task of a shard's summary.
struct ShardTask {
    size_t index = 0;
    std::string key;
    double cost = 0; ///< flops x count
};

} // namespace

TEST_F(TuneShardCli, ShardsTuneDisjointTasksCoveringTheModelInSnakeOrder) {
    if (!fs::exists(small_cnn()))
        GTEST_SKIP() << "shared model " << small_cnn() << " is absent";
    const Output inspect = run("inspect " + small_cnn() + " -O3 --json");
    ASSERT_EQ(inspect.code, 0) << inspect.err;
    const std::map<std::string, int> expected = inspected_tasks(nlohmann::json::parse(inspect.out));
    const size_t n = expected.size();
    ASSERT_GE(n, 3u) << "small_cnn should have several tasks to share";

    std::vector<std::vector<ShardTask>> shards;
    for (const std::string shard : {"0/2", "1/2"}) {
        const std::string db = path("shard" + shard.substr(0, 1) + ".db");
        const nlohmann::json j = tune_shard(shard, n, db);
        EXPECT_EQ(j.at("shard").get<std::string>(), shard);
        EXPECT_EQ(j.at("model_tasks").get<size_t>(), n);
        tessera::tune::TuningDatabase d(db);
        std::vector<ShardTask> tasks;
        for (const auto& t : j.at("tasks")) {
            ShardTask st{t.at("index").get<size_t>(), t.at("workload_key").get<std::string>(),
                         t.at("flops").get<double>() * t.at("count").get<int>()};
            EXPECT_GE(t.at("trials").get<int>(), 1) << shard << " " << t.dump();
            EXPECT_EQ(int(d.records_of(st.key).size()), t.at("trials").get<int>()) << t.dump();
            tasks.push_back(st);
        }
        ASSERT_FALSE(tasks.empty()) << shard;
        // Only this shard's workloads were tuned into its database.
        EXPECT_EQ(d.workload_keys().size(), tasks.size()) << shard;
        shards.push_back(tasks);
    }

    // Disjoint, and together exactly the model's tasks (by index and by workload).
    std::set<size_t> indices;
    std::set<std::string> keys;
    for (const auto& tasks : shards)
        for (const ShardTask& t : tasks) {
            EXPECT_TRUE(indices.insert(t.index).second) << "task " << t.index << " in two shards";
            EXPECT_TRUE(keys.insert(t.key).second) << t.key << " in two shards";
        }
    EXPECT_EQ(indices.size(), n);
    EXPECT_EQ(*indices.rbegin(), n - 1);
    std::set<std::string> expected_keys;
    for (const auto& [key, count] : expected)
        expected_keys.insert(key);
    EXPECT_EQ(keys, expected_keys);

    // The snake deal of the documented order (cost descending, index on ties): sorted
    // positions 0, 3, 4, 7, 8, ... go to shard 0 and 1, 2, 5, 6, ... to shard 1.
    std::vector<std::pair<ShardTask, int>> all;
    for (int s = 0; s < 2; ++s)
        for (const ShardTask& t : shards[size_t(s)])
            all.push_back({t, s});
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
        return a.first.cost != b.first.cost ? a.first.cost > b.first.cost
                                            : a.first.index < b.first.index;
    });
    for (size_t p = 0; p < all.size(); ++p) {
        const int lap = int(p % 4);
        EXPECT_EQ(all[p].second, lap < 2 ? lap : 3 - lap)
            << "cost rank " << p << " (task " << all[p].first.index << ")";
    }
}

TEST_F(TuneShardCli, AShardPastTheLastTaskTunesNothingAndSucceeds) {
    if (!fs::exists(small_cnn()))
        GTEST_SKIP() << "shared model " << small_cnn() << " is absent";
    const std::string db = path("t.db");
    const nlohmann::json j = tune_shard("99/100", 1, db);
    EXPECT_EQ(j.at("shard").get<std::string>(), "99/100");
    EXPECT_TRUE(j.at("tasks").empty()) << j.dump();
    EXPECT_EQ(j.at("trials").get<int>(), 0);
    EXPECT_EQ(tessera::tune::TuningDatabase(db).num_records(), 0);

    const Output text = run("tune " + small_cnn() + kQuickOptions + " --shard 99/100 --db " + db);
    EXPECT_EQ(text.code, 0) << text.err;
    EXPECT_NE(text.out.find("shard 99/100: no task to tune"), std::string::npos) << text.out;
}

TEST_F(TuneShardCli, BadShardValuesAreOneLineErrorsNamingTheValue) {
    const std::string db = " --db " + path("t.db") + " --runner simulated";
    for (const std::string bad :
         {"2/2", "3/2", "-1/2", "0/0", "1", "a/b", "1/", "/2", "0/2x", "0/99999999999"}) {
        const Output o = run("tune " + small_cnn() + " '--shard=" + bad + "'" + db);
        EXPECT_EQ(o.code, 1) << bad << "\n" << o.out << o.err;
        EXPECT_TRUE(o.out.empty()) << bad << "\n" << o.out;
        EXPECT_EQ(o.err.rfind("error: --shard must be I/N", 0), 0u) << bad << "\n" << o.err;
        EXPECT_NE(o.err.find("'" + bad + "'"), std::string::npos) << bad << "\n" << o.err;
        EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << bad << "\n" << o.err;
    }
    // A shard of an operator means nothing.
    const Output op = run("tune --op matmul:m=7,n=13,k=1 --shard 0/2" + db);
    EXPECT_EQ(op.code, 1) << op.out << op.err;
    EXPECT_EQ(op.err.rfind("error: ", 0), 0u) << op.err;
    EXPECT_NE(op.err.find("--shard"), std::string::npos) << op.err;
    EXPECT_EQ(std::count(op.err.begin(), op.err.end(), '\n'), 1) << op.err;
}
