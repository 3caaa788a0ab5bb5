// `tessera tune`, `tessera op run --db` and `tessera costmodel eval` end to end, through the
// built binary: progress and summary, the JSON summary and the curve file, resume, two tuners
// sharing one database, a tuner killed with SIGKILL, bad options, running the best record of a
// real tune, and the cost-model evaluation. Tuning uses --runner simulated (no compilation)
// except where the real measurer is the point; sizes are tiny so each test takes seconds.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tessera/tuner/database.h"
#include "common/tessera_process.h"

namespace {

namespace fs = std::filesystem;

constexpr const char* kSpec = "matmul:m=13,n=7,k=127";
/// A tune of kSpec on the simulated runner with the random model (no training time): small
/// population, 8 candidates per round.
constexpr const char* kQuickTune = "tune --op matmul:m=13,n=7,k=127 --runner simulated "
                                   "--model random --population 24 --generations 1 "
                                   "--measure-per-round 8";

/// A fresh directory per test, removed afterwards.
class TuneCli : public ::testing::Test {
  protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::path(::testing::TempDir()) /
               ("tessera_tune_cli_" + std::to_string(::getpid()) + "_" + info->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    fs::path dir_;
};

using Output = tessera::testing::ProcessOutput;
using tessera::testing::lines_of;
using tessera::testing::read_text;
using tessera::testing::run_tessera;
using tessera::testing::start_tessera;
using tessera::testing::wait_tessera;

/// A record's identity and content, for comparing database snapshots.
std::string describe(const tessera::tune::TuningRecord& r) {
    nlohmann::json j;
    j["id"] = r.id;
    j["schedule"] = r.schedule_json;
    j["run_secs"] = r.run_secs;
    j["median"] = r.median_secs;
    j["error"] = int(r.error_code);
    j["message"] = r.error_message;
    j["settings"] = r.measure_settings_json;
    j["created_at"] = r.created_at;
    return j.dump();
}

/// Every record of every workload, by id.
std::map<int64_t, std::string> snapshot(const std::string& db_path) {
    tessera::tune::TuningDatabase db(db_path);
    std::map<int64_t, std::string> all;
    for (const std::string& key : db.workload_keys())
        for (const auto& r : db.records_of(key))
            all[r.id] = describe(r);
    return all;
}

/// Schedule JSONs that occur more than once among the records of the database's workloads.
std::vector<std::string> duplicate_schedules(const std::string& db_path) {
    tessera::tune::TuningDatabase db(db_path);
    std::vector<std::string> dups;
    for (const std::string& key : db.workload_keys()) {
        std::set<std::string> seen;
        for (const auto& r : db.records_of(key))
            if (!seen.insert(r.schedule_json).second)
                dups.push_back(r.schedule_json);
    }
    return dups;
}

nlohmann::json parse_json_summary(const Output& o) {
    const std::vector<std::string> lines = lines_of(o.out);
    EXPECT_EQ(lines.size(), 1u) << "stdout of --json must be one JSON line:\n" << o.out;
    return nlohmann::json::parse(lines.empty() ? "{}" : lines.back());
}

} // namespace

TEST_F(TuneCli, PrintsProgressSummaryAndCurve) {
    const std::string db = path("t.db"), curve = path("curve.csv");
    Output o = run_tessera(std::string(kQuickTune) + " --trials 24 --seed 3 --db " + db +
                               " --curve " + curve,
                           path("run"));
    ASSERT_EQ(o.code, 0) << o.out << o.err;

    // Not a terminal: one plain progress line at the start and one per round, no '\r'.
    const std::vector<std::string> progress = lines_of(o.err);
    ASSERT_EQ(progress.size(), 4u) << o.err;
    EXPECT_EQ(o.err.find('\r'), std::string::npos);
    EXPECT_NE(progress[0].find("0/24 trials"), std::string::npos) << o.err;
    EXPECT_NE(progress[1].find("8/24 trials"), std::string::npos) << o.err;
    EXPECT_NE(progress[3].find("24/24 trials"), std::string::npos) << o.err;
    EXPECT_NE(progress[3].find("GFLOP/s"), std::string::npos) << o.err;
    EXPECT_NE(progress[3].find("errors 0"), std::string::npos) << o.err;
    EXPECT_NE(progress[1].find("eta "), std::string::npos) << o.err;

    // The summary names the workload, trials, best time and the database.
    tessera::tune::TuningDatabase d(db);
    ASSERT_EQ(d.workload_keys().size(), 1u);
    const std::string key = d.workload_keys()[0];
    EXPECT_NE(o.out.find("workload  " + key), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("24 measured in 3 rounds, 0 errors"), std::string::npos) << o.out;
    const auto best = d.top_k(key, 1);
    ASSERT_EQ(best.size(), 1u);
    EXPECT_NE(o.out.find("(record " + std::to_string(best[0].id) + ")"), std::string::npos)
        << o.out;
    EXPECT_NE(o.out.find(db + " (24 records"), std::string::npos) << o.out;

    // The curve: a header and one row per round; trials grow, the best time never worsens and
    // the last row is the database's best.
    const std::vector<std::string> rows = lines_of(read_text(curve));
    ASSERT_EQ(rows.size(), 4u) << read_text(curve);
    EXPECT_EQ(rows[0], "trials,seconds,best_ms,best_gflops");
    double last_ms = 1e300;
    for (size_t i = 1; i < rows.size(); ++i) {
        int trials = 0;
        double secs = 0, ms = 0, gflops = 0;
        ASSERT_EQ(std::sscanf(rows[i].c_str(), "%d,%lf,%lf,%lf", &trials, &secs, &ms, &gflops), 4)
            << rows[i];
        EXPECT_EQ(trials, int(8 * i));
        EXPECT_GE(secs, 0);
        EXPECT_LE(ms, last_ms);
        EXPECT_NEAR(gflops, 2.0 * 13 * 7 * 127 / (ms * 1e-3) / 1e9, gflops * 1e-4);
        last_ms = ms;
    }
    EXPECT_NEAR(last_ms, best[0].median_secs * 1e3, last_ms * 1e-5);
}

TEST_F(TuneCli, JsonSummaryParses) {
    const std::string db = path("t.db");
    Output o = run_tessera(std::string(kQuickTune) + " --trials 16 --json --db " + db,
                           path("run"));
    ASSERT_EQ(o.code, 0) << o.out << o.err;
    const nlohmann::json j = parse_json_summary(o);
    EXPECT_EQ(j["spec"], kSpec);
    EXPECT_EQ(j["trials"], 16);
    EXPECT_EQ(j["rounds"], 2);
    EXPECT_EQ(j["errors"], 0);
    EXPECT_EQ(j["db_records"], 16);
    EXPECT_EQ(j["runner"], "simulated");
    EXPECT_EQ(j["workload_key"].get<std::string>().size(), 64u);
    EXPECT_GT(j["best_ms"].get<double>(), 0);
    EXPECT_NEAR(j["best_gflops"].get<double>(),
                2.0 * 13 * 7 * 127 / (j["best_ms"].get<double>() * 1e-3) / 1e9, 1e-6);
    ASSERT_EQ(j["curve"].size(), 2u);
    EXPECT_EQ(j["curve"][1]["trials"], 16);
    EXPECT_EQ(j["curve"][1]["best_ms"], j["best_ms"]);
    tessera::tune::TuningDatabase d(db);
    const auto best = d.top_k(j["workload_key"].get<std::string>(), 1);
    ASSERT_EQ(best.size(), 1u);
    EXPECT_EQ(j["best_record_id"], best[0].id);
    // Synthetic times are kept apart from real measurements of the host target.
    EXPECT_TRUE(j["target"].get<std::string>().rfind("simulated:llvm -mcpu=", 0) == 0)
        << j["target"];
    EXPECT_EQ(best[0].target, j["target"]);
    EXPECT_EQ(best[0].fingerprint, j["fingerprint"]);

    // So `op run --db` finds no record of the host target and runs the default schedule.
    const Output r = run_tessera(std::string("op run ") + kSpec + " --repeat 1 --json --db " + db,
                                 path("oprun"));
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(nlohmann::json::parse(lines_of(r.out).back())["tier"], "default") << r.out;
}

TEST_F(TuneCli, DefaultDatabaseFolderIsCreated) {
    // Run from the test directory: the default database is tune_logs/tessera.db there.
    const std::string cmd = "cd " + dir_.string() + " && " + TESSERA_BINARY + " " + kQuickTune +
                            " --trials 8 >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    ASSERT_TRUE(fs::is_regular_file(dir_ / "tune_logs" / "tessera.db"));
    EXPECT_EQ(tessera::tune::TuningDatabase(path("tune_logs/tessera.db")).num_records(), 8);
}

TEST_F(TuneCli, RerunResumesWithNewSchedulesOnly) {
    const std::string db = path("t.db");
    Output first = run_tessera(std::string(kQuickTune) + " --trials 16 --db " + db, path("a"));
    ASSERT_EQ(first.code, 0) << first.out << first.err;
    const std::map<int64_t, std::string> before = snapshot(db);
    ASSERT_EQ(before.size(), 16u);

    Output second =
        run_tessera(std::string(kQuickTune) + " --trials 16 --json --db " + db, path("b"));
    ASSERT_EQ(second.code, 0) << second.out << second.err;
    const nlohmann::json j = parse_json_summary(second);
    EXPECT_EQ(j["trials"], 16);
    EXPECT_TRUE(j["warm_start"].get<bool>()) << second.out;
    EXPECT_GT(j["skipped"].get<int>(), 0) << "the same seed meets the first run's schedules";

    const std::map<int64_t, std::string> after = snapshot(db);
    EXPECT_EQ(after.size(), 32u);
    for (const auto& [id, text] : before) {
        ASSERT_TRUE(after.count(id)) << "record " << id << " disappeared";
        EXPECT_EQ(after.at(id), text) << "record " << id << " changed";
    }
    EXPECT_TRUE(duplicate_schedules(db).empty())
        << "measured twice: " << duplicate_schedules(db).front();
}

TEST_F(TuneCli, TwoTunersShareOneDatabase) {
    const std::string db = path("t.db");
    // Create the database first, so neither tuner races the other creating its schema.
    { tessera::tune::TuningDatabase d(db); }
    const std::string args = std::string(kQuickTune) + " --trials 32 --json --db " + db;
    const pid_t a = start_tessera(args + " --seed 11", path("a.out"), path("a.err"));
    const pid_t b = start_tessera(args + " --seed 12", path("b.out"), path("b.err"));
    const Output oa = wait_tessera(a, path("a.out"), path("a.err"));
    const Output ob = wait_tessera(b, path("b.out"), path("b.err"));
    ASSERT_EQ(oa.code, 0) << oa.out << oa.err;
    ASSERT_EQ(ob.code, 0) << ob.out << ob.err;
    const nlohmann::json ja = parse_json_summary(oa), jb = parse_json_summary(ob);
    EXPECT_EQ(ja["trials"], 32);
    EXPECT_EQ(jb["trials"], 32);
    // Every committed batch of both is there: ids 1..64, each record once.
    const std::map<int64_t, std::string> all = snapshot(db);
    ASSERT_EQ(all.size(), 64u);
    EXPECT_EQ(all.begin()->first, 1);
    EXPECT_EQ(all.rbegin()->first, 64);
    std::map<int, int> per_seed;
    for (const auto& [id, text] : all) {
        const nlohmann::json r = nlohmann::json::parse(text);
        ++per_seed[nlohmann::json::parse(r["settings"].get<std::string>())["seed"].get<int>()];
    }
    EXPECT_EQ(per_seed[11], 32);
    EXPECT_EQ(per_seed[12], 32);
}

TEST_F(TuneCli, KilledTunerLosesNothingCommittedAndResumes) {
    const std::string db = path("t.db");
    { tessera::tune::TuningDatabase d(db); }
    const pid_t pid = start_tessera(std::string(kQuickTune) + " --trials 100000 --db " + db,
                                    path("k.out"), path("k.err"));
    // Wait for at least two committed rounds, then take a snapshot and kill the tuner at once.
    std::map<int64_t, std::string> before;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, WNOHANG), 0)
            << "the tuner ended early: " << read_text(path("k.err"));
        before = snapshot(db);
        if (before.size() >= 16)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    const Output killed = wait_tessera(pid, path("k.out"), path("k.err"));
    EXPECT_EQ(killed.code, -1) << "the tuner should have been running: " << killed.err;
    ASSERT_GE(before.size(), 16u) << "no two rounds committed within a minute";

    // Everything read before the kill is intact; what committed after it are whole rounds.
    const std::map<int64_t, std::string> after = snapshot(db);
    for (const auto& [id, text] : before) {
        ASSERT_TRUE(after.count(id)) << "record " << id << " lost";
        EXPECT_EQ(after.at(id), text) << "record " << id << " changed";
    }
    EXPECT_EQ(after.size() % 8, 0u) << "half a round committed";
    EXPECT_EQ(int64_t(after.size()), after.rbegin()->first) << "ids not dense";

    // A rerun resumes: its 8 new records are added, nothing measured twice.
    Output rerun = run_tessera(std::string(kQuickTune) + " --trials 8 --json --db " + db,
                               path("r"));
    ASSERT_EQ(rerun.code, 0) << rerun.out << rerun.err;
    EXPECT_TRUE(parse_json_summary(rerun)["warm_start"].get<bool>());
    const std::map<int64_t, std::string> resumed = snapshot(db);
    EXPECT_EQ(resumed.size(), after.size() + 8);
    for (const auto& [id, text] : after)
        EXPECT_EQ(resumed.at(id), text) << "record " << id << " changed";
    EXPECT_TRUE(duplicate_schedules(db).empty());
}

