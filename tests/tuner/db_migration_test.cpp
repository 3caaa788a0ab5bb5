// Schema versioning: a version-1 file (built here with the raw SQL of schema 1) is migrated to
// the current version on open, in one transaction, keeping every record; the migrated record
// identities make import idempotent across the migration, and the migrated rank times
// (schema 3) are the medians.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "tessera/ir/type.h"
#include "tessera/support/error.h"
#include "tessera/te/op_library.h"
#include "tessera/te/workload_key.h"
#include "tessera/tuner/database.h"

namespace tessera::tune {
namespace {

namespace fs = std::filesystem;

/// Schema 1 as tessera 0.1 wrote it (tuner/database.cpp before version 2).
const char* kSchemaV1 = R"sql(
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE workloads (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE,
                        compute_text TEXT NOT NULL);
CREATE TABLE records (
    id INTEGER PRIMARY KEY, workload_id INTEGER NOT NULL REFERENCES workloads(id),
    target TEXT NOT NULL, fingerprint TEXT NOT NULL, isa_class TEXT NOT NULL,
    schedule_json TEXT NOT NULL, run_secs_json TEXT NOT NULL, median_secs REAL,
    error_code INTEGER NOT NULL, error_message TEXT NOT NULL,
    measure_settings_json TEXT NOT NULL, tessera_version TEXT NOT NULL,
    schema_version INTEGER NOT NULL, created_at TEXT NOT NULL);
CREATE INDEX records_by_workload
    ON records(workload_id, target, fingerprint, error_code, median_secs);
CREATE INDEX records_by_isa ON records(workload_id, target, isa_class, error_code, median_secs);
CREATE INDEX records_by_schedule ON records(workload_id, schedule_json);
CREATE TABLE cost_models (id INTEGER PRIMARY KEY, name TEXT NOT NULL, blob BLOB NOT NULL,
                          created_at TEXT NOT NULL);
INSERT INTO schema_version(version) VALUES (1);
)sql";

class TempFile {
  public:
    explicit TempFile(const std::string& name)
        : path_((fs::temp_directory_path() /
                 ("tessera_dbmig_" + std::to_string(::getpid()) + "_" + name))
                    .string()) {
        clean();
    }
    ~TempFile() { clean(); }
    const std::string& path() const { return path_; }

  private:
    void clean() {
        std::error_code ec;
        for (const char* suffix : {"", "-wal", "-shm"})
            fs::remove(path_ + suffix, ec);
    }
    std::string path_;
};

void exec_raw(sqlite3* db, const std::string& sql) {
    char* msg = nullptr;
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg), SQLITE_OK)
        << (msg ? msg : "") << "\n"
        << sql;
}

std::string quote(const std::string& s) {
    std::string q = "'";
    for (char c : s)
        q += c == '\'' ? std::string("''") : std::string(1, c);
    return q + "'";
}

te::Compute matmul(int64_t m, int64_t k, int64_t n) {
    te::Tensor a = te::placeholder({m, k}, ir::DataType::f32(), "A");
    te::Tensor b = te::placeholder({k, n}, ir::DataType::f32(), "B");
    return te::make_compute({a, b}, {te::matmul(a, b)});
}

/// Writes a version-1 file with one workload, two ok records and one error record.
std::string write_v1_file(const std::string& path) {
    te::Compute c = matmul(7, 13, 127);
    std::string text = te::canonical_compute_text(c), key = te::workload_key(c);
    sqlite3* raw = nullptr;
    EXPECT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    exec_raw(raw, kSchemaV1);
    exec_raw(raw, "INSERT INTO workloads(key, compute_text) VALUES (" + quote(key) + ", " +
                      quote(text) + ")");
    const char* cols = "INSERT INTO records(workload_id, target, fingerprint, isa_class, "
                       "schedule_json, run_secs_json, median_secs, error_code, error_message, "
                       "measure_settings_json, tessera_version, schema_version, created_at) ";
    exec_raw(raw, std::string(cols) +
                      "VALUES (1, 'llvm -mcpu=zen', 'fp_old', 'x86_64;avx2', "
                      "'{\"version\":1,\"steps\":[]}', '[0.003,0.001,0.002]', 0.002, 0, '', "
                      "'{\"repeats\":3}', '0.0.9', 1, '2026-01-01T00:00:00Z')");
    exec_raw(raw, std::string(cols) +
                      "VALUES (1, 'llvm -mcpu=zen', 'fp_old', 'x86_64;avx2', "
                      "'{\"version\":1,\"steps\":[{\"k\":1}]}', '[0.0015]', 0.0015, 0, '', "
                      "'{}', '0.0.9', 1, '2026-01-01T00:00:01Z')");
    exec_raw(raw, std::string(cols) +
                      "VALUES (1, 'llvm -mcpu=zen', 'fp_old', 'x86_64;avx2', "
                      "'{\"version\":1,\"steps\":[{\"k\":2}]}', '[]', NULL, 5, 'wrong', "
                      "'{}', '0.0.9', 1, '2026-01-01T00:00:02Z')");
    sqlite3_close(raw);
    return key;
}

