// The SQLite engine of the tuning database (database_engine.h): one file in WAL mode, or
// ":memory:". Every SQLite failure becomes a UserError naming the file, since a bad database
// file is the user's input, never a tessera bug.
#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>

#include <unistd.h>

#include "database_engine.h"
#include "tessera/support/error.h"

namespace tessera::tune {

namespace {

/// Whether this process may write the existing file at `path` and create files beside it (the
/// journal); true for a file that does not exist yet (creating it reports its own errors).
bool writable(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        return true;
    std::string dir = std::filesystem::path(path).parent_path().string();
    if (dir.empty())
        dir = ".";
    return access(path.c_str(), W_OK) == 0 && access(dir.c_str(), W_OK) == 0;
}

constexpr int kBusyTimeoutMs = 30000; // concurrent tuners wait for each other's commits
constexpr int kBusyRetryMs = 10;      // the pause between retries SQLite does not wait for

const char* kCreateSchema = R"sql(
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS workloads (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    compute_text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    id INTEGER PRIMARY KEY,
    workload_id INTEGER NOT NULL REFERENCES workloads(id),
    target TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    isa_class TEXT NOT NULL,
    schedule_json TEXT NOT NULL,
    run_secs_json TEXT NOT NULL,
    median_secs REAL,
    rank_secs REAL,
    error_code INTEGER NOT NULL,
    error_message TEXT NOT NULL,
    measure_settings_json TEXT NOT NULL,
    tessera_version TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    identity TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS records_by_workload
    ON records(workload_id, target, fingerprint, error_code, rank_secs);
CREATE INDEX IF NOT EXISTS records_by_isa_class
    ON records(workload_id, isa_class, error_code, rank_secs);
CREATE INDEX IF NOT EXISTS records_by_schedule ON records(workload_id, schedule_json);
CREATE INDEX IF NOT EXISTS records_by_identity ON records(identity);
CREATE TABLE IF NOT EXISTS cost_models (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    blob BLOB NOT NULL,
    created_at TEXT NOT NULL);
)sql";

const char* kRecordColumns =
    "r.id, w.key, r.target, r.fingerprint, r.isa_class, r.schedule_json, r.run_secs_json, "
    "r.median_secs, r.error_code, r.error_message, r.measure_settings_json, r.tessera_version, "
    "r.schema_version, r.created_at, r.rank_secs";

[[noreturn]] void fail(const std::string& path, sqlite3* db, const std::string& what) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    int code = db ? sqlite3_errcode(db) : SQLITE_NOMEM;
    if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
        throw UserError() << "tuning database '" << path << "' is corrupted or not a database ("
                          << msg << ")";
    // SQLite's "database or disk is full" leaves the user guessing which. tessera sets no page
    // limit, so it means a write found no room on the device (ENOSPC): say that plainly.
    if (code == SQLITE_FULL)
        throw UserError() << "tuning database '" << path << "': " << what
                          << " failed: no space left on the device (" << msg << ")";
    throw UserError() << "tuning database '" << path << "': " << what << " failed (" << msg << ")";
}

/// A prepared statement bound to positional parameters; finalized on destruction.
class Stmt {
  public:
    Stmt(sqlite3* db, const std::string& path, const char* sql) : db_(db), path_(path) {
        if (sqlite3_prepare_v2(db, sql, -1, &st_, nullptr) != SQLITE_OK)
            fail(path_, db_, "preparing a query");
    }
    ~Stmt() { sqlite3_finalize(st_); }
    /// Makes the statement ready to run again with new bindings.
    void reset() {
        sqlite3_reset(st_);
        sqlite3_clear_bindings(st_);
    }
    Stmt(const Stmt&) = delete;
    Stmt& operator=(const Stmt&) = delete;