TEST_F(TuneCli, TrialsAndTimeBudgetTogetherStopAtTheFirstLimit) {
    Output o = run_tessera(std::string(kQuickTune) + " --trials 16 --time-budget 600 --json --db " +
                               path("t.db"),
                           path("run"));
    ASSERT_EQ(o.code, 0) << o.out << o.err;
    const nlohmann::json j = nlohmann::json::parse(o.out);
    EXPECT_EQ(j.at("trials").get<int>(), 16) << o.out;
}

TEST_F(TuneCli, BadOptionsAreOneLineErrors) {
    const std::string db = " --db " + path("t.db");
    const std::string tune = "tune --op matmul:m=13,n=7,k=127 --runner simulated" + db;
    std::ofstream(path("a_file")) << "not a folder\n";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {tune + " --trials 0", "--trials"},
        {tune + " --trials -3", "--trials"},
        {tune + " --time-budget 0", "--time-budget"},
        {tune + " --time-budget -1", "--time-budget"},
        {tune + " --trials 8 --time-budget -5", "--time-budget"},
        {tune + " --population 0", "--population"},
        {tune + " --generations -1", "--generations"},
        {tune + " --measure-per-round 0", "--measure-per-round"},
        {tune + " --eps-greedy 1.5", "--eps-greedy"},
        {tune + " --threads -2", "--threads"},
        {tune + " --model gbm", "gbm"},
        {tune + " --weights lukewarm", "--weights"},
        {"tune --op matmul:m=13,n=7,k=127 --runner remote" + db, "remote"},
        {tune + " --trials many", "many"},
        {"tune --runner simulated" + db, "--op"},
        {"tune --op matmull:m=2,n=2,k=2 --runner simulated" + db, "matmull"},
        {"tune --op matmul:m=2,n=2,k=2 --runner simulated --trials 1 --db " + path("a_file/x.db"),
         "--db"},
        {"op run matmul:m=2,n=2,k=2 --db " + path("missing.db"), "missing.db"},
        {"costmodel eval --db " + path("missing.db"), "missing.db"},
        {"costmodel eval", "--db"},
        {"costmodel eval --finetune 4 --db " + path("missing.db"), "--holdout tasks"},
        {"costmodel train --db " + path("missing.db"), "--out"},
        {"tune --op matmul:m=2,n=2,k=2 --trials 1 --min-repeat-secs -1 --db " + path("p.db"),
         "--min-repeat-secs"},
        {"tune --op matmul:m=2,n=2,k=2 --trials 1 --slow-factor 0.5 --db " + path("p.db"),
         "--slow-factor"},
        {"tune --op matmul:m=2,n=2,k=2 --trials 1 --behind-factor 0.5 --db " + path("p.db"),
         "--behind-factor"},
        {"tune --op matmul:m=2,n=2,k=2 --trials 1 --ratio-precision -1 --db " + path("p.db"),
         "--ratio-precision"},
        {"costmodel train --out x.tscm --db " + path("missing.db"), "missing.db"},
        {"tune --op matmul:m=2,n=2,k=2 --trials 1 --pretrained " + path("none.tscm") + " --db " +
             path("p.db"),
         "none.tscm"},
        {"costmodel", "subcommand"},
    };
    for (const auto& [args, fragment] : cases) {
        const Output o = run_tessera(args, path("bad"));
        const std::string all = o.out + o.err;
        EXPECT_EQ(o.code, 1) << args << "\n" << all;
        EXPECT_TRUE(o.out.empty()) << args << "\n" << o.out;
        EXPECT_EQ(o.err.rfind("error: ", 0), 0u) << args << "\n" << o.err;
        EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << args << "\n" << o.err;
        EXPECT_NE(o.err.find(fragment), std::string::npos) << args << "\n" << o.err;
    }
}