TEST(DatabaseMigration, VersionOneFileIsMigratedOnOpenKeepingEveryRecord) {
    TempFile f("v1.db");
    std::string key = write_v1_file(f.path());
    {
        TuningDatabase db(f.path());
        EXPECT_EQ(db.schema_version(), TuningDatabase::kSchemaVersion);
        std::vector<TuningRecord> recs = db.records_of(key);
        ASSERT_EQ(recs.size(), 3u);
        EXPECT_DOUBLE_EQ(recs[0].rank_secs, 0.002); // measured alone: ranked by the median
        EXPECT_DOUBLE_EQ(recs[1].rank_secs, 0.0015);
        EXPECT_TRUE(std::isinf(recs[2].rank_secs)); // an error never ranks
        EXPECT_EQ(recs[0].run_secs, (std::vector<double>{0.003, 0.001, 0.002}));
        EXPECT_EQ(recs[0].schema_version, 1); // the version each record was written under
        EXPECT_EQ(recs[0].tessera_version, "0.0.9");
        EXPECT_EQ(recs[2].error_code, MeasureError::WrongAnswer);
        auto best = db.best_record(key, "llvm -mcpu=zen", "fp_old");
        ASSERT_TRUE(best.has_value());
        EXPECT_EQ(best->id, recs[1].id);
        // Migrated identities equal freshly computed ones: re-importing adds nothing.
        ImportCounts again = db.import_records(recs);
        EXPECT_EQ(again.records_added, 0);
        EXPECT_EQ(again.duplicates, 3);
        // New commits work in the migrated file.
        TuningRecord r = recs[0];
        r.id = 0;
        r.schedule_json = R"({"version":1,"steps":[{"k":3}]})";
        r.created_at.clear();
        std::vector<TuningRecord> batch = {r};
        db.commit_batch(batch);
        EXPECT_EQ(batch[0].schema_version, TuningDatabase::kSchemaVersion);
        EXPECT_EQ(db.num_records(), 4);
    }
    // The migrated schema has the new indexes and no old ones; reopening does not migrate again.
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(f.path().c_str(), &raw), SQLITE_OK);
    auto count = [&](const std::string& sql) {
        sqlite3_stmt* st = nullptr;
        EXPECT_EQ(sqlite3_prepare_v2(raw, sql.c_str(), -1, &st, nullptr), SQLITE_OK);
        int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
        sqlite3_finalize(st);
        return n;
    };
    EXPECT_EQ(count("SELECT COUNT(*) FROM sqlite_master WHERE name = 'records_by_identity'"), 1);
    EXPECT_EQ(count("SELECT COUNT(*) FROM sqlite_master WHERE name = 'records_by_isa_class'"), 1);
    EXPECT_EQ(count("SELECT COUNT(*) FROM sqlite_master WHERE name = 'records_by_isa'"), 0);
    EXPECT_EQ(count("SELECT COUNT(*) FROM records WHERE identity = ''"), 0);
    EXPECT_EQ(count("SELECT COUNT(*) FROM sqlite_master WHERE name = 'records_by_workload'"
                    " AND sql LIKE '%rank_secs%'"),
              1);
    EXPECT_EQ(count("SELECT COUNT(*) FROM records WHERE error_code = 0 AND rank_secs IS NULL"), 0);
    sqlite3_close(raw);
    TuningDatabase db(f.path());
    EXPECT_EQ(db.schema_version(), TuningDatabase::kSchemaVersion);
    EXPECT_EQ(db.num_records(), 4);
}

TEST(DatabaseMigration, VersionTwoRecordsAreRankedByTheirMediansBesideNewRankedOnes) {
    // A version-2 file: the v1 file migrated by hand the way schema 2 stood (identity column),
    // then opened. Its records rank by their medians; a new record with a rank time below its
    // own median (measured beside a baseline in a slow phase) outranks them.
    TempFile f("v2.db");
    std::string key = write_v1_file(f.path());
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(f.path().c_str(), &raw), SQLITE_OK);
    exec_raw(raw, "ALTER TABLE records ADD COLUMN identity TEXT NOT NULL DEFAULT '';"
                  "DROP INDEX records_by_isa;"
                  "CREATE INDEX records_by_isa_class"
                  "    ON records(workload_id, isa_class, error_code, median_secs);"
                  "UPDATE schema_version SET version = 2;");
    sqlite3_close(raw);
    TuningDatabase db(f.path());
    EXPECT_EQ(db.schema_version(), 3);
    std::vector<TuningRecord> recs = db.records_of(key);
    ASSERT_EQ(recs.size(), 3u);
    EXPECT_EQ(db.best_record(key, "llvm -mcpu=zen", "fp_old")->id, recs[1].id); // 1.5 ms
    TuningRecord r = recs[0];
    r.id = 0;
    r.schedule_json = R"({"version":1,"steps":[{"k":9}]})";
    r.run_secs = {0.0031}; // slower than both by its median ...
    r.rank_secs = 0.0012;  // ... but faster beside its baseline
    r.created_at.clear();
    std::vector<TuningRecord> batch = {r};
    db.commit_batch(batch);
    EXPECT_EQ(db.best_record(key, "llvm -mcpu=zen", "fp_old")->id, batch[0].id);
    EXPECT_EQ(db.top_k(key, 3)[1].id, recs[1].id);
}

TEST(DatabaseMigration, FailedMigrationLeavesTheFileAtVersionOne) {
    // A v1 file whose records table lacks a column the migration reads: the migration fails,
    // and the single transaction leaves the file exactly as it was.
    TempFile f("broken_v1.db");
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(f.path().c_str(), &raw), SQLITE_OK);
    exec_raw(raw, "CREATE TABLE schema_version (version INTEGER NOT NULL);"
                  "INSERT INTO schema_version VALUES (1);"
                  "CREATE TABLE workloads (id INTEGER PRIMARY KEY, key TEXT, compute_text TEXT);"
                  "CREATE TABLE records (id INTEGER PRIMARY KEY, workload_id INTEGER);");
    sqlite3_close(raw);
    EXPECT_THROW(TuningDatabase db(f.path()), UserError);
    ASSERT_EQ(sqlite3_open(f.path().c_str(), &raw), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(raw, "SELECT version FROM schema_version", -1, &st, nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(st, 0), 1);
    sqlite3_finalize(st);
    sqlite3_close(raw);
}

} // namespace
} // namespace tessera::tune