    Stmt& bind(int i, const std::string& s) {
        check(sqlite3_bind_text(st_, i, s.data(), int(s.size()), SQLITE_TRANSIENT));
        return *this;
    }
    Stmt& bind(int i, int64_t v) {
        check(sqlite3_bind_int64(st_, i, v));
        return *this;
    }
    Stmt& bind(int i, double v) {
        check(std::isfinite(v) ? sqlite3_bind_double(st_, i, v) : sqlite3_bind_null(st_, i));
        return *this;
    }
    Stmt& bind_blob(int i, const std::vector<uint8_t>& b) {
        check(sqlite3_bind_blob(st_, i, b.data(), int(b.size()), SQLITE_TRANSIENT));
        return *this;
    }
    /// Steps once: true when a row is available, false when done.
    bool step() {
        int rc = sqlite3_step(st_);
        if (rc == SQLITE_ROW)
            return true;
        if (rc == SQLITE_DONE)
            return false;
        fail(path_, db_, "a query");
    }
    /// Steps once as step() does, but answers SQLITE_BUSY by stepping again after a pause, for
    /// up to the busy timeout: for a statement SQLite refuses at once instead of waiting (two
    /// connections that both hold a shared lock and both want the exclusive one).
    bool step_when_free() {
        for (int waited_ms = 0;; waited_ms += kBusyRetryMs) {
            const int rc = sqlite3_step(st_);
            if (rc == SQLITE_ROW)
                return true;
            if (rc == SQLITE_DONE)
                return false;
            if (rc != SQLITE_BUSY || waited_ms >= kBusyTimeoutMs)
                fail(path_, db_, "a query");
            sqlite3_reset(st_);
            std::this_thread::sleep_for(std::chrono::milliseconds(kBusyRetryMs));
        }
    }
    std::string text(int col) const {
        const unsigned char* p = sqlite3_column_text(st_, col);
        return p ? std::string(reinterpret_cast<const char*>(p),
                               size_t(sqlite3_column_bytes(st_, col)))
                 : std::string();
    }
    int64_t integer(int col) const { return sqlite3_column_int64(st_, col); }
    bool is_null(int col) const { return sqlite3_column_type(st_, col) == SQLITE_NULL; }
    double real(int col) const { return sqlite3_column_double(st_, col); }
    std::vector<uint8_t> blob(int col) const {
        const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(st_, col));
        return p ? std::vector<uint8_t>(p, p + sqlite3_column_bytes(st_, col))
                 : std::vector<uint8_t>();
    }

  private:
    void check(int rc) {
        if (rc != SQLITE_OK)
            fail(path_, db_, "binding a parameter");
    }
    sqlite3* db_;
    const std::string& path_;
    sqlite3_stmt* st_ = nullptr;
};

void exec(sqlite3* db, const std::string& path, const char* sql, const char* what) {
    if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK)
        fail(path, db, what);
}

/// A write transaction (BEGIN IMMEDIATE: concurrent writers queue on the busy timeout instead
/// of failing mid-transaction); rolled back unless commit() is reached.
class WriteTransaction {
  public:
    WriteTransaction(sqlite3* db, const std::string& path) : db_(db), path_(path) {
        exec(db_, path_, "BEGIN IMMEDIATE", "starting a transaction");
    }
    ~WriteTransaction() {
        if (!done_)
            sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    }
    void commit() {
        exec(db_, path_, "COMMIT", "committing a transaction");
        done_ = true;
    }

  private:
    sqlite3* db_;
    const std::string& path_;
    bool done_ = false;
};