TEST_F(TuneCli, HelpOfTheNewCommands) {
    for (const char* sub : {"tune --help", "costmodel --help", "costmodel eval --help",
                            "costmodel train --help",
                            "costmodel features --help", "op run --help"}) {
        const Output o = run_tessera(sub, path("help"));
        EXPECT_EQ(o.code, 0) << sub << "\n" << o.out << o.err;
        EXPECT_NE(o.out.find("Usage"), std::string::npos) << sub << "\n" << o.out;
    }
    const Output tune = run_tessera("tune --help", path("help"));
    EXPECT_NE(tune.out.find("simulated"), std::string::npos);
    EXPECT_NE(tune.out.find("tests and demos"), std::string::npos);
    EXPECT_NE(run_tessera("op run --help", path("help")).out.find("--db"), std::string::npos);
}

TEST_F(TuneCli, OpRunRunsTheBestRecordOfARealTune) {
    const std::string db = path("real.db");
    // The real measurer: every candidate built, checked against the reference and timed.
    Output t = run_tessera(std::string("tune --op ") + kSpec +
                               " --runner local --trials 8 --population 16 --generations 1 "
                               "--measure-per-round 8 --threads 1 --json --db " + db,
                           path("tune"));
    ASSERT_EQ(t.code, 0) << t.out << t.err;
    const nlohmann::json tuned = parse_json_summary(t);
    ASSERT_EQ(tuned["trials"], 8);
    ASSERT_FALSE(tuned["best_record_id"].is_null()) << t.out;
    {
        // One operator is timed with warm weights unless told otherwise (--weights).
        tessera::tune::TuningDatabase d(db);
        for (const auto& rec : d.top_k(tuned["workload_key"].get<std::string>(), 1))
            EXPECT_FALSE(
                nlohmann::json::parse(rec.measure_settings_json)["cold_weights"].get<bool>());
    }

    Output r = run_tessera(std::string("op run ") + kSpec + " --db " + db +
                               " --threads 1 --repeat 3 --json",
                           path("run"));
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const nlohmann::json j = nlohmann::json::parse(lines_of(r.out).back());
    EXPECT_EQ(j["tier"], "exact");
    EXPECT_EQ(j["record_id"], tuned["best_record_id"]);
    EXPECT_TRUE(j["passed"].get<bool>());
    EXPECT_NE(r.out.find("tuning    exact: best record " + tuned["best_record_id"].dump()),
              std::string::npos)
        << r.out;
    tessera::tune::TuningDatabase d(db);
    const auto best = d.top_k(tuned["workload_key"].get<std::string>(), 1);
    ASSERT_EQ(best.size(), 1u);
    const size_t steps = nlohmann::json::parse(best[0].schedule_json)["steps"].size();
    EXPECT_NE(r.out.find("(" + std::to_string(steps) + " steps)"), std::string::npos) << r.out;

    // Another workload has no record: the default schedule runs, and the report says so.
    Output other = run_tessera("op run matmul:m=7,n=13,k=127 --repeat 1 --json --db " + db,
                               path("other"));
    ASSERT_EQ(other.code, 0) << other.out << other.err;
    const nlohmann::json jo = nlohmann::json::parse(lines_of(other.out).back());
    EXPECT_EQ(jo["tier"], "default");
    EXPECT_TRUE(jo["record_id"].is_null());
    EXPECT_EQ(jo["schedule"].get<std::string>().rfind("default schedule (", 0), 0u) << other.out;
    EXPECT_NE(other.out.find("no ok record of this workload"), std::string::npos) << other.out;
}

