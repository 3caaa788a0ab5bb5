// `tessera db` end to end through the built binary: list and stats, export then import (twice:
// idempotent), merge of two machines' databases, prune, verify catching a record whose schedule
// no longer replays, --json's one object per subcommand, and bad input (a missing, truncated or
// garbage database, garbage JSONL lines) giving one clear line and exit 1 or line-numbered
// warnings.
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/te/op_registry.h"
#include "tessera/te/workload_key.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/lookup.h"

namespace {

namespace fs = std::filesystem;
using tessera::tune::MeasureError;
using tessera::tune::TuningDatabase;
using tessera::tune::TuningRecord;

constexpr const char* kSpec = "matmul:m=13,n=7,k=127";
/// A schedule of kSpec's matmul stage that replays (an imperfect split: 13 = 4 * 3 + 1) and the
/// same schedule edited to split an iterator the stage does not have.
const std::string kGoodSchedule =
    R"({"version":1,"steps":[{"kind":"split","stage":2,"iter":0,"lengths":[4],"inner_to_outer":true}]})";
const std::string kBrokenSchedule =
    R"({"version":1,"steps":[{"kind":"split","stage":2,"iter":99,"lengths":[4],"inner_to_outer":true}]})";

struct Output {
    int code = -1;
    std::string out, err;
};

std::string read_file(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

class DbCli : public ::testing::Test {
  protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::path(::testing::TempDir()) /
               ("tessera_db_cli_" + std::to_string(::getpid()) + "_" + info->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    /// `tessera ARGS`, run through `as` (a command prefix such as setpriv's) when given.
    Output run(const std::string& args, const std::string& as = "") const {
        const std::string out = path("cmd.out"), err = path("cmd.err");
        const std::string cmd = as + TESSERA_BINARY + " " + args + " >" + out + " 2>" + err;
        int status = std::system(cmd.c_str());
        Output o;
        o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        o.out = read_file(out);
        o.err = read_file(err);
        return o;
    }

    /// A database with kSpec's workload and `n` ok records (schedule `schedule` for the
    /// fastest, the empty schedule for the others) measured on machine `fp`, plus one error
    /// record; every record names its op spec in its measure settings.
    std::string make_db(const std::string& name, const std::string& fp, int n,
                        const std::string& schedule = kGoodSchedule,
                        bool with_op_spec = true) const {
        const std::string p = path(name);
        TuningDatabase db(p);
        std::string key = db.add_workload(tessera::te::make_op(kSpec).compute);
        std::vector<TuningRecord> batch;
        for (int i = 0; i <= n; ++i) {
            TuningRecord r;
            r.workload_key = key;
            r.target = "llvm -mcpu=cpu_" + fp;
            r.fingerprint = fp;
            r.isa_class = "x86_64;isa_" + fp;
            r.schedule_json =
                i == n - 1 ? schedule : R"({"version":1,"steps":[],"n":)" + std::to_string(i) + "}";
            r.measure_settings_json =
                with_op_spec ? std::string(R"({"op_spec":")") + kSpec + R"("})" : "{}";
            if (i == n) {
                r.error_code = MeasureError::WrongAnswer;
                r.error_message = "mismatch";
            } else {
                r.run_secs = {1e-3 * (n - i), 2e-3 * (n - i)};
            }
            batch.push_back(r);
        }
        db.commit_batch(batch);
        return p;
    }

    fs::path dir_;
};

TEST_F(DbCli, ListAndStatsDescribeTheDatabase) {
    std::string db = make_db("a.db", "fpA", 3);
    Output o = run("db list --db " + db);
    ASSERT_EQ(o.code, 0) << o.err;
    std::string key = tessera::te::workload_key(tessera::te::make_op(kSpec).compute);
    EXPECT_NE(o.out.find(key.substr(0, 16)), std::string::npos) << o.out;
    EXPECT_NE(o.out.find(kSpec), std::string::npos) << o.out;
    // 4 records, 3 ok, best median = 1.5 ms (1 ms and 2 ms repeats of the fastest).
    EXPECT_NE(o.out.find("       4         3         1.5"), std::string::npos) << o.out;

    o = run("db stats --db " + db);
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_NE(o.out.find("records      4 (3 ok, 1 errors)"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("fpA"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("llvm -mcpu=cpu_fpA"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("schema version " + std::to_string(TuningDatabase::kSchemaVersion)),
              std::string::npos)
        << o.out;
}

TEST_F(DbCli, ExportImportRoundTripsAndImportIsIdempotent) {
    std::string src = make_db("src.db", "fpA", 4);
    std::string file = path("out/records.jsonl");
    Output o = run("db export --db " + src + " -o " + file);
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_NE(o.out.find("exported 5 records of 1 workloads"), std::string::npos) << o.out;
    EXPECT_EQ(read_file(file).rfind(R"({"format":"tessera-records","version":1)", 0), 0u);

    std::string dst = path("dst.db");
    o = run("db import " + file + " --db " + dst);
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_NE(o.out.find("imported 5 records and 1 new workloads"), std::string::npos) << o.out;
    o = run("db import " + file + " --db " + dst);
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_NE(o.out.find("imported 0 records and 0 new workloads"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("5 already present"), std::string::npos) << o.out;
    TuningDatabase a(src), b(dst);
    std::string key = a.workload_keys().at(0);
    auto ra = a.records_of(key), rb = b.records_of(key);
    ASSERT_EQ(ra.size(), rb.size());
    for (size_t i = 0; i < ra.size(); ++i) {
        EXPECT_EQ(tessera::tune::record_identity(ra[i]), tessera::tune::record_identity(rb[i]));
        EXPECT_EQ(ra[i].measure_settings_json, rb[i].measure_settings_json);
        EXPECT_EQ(ra[i].error_code, rb[i].error_code);
    }

    // --best-only: one record (the single task's best).
    o = run("db export --best-only --db " + src + " -o " + path("best.jsonl"));
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_NE(o.out.find("exported 1 records"), std::string::npos) << o.out;
}

TEST_F(DbCli, MergeKeepsBothMachinesAndEachLooksUpItsOwn) {
    std::string a = make_db("a.db", "fpA", 3);
    std::string b = make_db("b.db", "fpB", 2);
    std::string c = path("merged/c.db");
    Output o = run("db merge " + a + " " + b + " -o " + c);
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_NE(o.out.find(c + ": 7 records"), std::string::npos) << o.out;
    o = run("db merge " + a + " " + b + " -o " + c); // again: nothing new
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_NE(o.out.find(c + ": 7 records"), std::string::npos) << o.out;

    TuningDatabase db(c);
    std::string key = db.workload_keys().at(0);
    for (const char* fp : {"fpA", "fpB"}) {
        tessera::tune::TuneTarget k{std::string("llvm -mcpu=cpu_") + fp, fp,
                                    std::string("x86_64;isa_") + fp};
        tessera::tune::LookupResult r = tessera::tune::lookup_best(db, key, k);
        ASSERT_EQ(r.tier, tessera::tune::LookupTier::Exact) << fp;
        EXPECT_EQ(r.record->fingerprint, fp);
        EXPECT_EQ(r.record->schedule_json, kGoodSchedule);
        EXPECT_EQ(r.foreign_records, std::string(fp) == "fpA" ? 2 : 3);
    }
}

TEST_F(DbCli, PruneKeepsTheBest) {
    std::string db = make_db("p.db", "fpA", 5);
    Output o = run("db prune --keep-best 2 --db " + db);
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_NE(o.out.find("pruned 4 of 6 records"), std::string::npos) << o.out;
    TuningDatabase d(db);
    EXPECT_EQ(d.num_records(), 2);
    EXPECT_EQ(d.top_k(d.workload_keys().at(0), 1).at(0).schedule_json, kGoodSchedule);
    EXPECT_EQ(run("db prune --keep-best -1 --db " + db).code, 1);
}

TEST_F(DbCli, VerifyReplaysBestRecordsAndCatchesABrokenOne) {
    std::string good = make_db("good.db", "fpA", 2);
    Output o = run("db verify --db " + good);
    EXPECT_EQ(o.code, 0) << o.out << o.err;
    EXPECT_NE(o.out.find("integrity    ok"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("best records 1 replay, 0 do not, 0 unverifiable"), std::string::npos)
        << o.out;

    std::string broken = make_db("broken.db", "fpA", 2, kBrokenSchedule);
    o = run("db verify --db " + broken);
    EXPECT_EQ(o.code, 1) << o.out;
    EXPECT_NE(o.out.find("BROKEN record 2"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("iterator 99"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("0 replay, 1 do not"), std::string::npos) << o.out;

    std::string no_spec = make_db("nospec.db", "fpA", 2, kGoodSchedule, false);
    o = run("db verify --db " + no_spec);
    EXPECT_EQ(o.code, 1) << o.out; // nothing could be checked: not a pass
    EXPECT_NE(o.out.find("unverifiable record 2"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("0 replay, 0 do not, 1 unverifiable"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("--tasks-of MODEL"), std::string::npos) << o.out;
}

// --json: one JSON object on stdout per subcommand, with the numbers the text reports.

/// The one JSON object `o` printed on stdout (a test failure when it printed anything else).
nlohmann::json json_of(const Output& o) {
    const auto lines = std::count(o.out.begin(), o.out.end(), '\n');
    EXPECT_EQ(lines, 1) << "--json must print one line\n" << o.out << o.err;
    nlohmann::json j = nlohmann::json::parse(o.out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << o.out;
    return j;
}

TEST_F(DbCli, JsonListAndStatsCountTheRecords) {
    const std::string db = make_db("a.db", "fpA", 3); // 3 ok records and 1 error
    const std::string key = tessera::te::workload_key(tessera::te::make_op(kSpec).compute);
    Output o = run("db list --json --db " + db);
    ASSERT_EQ(o.code, 0) << o.err;
    nlohmann::json j = json_of(o);
    EXPECT_EQ(j["database"], db);
    ASSERT_EQ(j["workloads"].size(), 1u) << j;
    const nlohmann::json& w = j["workloads"][0];
    EXPECT_EQ(w["key"], key);
    EXPECT_EQ(w["op"], kSpec);
    EXPECT_EQ(w["records"], 4);
    EXPECT_EQ(w["ok"], 3);
    EXPECT_DOUBLE_EQ(w["best_ms"].get<double>(), 1.5); // median of the fastest's 1 and 2 ms

    o = run("db stats --db " + db + " --json");
    ASSERT_EQ(o.code, 0) << o.err;
    j = json_of(o);
    EXPECT_EQ(j["schema_version"], TuningDatabase::kSchemaVersion);
    EXPECT_EQ(j["workloads"], 1);
    EXPECT_EQ(j["records"], 4);
    EXPECT_EQ(j["ok"], 3);
    EXPECT_EQ(j["errors"], 1);
    EXPECT_EQ(j["fingerprints"],
              nlohmann::json::parse(R"([{"fingerprint":"fpA","isa_class":"x86_64;isa_fpA",)"
                                    R"("records":4}])"));
    EXPECT_EQ(j["targets"],
              nlohmann::json::parse(R"([{"target":"llvm -mcpu=cpu_fpA","records":4}])"));
    ASSERT_EQ(j["best"].size(), 1u) << j;
    EXPECT_EQ(j["best"][0]["workload_key"], key);
    EXPECT_EQ(j["best"][0]["record_id"], 3); // the third record: the fastest
    EXPECT_DOUBLE_EQ(j["best"][0]["best_ms"].get<double>(), 1.5);

    // An error stays one line on stderr, and stdout stays empty.
    o = run("db list --json --db " + path("missing.db"));
    EXPECT_EQ(o.code, 1);
    EXPECT_EQ(o.out, "");
    EXPECT_EQ(o.err, "error: tuning database '" + path("missing.db") + "': no such file\n");
}

TEST_F(DbCli, JsonExportImportMergeAndPruneReportTheirCounts) {
    const std::string src = make_db("src.db", "fpA", 4);
    const std::string file = path("records.jsonl");
    Output o = run("db export --json --db " + src + " -o " + file);
    ASSERT_EQ(o.code, 0) << o.err;
    nlohmann::json j = json_of(o);
    EXPECT_EQ(j["output"], file);
    EXPECT_EQ(j["records"], 5);
    EXPECT_EQ(j["workloads"], 1);
    EXPECT_TRUE(fs::exists(file));

    const std::string dst = path("dst.db");
    j = json_of(run("db import --json " + file + " --db " + dst));
    EXPECT_EQ(j["records_added"], 5);
    EXPECT_EQ(j["workloads_added"], 1);
    EXPECT_EQ(j["duplicates"], 0);
    j = json_of(run("db import --json " + file + " --db " + dst)); // again: nothing new
    EXPECT_EQ(j["records_added"], 0);
    EXPECT_EQ(j["duplicates"], 5);
    EXPECT_EQ(j["problems"], nlohmann::json::array());

    const std::string other = make_db("b.db", "fpB", 2);
    const std::string merged = path("m.db");
    j = json_of(run("db merge --json " + src + " " + other + " -o " + merged));
    ASSERT_EQ(j["sources"].size(), 2u) << j;
    EXPECT_EQ(j["sources"][0]["database"], src);
    EXPECT_EQ(j["sources"][0]["records_added"], 5);
    EXPECT_EQ(j["sources"][1]["records_added"], 3);
    EXPECT_EQ(j["records"], 8);

    j = json_of(run("db prune --json --keep-best 2 --db " + merged));
    EXPECT_EQ(j["records_before"], 8);
    EXPECT_EQ(j["removed"], 4); // per machine: 2 ok records kept, the error dropped
    EXPECT_EQ(j["records_after"], 4);
    EXPECT_EQ(TuningDatabase(merged).num_records(), 4);
}

TEST_F(DbCli, JsonVerifyListsTheProblemsAndKeepsTheExitCode) {
    Output o = run("db verify --json --db " + make_db("good.db", "fpA", 2));
    EXPECT_EQ(o.code, 0) << o.out << o.err;
    nlohmann::json j = json_of(o);
    EXPECT_EQ(j["integrity"], "ok");
    EXPECT_EQ(j["verified"], 1);
    EXPECT_EQ(j["broken"], 0);
    EXPECT_EQ(j["unverifiable"], 0);
    EXPECT_EQ(j["problems"], nlohmann::json::array());

    o = run("db verify --json --db " + make_db("broken.db", "fpA", 2, kBrokenSchedule));
    EXPECT_EQ(o.code, 1) << o.out;
    j = json_of(o);
    EXPECT_EQ(j["verified"], 0);
    EXPECT_EQ(j["broken"], 1);
    ASSERT_EQ(j["problems"].size(), 1u) << j;
    const nlohmann::json& p = j["problems"][0];
    EXPECT_EQ(p["record_id"], 2);
    EXPECT_EQ(p["status"], "broken");
    EXPECT_EQ(p["fingerprint"], "fpA");
    EXPECT_EQ(p["op_spec"], kSpec);
    EXPECT_NE(p["reason"].get<std::string>().find("iterator 99"), std::string::npos) << p;

    o = run("db verify --json --db " + make_db("nospec.db", "fpA", 2, kGoodSchedule, false));
    EXPECT_EQ(o.code, 1) << o.out;
    j = json_of(o);
    EXPECT_EQ(j["unverifiable"], 1);
    ASSERT_EQ(j["problems"].size(), 1u) << j;
    EXPECT_EQ(j["problems"][0]["status"], "unverifiable");
    EXPECT_TRUE(j["problems"][0]["op_spec"].is_null());
}

TEST_F(DbCli, BadDatabasesGiveOneLineErrorsAndExitOne) {
    Output o = run("db list --db " + path("missing.db"));
    EXPECT_EQ(o.code, 1);
    EXPECT_EQ(o.err, "error: tuning database '" + path("missing.db") + "': no such file\n");

    std::string garbage = path("garbage.db");
    std::ofstream(garbage) << std::string(5000, 'x');
    for (const char* cmd : {"list", "stats", "verify", "prune --keep-best 1"}) {
        o = run(std::string("db ") + cmd + " --db " + garbage);
        EXPECT_EQ(o.code, 1) << cmd;
        EXPECT_NE(o.err.find("corrupted or not a database"), std::string::npos) << o.err;
        EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
    }

    // A real database cut in half (its last connection closed, so no WAL holds the rest).
    std::string db = path("t.db");
    {
        TuningDatabase d(db);
        std::string key = d.add_workload(tessera::te::make_op(kSpec).compute);
        std::vector<TuningRecord> batch;
        for (int i = 0; i < 300; ++i) {
            TuningRecord r;
            r.workload_key = key;
            r.target = "llvm";
            r.fingerprint = "f";
            r.isa_class = "c";
            r.schedule_json = R"({"n":)" + std::to_string(i) + "}";
            r.run_secs = {1.0 + i};
            batch.push_back(r);
        }
        d.commit_batch(batch);
    }
    fs::resize_file(db, fs::file_size(db) / 2);
    o = run("db stats --db " + db);
    EXPECT_EQ(o.code, 1);
    EXPECT_NE(o.err.find("corrupted or not a database"), std::string::npos) << o.err;
    o = run("db merge " + db + " " + garbage + " -o " + path("m.db"));
    EXPECT_EQ(o.code, 1);
    EXPECT_EQ(o.err.rfind("error: ", 0), 0u) << o.err;
}

TEST_F(DbCli, AReadOnlyDatabaseIsReadAndRefusesWritesInOneLine) {
    // A database on a read-only mount: file and folder unwritable. Root writes them anyway, so
    // as root the commands run as an unprivileged user (setpriv); skipped where none can.
    fs::create_directories(path("ro"));
    const std::string db = make_db("ro/t.db", "fpA", 3);
    ASSERT_EQ(run("db export --db " + make_db("w.db", "fpB", 2) + " -o " + path("more.jsonl")).code,
              0);
    const std::string as =
        geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
    fs::permissions(path("ro"), fs::perms::owner_read | fs::perms::owner_exec |
                                    fs::perms::group_read | fs::perms::group_exec |
                                    fs::perms::others_read | fs::perms::others_exec);
    fs::permissions(db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    fs::permissions(path("more.jsonl"), fs::perms::all);
    auto run_as = [&](const std::string& args) { return run(args, as); };
    if (run_as("--version").code != 0) {
        fs::permissions(path("ro"), fs::perms::owner_all);
        GTEST_SKIP() << "cannot run tessera as an unprivileged user here";
    }
    Output o = run_as("db list --db " + db);
    EXPECT_EQ(o.code, 0) << o.err;
    EXPECT_NE(o.out.find("matmul"), std::string::npos) << o.out;
    o = run_as("db stats --db " + db);
    EXPECT_EQ(o.code, 0) << o.err;
    EXPECT_FALSE(fs::exists(db + "-wal")) << "reading wrote beside the file";
    // A write: one error line, exit 1, the file unchanged.
    const std::string before = read_file(db);
    o = run_as("db import " + path("more.jsonl") + " --db " + db);
    EXPECT_EQ(o.code, 1) << o.out << o.err;
    EXPECT_EQ(o.err.rfind("error: ", 0), 0u) << o.err;
    EXPECT_EQ(read_file(db), before);
    fs::permissions(path("ro"), fs::perms::owner_all);
    fs::permissions(db, fs::perms::owner_read | fs::perms::owner_write);
}

// Text that is not UTF-8 in a record (only a damaged file holds any): the JSON reports show it
// as U+FFFD instead of ending in an internal error (exit 2), and export, whose lines must carry
// records byte for byte, refuses in one line naming the file.
TEST_F(DbCli, TextThatIsNotUtf8IsShownOrRefusedNeverFatal) {
    const std::string db = make_db("bad_text.db", "fpA", 3);
    sqlite3* s = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &s), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(s, "UPDATE records SET target = target || CAST(X'FF' AS TEXT)", nullptr,
                           nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(s);
    sqlite3_close(s);

    Output o = run("db stats --json --db " + db);
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_TRUE(nlohmann::json::accept(o.out)) << o.out;
    EXPECT_NE(o.out.find("llvm -mcpu=cpu_fpA\xEF\xBF\xBD"), std::string::npos) << o.out;

    o = run("db export --db " + db + " -o " + path("out.jsonl"));
    EXPECT_EQ(o.code, 1) << o.err;
    EXPECT_EQ(o.err.rfind("error: tuning database '" + db + "': record ", 0), 0u) << o.err;
    EXPECT_NE(o.err.find("not UTF-8"), std::string::npos) << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
    EXPECT_FALSE(fs::exists(path("out.jsonl")));
}

TEST_F(DbCli, ImportReportsGarbageLinesWithNumbers) {
    std::string src = make_db("src.db", "fpA", 3);
    std::string file = path("r.jsonl");
    ASSERT_EQ(run("db export --db " + src + " -o " + file).code, 0);
    std::string text = read_file(file);
    text += "{\"type\":\"record\", \"workload_key\": \"abc\"\n"; // line 7: half-written
    text += "garbage\n";                                         // line 8
    std::ofstream(file) << text;
    Output o = run("db import " + file + " --db " + path("d.db"));
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_NE(o.err.find("line 7: "), std::string::npos) << o.err;
    EXPECT_NE(o.err.find("line 8: "), std::string::npos) << o.err;
    EXPECT_NE(o.out.find("imported 4 records"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("2 lines skipped"), std::string::npos) << o.out;

    std::ofstream(path("not.jsonl")) << "hello\n";
    o = run("db import " + path("not.jsonl") + " --db " + path("d.db"));
    EXPECT_EQ(o.code, 1);
    EXPECT_NE(o.err.find("not a tessera-records file"), std::string::npos) << o.err;
    EXPECT_EQ(run("db import " + path("nope.jsonl") + " --db " + path("d.db")).code, 1);
    // A refused import into a database that did not exist leaves no file; one that existed
    // keeps its records.
    o = run("db import " + path("not.jsonl") + " --db " + path("fresh.db"));
    EXPECT_EQ(o.code, 1);
    EXPECT_FALSE(fs::exists(path("fresh.db")));
    EXPECT_TRUE(fs::exists(path("d.db")));
    o = run("db list --db " + path("d.db"));
    EXPECT_EQ(o.code, 0) << o.err;
    EXPECT_FALSE(o.out.empty());
}

} // namespace
