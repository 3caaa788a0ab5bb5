// The SQLite tuning database. Every SQLite failure becomes a UserError naming the file, since a
// bad database file is the user's input, never a tessera bug.
#include "tessera/tuner/database.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "tessera/support/error.h"
#include "tessera/te/workload_key.h"

#ifndef TESSERA_VERSION_STRING
#define TESSERA_VERSION_STRING "unknown"
#endif

namespace tessera::tune {

const char* tessera_version() { return TESSERA_VERSION_STRING; }

const char* to_string(MeasureError e) {
    switch (e) {
    case MeasureError::Ok:
        return "ok";
    case MeasureError::Instantiation:
        return "instantiation";
    case MeasureError::CompileHost:
        return "compile_host";
    case MeasureError::CompileDevice:
        return "compile_device";
    case MeasureError::RuntimeDevice:
        return "runtime_device";
    case MeasureError::WrongAnswer:
        return "wrong_answer";
    case MeasureError::BuildTimeout:
        return "build_timeout";
    case MeasureError::RunTimeout:
        return "run_timeout";
    case MeasureError::Unknown:
        return "unknown";
    }
    return "invalid";
}

namespace {

constexpr int kBusyTimeoutMs = 30000; // concurrent tuners wait for each other's commits

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
    error_code INTEGER NOT NULL,
    error_message TEXT NOT NULL,
    measure_settings_json TEXT NOT NULL,
    tessera_version TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    created_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS records_by_workload
    ON records(workload_id, target, fingerprint, error_code, median_secs);
CREATE INDEX IF NOT EXISTS records_by_isa
    ON records(workload_id, target, isa_class, error_code, median_secs);
CREATE INDEX IF NOT EXISTS records_by_schedule ON records(workload_id, schedule_json);
CREATE TABLE IF NOT EXISTS cost_models (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    blob BLOB NOT NULL,
    created_at TEXT NOT NULL);
)sql";

const char* kRecordColumns =
    "r.id, w.key, r.target, r.fingerprint, r.isa_class, r.schedule_json, r.run_secs_json, "
    "r.median_secs, r.error_code, r.error_message, r.measure_settings_json, r.tessera_version, "
    "r.schema_version, r.created_at";

[[noreturn]] void fail(const std::string& path, sqlite3* db, const std::string& what) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    int code = db ? sqlite3_errcode(db) : SQLITE_NOMEM;
    if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
        throw UserError() << "tuning database '" << path << "' is corrupted or not a database ("
                          << msg << ")";
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

std::string utc_now() {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

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

} // namespace

TuningDatabase::TuningDatabase(const std::string& path) : path_(path) {
    try {
        open_and_check();
    } catch (...) {
        if (db_)
            sqlite3_close(db_);
        db_ = nullptr;
        throw;
    }
}

TuningDatabase::~TuningDatabase() {
    if (db_)
        sqlite3_close(db_);
}

TuningDatabase::TuningDatabase(TuningDatabase&& o) noexcept
    : path_(std::move(o.path_)), db_(o.db_) {
    o.db_ = nullptr;
}

TuningDatabase& TuningDatabase::operator=(TuningDatabase&& o) noexcept {
    if (this != &o) {
        if (db_)
            sqlite3_close(db_);
        path_ = std::move(o.path_);
        db_ = o.db_;
        o.db_ = nullptr;
    }
    return *this;
}

void TuningDatabase::open_and_check() {
    check_file_header(path_);
    if (path_ != ":memory:") {
        std::filesystem::path parent = std::filesystem::path(path_).parent_path();
        std::error_code ec;
        if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
            throw UserError() << "tuning database '" << path_ << "': directory '" << parent.string()
                              << "' does not exist";
    }
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path_.c_str(), &db_, flags, nullptr) != SQLITE_OK)
        fail(path_, db_, "opening");
    sqlite3_extended_result_codes(db_, 0);
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
    exec(db_, path_, "PRAGMA foreign_keys = ON", "enabling foreign keys");
    if (path_ != ":memory:") {
        Stmt wal(db_, path_, "PRAGMA journal_mode = WAL");
        if (!wal.step() || wal.text(0) != "wal")
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
        ins.bind(1, int64_t(kSchemaVersion)).step();
    } else {
        Stmt q(db_, path_, "SELECT MAX(version) FROM schema_version");
        int64_t v = q.step() && !q.is_null(0) ? q.integer(0) : -1;
        if (v > kSchemaVersion)
            throw UserError() << "tuning database '" << path_ << "' has schema version " << v
                              << ", newer than this tessera's schema version " << kSchemaVersion
                              << "; use a newer tessera";
        if (v < 1)
            throw UserError() << "tuning database '" << path_ << "' has invalid schema version "
                              << v;
        // Version 1 is the first schema: no migrations exist yet. A future version adds them
        // here, inside this transaction, stepping v up to kSchemaVersion.
    }
    tx.commit();
}