TEST_F(TuneCli, CandidatesAreTimedBesideTheBestUnlessMeasureAlone) {
    // 24 trials in batches of 16: the first batch is timed alone (no best yet), the second
    // beside the best, its records naming it; --measure-alone times all alone.
    for (bool alone : {false, true}) {
        const std::string db = path(alone ? "alone.db" : "beside.db");
        Output t = run_tessera(std::string("tune --op ") + kSpec +
                                   " --runner local --trials 24 --population 24 "
                                   "--generations 1 --measure-per-round 24 --threads 1 "
                                   "--min-repeat-secs 0 --db " +
                                   db + (alone ? " --measure-alone" : ""),
                               path(alone ? "alone" : "beside"));
        ASSERT_EQ(t.code, 0) << t.out << t.err;
        tessera::tune::TuningDatabase d(db);
        int beside = 0, ok = 0;
        std::set<int64_t> ids;
        for (const std::string& key : d.workload_keys())
            for (const auto& rec : d.records_of(key)) {
                ids.insert(rec.id);
                if (rec.error_code != tessera::tune::MeasureError::Ok)
                    continue;
                ++ok;
                const nlohmann::json s = nlohmann::json::parse(rec.measure_settings_json);
                if (!s.contains("baseline_record")) {
                    EXPECT_EQ(rec.rank_secs, rec.median_secs);
                    continue;
                }
                ++beside;
                EXPECT_EQ(ids.count(s["baseline_record"].get<int64_t>()), 1u); // an earlier one
                EXPECT_GT(s["baseline_median_secs"].get<double>(), 0);
                EXPECT_GT(rec.rank_secs, 0);
            }
        EXPECT_GE(ok, 16);
        if (alone)
            EXPECT_EQ(beside, 0);
        else
            EXPECT_GE(beside, 1);
    }
}