/// Checks the file's SQLite header before SQLite sees it, so that garbage and truncation give
/// one clear message up front instead of an error at some later query.
void check_file_header(const std::string& path) {
    std::error_code ec;
    if (path == ":memory:" || !std::filesystem::exists(path, ec))
        return;
    uint64_t size = std::filesystem::file_size(path, ec);
    if (ec || size == 0)
        return; // an empty file is an empty database
    std::ifstream in(path, std::ios::binary);
    unsigned char h[100] = {};
    in.read(reinterpret_cast<char*>(h), sizeof(h));
    if (size < sizeof(h) || std::memcmp(h, "SQLite format 3", 16) != 0)
        throw UserError() << "tuning database '" << path
                          << "' is corrupted or not a database (no SQLite header)";
    uint32_t page_size = (uint32_t(h[16]) << 8) | h[17];
    if (page_size == 1)
        page_size = 65536;
    auto be32 = [&](int o) {
        return (uint32_t(h[o]) << 24) | (uint32_t(h[o + 1]) << 16) | (uint32_t(h[o + 2]) << 8) |
               h[o + 3];
    };
    uint32_t pages = be32(28);
    // The in-header page count is valid when the change counter matches version-valid-for.
    // With a WAL file present the main file may legitimately lag behind; SQLite checks then.
    bool count_valid = pages > 0 && be32(24) == be32(92);
    bool has_wal = std::filesystem::exists(path + "-wal", ec);
    if (count_valid && !has_wal && size < uint64_t(page_size) * pages)
        throw UserError() << "tuning database '" << path << "' is corrupted or not a database"
                          << " (truncated: " << size << " bytes, header says "
                          << uint64_t(page_size) * pages << ")";
}

