// The SQLite tuning database: on a temporary file and on ":memory:".
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "tessera/ir/type.h"
#include "tessera/support/error.h"
#include "tessera/te/op_library.h"
#include "tessera/te/workload_key.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/fingerprint.h"

namespace tessera::tune {
namespace {

namespace fs = std::filesystem;
using ir::DataType;
using te::Tensor;

te::Compute matmul_compute(int64_t m, int64_t k, int64_t n) {
    Tensor a = te::placeholder({m, k}, DataType::f32(), "A");
    Tensor b = te::placeholder({k, n}, DataType::f32(), "B");
    return te::make_compute({a, b}, {te::matmul(a, b)});
}

/// A fresh directory per test, removed afterwards.
class TempDir {
  public:
    TempDir() {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        std::string name = std::string(info->test_suite_name()) + "_" + info->name();
        for (char& c : name)
            if (!std::isalnum(static_cast<unsigned char>(c)))
                c = '_';
        dir_ = fs::temp_directory_path() /
               ("tessera_tuner_" + std::to_string(::getpid()) + "_" + name);
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    std::string file(const std::string& name) const { return (dir_ / name).string(); }

  private:
    fs::path dir_;
};

TuningRecord ok_record(const std::string& key, std::vector<double> secs,
                       const std::string& schedule = R"({"version":1,"steps":[]})") {
    TuningRecord r;
    r.workload_key = key;
    r.target = "llvm -mcpu=test";
    r.fingerprint = "fp_a";
    r.isa_class = "x86_64;avx2";
    r.schedule_json = schedule;
    r.run_secs = std::move(secs);
    r.measure_settings_json = R"({"repeats":3})";
    return r;
}

TuningRecord error_record(const std::string& key, MeasureError e, const std::string& schedule) {
    TuningRecord r = ok_record(key, {}, schedule);
    r.error_code = e;
    r.error_message = "boom";
    return r;
}

std::string sched(int i) {
    return R"({"version":1,"steps":[{"kind":"x","n":)" + std::to_string(i) + "}]}";
}

/// Runs each test on a temporary file and on ":memory:".
class DatabaseTest : public ::testing::TestWithParam<bool> {
  protected:
    std::string path() const { return GetParam() ? tmp_.file("t.db") : ":memory:"; }
    TempDir tmp_;
};

TEST_P(DatabaseTest, AddWorkloadIsIdempotent) {
    TuningDatabase db(path());
    EXPECT_EQ(db.schema_version(), TuningDatabase::kSchemaVersion);
    te::Compute c = matmul_compute(7, 13, 127);
    std::string key = db.add_workload(c);
    EXPECT_EQ(key, te::workload_key(c));
    EXPECT_EQ(db.add_workload(matmul_compute(7, 13, 127)), key);
    EXPECT_EQ(db.workload_keys(), std::vector<std::string>{key});
    EXPECT_TRUE(db.has_workload(key));
    EXPECT_EQ(db.compute_text(key), te::canonical_compute_text(c));
    std::string key2 = db.add_workload(matmul_compute(7, 13, 1));
    EXPECT_NE(key2, key);
    EXPECT_EQ(db.workload_keys().size(), 2u);
    EXPECT_FALSE(db.has_workload("0123"));
    // A key that is not the text's hash is refused.
    EXPECT_THROW(db.add_workload(key, "tessera-compute v1\nsomething else\n"), UserError);
}

TEST_P(DatabaseTest, BestAndTopKOrderExcludeErrors) {
    TuningDatabase db(path());
    std::string key = db.add_workload(matmul_compute(7, 13, 127));
    std::vector<TuningRecord> batch = {
        ok_record(key, {3.0, 1.0, 2.0}, sched(0)),              // median 2
        error_record(key, MeasureError::WrongAnswer, sched(1)), // never best
        ok_record(key, {0.5, 4.0, 9.0, 1.5}, sched(2)),         // median 2.75
        ok_record(key, {2.0}, sched(3)),                        // median 2, later id
        error_record(key, MeasureError::RuntimeDevice, sched(4)),
        ok_record(key, {1.25}, sched(5)), // median 1.25: best
    };
    batch[1].run_secs = {0.001}; // a fast wrong answer must still never win
    db.commit_batch(batch);
    for (size_t i = 1; i < batch.size(); ++i)
        EXPECT_GT(batch[i].id, batch[i - 1].id);
    EXPECT_DOUBLE_EQ(batch[0].median_secs, 2.0);
    EXPECT_DOUBLE_EQ(batch[2].median_secs, 2.75);
    EXPECT_TRUE(std::isinf(batch[1].median_secs));

    auto best = db.best_record(key, "llvm -mcpu=test", "fp_a");
    ASSERT_TRUE(best.has_value());
    EXPECT_EQ(best->schedule_json, sched(5));
    std::vector<TuningRecord> top = db.top_k(key, 10);
    ASSERT_EQ(top.size(), 4u);
    EXPECT_EQ(top[0].schedule_json, sched(5));
    EXPECT_EQ(top[1].schedule_json, sched(0)); // tie at 2.0: smaller id first
    EXPECT_EQ(top[2].schedule_json, sched(3));
    EXPECT_EQ(top[3].schedule_json, sched(2));
    EXPECT_EQ(db.top_k(key, 2).size(), 2u);
    EXPECT_TRUE(db.top_k(key, 0).empty());
    EXPECT_EQ(db.records_of(key).size(), 6u);
    EXPECT_EQ(db.records_of(key)[1].error_code, MeasureError::WrongAnswer);
    EXPECT_EQ(db.num_records(), 6);
}

TEST_P(DatabaseTest, RecordsRankByRankTimeWhichDefaultsToTheMedian) {
    TuningDatabase db(path());
    std::string key = db.add_workload(matmul_compute(7, 13, 127));
    std::vector<TuningRecord> batch = {
        ok_record(key, {2.0}, sched(0)), // alone: rank 2
        ok_record(key, {3.0}, sched(1)), // beside a baseline: rank 1.5
        ok_record(key, {1.0}, sched(2)), // beside a baseline: rank 2.5
        error_record(key, MeasureError::WrongAnswer, sched(3)),
    };
    batch[1].rank_secs = 1.5;
    batch[2].rank_secs = 2.5;
    batch[3].rank_secs = 0.1; // an error never ranks, whatever it says
    db.commit_batch(batch);
    EXPECT_DOUBLE_EQ(batch[0].rank_secs, 2.0);
    EXPECT_TRUE(std::isinf(batch[3].rank_secs));
    EXPECT_EQ(db.best_record(key, "llvm -mcpu=test", "fp_a")->schedule_json, sched(1));
    EXPECT_EQ(db.best_record_for_isa(key, "llvm -mcpu=test", "x86_64;avx2")->schedule_json,
              sched(1));
    std::vector<TuningRecord> top = db.top_k(key, 10);
    ASSERT_EQ(top.size(), 3u);
    EXPECT_EQ(top[0].schedule_json, sched(1));
    EXPECT_EQ(top[1].schedule_json, sched(0));
    EXPECT_EQ(top[2].schedule_json, sched(2));
    EXPECT_DOUBLE_EQ(top[0].rank_secs, 1.5);
    EXPECT_DOUBLE_EQ(top[0].median_secs, 3.0); // what it measured, kept
    EXPECT_EQ(db.prune(1, false), 3);
    EXPECT_EQ(db.records_of(key).front().schedule_json, sched(1));

    std::vector<TuningRecord> bad = {ok_record(key, {1.0}, sched(4))};
    bad[0].rank_secs = -1;
    EXPECT_THROW(db.commit_batch(bad), UserError);
}

TEST_P(DatabaseTest, LookupTiersFilterByTargetFingerprintAndIsaClass) {
    TuningDatabase db(path());
    std::string key = db.add_workload(matmul_compute(7, 13, 127));
    TuningRecord here = ok_record(key, {2.0}, sched(0));
    TuningRecord other_machine = ok_record(key, {1.0}, sched(1));
    other_machine.fingerprint = "fp_b"; // same ISA class
    TuningRecord other_isa = ok_record(key, {0.5}, sched(2));
    other_isa.fingerprint = "fp_c";
    other_isa.isa_class = "x86_64;avx512f";
    TuningRecord other_target = ok_record(key, {0.25}, sched(3));
    other_target.target = "cuda";
    std::vector<TuningRecord> batch = {here, other_machine, other_isa, other_target};
    db.commit_batch(batch);

    EXPECT_EQ(db.best_record(key, "llvm -mcpu=test", "fp_a")->schedule_json, sched(0));
    EXPECT_EQ(db.best_record(key, "llvm -mcpu=test", "fp_b")->schedule_json, sched(1));
    EXPECT_FALSE(db.best_record(key, "llvm -mcpu=test", "fp_z").has_value());
    EXPECT_FALSE(db.best_record(key, "llvm -mcpu=other", "fp_a").has_value());
    EXPECT_EQ(db.best_record_for_isa(key, "llvm -mcpu=test", "x86_64;avx2")->schedule_json,
              sched(1));
    EXPECT_EQ(db.best_record_for_isa(key, "llvm -mcpu=test", "x86_64;avx512f")->schedule_json,
              sched(2));
    EXPECT_FALSE(db.best_record_for_isa(key, "llvm -mcpu=test", "aarch64;neon").has_value());
    EXPECT_EQ(db.top_k(key, 10, "llvm -mcpu=test").size(), 3u);
    EXPECT_EQ(db.top_k(key, 10, "", "fp_a").size(), 2u); // here, and other_target
    EXPECT_EQ(db.top_k(key, 10).front().target, "cuda");
    EXPECT_FALSE(db.best_record("nokey", "llvm -mcpu=test", "fp_a").has_value());
}

TEST_P(DatabaseTest, RecordsRoundTripEveryField) {
    TuningDatabase db(path());
    std::string key = db.add_workload(matmul_compute(1, 7, 13));
    TuningRecord r = ok_record(key, {1e-7, 3.0000000000000004e-7, 2.5e-7}, sched(7));
    r.created_at = "2026-01-02T03:04:05Z";
    r.tessera_version = "9.9.9";
    TuningRecord e = error_record(key, MeasureError::RunTimeout, sched(8));
    std::vector<TuningRecord> batch = {r, e};
    db.commit_batch(batch);
    std::vector<TuningRecord> back = db.records_of(key);
    ASSERT_EQ(back.size(), 2u);
    const TuningRecord& b = back[0];
    EXPECT_EQ(b.id, batch[0].id);
    EXPECT_EQ(b.workload_key, key);
    EXPECT_EQ(b.target, r.target);
    EXPECT_EQ(b.fingerprint, r.fingerprint);
    EXPECT_EQ(b.isa_class, r.isa_class);
    EXPECT_EQ(b.schedule_json, r.schedule_json);
    EXPECT_EQ(b.run_secs, r.run_secs); // every repeat, bit-exact
    EXPECT_DOUBLE_EQ(b.median_secs, 2.5e-7);
    EXPECT_DOUBLE_EQ(b.rank_secs, 2.5e-7);
    EXPECT_EQ(b.error_code, MeasureError::Ok);
    EXPECT_EQ(b.measure_settings_json, r.measure_settings_json);
    EXPECT_EQ(b.tessera_version, "9.9.9");
    EXPECT_EQ(b.schema_version, TuningDatabase::kSchemaVersion);
    EXPECT_EQ(b.created_at, "2026-01-02T03:04:05Z");
    const TuningRecord& be = back[1];
    EXPECT_EQ(be.error_code, MeasureError::RunTimeout);
    EXPECT_EQ(be.error_message, "boom");
    EXPECT_TRUE(std::isinf(be.median_secs));
    EXPECT_EQ(be.tessera_version, tessera_version());
    EXPECT_EQ(be.created_at.size(), 20u); // filled: YYYY-MM-DDTHH:MM:SSZ
}

TEST_P(DatabaseTest, ABadRecordRollsBackTheWholeBatch) {
    TuningDatabase db(path());
    std::string key = db.add_workload(matmul_compute(7, 13, 127));
    std::vector<TuningRecord> first = {ok_record(key, {1.0}, sched(0))};
    db.commit_batch(first);

    std::vector<std::vector<TuningRecord>> bad_batches = {
        {ok_record(key, {2.0}, sched(1)), ok_record("unknown-key", {1.0}, sched(2))},
        {ok_record(key, {2.0}, sched(1)), ok_record(key, {}, sched(2))},
        {ok_record(key, {2.0}, sched(1)), ok_record(key, {-1.0}, sched(2))},
        {ok_record(key, {2.0}, sched(1)), ok_record(key, {NAN}, sched(2))},
        {ok_record(key, {2.0}, sched(1)), ok_record(key, {1.0}, "{not json")},
    };
    for (auto& batch : bad_batches) {
        std::vector<TuningRecord> before = batch;
        EXPECT_THROW(db.commit_batch(batch), UserError);
        EXPECT_EQ(batch[0].id, 0); // the caller's records are untouched
        EXPECT_EQ(db.num_records(), 1);
    }
    // The database is still usable after the rollbacks.
    std::vector<TuningRecord> next = {ok_record(key, {0.5}, sched(3))};
    db.commit_batch(next);
    EXPECT_EQ(db.num_records(), 2);
    EXPECT_EQ(db.best_record(key, "llvm -mcpu=test", "fp_a")->schedule_json, sched(3));
}

TEST_P(DatabaseTest, HasMeasuredCoversErrorsAndFilters) {
    TuningDatabase db(path());
    std::string key = db.add_workload(matmul_compute(7, 13, 127));
    std::vector<TuningRecord> batch = {ok_record(key, {1.0}, sched(0)),
                                       error_record(key, MeasureError::CompileHost, sched(1))};
    db.commit_batch(batch);
    EXPECT_TRUE(db.has_measured(key, sched(0)));
    EXPECT_TRUE(db.has_measured(key, sched(1)));
    EXPECT_FALSE(db.has_measured(key, sched(2)));
    EXPECT_TRUE(db.has_measured(key, sched(0), "llvm -mcpu=test", "fp_a"));
    EXPECT_FALSE(db.has_measured(key, sched(0), "llvm -mcpu=test", "fp_other"));
    EXPECT_EQ(db.measured_schedules(key), (std::set<std::string>{sched(0), sched(1)}));
    EXPECT_TRUE(db.measured_schedules(key, "cuda").empty());
}

TEST_P(DatabaseTest, CostModelBlobsRoundTrip) {
    TuningDatabase db(path());
    EXPECT_FALSE(db.load_cost_model("xgb").has_value());
    std::vector<uint8_t> v1 = {0, 1, 2, 255, 0, 7};
    std::vector<uint8_t> v2(1000);
    for (size_t i = 0; i < v2.size(); ++i)
        v2[i] = uint8_t(i * 13 + 1);
    db.save_cost_model("xgb", v1);
    EXPECT_EQ(db.load_cost_model("xgb"), v1);
    db.save_cost_model("xgb", v2);
    db.save_cost_model("random", v1);
    EXPECT_EQ(db.load_cost_model("xgb"), v2); // the latest one
    EXPECT_EQ(db.load_cost_model("random"), v1);
}

INSTANTIATE_TEST_SUITE_P(FileAndMemory, DatabaseTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "File" : "Memory"; });

TEST(DatabaseFile, WalModeOnAndReopenPersists) {
    TempDir tmp;
    std::string p = tmp.file("tune.db");
    std::string key;
    int64_t id = 0;
    {
        TuningDatabase db(p);
        EXPECT_EQ(db.journal_mode(), "wal");
        key = db.add_workload(matmul_compute(7, 13, 127));
        std::vector<TuningRecord> batch = {ok_record(key, {1.0, 2.0, 3.0}, sched(0))};
        db.commit_batch(batch);
        id = batch[0].id;
        db.save_cost_model("xgb", {1, 2, 3});
    }
    TuningDatabase db(p);
    EXPECT_EQ(db.journal_mode(), "wal");
    EXPECT_EQ(db.workload_keys(), std::vector<std::string>{key});
    auto best = db.best_record(key, "llvm -mcpu=test", "fp_a");
    ASSERT_TRUE(best.has_value());
    EXPECT_EQ(best->id, id);
    EXPECT_EQ(best->run_secs, (std::vector<double>{1.0, 2.0, 3.0}));
    EXPECT_EQ(db.load_cost_model("xgb"), (std::vector<uint8_t>{1, 2, 3}));
    // Two connections to one file see each other's commits.
    TuningDatabase db2(p);
    std::vector<TuningRecord> more = {ok_record(key, {0.5}, sched(1))};
    db2.commit_batch(more);
    EXPECT_EQ(db.num_records(), 2);
    EXPECT_EQ(db.best_record(key, "llvm -mcpu=test", "fp_a")->schedule_json, sched(1));
}

TEST(DatabaseFile, MemoryDatabaseIsNotWal) {
    TuningDatabase db(":memory:");
    EXPECT_EQ(db.journal_mode(), "memory");
}

void expect_user_error_naming(const std::string& path, const std::string& fragment) {
    try {
        TuningDatabase db(path);
        ADD_FAILURE() << "opening '" << path << "' did not throw";
    } catch (const UserError& e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find(path), std::string::npos) << msg;
        EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
    }
}

TEST(DatabaseFile, GarbageFileGivesUserErrorNamingThePath) {
    TempDir tmp;
    std::string p = tmp.file("garbage.db");
    {
        std::ofstream out(p, std::ios::binary);
        for (int i = 0; i < 300; ++i)
            out << "this is not a database at all ";
    }
    expect_user_error_naming(p, "corrupted or not a database");
    std::string small = tmp.file("small.db");
    std::ofstream(small) << "hello";
    expect_user_error_naming(small, "corrupted or not a database");
}

TEST(DatabaseFile, TruncatedFileGivesUserErrorNamingThePath) {
    TempDir tmp;
    std::string p = tmp.file("trunc.db");
    {
        TuningDatabase db(p);
        std::string key = db.add_workload(matmul_compute(7, 13, 127));
        std::vector<TuningRecord> batch;
        for (int i = 0; i < 400; ++i)
            batch.push_back(ok_record(key, {1.0 + i}, sched(i)));
        db.commit_batch(batch);
    } // the last connection closes: the WAL is checkpointed into the file and removed
    ASSERT_FALSE(fs::exists(p + "-wal"));
    uintmax_t size = fs::file_size(p);
    ASSERT_GT(size, 8192u);
    fs::resize_file(p, size / 2);
    expect_user_error_naming(p, "corrupted or not a database");
}

TEST(DatabaseFile, ForeignSqliteFileIsRefused) {
    TempDir tmp;
    std::string p = tmp.file("foreign.db");
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(p.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "CREATE TABLE t(x); INSERT INTO t VALUES (1);", nullptr, nullptr,
                           nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
    expect_user_error_naming(p, "not a tessera tuning database");
}

TEST(DatabaseFile, NewerSchemaIsRefusedNamingBothVersions) {
    TempDir tmp;
    std::string p = tmp.file("newer.db");
    { TuningDatabase db(p); }
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(p.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(
        sqlite3_exec(raw, "UPDATE schema_version SET version = 42", nullptr, nullptr, nullptr),
        SQLITE_OK);
    sqlite3_close(raw);
    try {
        TuningDatabase db(p);
        ADD_FAILURE() << "a newer schema was accepted";
    } catch (const UserError& e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find(p), std::string::npos) << msg;
        EXPECT_NE(msg.find("42"), std::string::npos) << msg;
        EXPECT_NE(msg.find("version " + std::to_string(TuningDatabase::kSchemaVersion)),
                  std::string::npos)
            << msg;
    }
}

TEST(DatabaseFile, MissingDirectoryGivesUserError) {
    TempDir tmp;
    std::string p = tmp.file("no/such/dir/t.db");
    expect_user_error_naming(p, "does not exist");
}

// A full disk: one UserError naming the file and saying there is no space (SQLite's own "database
// or disk is full" leaves the user guessing which), nothing of the batch committed, and the file
// still opens with what it held. A 1 MiB tmpfs, filled up; skipped where mounting is not allowed.
TEST(DatabaseFile, FullDiskSaysNoSpaceAndKeepsWhatWasCommitted) {
    TempDir dir;
    const std::string disk = dir.file("disk");
    fs::create_directories(disk);
    if (::mount("tmpfs", disk.c_str(), "tmpfs", 0, "size=1m") != 0)
        GTEST_SKIP() << "cannot mount a tmpfs on " << disk << ": " << std::strerror(errno)
                     << " (needs root or CAP_SYS_ADMIN)";
    struct Unmount { // before TempDir removes the folder, whatever the test did
        std::string dir;
        ~Unmount() {
            if (::umount(dir.c_str()) != 0)
                ::umount2(dir.c_str(), MNT_DETACH);
        }
    } unmount{disk};
    const std::string path = disk + "/t.db";
    std::string key;
    {
        TuningDatabase db(path);
        key = db.add_workload(matmul_compute(7, 13, 1));
        std::vector<TuningRecord> first = {ok_record(key, {1e-3}, sched(0))};
        db.commit_batch(first);
        { // fill the disk up
            std::ofstream filler(disk + "/filler", std::ios::binary);
            const std::string chunk(4096, 'x');
            while (filler.write(chunk.data(), std::streamsize(chunk.size())) && filler.flush()) {
            }
        }
        // 256 records of 2 KiB: more than any room left in the journal.
        std::vector<TuningRecord> batch;
        const std::string pad(2048, 'p');
        for (int i = 1; i <= 256; ++i)
            batch.push_back(ok_record(key, {1e-3},
                                      R"({"version":1,"steps":[{"kind":"x","n":)" +
                                          std::to_string(i) + R"(,"pad":")" + pad + "\"}]}"));
        try {
            db.commit_batch(batch);
            ADD_FAILURE() << "a batch bigger than the space left was committed";
        } catch (const UserError& e) {
            const std::string m = e.what();
            EXPECT_NE(m.find("'" + path + "'"), std::string::npos) << m;
            EXPECT_NE(m.find("no space left"), std::string::npos) << m;
            EXPECT_EQ(m.find('\n'), std::string::npos) << m;
        }
        EXPECT_EQ(db.num_records(), 1);
    }
    TuningDatabase again(path); // still full
    EXPECT_EQ(again.num_records(), 1);
    EXPECT_EQ(again.integrity_check(), "ok");
}

TEST(DatabaseFile, FourProcessesCommittingIntoOneFileLoseNothing) {
    TempDir tmp;
    std::string p = tmp.file("shared.db");
    std::string key;
    {
        TuningDatabase db(p);
        key = db.add_workload(matmul_compute(7, 13, 127));
    }
    constexpr int kProcs = 4, kBatches = 10, kPerBatch = 5;
    std::vector<pid_t> kids;
    for (int proc = 0; proc < kProcs; ++proc) {
        pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            // The child opens its own connection (never one inherited across fork).
            int status = 0;
            try {
                TuningDatabase db(p);
                for (int b = 0; b < kBatches; ++b) {
                    std::vector<TuningRecord> batch;
                    for (int i = 0; i < kPerBatch; ++i)
                        batch.push_back(ok_record(key, {1.0 + i},
                                                  sched((proc * kBatches + b) * kPerBatch + i)));
                    db.commit_batch(batch);
                }
            } catch (...) {
                status = 1;
            }
            ::_exit(status);
        }
        kids.push_back(pid);
    }
    for (pid_t pid : kids) {
        int status = 0;
        ASSERT_EQ(::waitpid(pid, &status, 0), pid);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    TuningDatabase db(p);
    EXPECT_EQ(db.num_records(), kProcs * kBatches * kPerBatch);
    EXPECT_EQ(db.measured_schedules(key).size(), size_t(kProcs * kBatches * kPerBatch));
}

TEST(DatabaseFile, SigkillMidRunKeepsEveryCommittedBatchAndNoHalfBatch) {
    TempDir tmp;
    std::string p = tmp.file("killed.db");
    std::string key;
    {
        TuningDatabase db(p);
        key = db.add_workload(matmul_compute(7, 13, 127));
    }
    constexpr int kPerBatch = 7;
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::close(fds[0]);
        try {
            TuningDatabase db(p);
            // Bounded, so that a failed parent never leaves a writer running for long.
            for (int b = 0; b < 20000; ++b) {
                std::vector<TuningRecord> batch;
                for (int i = 0; i < kPerBatch; ++i)
                    batch.push_back(ok_record(key, {1.0 + i}, sched(b * kPerBatch + i)));
                db.commit_batch(batch);
                if (b == 2) {
                    char c = 'x'; // three batches are committed: the parent may kill us now
                    if (::write(fds[1], &c, 1) != 1)
                        ::_exit(2);
                }
            }
        } catch (...) {
            ::_exit(1);
        }
        ::_exit(0);
    }
    ::close(fds[1]);
    char c = 0;
    ASSERT_EQ(::read(fds[0], &c, 1), 1);
    ::close(fds[0]);
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    TuningDatabase db(p); // recovers from the WAL the killed writer left
    int64_t n = db.num_records();
    EXPECT_GE(n, 3 * kPerBatch);
    EXPECT_EQ(n % kPerBatch, 0) << n; // whole batches only
    EXPECT_EQ(int64_t(db.measured_schedules(key).size()), n);
    std::vector<TuningRecord> more = {ok_record(key, {0.5}, sched(-1))};
    db.commit_batch(more); // still writable
    EXPECT_EQ(db.num_records(), n + 1);
}

TEST(DatabaseFile, HostFingerprintRecordsAreFoundAgain) {
    // The fingerprint and key used by a tuner on this machine find their record after reopen.
    TempDir tmp;
    std::string p = tmp.file("host.db");
    const HardwareFingerprint& fp = host_fingerprint();
    {
        TuningDatabase db(p);
        std::string key = db.add_workload(matmul_compute(13, 7, 1));
        TuningRecord r = ok_record(key, {1.0}, sched(0));
        r.fingerprint = fp.hash();
        r.isa_class = fp.isa_class();
        std::vector<TuningRecord> batch = {r};
        db.commit_batch(batch);
    }
    TuningDatabase db(p);
    std::string key = te::workload_key(matmul_compute(13, 7, 1));
    EXPECT_TRUE(db.best_record(key, "llvm -mcpu=test", host_fingerprint().hash()).has_value());
    EXPECT_TRUE(db.best_record_for_isa(key, "llvm -mcpu=test", fp.isa_class()).has_value());
}

} // namespace
} // namespace tessera::tune