TEST_F(TuneCli, CostModelEvalPrintsRankingQuality) {
    const std::string db = path("t.db");
    for (const char* spec : {"matmul:m=13,n=7,k=127", "matmul:m=31,n=17,k=64"}) {
        Output t = run_tessera(std::string("tune --op ") + spec +
                                   " --runner simulated --population 24 --generations 1 "
                                   "--measure-per-round 16 --trials 48 --db " + db,
                               path("tune"));
        ASSERT_EQ(t.code, 0) << t.out << t.err;
    }
    for (const std::string holdout : {"records", "tasks"}) {
        Output o = run_tessera("costmodel eval --db " + db + " --holdout " + holdout,
                               path("eval"));
        ASSERT_EQ(o.code, 0) << o.out << o.err;
        EXPECT_NE(o.out.find("2 workloads, 96 records"), std::string::npos) << o.out;
        EXPECT_NE(o.out.find("holdout " + holdout), std::string::npos) << o.out;
        for (const char* line : {"pairwise accuracy  ", "peak score @1 ", "peak score @5 ",
                                 "peak score @32 "}) {
            const size_t at = o.out.find(line);
            ASSERT_NE(at, std::string::npos) << line << "\n" << o.out;
            const double value = std::atof(o.out.c_str() + at + std::string(line).size());
            EXPECT_GE(value, 0.0) << line;
            EXPECT_LE(value, 1.0) << line;
        }
    }
    // records: 20% of each task's 48 records held out -> 10 + 10; tasks: one of 2 workloads.
    Output rec = run_tessera("costmodel eval --db " + db, path("eval"));
    EXPECT_NE(rec.out.find("train 76 records in 2 tasks, test 20 records in 2 tasks"),
              std::string::npos)
        << rec.out;
    Output tasks = run_tessera("costmodel eval --holdout tasks --db " + db, path("eval"));
    EXPECT_NE(tasks.out.find("train 48 records in 1 tasks, test 48 records in 1 tasks"),
              std::string::npos)
        << tasks.out;
    // Same seed, same numbers (every line but the model's training time).
    auto quality_lines = [](const std::string& out) {
        std::vector<std::string> kept;
        for (const std::string& line : lines_of(out))
            if (line.rfind("model", 0) != 0)
                kept.push_back(line);
        return kept;
    };
    EXPECT_EQ(quality_lines(run_tessera("costmodel eval --db " + db, path("eval")).out),
              quality_lines(rec.out));

    Output bad = run_tessera("costmodel eval --holdout-share 1 --db " + db, path("eval"));
    EXPECT_EQ(bad.code, 1);
    EXPECT_NE(bad.err.find("--holdout-share"), std::string::npos) << bad.err;
}