/// Validates and inserts `out` (the caller holds the write transaction); see
/// DatabaseEngine::insert_records.
ImportCounts insert_rows(sqlite3* db, const std::string& path, std::vector<TuningRecord>& out,
                         bool import) {
    ImportCounts counts;
    Stmt find(db, path, "SELECT id FROM workloads WHERE key = ?");
    Stmt seen(db, path, "SELECT 1 FROM records WHERE identity = ? LIMIT 1");
    Stmt ins(db, path,
             "INSERT INTO records(workload_id, target, fingerprint, isa_class, schedule_json, "
             "run_secs_json, median_secs, error_code, error_message, measure_settings_json, "
             "tessera_version, schema_version, created_at, identity, rank_secs) "
             "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    const std::string now = utc_now();
    for (size_t i = 0; i < out.size(); ++i) {
        TuningRecord& r = out[i];
        find.reset();
        find.bind(1, r.workload_key);
        if (!find.step())
            throw UserError() << "record " << i << " of the batch names unknown workload '"
                              << r.workload_key << "'" << kNothingCommitted;
        int64_t wid = find.integer(0);
        find.reset(); // no statement may stay mid-row at COMMIT
        const std::string identity = prepare_record(r, i, import, now);
        if (import) {
            seen.reset();
            seen.bind(1, identity);
            bool duplicate = seen.step();
            seen.reset();
            if (duplicate) {
                r.id = 0;
                ++counts.duplicates;
                continue;
            }
        }
        ins.bind(1, wid).bind(2, r.target).bind(3, r.fingerprint).bind(4, r.isa_class);
        ins.bind(5, r.schedule_json).bind(6, run_secs_to_json(r.run_secs)).bind(7, r.median_secs);
        ins.bind(8, int64_t(r.error_code)).bind(9, r.error_message);
        ins.bind(10, r.measure_settings_json).bind(11, r.tessera_version);
        ins.bind(12, int64_t(r.schema_version)).bind(13, r.created_at).bind(14, identity);
        ins.bind(15, r.rank_secs);
        ins.step();
        r.id = sqlite3_last_insert_rowid(db);
        ins.reset();
        ++counts.records_added;
    }
    return counts;
}

TuningRecord read_record(const Stmt& q) {
    TuningRecord r;
    r.id = q.integer(0);
    r.workload_key = q.text(1);
    r.target = q.text(2);
    r.fingerprint = q.text(3);
    r.isa_class = q.text(4);
    r.schedule_json = q.text(5);
    r.run_secs = run_secs_from_json(q.text(6));
    r.median_secs = q.is_null(7) ? std::numeric_limits<double>::infinity() : q.real(7);
    r.error_code = MeasureError(int(q.integer(8)));
    r.error_message = q.text(9);
    r.measure_settings_json = q.text(10);
    r.tessera_version = q.text(11);
    r.schema_version = int(q.integer(12));
    r.created_at = q.text(13);
    r.rank_secs = q.is_null(14) ? std::numeric_limits<double>::infinity() : q.real(14);
    return r;
}

class SqliteEngine final : public DatabaseEngine {
  public:
    /// Opens or creates the file, creates or migrates the schema (UserError as database.h says).
    explicit SqliteEngine(const std::string& path);
    ~SqliteEngine() override {
        if (db_)
            sqlite3_close(db_);
    }
    SqliteEngine(const SqliteEngine&) = delete;
    SqliteEngine& operator=(const SqliteEngine&) = delete;

    int schema_version() const override {
        Stmt q(db_, path_, "SELECT MAX(version) FROM schema_version");
        return q.step() ? int(q.integer(0)) : 0;
    }

    std::string journal_mode() const override {
        Stmt q(db_, path_, "PRAGMA journal_mode");
        return q.step() ? q.text(0) : std::string();
    }

    void add_workload(const std::string& key, const std::string& text) override {
        WriteTransaction tx(db_, path_);
        {
            Stmt q(db_, path_, "SELECT compute_text FROM workloads WHERE key = ?");
            q.bind(1, key);
            if (q.step()) {
                if (q.text(0) != text)
                    throw UserError() << "tuning database '" << path_ << "': workload '" << key
                                      << "' is stored with a different compute text";
                return; // already present: the transaction rolls back, nothing to write
            }
        }
        Stmt ins(db_, path_, "INSERT INTO workloads(key, compute_text) VALUES (?, ?)");
        ins.bind(1, key).bind(2, text).step();
        tx.commit();
    }

    std::optional<std::string> compute_text(const std::string& key) const override {
        Stmt q(db_, path_, "SELECT compute_text FROM workloads WHERE key = ?");
        q.bind(1, key);
        if (!q.step())
            return std::nullopt;
        return q.text(0);
    }

    std::vector<std::string> workload_keys() const override {
        Stmt q(db_, path_, "SELECT key FROM workloads ORDER BY key");
        std::vector<std::string> keys;
        while (q.step())
            keys.push_back(q.text(0));
        return keys;
    }

    ImportCounts insert_records(std::vector<TuningRecord>& records, bool import) override {
        WriteTransaction tx(db_, path_);
        ImportCounts counts = insert_rows(db_, path_, records, import);
        tx.commit();
        return counts;
    }

    std::optional<TuningRecord> best_record(const std::string& key, const std::string& target,
                                            const std::string& fingerprint) const override {
        std::string sql = std::string("SELECT ") + kRecordColumns +
                          " FROM records r JOIN workloads w ON r.workload_id = w.id"
                          " WHERE w.key = ? AND r.target = ? AND r.fingerprint = ? AND"
                          " r.error_code = 0 ORDER BY r.rank_secs ASC, r.id ASC LIMIT 1";
        Stmt q(db_, path_, sql.c_str());
        q.bind(1, key).bind(2, target).bind(3, fingerprint);
        if (!q.step())
            return std::nullopt;
        return read_record(q);
    }

    std::vector<TuningRecord> ok_records_for_isa(const std::string& key,
                                                 const std::string& isa) const override {
        std::string sql = std::string("SELECT ") + kRecordColumns +
                          " FROM records r JOIN workloads w ON r.workload_id = w.id"
                          " WHERE w.key = ? AND r.isa_class = ? AND r.error_code = 0"
                          " ORDER BY r.rank_secs ASC, r.id ASC";
        Stmt q(db_, path_, sql.c_str());
        q.bind(1, key).bind(2, isa);
        std::vector<TuningRecord> out;
        while (q.step())
            out.push_back(read_record(q));
        return out;
    }

    std::vector<TuningRecord> top_k(const std::string& key, int k, const std::string& target,
                                    const std::string& fingerprint) const override {
        std::string sql = std::string("SELECT ") + kRecordColumns +
                          " FROM records r JOIN workloads w ON r.workload_id = w.id"
                          " WHERE w.key = ?1 AND r.error_code = 0"
                          " AND (?2 = '' OR r.target = ?2) AND (?3 = '' OR r.fingerprint = ?3)"
                          " ORDER BY r.rank_secs ASC, r.id ASC LIMIT ?4";
        Stmt q(db_, path_, sql.c_str());
        q.bind(1, key).bind(2, target).bind(3, fingerprint).bind(4, int64_t(k));
        std::vector<TuningRecord> out;
        while (q.step())
            out.push_back(read_record(q));
        return out;
    }

    std::vector<TuningRecord> records_of(const std::string& key) const override {
        std::string sql = std::string("SELECT ") + kRecordColumns +
                          " FROM records r JOIN workloads w ON r.workload_id = w.id"
                          " WHERE w.key = ? ORDER BY r.id ASC";
        Stmt q(db_, path_, sql.c_str());
        q.bind(1, key);
        std::vector<TuningRecord> out;
        while (q.step())
            out.push_back(read_record(q));
        return out;
    }

    bool has_measured(const std::string& key, const std::string& schedule_json,
                      const std::string& target, const std::string& fingerprint) const override {
        Stmt q(db_, path_,
               "SELECT 1 FROM records r JOIN workloads w ON r.workload_id = w.id"
               " WHERE w.key = ?1 AND r.schedule_json = ?2"
               " AND (?3 = '' OR r.target = ?3) AND (?4 = '' OR r.fingerprint = ?4) LIMIT 1");
        q.bind(1, key).bind(2, schedule_json).bind(3, target).bind(4, fingerprint);
        return q.step();
    }

    std::set<std::string> measured_schedules(const std::string& key, const std::string& target,
                                             const std::string& fingerprint) const override {
        Stmt q(db_, path_,
               "SELECT r.schedule_json FROM records r JOIN workloads w ON r.workload_id = w.id"
               " WHERE w.key = ?1 AND (?2 = '' OR r.target = ?2)"
               " AND (?3 = '' OR r.fingerprint = ?3)");
        q.bind(1, key).bind(2, target).bind(3, fingerprint);
        std::set<std::string> out;
        while (q.step())
            out.insert(q.text(0));
        return out;
    }

    int64_t num_records() const override {
        Stmt q(db_, path_, "SELECT COUNT(*) FROM records");
        return q.step() ? q.integer(0) : 0;
    }

    int64_t prune(int keep_best, bool keep_errors) override {
        WriteTransaction tx(db_, path_);
        Stmt del(db_, path_,
                 "DELETE FROM records WHERE id IN ("
                 "  SELECT id FROM (SELECT id, ROW_NUMBER() OVER ("
                 "      PARTITION BY workload_id, target, fingerprint"
                 "      ORDER BY rank_secs ASC, id ASC) AS rank"
                 "    FROM records WHERE error_code = 0) WHERE rank > ?1)"
                 " OR (?2 = 0 AND error_code != 0)");
        del.bind(1, int64_t(keep_best)).bind(2, int64_t(keep_errors ? 1 : 0));
        del.step();
        int64_t removed = sqlite3_changes(db_);
        tx.commit();
        return removed;
    }

    std::string integrity_check() const override {
        Stmt q(db_, path_, "PRAGMA integrity_check");
        std::string out;
        while (q.step())
            out += (out.empty() ? "" : "\n") + q.text(0);
        return out;
    }

    void save_cost_model(const std::string& name, const std::vector<uint8_t>& blob,
                         const std::string& created_at) override {
        WriteTransaction tx(db_, path_);
        Stmt ins(db_, path_, "INSERT INTO cost_models(name, blob, created_at) VALUES (?, ?, ?)");
        ins.bind(1, name).bind_blob(2, blob).bind(3, created_at);
        ins.step();
        tx.commit();
    }

    std::optional<std::vector<uint8_t>> load_cost_model(const std::string& name) const override {
        Stmt q(db_, path_, "SELECT blob FROM cost_models WHERE name = ? ORDER BY id DESC LIMIT 1");
        q.bind(1, name);
        if (!q.step())
            return std::nullopt;
        return q.blob(0);
    }

  private:
    void open();
    /// Opens an existing file this process cannot write (a read-only mount or file) for
    /// reading: lookups work, writes fail with SQLite's "attempt to write a readonly database".
    void open_read_only();
    void migrate(int64_t from_version);
    std::string path_;
    sqlite3* db_ = nullptr;
};

SqliteEngine::SqliteEngine(const std::string& path) : path_(path) {
    try {
        open();
    } catch (...) { // the destructor does not run for a constructor that throws
        if (db_)
            sqlite3_close(db_);
        db_ = nullptr;
        throw;
    }
}

void SqliteEngine::open() {
    check_file_header(path_);
    if (path_ != ":memory:") {
        std::filesystem::path parent = std::filesystem::path(path_).parent_path();
        std::error_code ec;
        if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
            throw UserError() << "tuning database '" << path_ << "': directory '" << parent.string()
                              << "' does not exist";
    }
    if (path_ != ":memory:" && !writable(path_)) {
        open_read_only();
        return;
    }
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path_.c_str(), &db_, flags, nullptr) != SQLITE_OK)
        fail(path_, db_, "opening");
    sqlite3_extended_result_codes(db_, 0);
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
    exec(db_, path_, "PRAGMA foreign_keys = ON", "enabling foreign keys");
    if (path_ != ":memory:") {
        // Tuners that open a new file at once all switch it to WAL: each holds a shared lock
        // and wants the exclusive one, and SQLite refuses all but one at once.
        Stmt wal(db_, path_, "PRAGMA journal_mode = WAL");
        if (!wal.step_when_free() || wal.text(0) != "wal")
            throw UserError() << "tuning database '" << path_
                              << "': cannot switch to WAL mode (journal mode '" << wal.text(0)
                              << "')";
        exec(db_, path_, "PRAGMA synchronous = NORMAL", "setting synchronous mode");
    }

    WriteTransaction tx(db_, path_);
    int64_t tables = 0;
    bool has_version = false;
    {
        Stmt q(db_, path_, "SELECT name FROM sqlite_master WHERE type = 'table'");
        while (q.step()) {
            ++tables;
            if (q.text(0) == "schema_version")
                has_version = true;
        }
    }
    if (tables > 0 && !has_version)
        throw UserError() << "'" << path_
                          << "' is an SQLite file but not a tessera tuning database (no "
                             "schema_version table)";
    if (!has_version) {
        exec(db_, path_, kCreateSchema, "creating the schema");
        Stmt ins(db_, path_, "INSERT INTO schema_version(version) VALUES (?)");
        ins.bind(1, int64_t(TuningDatabase::kSchemaVersion)).step();
    } else {
        int64_t v = -1;
        {
            // Finalized before a migration runs: DDL fails while a statement is active.
            Stmt q(db_, path_, "SELECT MAX(version) FROM schema_version");
            if (q.step() && !q.is_null(0))
                v = q.integer(0);
        }
        if (v > TuningDatabase::kSchemaVersion)
            throw UserError() << "tuning database '" << path_ << "' has schema version " << v
                              << ", newer than this tessera's schema version "
                              << TuningDatabase::kSchemaVersion << "; use a newer tessera";
        if (v < 1)
            throw UserError() << "tuning database '" << path_ << "' has invalid schema version "
                              << v;
        if (v < TuningDatabase::kSchemaVersion)
            migrate(v); // inside this transaction: a failed migration leaves the file as it was
    }
    tx.commit();
}

