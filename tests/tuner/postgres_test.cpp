// The PostgreSQL engine of the tuning database, against a real server: TESSERA_TEST_POSTGRES_URL
// names a database on it whose user may create databases (scripts/with_postgres.sh starts a
// throwaway server and sets it; scripts/test.sh runs ctest under it). Each test works in a
// fresh database of its own, dropped afterwards. Most checks run the same operations on the
// SQLite engine (":memory:") and compare: both engines must answer every method alike.
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <tuple>

#include "tessera/ir/type.h"
#include "tessera/support/error.h"
#include "tessera/support/rng.h"
#include "tessera/te/op_library.h"
#include "tessera/te/workload_key.h"
#include "tessera/tuner/database.h"

namespace tessera::tune {
namespace {

namespace fs = std::filesystem;
using ir::DataType;
using te::Tensor;

const char* kSkipReason = "[SKIP] no PostgreSQL server: set TESSERA_TEST_POSTGRES_URL";

std::string server_url() {
    const char* url = std::getenv("TESSERA_TEST_POSTGRES_URL");
    return url ? url : "";
}

/// `url` with its database name replaced by `dbname` (query parameters kept).
std::string with_database(const std::string& url, const std::string& dbname) {
    size_t authority = url.find("://");
    size_t slash = url.find('/', authority + 3);
    size_t query = url.find('?', authority + 3);
    std::string head = url.substr(0, slash != std::string::npos ? slash : query);
    std::string tail = query != std::string::npos ? url.substr(query) : "";
    return head + "/" + dbname + tail;
}

/// Runs one statement on the server's test database (CREATE/DROP DATABASE, raw SQL).
void run_sql(const std::string& url, const std::string& sql) {
    PGconn* c = PQconnectdb(url.c_str());
    ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
    PGresult* r = PQexec(c, sql.c_str());
    EXPECT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << sql << ": " << PQerrorMessage(c);
    PQclear(r);
    PQfinish(c);
}

/// A fresh, empty database for one test; dropped on destruction.
class FreshDatabase {
  public:
    FreshDatabase() {
        static int counter = 0;
        name_ = "tessera_t" + std::to_string(::getpid()) + "_" + std::to_string(++counter);
        run_sql(server_url(), "CREATE DATABASE " + name_);
        url_ = with_database(server_url(), name_);
    }
    ~FreshDatabase() {
        run_sql(server_url(), "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    }
    const std::string& url() const { return url_; }

  private:
    std::string name_, url_;
};

class PostgresTest : public ::testing::Test {
  protected:
    void SetUp() override {
        if (server_url().empty())
            GTEST_SKIP() << kSkipReason;
        fresh_ = std::make_unique<FreshDatabase>();
    }
    const std::string& url() const { return fresh_->url(); }
    std::unique_ptr<FreshDatabase> fresh_;
};

te::Compute matmul_compute(int64_t m, int64_t k, int64_t n) {
    Tensor a = te::placeholder({m, k}, DataType::f32(), "A");
    Tensor b = te::placeholder({k, n}, DataType::f32(), "B");
    return te::make_compute({a, b}, {te::matmul(a, b)});
}

std::string sched(int i) {
    return R"({"version":1,"steps":[{"kind":"x","n":)" + std::to_string(i) + "}]}";
}

/// A record with every field set; times random, some ties, some errors.
TuningRecord random_record(Rng& rng, const std::string& key, int i) {
    TuningRecord r;
    r.workload_key = key;
    r.target = rng.uniform_int(0, 1) ? "llvm -mcpu=skylake" : "llvm -mcpu=znver3";
    r.fingerprint = rng.uniform_int(0, 1) ? "fp_a" : "fp_b";
    r.isa_class = rng.uniform_int(0, 3) ? "x86_64;avx2" : "x86_64;avx512";
    r.schedule_json = sched(i);
    r.measure_settings_json = R"({"repeats":)" + std::to_string(i % 7 + 1) + "}";
    if (rng.uniform_int(0, 4) == 0) {
        r.error_code = MeasureError(rng.uniform_int(1, 8));
        r.error_message = "failure " + std::to_string(i) + " with 'quotes' and \\ backslash";
    } else {
        int repeats = int(rng.uniform_int(1, 5));
        for (int j = 0; j < repeats; ++j) // 1/3-like values test exact round trips
            r.run_secs.push_back(double(rng.uniform_int(1, 13)) / 3.0 * 1e-3);
        if (rng.uniform_int(0, 1)) // measured beside a baseline: ranked otherwise than by median
            r.rank_secs = double(rng.uniform_int(1, 13)) / 7.0 * 1e-3;
    }
    return r;
}

/// Fills db with the same workloads and records every time (fixed seed); returns the keys.
std::vector<std::string> fill(TuningDatabase& db, int records_per_workload = 40) {
    std::vector<std::string> keys;
    for (auto [m, k, n] : {std::tuple{7, 13, 1}, std::tuple{1, 127, 13}})
        keys.push_back(db.add_workload(matmul_compute(m, k, n)));
    Rng rng(7);
    int i = 0;
    for (const std::string& key : keys)
        for (int b = 0; b < 4; ++b) { // several batches
            std::vector<TuningRecord> batch;
            for (int j = 0; j < records_per_workload / 4; ++j)
                batch.push_back(random_record(rng, key, i++));
            db.commit_batch(batch);
        }
    return keys;
}

void expect_same_record(const TuningRecord& a, const TuningRecord& b, bool same_id = true) {
    if (same_id) {
        EXPECT_EQ(a.id, b.id);
    }
    EXPECT_EQ(a.workload_key, b.workload_key);
    EXPECT_EQ(a.target, b.target);
    EXPECT_EQ(a.fingerprint, b.fingerprint);
    EXPECT_EQ(a.isa_class, b.isa_class);
    EXPECT_EQ(a.schedule_json, b.schedule_json);
    EXPECT_EQ(a.run_secs, b.run_secs); // bit-exact doubles
    EXPECT_TRUE(a.median_secs == b.median_secs) << a.median_secs << " vs " << b.median_secs;
    EXPECT_TRUE(a.rank_secs == b.rank_secs) << a.rank_secs << " vs " << b.rank_secs;
    EXPECT_EQ(a.error_code, b.error_code);
    EXPECT_EQ(a.error_message, b.error_message);
    EXPECT_EQ(a.measure_settings_json, b.measure_settings_json);
    EXPECT_EQ(a.tessera_version, b.tessera_version);
    EXPECT_EQ(a.schema_version, b.schema_version);
    EXPECT_EQ(a.created_at, b.created_at);
}

void expect_same_records(const std::vector<TuningRecord>& a, const std::vector<TuningRecord>& b,
                         bool same_ids = true) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
        expect_same_record(a[i], b[i], same_ids);
}

TEST_F(PostgresTest, SchemaIsCreatedOnFirstOpenAndKeptOnReopen) {
    {
        TuningDatabase db(url());
        EXPECT_EQ(db.schema_version(), TuningDatabase::kSchemaVersion);
        EXPECT_EQ(db.journal_mode(), "server");
        EXPECT_EQ(db.num_records(), 0);
        EXPECT_TRUE(db.workload_keys().empty());
        EXPECT_EQ(db.integrity_check(), "ok");
        db.add_workload(matmul_compute(7, 13, 1));
    }
    TuningDatabase again(url());
    EXPECT_EQ(again.schema_version(), TuningDatabase::kSchemaVersion);
    EXPECT_EQ(again.workload_keys().size(), 1u);
}

TEST_F(PostgresTest, NewerSchemaAndForeignDatabasesAreRefused) {
    { TuningDatabase db(url()); }
    run_sql(url(), "UPDATE schema_version SET version = 99");
    try {
        TuningDatabase db(url());
        FAIL() << "a newer schema must be refused";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("schema version 99"), std::string::npos) << e.what();
    }
    FreshDatabase other;
    run_sql(other.url(), "CREATE TABLE unrelated (x INTEGER)");
    EXPECT_THROW(TuningDatabase db(other.url()), UserError);
}

TEST_F(PostgresTest, VersionTwoDatabaseIsMigratedRankingByMedians) {
    std::string key;
    {
        TuningDatabase db(url());
        key = db.add_workload(matmul_compute(7, 13, 1));
        Rng rng(5);
        std::vector<TuningRecord> batch;
        for (int i = 0; i < 6; ++i) {
            batch.push_back(random_record(rng, key, i));
            batch.back().error_code = MeasureError::Ok;
            batch.back().error_message.clear();
            batch.back().run_secs = {double(6 - i) * 1e-3};
            batch.back().rank_secs = 0;
            batch.back().target = "llvm -mcpu=znver3";
            batch.back().fingerprint = "fp_a";
        }
        db.commit_batch(batch);
    }
    // Back to schema 2 as it stood: no rank column, indexes by median.
    run_sql(url(), "ALTER TABLE records DROP COLUMN rank_secs;"
                   "CREATE INDEX records_by_workload_v2"
                   "    ON records(workload_id, target, fingerprint, error_code, median_secs);"
                   "UPDATE schema_version SET version = 2");
    TuningDatabase db(url());
    EXPECT_EQ(db.schema_version(), 3);
    EXPECT_EQ(db.integrity_check(), "ok");
    for (const TuningRecord& r : db.records_of(key))
        EXPECT_EQ(r.rank_secs, r.median_secs);
    EXPECT_EQ(db.best_record(key, "llvm -mcpu=znver3", "fp_a")->schedule_json, sched(5));
}

TEST_F(PostgresTest, WorkloadsBehaveAsInSqlite) {
    TuningDatabase db(url());
    te::Compute c = matmul_compute(13, 7, 127);
    std::string key = db.add_workload(c);
    EXPECT_EQ(db.add_workload(matmul_compute(13, 7, 127)), key); // idempotent
    EXPECT_EQ(db.compute_text(key), te::canonical_compute_text(c));
    EXPECT_TRUE(db.has_workload(key));
    EXPECT_FALSE(db.has_workload("0123"));
    std::string key2 = db.add_workload(matmul_compute(1, 7, 13));
    std::vector<std::string> sorted = {key, key2};
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(db.workload_keys(), sorted);
    EXPECT_THROW(db.add_workload(key, "tessera-compute v1\nsomething else\n"), UserError);
    // A stored text that differs from the one added again (a corrupted row) is reported.
    run_sql(url(), "UPDATE workloads SET compute_text = 'tampered' WHERE key = '" + key + "'");
    EXPECT_THROW(db.add_workload(c), UserError);
}

TEST_F(PostgresTest, CommitRoundTripsEveryFieldAndMatchesSqlite) {
    TuningDatabase pg(url());
    TuningDatabase lite(":memory:");
    std::vector<std::string> keys = fill(pg);
    ASSERT_EQ(fill(lite), keys);
    EXPECT_EQ(pg.num_records(), lite.num_records());
    for (const std::string& key : keys) {
        std::vector<TuningRecord> p = pg.records_of(key), l = lite.records_of(key);
        ASSERT_EQ(p.size(), 40u);
        // created_at is the commit time: equalize it before comparing the rest.
        for (size_t i = 0; i < p.size(); ++i)
            l[i].created_at = p[i].created_at;
        expect_same_records(p, l);
        for (size_t i = 1; i < p.size(); ++i)
            EXPECT_GT(p[i].id, p[i - 1].id);
        for (const TuningRecord& r : p) {
            EXPECT_EQ(r.schema_version, TuningDatabase::kSchemaVersion);
            EXPECT_EQ(r.tessera_version, tessera_version());
            EXPECT_EQ(r.created_at.size(), 20u) << r.created_at;
            EXPECT_EQ(std::isinf(r.median_secs), r.error_code != MeasureError::Ok);
        }
    }
    // The fields commit_batch sets come back on the batch itself.
    Rng rng(3);
    std::vector<TuningRecord> batch = {random_record(rng, keys[0], 1000)};
    batch[0].error_code = MeasureError::Ok;
    batch[0].run_secs = {3e-3, 1e-3, 2e-3};
    pg.commit_batch(batch);
    EXPECT_EQ(batch[0].median_secs, 2e-3);
    EXPECT_GT(batch[0].id, 0);
    expect_same_record(pg.records_of(keys[0]).back(), batch[0]);
}

TEST_F(PostgresTest, BadBatchesCommitNothing) {
    TuningDatabase db(url());
    std::string key = db.add_workload(matmul_compute(7, 1, 13));
    Rng rng(11);
    auto good = [&](int i) {
        TuningRecord r = random_record(rng, key, i);
        r.error_code = MeasureError::Ok;
        r.run_secs = {1e-3};
        return r;
    };
    std::vector<std::vector<TuningRecord>> bad(5, {good(0), good(1)});
    bad[0][1].workload_key = "feedbeef";
    bad[1][1].run_secs.clear();
    bad[2][1].run_secs = {-1.0};
    bad[3][1].schedule_json = "{not json";
    bad[4][1].error_code = MeasureError(42);
    for (auto& b : bad) {
        EXPECT_THROW(db.commit_batch(b), UserError);
        EXPECT_EQ(b[0].id, 0); // untouched
    }
    EXPECT_EQ(db.num_records(), 0);
    std::vector<TuningRecord> ok = {good(0)};
    db.commit_batch(ok);
    EXPECT_EQ(db.num_records(), 1); // the connection is usable after the failed transactions
}

TEST_F(PostgresTest, LookupsMatchSqlite) {
    TuningDatabase pg(url());
    TuningDatabase lite(":memory:");
    std::vector<std::string> keys = fill(pg, 80);
    fill(lite, 80);
    auto equalize = [&](std::vector<TuningRecord> recs) { // created_at aside
        for (TuningRecord& r : recs)
            r.created_at.clear();
        return recs;
    };
    auto one = [&](std::optional<TuningRecord> r) {
        return equalize(r ? std::vector<TuningRecord>{*r} : std::vector<TuningRecord>{});
    };
    int found = 0;
    for (const std::string& key : keys) {
        for (const char* target : {"llvm -mcpu=skylake", "llvm -mcpu=znver3", "llvm -mcpu=x"})
            for (const char* fp : {"fp_a", "fp_b", "fp_c"}) {
                auto best = pg.best_record(key, target, fp);
                found += best.has_value();
                expect_same_records(one(best), one(lite.best_record(key, target, fp)));
                expect_same_records(equalize(pg.top_k(key, 5, target, fp)),
                                    equalize(lite.top_k(key, 5, target, fp)));
            }
        for (const char* isa : {"x86_64;avx2", "x86_64;avx512", "arm"})
            expect_same_records(one(pg.best_record_for_isa(key, "llvm -mcpu=other", isa)),
                                one(lite.best_record_for_isa(key, "llvm -mcpu=other", isa)));
        expect_same_records(equalize(pg.top_k(key, 1000)), equalize(lite.top_k(key, 1000)));
        EXPECT_TRUE(pg.top_k(key, 0).empty());
        EXPECT_EQ(pg.measured_schedules(key), lite.measured_schedules(key));
        EXPECT_EQ(pg.measured_schedules(key, "llvm -mcpu=znver3", "fp_b"),
                  lite.measured_schedules(key, "llvm -mcpu=znver3", "fp_b"));
        for (int i = 0; i < 170; i += 7)
            for (const char* fp : {"", "fp_a"})
                EXPECT_EQ(pg.has_measured(key, sched(i), "", fp),
                          lite.has_measured(key, sched(i), "", fp))
                    << i;
    }
    EXPECT_GT(found, 4); // the comparison saw real records, not only misses
    EXPECT_FALSE(pg.best_record("nokey", "llvm -mcpu=skylake", "fp_a").has_value());
}

TEST_F(PostgresTest, CostModelBlobsRoundTrip) {
    TuningDatabase db(url());
    EXPECT_FALSE(db.load_cost_model("xgb").has_value());
    Rng rng(5);
    std::vector<uint8_t> first(1001), second(13);
    for (uint8_t& b : first)
        b = uint8_t(rng.uniform_int(0, 255));
    for (uint8_t& b : second)
        b = uint8_t(rng.uniform_int(0, 255));
    first[0] = 0; // NUL and 0xff bytes must survive
    first[1] = 0xff;
    db.save_cost_model("xgb", first);
    EXPECT_EQ(db.load_cost_model("xgb"), first);
    db.save_cost_model("xgb", second);
    db.save_cost_model("other", {});
    EXPECT_EQ(db.load_cost_model("xgb"), second); // the latest
    EXPECT_EQ(db.load_cost_model("other"), std::vector<uint8_t>{});
}

TEST_F(PostgresTest, ImportTwiceAddsNothingAndRoundTripsThroughSqlite) {
    TuningDatabase lite(":memory:");
    std::vector<std::string> keys = fill(lite);
    TuningDatabase pg(url());
    ImportCounts first = pg.merge_from(lite);
    EXPECT_EQ(first.workloads_added, 2);
    EXPECT_EQ(first.records_added, lite.num_records());
    EXPECT_EQ(first.duplicates, 0);
    ImportCounts second = pg.merge_from(lite);
    EXPECT_EQ(second.workloads_added, 0);
    EXPECT_EQ(second.records_added, 0);
    EXPECT_EQ(second.duplicates, lite.num_records());
    // A batch holding one record twice stores it once.
    std::vector<TuningRecord> twice = {lite.records_of(keys[0])[0], lite.records_of(keys[0])[0]};
    twice[0].created_at = twice[1].created_at = "2020-01-01T00:00:00Z";
    ImportCounts dup = pg.import_records(twice);
    EXPECT_EQ(dup.records_added, 1);
    EXPECT_EQ(dup.duplicates, 1);
    // Down to a second SQLite database: the same records, timestamps and versions kept.
    TuningDatabase back(":memory:");
    back.merge_from(pg);
    for (const std::string& key : keys) {
        std::vector<TuningRecord> l = lite.records_of(key), p = pg.records_of(key),
                                  b = back.records_of(key);
        if (key == keys[0]) {
            p.pop_back();
            b.pop_back();
        }
        // Ids are assigned by each database (in its workload order); everything else is kept.
        expect_same_records(l, p, /*same_ids=*/false);
        expect_same_records(l, b, /*same_ids=*/false);
    }
}

TEST_F(PostgresTest, PruneMatchesSqlite) {
    for (auto [keep, errors] : {std::pair{1, false}, std::pair{3, true}, std::pair{0, false}}) {
        FreshDatabase fresh;
        TuningDatabase pg(fresh.url());
        TuningDatabase lite(":memory:");
        std::vector<std::string> keys = fill(pg, 80);
        fill(lite, 80);
        int64_t removed = pg.prune(keep, errors);
        EXPECT_EQ(removed, lite.prune(keep, errors));
        EXPECT_GT(removed, 0);
        for (const std::string& key : keys) {
            std::vector<TuningRecord> p = pg.records_of(key), l = lite.records_of(key);
            for (size_t i = 0; i < p.size() && i < l.size(); ++i)
                l[i].created_at = p[i].created_at;
            expect_same_records(p, l);
        }
        EXPECT_THROW(pg.prune(-1, false), UserError);
    }
}

TEST_F(PostgresTest, FourProcessesCommittingConcurrentlyLoseNothing) {
    // The children open the fresh database at once, so they also race to create the schema.
    constexpr int kProcs = 4, kBatches = 12, kPerBatch = 5, kShared = 6;
    const std::string key = te::workload_key(matmul_compute(13, 7, 1));
    std::vector<pid_t> pids;
    for (int p = 0; p < kProcs; ++p) {
        pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            int status = 0;
            try {
                TuningDatabase db(url());
                db.add_workload(matmul_compute(13, 7, 1));
                for (int b = 0; b < kBatches; ++b) {
                    std::vector<TuningRecord> batch;
                    for (int i = 0; i < kPerBatch; ++i) {
                        TuningRecord r;
                        r.workload_key = key;
                        r.target = "llvm";
                        r.fingerprint = "fp_" + std::to_string(p);
                        r.isa_class = "x86_64";
                        r.schedule_json = sched((p * kBatches + b) * kPerBatch + i);
                        r.run_secs = {1e-3 * (i + 1)};
                        batch.push_back(r);
                    }
                    db.commit_batch(batch);
                    // Every process also imports the same records: stored exactly once.
                    std::vector<TuningRecord> shared;
                    for (int s = 0; s < kShared; ++s) {
                        TuningRecord r = batch[0];
                        r.fingerprint = "shared";
                        r.schedule_json = sched(100000 + s);
                        r.created_at = "2021-06-01T00:00:00Z";
                        shared.push_back(r);
                    }
                    db.import_records(shared);
                }
            } catch (const std::exception& e) {
                std::fprintf(stderr, "child %d: %s\n", p, e.what());
                status = 1;
            }
            ::_exit(status);
        }
        pids.push_back(pid);
    }
    for (pid_t pid : pids) {
        int status = 0;
        ASSERT_EQ(::waitpid(pid, &status, 0), pid);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a child failed";
    }
    TuningDatabase db(url());
    EXPECT_EQ(db.workload_keys(), std::vector<std::string>{key});
    std::vector<TuningRecord> all = db.records_of(key);
    EXPECT_EQ(int64_t(all.size()), kProcs * kBatches * kPerBatch + kShared);
    std::set<std::string> schedules = db.measured_schedules(key);
    for (int s = 0; s < kProcs * kBatches * kPerBatch; ++s)
        EXPECT_TRUE(schedules.count(sched(s))) << "lost schedule " << s;
    std::set<int64_t> ids;
    for (const TuningRecord& r : all)
        ids.insert(r.id);
    EXPECT_EQ(ids.size(), all.size());
    EXPECT_EQ(db.integrity_check(), "ok");
}

TEST(PostgresConnectTest, UnreachableServerIsOneClearErrorAndWritesNothing) {
    // No server needed: nothing listens on port 1.
    const std::string url = "postgresql://tuner:s3cr3tpw@127.0.0.1:1/tuning?connect_timeout=5";
    try {
        TuningDatabase db(url);
        FAIL() << "opening an unreachable server must throw";
    } catch (const UserError& e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find("127.0.0.1:1"), std::string::npos) << msg;
        EXPECT_NE(msg.find("'tuning'"), std::string::npos) << msg;
        EXPECT_EQ(msg.find("s3cr3tpw"), std::string::npos) << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
    EXPECT_FALSE(fs::exists("postgresql:")); // not mistaken for a file path
    EXPECT_TRUE(is_server_database(url));
    EXPECT_TRUE(is_server_database("postgres://h/db"));
    EXPECT_FALSE(is_server_database("tune_logs/postgresql.db"));
    EXPECT_THROW(TuningDatabase("postgresql://h:notaport/db"), UserError); // malformed
}

TEST(PostgresConnectTest, DisplayNamesDropThePassword) {
    EXPECT_EQ(database_display_name("postgresql://tuner:pw@db.lan:5433/tune?sslmode=require"),
              "postgresql://tuner@db.lan:5433/tune?sslmode=require");
    EXPECT_EQ(database_display_name("postgres://u@h/d?password=pw&connect_timeout=3"),
              "postgres://u@h/d?connect_timeout=3");
    EXPECT_EQ(database_display_name("postgresql://h:5432"), "postgresql://h:5432");
    EXPECT_EQ(database_display_name("postgresql://u:p@h?password=q"), "postgresql://u@h");
    EXPECT_EQ(database_display_name("tune_logs/a:b@c.db"), "tune_logs/a:b@c.db");
}

TEST_F(PostgresTest, MissingDatabaseAndUnknownUserAreClearErrors) {
    std::string missing = with_database(url(), "tessera_no_such_db");
    try {
        TuningDatabase db(missing);
        FAIL() << "a missing database must throw";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("tessera_no_such_db"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
    }
    std::string u = url();
    std::string stranger =
        u.substr(0, u.find("://") + 3) + "nobody_here:pw123@" +
        u.substr(u.find('@') != std::string::npos ? u.find('@') + 1 : u.find("://") + 3);
    try {
        TuningDatabase db(stranger);
        FAIL() << "an unknown user must throw";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("nobody_here"), std::string::npos) << e.what();
        EXPECT_EQ(std::string(e.what()).find("pw123"), std::string::npos) << e.what();
    }
}

/// Runs the tessera binary; returns its exit status, output in `out`.
int run_tessera(const std::string& args, std::string& out) {
    std::string cmd = std::string(TESSERA_BINARY) + " " + args + " 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p)
        return -1;
    char buf[4096];
    out.clear();
    while (size_t n = std::fread(buf, 1, sizeof(buf), p))
        out.append(buf, n);
    int status = ::pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(PostgresTest, CliExportsAServerDatabaseForAnOfflineSqliteCopy) {
    {
        TuningDatabase pg(url());
        fill(pg);
    }
    fs::path dir = fs::temp_directory_path() / ("tessera_pg_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::string jsonl = (dir / "all.jsonl").string(), lite = (dir / "offline.db").string();
    std::string out;
    ASSERT_EQ(run_tessera("db export --db '" + url() + "' -o " + jsonl, out), 0) << out;
    ASSERT_EQ(run_tessera("db import --db " + lite + " " + jsonl, out), 0) << out;
    {
        TuningDatabase pg(url());
        TuningDatabase copy(lite);
        EXPECT_EQ(copy.workload_keys(), pg.workload_keys());
        for (const std::string& key : pg.workload_keys())
            expect_same_records(pg.records_of(key), copy.records_of(key), /*same_ids=*/false);
    }
    // Unreachable: exit status non-zero, one clear line, no file written.
    std::string bad = "postgresql://u:pw9@127.0.0.1:1/x?connect_timeout=5";
    EXPECT_NE(run_tessera("db export --db '" + bad + "' -o " + (dir / "no.jsonl").string(), out),
              0);
    EXPECT_NE(out.find("127.0.0.1:1"), std::string::npos) << out;
    EXPECT_EQ(out.find("pw9"), std::string::npos) << out;
    EXPECT_FALSE(fs::exists(dir / "no.jsonl"));
    fs::remove_all(dir);
}

} // namespace
} // namespace tessera::tune