TEST_F(TuneCli, CostModelTrainWritesAPretrainedModelThatTuneStartsFrom) {
    const std::string db = path("corpus.db");
    for (const char* spec :
         {"matmul:m=13,n=7,k=127", "matmul:m=31,n=17,k=64", "matmul:m=9,n=21,k=33"}) {
        Output t = run_tessera(std::string("tune --op ") + spec +
                                   " --runner simulated --population 24 --generations 1 "
                                   "--measure-per-round 16 --trials 32 --db " + db,
                               path("tune"));
        ASSERT_EQ(t.code, 0) << t.out << t.err;
    }
    const std::string blob = path("pretrained/m.tscm");
    const Output train = run_tessera("costmodel train --db " + db + " --out " + blob, path("train"));
    ASSERT_EQ(train.code, 0) << train.out << train.err;
    EXPECT_NE(train.out.find("3 workloads, 96 records"), std::string::npos) << train.out;
    EXPECT_NE(train.out.find("trained on 96 records of 3 tasks"), std::string::npos) << train.out;
    ASSERT_TRUE(std::filesystem::is_regular_file(blob));
    std::ifstream info_file(path("pretrained/m.json"));
    const nlohmann::json info = nlohmann::json::parse(info_file);
    EXPECT_EQ(info["records"], 96);
    EXPECT_EQ(info["tasks"], 3);
    EXPECT_TRUE(info.contains("feature_layout_version"));

    // The comparison of a prior refined by a task's first records, on tasks held out.
    const Output eval = run_tessera(
        "costmodel eval --holdout tasks --holdout-share 0.34 --finetune 8 --db " + db,
        path("eval"));
    ASSERT_EQ(eval.code, 0) << eval.out << eval.err;
    for (const char* line : {"pretrained on the other tasks", "trained on the 8 records alone",
                             "pretrained, refined by them"})
        EXPECT_NE(eval.out.find(line), std::string::npos) << line << "\n" << eval.out;

    // A real tune starts from it; the simulated runner has no use for it.
    const Output real = run_tessera(std::string("tune --op ") + kSpec +
                                        " --runner local --trials 4 --population 8 "
                                        "--generations 1 --measure-per-round 4 --threads 1 "
                                        "--json --pretrained " + blob + " --db " + path("real.db"),
                                    path("real"));
    ASSERT_EQ(real.code, 0) << real.out << real.err;
    EXPECT_TRUE(parse_json_summary(real)["pretrained"].get<bool>()) << real.out;
    const Output simulated = run_tessera(std::string("tune --op ") + kSpec +
                                             " --runner simulated --trials 4 --json --db " + db,
                                         path("sim"));
    ASSERT_EQ(simulated.code, 0) << simulated.out << simulated.err;
    EXPECT_FALSE(parse_json_summary(simulated)["pretrained"].get<bool>()) << simulated.out;
    const Output refused = run_tessera(std::string("tune --op ") + kSpec +
                                           " --runner simulated --trials 4 --pretrained " + blob +
                                           " --db " + db,
                                       path("refused"));
    EXPECT_EQ(refused.code, 1);
    EXPECT_NE(refused.err.find("serves only"), std::string::npos) << refused.err;
}