void SqliteEngine::open_read_only() {
    // Immutable: SQLite takes no locks and needs no -wal or -shm file beside it, which a
    // read-only directory could not hold. Percent-escapes what a URI path cannot hold as is.
    std::string uri = "file:";
    for (char c : std::filesystem::absolute(path_).string()) {
        if (c == '%' || c == '?' || c == '#') {
            static const char* kHex = "0123456789ABCDEF";
            const auto u = static_cast<unsigned char>(c);
            uri += {'%', kHex[u >> 4], kHex[u & 15]};
        } else {
            uri += c;
        }
    }
    uri += "?immutable=1";
    const int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(uri.c_str(), &db_, flags, nullptr) != SQLITE_OK)
        fail(path_, db_, "opening read-only");
    sqlite3_extended_result_codes(db_, 0);
    bool has_version = false;
    {
        Stmt q(db_, path_, "SELECT name FROM sqlite_master WHERE type = 'table'");
        while (q.step())
            has_version = has_version || q.text(0) == "schema_version";
    }
    if (!has_version)
        throw UserError() << "'" << path_ << "' is not a tessera tuning database (read-only, no "
                          << "schema_version table)";
    int64_t v = -1;
    {
        Stmt q(db_, path_, "SELECT MAX(version) FROM schema_version");
        if (q.step() && !q.is_null(0))
            v = q.integer(0);
    }
    if (v != TuningDatabase::kSchemaVersion)
        throw UserError() << "tuning database '" << path_ << "' is read-only and has schema "
                          << "version " << v << ", not this tessera's "
                          << TuningDatabase::kSchemaVersion
                          << " (open it once where it is writable to migrate it)";
}