int TuningDatabase::schema_version() const {
    Stmt q(db_, path_, "SELECT MAX(version) FROM schema_version");
    return q.step() ? int(q.integer(0)) : 0;
}

std::string TuningDatabase::journal_mode() const {
    Stmt q(db_, path_, "PRAGMA journal_mode");
    return q.step() ? q.text(0) : std::string();
}

std::string TuningDatabase::add_workload(const te::Compute& c) {
    std::string text = te::canonical_compute_text(c);
    std::string key = te::workload_key_of_text(text);
    add_workload(key, text);
    return key;
}

void TuningDatabase::add_workload(const std::string& key, const std::string& text) {
    if (te::workload_key_of_text(text) != key)
        throw UserError() << "workload key '" << key << "' does not match its compute text";
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

bool TuningDatabase::has_workload(const std::string& key) const {
    return compute_text(key).has_value();
}

std::optional<std::string> TuningDatabase::compute_text(const std::string& key) const {
    Stmt q(db_, path_, "SELECT compute_text FROM workloads WHERE key = ?");
    q.bind(1, key);
    if (!q.step())
        return std::nullopt;
    return q.text(0);
}

std::vector<std::string> TuningDatabase::workload_keys() const {
    Stmt q(db_, path_, "SELECT key FROM workloads ORDER BY key");
    std::vector<std::string> keys;
    while (q.step())
        keys.push_back(q.text(0));
    return keys;
}

void TuningDatabase::commit_batch(std::vector<TuningRecord>& records) {
    std::vector<TuningRecord> out = records; // fields are set on `records` only after COMMIT
    WriteTransaction tx(db_, path_);
    Stmt find(db_, path_, "SELECT id FROM workloads WHERE key = ?");
    Stmt ins(db_, path_,
             "INSERT INTO records(workload_id, target, fingerprint, isa_class, schedule_json, "
             "run_secs_json, median_secs, error_code, error_message, measure_settings_json, "
             "tessera_version, schema_version, created_at) "
             "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    std::string now = utc_now();
    for (size_t i = 0; i < out.size(); ++i) {
        TuningRecord& r = out[i];
        find.reset();
        find.bind(1, r.workload_key);
        if (!find.step())
            throw UserError() << "record " << i << " of the batch names unknown workload '"
                              << r.workload_key << "'; nothing of the batch was committed";
        int64_t wid = find.integer(0);
        find.reset(); // no statement may stay mid-row at COMMIT
        int code = int(r.error_code);
        if (code < int(MeasureError::Ok) || code > int(MeasureError::Unknown))
            throw UserError() << "record " << i << " of the batch has unknown error code " << code
                              << "; nothing of the batch was committed";
        if (r.error_code == MeasureError::Ok) {
            if (r.run_secs.empty())
                throw UserError() << "record " << i << " of the batch is ok but has no run time"
                                  << "; nothing of the batch was committed";
            for (double s : r.run_secs)
                if (!std::isfinite(s) || s < 0)
                    throw UserError() << "record " << i << " of the batch has run time " << s
                                      << "; nothing of the batch was committed";
            r.median_secs = median(r.run_secs);
        } else {
            r.median_secs = std::numeric_limits<double>::infinity();
        }
        for (const std::string* js : {&r.schedule_json, &r.measure_settings_json})
            if (!nlohmann::json::accept(*js))
                throw UserError() << "record " << i << " of the batch has invalid JSON '" << *js
                                  << "'; nothing of the batch was committed";
        nlohmann::json secs = nlohmann::json::array();
        for (double s : r.run_secs)
            secs.push_back(std::isfinite(s) ? nlohmann::json(s) : nlohmann::json());
        if (r.tessera_version.empty())
            r.tessera_version = tessera_version();
        if (r.created_at.empty())
            r.created_at = now;
        r.schema_version = kSchemaVersion;
        ins.bind(1, wid).bind(2, r.target).bind(3, r.fingerprint).bind(4, r.isa_class);
        ins.bind(5, r.schedule_json).bind(6, secs.dump()).bind(7, r.median_secs);
        ins.bind(8, int64_t(code)).bind(9, r.error_message).bind(10, r.measure_settings_json);
        ins.bind(11, r.tessera_version).bind(12, int64_t(r.schema_version)).bind(13, r.created_at);
        ins.step();
        r.id = sqlite3_last_insert_rowid(db_);
        ins.reset();
    }
    tx.commit();
    records = std::move(out);
}

namespace {

TuningRecord read_record(const Stmt& q) {
    TuningRecord r;
    r.id = q.integer(0);
    r.workload_key = q.text(1);
    r.target = q.text(2);
    r.fingerprint = q.text(3);
    r.isa_class = q.text(4);
    r.schedule_json = q.text(5);
    nlohmann::json secs = nlohmann::json::parse(q.text(6), nullptr, false);
    if (secs.is_array())
        for (const auto& s : secs)
            r.run_secs.push_back(s.is_number() ? s.get<double>()
                                               : std::numeric_limits<double>::quiet_NaN());
    r.median_secs = q.is_null(7) ? std::numeric_limits<double>::infinity() : q.real(7);
    r.error_code = MeasureError(int(q.integer(8)));
    r.error_message = q.text(9);
    r.measure_settings_json = q.text(10);
    r.tessera_version = q.text(11);
    r.schema_version = int(q.integer(12));
    r.created_at = q.text(13);
    return r;
}

} // namespace

std::optional<TuningRecord> TuningDatabase::best_where(const std::string& key,
                                                       const std::string& target,
                                                       const char* column,
                                                       const std::string& value) const {
    // `column` is one of our own column names, never user text.
    std::string sql = std::string("SELECT ") + kRecordColumns +
                      " FROM records r JOIN workloads w ON r.workload_id = w.id"
                      " WHERE w.key = ? AND r.target = ? AND r." +
                      column +
                      " = ? AND r.error_code = 0 ORDER BY r.median_secs ASC, r.id ASC LIMIT 1";
    Stmt q(db_, path_, sql.c_str());
    q.bind(1, key).bind(2, target).bind(3, value);
    if (!q.step())
        return std::nullopt;
    return read_record(q);
}

std::optional<TuningRecord> TuningDatabase::best_record(const std::string& key,
                                                        const std::string& target,
                                                        const std::string& fingerprint) const {
    return best_where(key, target, "fingerprint", fingerprint);
}

std::optional<TuningRecord> TuningDatabase::best_record_for_isa(const std::string& key,
                                                                const std::string& target,
                                                                const std::string& isa) const {
    return best_where(key, target, "isa_class", isa);
}

std::vector<TuningRecord> TuningDatabase::top_k(const std::string& key, int k,
                                                const std::string& target,
                                                const std::string& fingerprint) const {
    std::vector<TuningRecord> out;
    if (k <= 0)
        return out;
    std::string sql = std::string("SELECT ") + kRecordColumns +
                      " FROM records r JOIN workloads w ON r.workload_id = w.id"
                      " WHERE w.key = ?1 AND r.error_code = 0"
                      " AND (?2 = '' OR r.target = ?2) AND (?3 = '' OR r.fingerprint = ?3)"
                      " ORDER BY r.median_secs ASC, r.id ASC LIMIT ?4";
    Stmt q(db_, path_, sql.c_str());
    q.bind(1, key).bind(2, target).bind(3, fingerprint).bind(4, int64_t(k));
    while (q.step())
        out.push_back(read_record(q));
    return out;
}

std::vector<TuningRecord> TuningDatabase::records_of(const std::string& key) const {
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

bool TuningDatabase::has_measured(const std::string& key, const std::string& schedule_json,
                                  const std::string& target, const std::string& fingerprint) const {
    Stmt q(db_, path_,
           "SELECT 1 FROM records r JOIN workloads w ON r.workload_id = w.id"
           " WHERE w.key = ?1 AND r.schedule_json = ?2"
           " AND (?3 = '' OR r.target = ?3) AND (?4 = '' OR r.fingerprint = ?4) LIMIT 1");
    q.bind(1, key).bind(2, schedule_json).bind(3, target).bind(4, fingerprint);
    return q.step();
}

std::set<std::string> TuningDatabase::measured_schedules(const std::string& key,
                                                         const std::string& target,
                                                         const std::string& fingerprint) const {
    Stmt q(db_, path_,
           "SELECT r.schedule_json FROM records r JOIN workloads w ON r.workload_id = w.id"
           " WHERE w.key = ?1 AND (?2 = '' OR r.target = ?2) AND (?3 = '' OR r.fingerprint = ?3)");
    q.bind(1, key).bind(2, target).bind(3, fingerprint);
    std::set<std::string> out;
    while (q.step())
        out.insert(q.text(0));
    return out;
}

int64_t TuningDatabase::num_records() const {
    Stmt q(db_, path_, "SELECT COUNT(*) FROM records");
    return q.step() ? q.integer(0) : 0;
}

void TuningDatabase::save_cost_model(const std::string& name, const std::vector<uint8_t>& blob) {
    WriteTransaction tx(db_, path_);
    Stmt ins(db_, path_, "INSERT INTO cost_models(name, blob, created_at) VALUES (?, ?, ?)");
    ins.bind(1, name).bind_blob(2, blob).bind(3, utc_now());
    ins.step();
    tx.commit();
}

std::optional<std::vector<uint8_t>> TuningDatabase::load_cost_model(const std::string& name) const {
    Stmt q(db_, path_, "SELECT blob FROM cost_models WHERE name = ? ORDER BY id DESC LIMIT 1");
    q.bind(1, name);
    if (!q.step())
        return std::nullopt;
    return q.blob(0);
}

} // namespace tessera::tune