TEST_F(TuneCli, CostModelFeaturesIsWired) {
    const Output o = run_tessera(std::string("costmodel features --op ") + kSpec +
                                     " --samples 5 --seed 2",
                                 path("features"));
    ASSERT_EQ(o.code, 0) << o.out << o.err;
    EXPECT_NE(o.out.find("programs/s"), std::string::npos) << o.out;
    const Output bad = run_tessera("costmodel features --op matmull:m=1", path("features"));
    EXPECT_EQ(bad.code, 1);
    EXPECT_NE(bad.err.find("matmull"), std::string::npos) << bad.err;
}

// --json on costmodel eval, train and features: one object on stdout with the numbers the text
// prints (counts that follow from the database, metrics in [0, 1]); errors stay one line.
TEST_F(TuneCli, CostModelEvalAndTrainJson) {
    const std::string db = path("t.db");
    for (const char* spec : {"matmul:m=13,n=7,k=127", "matmul:m=31,n=17,k=64"}) {
        Output t = run_tessera(std::string("tune --op ") + spec +
                                   " --runner simulated --population 24 --generations 1 "
                                   "--measure-per-round 16 --trials 32 --db " +
                                   db,
                               path("tune"));
        ASSERT_EQ(t.code, 0) << t.out << t.err;
    }
    nlohmann::json j = parse_json_summary(
        run_tessera("costmodel eval --json --holdout tasks --finetune 8 --db " + db, path("e")));
    EXPECT_EQ(j["database"], db);
    EXPECT_EQ(j["model"], "xgboost");
    EXPECT_EQ(j["holdout"], "tasks");
    EXPECT_EQ(j["corpus"]["workloads"], 2);
    EXPECT_EQ(j["corpus"]["records"], 64);
    // One of the two workloads is held out, whole.
    EXPECT_EQ(j["train_records"], 32);
    EXPECT_EQ(j["test_records"], 32);
    EXPECT_EQ(j["train_tasks"], 1);
    EXPECT_EQ(j["test_tasks"], 1);
    for (const char* metric :
         {"pairwise_accuracy", "peak_score_at_1", "peak_score_at_5", "peak_score_at_32"}) {
        ASSERT_TRUE(j[metric].is_number()) << metric << "\n" << j;
        EXPECT_GE(j[metric].get<double>(), 0.0) << metric;
        EXPECT_LE(j[metric].get<double>(), 1.0) << metric;
    }
    EXPECT_GT(j["num_pairs"].get<int64_t>(), 0);
    EXPECT_EQ(j["finetune"]["k"], 8);
    EXPECT_EQ(j["finetune"]["ranked_records"], 32 - 8);
    for (const char* way : {"pretrained_alone", "own_records_alone", "pretrained_refined"})
        EXPECT_TRUE(j["finetune"][way]["pairwise_accuracy"].is_number()) << way << "\n" << j;
    // Same seed, same metrics as the text.
    const Output text = run_tessera("costmodel eval --holdout tasks --db " + db, path("e"));
    const std::string label = "pairwise accuracy  ";
    const size_t at = text.out.find(label);
    ASSERT_NE(at, std::string::npos) << text.out;
    j = parse_json_summary(
        run_tessera("costmodel eval --json --holdout tasks --db " + db, path("e")));
    EXPECT_NEAR(j["pairwise_accuracy"].get<double>(),
                std::atof(text.out.c_str() + at + label.size()), 1e-4); // the text rounds
    EXPECT_TRUE(j["finetune"].is_null()) << j;

    const std::string blob = path("m/m.tscm");
    j = parse_json_summary(
        run_tessera("costmodel train --json --db " + db + " --out " + blob, path("train")));
    EXPECT_EQ(j["corpus"]["records"], 64);
    EXPECT_EQ(j["records"], 64);
    EXPECT_EQ(j["tasks"], 2);
    EXPECT_EQ(j["out"], blob);
    ASSERT_TRUE(fs::is_regular_file(blob));
    EXPECT_EQ(j["blob_bytes"].get<uintmax_t>(), fs::file_size(blob));
    EXPECT_EQ(j["info"], path("m/m.json"));
    EXPECT_TRUE(fs::is_regular_file(path("m/m.json")));

    const Output bad = run_tessera("costmodel eval --json --holdout-share 1 --db " + db, path("e"));
    EXPECT_EQ(bad.code, 1);
    EXPECT_EQ(bad.out, "");
    EXPECT_NE(bad.err.find("--holdout-share"), std::string::npos) << bad.err;
}

TEST_F(TuneCli, CostModelFeaturesJson) {
    const Output o = run_tessera(std::string("costmodel features --json --op ") + kSpec +
                                     " --samples 5 --seed 2",
                                 path("features"));
    ASSERT_EQ(o.code, 0) << o.out << o.err;
    const nlohmann::json j = parse_json_summary(o);
    EXPECT_EQ(j["op"], kSpec);
    EXPECT_EQ(j["programs"], 5);
    EXPECT_EQ(j["seed"], 2);
    EXPECT_GT(j["sketches"].get<int>(), 0);
    EXPECT_GT(j["features_per_store"].get<int>(), 0);
    EXPECT_GT(j["stores_per_program"].get<double>(), 0);
    EXPECT_GT(j["programs_per_sec"].get<double>(), 0);
    EXPECT_NEAR(j["features_per_sec"].get<double>(),
                j["stores_per_sec"].get<double>() * j["features_per_store"].get<double>(),
                1e-6 * j["features_per_sec"].get<double>());
}