void SqliteEngine::migrate(int64_t from) {
    sqlite3* db = db_;
    if (from < 2) {
        // 1 -> 2: the record identity (idempotent import), and the ISA-class index without
        // the target (that tier compares target families, which SQL cannot index).
        exec(db, path_,
             "ALTER TABLE records ADD COLUMN identity TEXT NOT NULL DEFAULT '';"
             "DROP INDEX IF EXISTS records_by_isa;"
             "CREATE INDEX records_by_isa_class"
             "    ON records(workload_id, isa_class, error_code, median_secs);",
             "migrating schema 1 to 2");
        std::vector<std::pair<int64_t, std::string>> ids;
        {
            TuningRecord r;
            Stmt q(db, path_,
                   "SELECT r.id, w.key, r.target, r.fingerprint, r.schedule_json, r.created_at, "
                   "r.run_secs_json FROM records r JOIN workloads w ON r.workload_id = w.id");
            while (q.step()) {
                r.workload_key = q.text(1);
                r.target = q.text(2);
                r.fingerprint = q.text(3);
                r.schedule_json = q.text(4);
                r.created_at = q.text(5);
                r.run_secs = run_secs_from_json(q.text(6));
                ids.emplace_back(q.integer(0), record_identity(r));
            }
        }
        Stmt upd(db, path_, "UPDATE records SET identity = ? WHERE id = ?");
        for (const auto& [id, identity] : ids) {
            upd.bind(1, identity).bind(2, id).step();
            upd.reset();
        }
        exec(db, path_, "CREATE INDEX records_by_identity ON records(identity)",
             "migrating schema 1 to 2");
    }
    if (from < 3) {
        exec(db, path_, migrate_records_2_to_3_sql("REAL").c_str(), "migrating schema 2 to 3");
    }
    Stmt set(db, path_, "UPDATE schema_version SET version = ?");
    set.bind(1, int64_t(TuningDatabase::kSchemaVersion)).step();
}

} // namespace

std::unique_ptr<DatabaseEngine> open_sqlite_engine(const std::string& path) {
    return std::make_unique<SqliteEngine>(path);
}

} // namespace tessera::tune
