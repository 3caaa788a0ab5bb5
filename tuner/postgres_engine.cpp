// The PostgreSQL engine of the tuning database (database_engine.h): a server database shared
// by tuners on many machines, reached through libpq by a postgresql:// URL.
//
// Concurrency: every write transaction first takes one transaction-scoped advisory lock
// (kWriteLock), so writers run one after another. That keeps what SQLite's single writer gives
// for free: ids increase in commit order (ties in ordering are broken by id), import's "is this
// identity stored already?" check cannot race another importer, and two processes opening a
// fresh database cannot both create the schema. Readers never take it.
//
// Values travel as text; times are printed shortest-exact and parsed with from_chars, so a
// double survives the round trip bit for bit and no locale is involved. Non-finite medians are
// stored as NULL, as in the SQLite engine.
//
// Messages name the database, host and port (never the URL: it may hold a password).
#include <libpq-fe.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <system_error>

#include "database_engine.h"
#include "tessera/support/error.h"

namespace tessera::tune {

namespace {

/// The advisory lock every write transaction holds (the bytes of "tessera" as a number).
constexpr const char* kWriteLock = "SELECT pg_advisory_xact_lock(32762643830108769)";

/// Seconds libpq waits for an unreachable server unless the URL sets connect_timeout.
constexpr const char* kDefaultConnectTimeout = "10";

const char* kCreateSchema = R"sql(
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE workloads (
    id BIGSERIAL PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    compute_text TEXT NOT NULL);
CREATE TABLE records (
    id BIGSERIAL PRIMARY KEY,
    workload_id BIGINT NOT NULL REFERENCES workloads(id),
    target TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    isa_class TEXT NOT NULL,
    schedule_json TEXT NOT NULL,
    run_secs_json TEXT NOT NULL,
    median_secs DOUBLE PRECISION,
    rank_secs DOUBLE PRECISION,
    error_code INTEGER NOT NULL,
    error_message TEXT NOT NULL,
    measure_settings_json TEXT NOT NULL,
    tessera_version TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    identity TEXT NOT NULL);
CREATE INDEX records_by_workload
    ON records(workload_id, target, fingerprint, error_code, rank_secs);
CREATE INDEX records_by_isa_class
    ON records(workload_id, isa_class, error_code, rank_secs);
-- A hash index: schedules can outgrow a B-tree entry (about 2.7 kB).
CREATE INDEX records_by_schedule ON records USING hash (schedule_json);
CREATE INDEX records_by_identity ON records(identity);
CREATE TABLE cost_models (
    id BIGSERIAL PRIMARY KEY,
    name TEXT NOT NULL,
    blob BYTEA NOT NULL,
    created_at TEXT NOT NULL);
)sql";

const char* kRecordColumns =
    "r.id, w.key, r.target, r.fingerprint, r.isa_class, r.schedule_json, r.run_secs_json, "
    "r.median_secs, r.error_code, r.error_message, r.measure_settings_json, r.tessera_version, "
    "r.schema_version, r.created_at, r.rank_secs";

/// libpq's message on one line: its lines joined by "; ", tabs and trailing blanks dropped.
std::string one_line(const char* msg) {
    std::string out, line;
    auto flush = [&] {
        size_t b = line.find_first_not_of(" \t"), e = line.find_last_not_of(" \t");
        if (b != std::string::npos)
            out += (out.empty() ? "" : "; ") + line.substr(b, e - b + 1);
        line.clear();
    };
    for (const char* p = msg ? msg : ""; *p; ++p) {
        if (*p == '\n')
            flush();
        else
            line += *p;
    }
    flush();
    return out.empty() ? std::string("no reason given") : out;
}

/// "database 'tessera' on PostgreSQL server db.example:5432": what messages call a URL, from
/// its parsed parts (never the password).
std::string describe_url(const std::string& url) {
    char* err = nullptr;
    PQconninfoOption* opts = PQconninfoParse(url.c_str(), &err);
    if (!opts) {
        std::string reason = one_line(err);
        PQfreemem(err);
        throw UserError() << "tuning database URL is malformed (" << reason << ")";
    }
    std::string host, port, dbname;
    for (PQconninfoOption* o = opts; o->keyword; ++o) {
        std::string value = o->val ? o->val : "";
        if (std::strcmp(o->keyword, "host") == 0 && !value.empty())
            host = value;
        else if (std::strcmp(o->keyword, "hostaddr") == 0 && host.empty())
            host = value;
        else if (std::strcmp(o->keyword, "port") == 0)
            port = value;
        else if (std::strcmp(o->keyword, "dbname") == 0)
            dbname = value;
    }
    PQconninfoFree(opts);
    return "database '" + (dbname.empty() ? std::string("(the user's)") : dbname) +
           "' on PostgreSQL server " + (host.empty() ? std::string("localhost") : host) + ":" +
           (port.empty() ? std::string("5432") : port);
}

std::string double_text(double v) {
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof(buf), v);
    return std::string(buf, res.ptr);
}

/// A query result; cleared on destruction.
class Result {
  public:
    explicit Result(PGresult* r) : r_(r) {}
    ~Result() { PQclear(r_); }
    Result(Result&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
    Result(const Result&) = delete;
    Result& operator=(const Result&) = delete;
    Result& operator=(Result&&) = delete;

    ExecStatusType status() const { return PQresultStatus(r_); }
    int rows() const { return PQntuples(r_); }
    bool is_null(int row, int col) const { return PQgetisnull(r_, row, col); }
    std::string text(int row, int col) const {
        return std::string(PQgetvalue(r_, row, col), size_t(PQgetlength(r_, row, col)));
    }
    int64_t integer(int row, int col) const {
        int64_t v = 0;
        const char* p = PQgetvalue(r_, row, col);
        std::from_chars(p, p + PQgetlength(r_, row, col), v);
        return v;
    }
    double real(int row, int col) const {
        if (is_null(row, col))
            return std::numeric_limits<double>::infinity();
        double v = 0;
        const char* p = PQgetvalue(r_, row, col);
        std::from_chars(p, p + PQgetlength(r_, row, col), v);
        return v;
    }
    std::vector<uint8_t> bytes(int row, int col) const {
        size_t n = 0;
        unsigned char* p =
            PQunescapeBytea(reinterpret_cast<const unsigned char*>(PQgetvalue(r_, row, col)), &n);
        TESSERA_CHECK(p) << "out of memory decoding a BYTEA value";
        std::vector<uint8_t> out(p, p + n);
        PQfreemem(p);
        return out;
    }
    /// Rows changed by an INSERT, UPDATE or DELETE.
    int64_t changed() const {
        const char* n = PQcmdTuples(r_);
        int64_t v = 0;
        std::from_chars(n, n + std::strlen(n), v);
        return v;
    }

  private:
    PGresult* r_;
};

/// One query parameter: text, or SQL NULL.
using Param = std::optional<std::string>;

TuningRecord read_record(const Result& q, int row) {
    TuningRecord r;
    r.id = q.integer(row, 0);
    r.workload_key = q.text(row, 1);
    r.target = q.text(row, 2);
    r.fingerprint = q.text(row, 3);
    r.isa_class = q.text(row, 4);
    r.schedule_json = q.text(row, 5);
    r.run_secs = run_secs_from_json(q.text(row, 6));
    r.median_secs = q.real(row, 7);
    r.rank_secs = q.real(row, 14);
    r.error_code = MeasureError(int(q.integer(row, 8)));
    r.error_message = q.text(row, 9);
    r.measure_settings_json = q.text(row, 10);
    r.tessera_version = q.text(row, 11);
    r.schema_version = int(q.integer(row, 12));
    r.created_at = q.text(row, 13);
    return r;
}

std::vector<TuningRecord> read_records(const Result& q) {
    std::vector<TuningRecord> out;
    for (int i = 0; i < q.rows(); ++i)
        out.push_back(read_record(q, i));
    return out;
}

class PostgresEngine final : public DatabaseEngine {
  public:
    /// Connects, then creates or checks the schema (UserError as database.h says).
    explicit PostgresEngine(const std::string& url);
    ~PostgresEngine() override { PQfinish(conn_); }
    PostgresEngine(const PostgresEngine&) = delete;
    PostgresEngine& operator=(const PostgresEngine&) = delete;

    int schema_version() const override {
        Result q = exec("SELECT MAX(version) FROM schema_version", {}, "reading the version");
        return q.rows() && !q.is_null(0, 0) ? int(q.integer(0, 0)) : 0;
    }

    std::string journal_mode() const override { return "server"; }

    void add_workload(const std::string& key, const std::string& text) override {
        // Every task of every tuner adds its workload on start: the common case, a workload
        // stored already, is answered without the write lock.
        if (std::optional<std::string> stored = compute_text(key); stored && *stored == text)
            return;
        Transaction tx(*this);
        Result q = exec("SELECT compute_text FROM workloads WHERE key = $1", {key},
                        "looking up a workload");
        if (q.rows()) {
            if (q.text(0, 0) != text)
                throw UserError() << "tuning " << where_ << ": workload '" << key
                                  << "' is stored with a different compute text";
            return; // already present: nothing to write, the transaction rolls back
        }
        exec("INSERT INTO workloads(key, compute_text) VALUES ($1, $2)", {key, text},
             "adding a workload");
        tx.commit();
    }

    std::optional<std::string> compute_text(const std::string& key) const override {
        Result q = exec("SELECT compute_text FROM workloads WHERE key = $1", {key},
                        "looking up a workload");
        if (!q.rows())
            return std::nullopt;
        return q.text(0, 0);
    }

    std::vector<std::string> workload_keys() const override {
        // COLLATE "C": byte order, as SQLite sorts, whatever the database's locale.
        Result q =
            exec("SELECT key FROM workloads ORDER BY key COLLATE \"C\"", {}, "listing workloads");
        std::vector<std::string> keys;
        for (int i = 0; i < q.rows(); ++i)
            keys.push_back(q.text(i, 0));
        return keys;
    }

    ImportCounts insert_records(std::vector<TuningRecord>& records, bool import) override {
        Transaction tx(*this);
        ImportCounts counts;
        const std::string now = utc_now();
        // Round trips cost more than on a local file: workload ids are looked up once per
        // batch, and an import asks for the stored identities of the whole batch at once.
        std::map<std::string, std::string> workload_ids;
        std::vector<std::string> identities;
        for (size_t i = 0; i < records.size(); ++i) {
            TuningRecord& r = records[i];
            auto [it, is_new] = workload_ids.try_emplace(r.workload_key);
            if (is_new) {
                Result w = exec("SELECT id FROM workloads WHERE key = $1", {r.workload_key},
                                "looking up a workload");
                if (w.rows())
                    it->second = w.text(0, 0);
            }
            if (it->second.empty())
                throw UserError() << "record " << i << " of the batch names unknown workload '"
                                  << r.workload_key << "'" << kNothingCommitted;
            identities.push_back(prepare_record(r, i, import, now));
        }
        std::set<std::string> stored; // identities already in the database, and added since
        if (import && !identities.empty()) {
            std::string array = "{"; // hex digests: no quoting needed in an array literal
            for (const std::string& id : identities)
                array += (array.size() > 1 ? "," : "") + id;
            Result seen = exec("SELECT identity FROM records WHERE identity = ANY($1::text[])",
                               {array + "}"}, "looking up records");
            for (int i = 0; i < seen.rows(); ++i)
                stored.insert(seen.text(i, 0));
        }
        for (size_t i = 0; i < records.size(); ++i) {
            TuningRecord& r = records[i];
            const std::string& wid = workload_ids[r.workload_key];
            const std::string& identity = identities[i];
            if (import && !stored.insert(identity).second) {
                r.id = 0;
                ++counts.duplicates;
                continue;
            }
            Param median =
                std::isfinite(r.median_secs) ? Param(double_text(r.median_secs)) : std::nullopt;
            Param rank =
                std::isfinite(r.rank_secs) ? Param(double_text(r.rank_secs)) : std::nullopt;
            Result id = exec(
                "INSERT INTO records(workload_id, target, fingerprint, isa_class, schedule_json, "
                "run_secs_json, median_secs, error_code, error_message, measure_settings_json, "
                "tessera_version, schema_version, created_at, identity, rank_secs) VALUES ($1, $2, "
                "$3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id",
                {wid, r.target, r.fingerprint, r.isa_class, r.schedule_json,
                 run_secs_to_json(r.run_secs), median, std::to_string(int(r.error_code)),
                 r.error_message, r.measure_settings_json, r.tessera_version,
                 std::to_string(r.schema_version), r.created_at, identity, rank},
                "inserting a record");
            r.id = id.integer(0, 0);
            ++counts.records_added;
        }
        tx.commit();
        return counts;
    }

    std::optional<TuningRecord> best_record(const std::string& key, const std::string& target,
                                            const std::string& fingerprint) const override {
        Result q = exec(std::string("SELECT ") + kRecordColumns +
                            " FROM records r JOIN workloads w ON r.workload_id = w.id"
                            " WHERE w.key = $1 AND r.target = $2 AND r.fingerprint = $3 AND"
                            " r.error_code = 0 ORDER BY r.rank_secs ASC, r.id ASC LIMIT 1",
                        {key, target, fingerprint}, "looking up the best record");
        if (!q.rows())
            return std::nullopt;
        return read_record(q, 0);
    }

    std::vector<TuningRecord> ok_records_for_isa(const std::string& key,
                                                 const std::string& isa) const override {
        return read_records(exec(std::string("SELECT ") + kRecordColumns +
                                     " FROM records r JOIN workloads w ON r.workload_id = w.id"
                                     " WHERE w.key = $1 AND r.isa_class = $2 AND r.error_code = 0"
                                     " ORDER BY r.rank_secs ASC, r.id ASC",
                                 {key, isa}, "looking up records of an ISA class"));
    }

    std::vector<TuningRecord> top_k(const std::string& key, int k, const std::string& target,
                                    const std::string& fingerprint) const override {
        return read_records(exec(std::string("SELECT ") + kRecordColumns +
                                     " FROM records r JOIN workloads w ON r.workload_id = w.id"
                                     " WHERE w.key = $1 AND r.error_code = 0"
                                     " AND ($2::text = '' OR r.target = $2::text)"
                                     " AND ($3::text = '' OR r.fingerprint = $3::text)"
                                     " ORDER BY r.rank_secs ASC, r.id ASC LIMIT $4::bigint",
                                 {key, target, fingerprint, std::to_string(k)},
                                 "looking up the best records"));
    }

    std::vector<TuningRecord> records_of(const std::string& key) const override {
        return read_records(exec(std::string("SELECT ") + kRecordColumns +
                                     " FROM records r JOIN workloads w ON r.workload_id = w.id"
                                     " WHERE w.key = $1 ORDER BY r.id ASC",
                                 {key}, "listing records"));
    }

    bool has_measured(const std::string& key, const std::string& schedule_json,
                      const std::string& target, const std::string& fingerprint) const override {
        Result q = exec("SELECT 1 FROM records r JOIN workloads w ON r.workload_id = w.id"
                        " WHERE w.key = $1 AND r.schedule_json = $2"
                        " AND ($3::text = '' OR r.target = $3::text)"
                        " AND ($4::text = '' OR r.fingerprint = $4::text) LIMIT 1",
                        {key, schedule_json, target, fingerprint}, "looking up a schedule");
        return q.rows() > 0;
    }

    std::set<std::string> measured_schedules(const std::string& key, const std::string& target,
                                             const std::string& fingerprint) const override {
        Result q = exec("SELECT r.schedule_json FROM records r JOIN workloads w"
                        " ON r.workload_id = w.id WHERE w.key = $1"
                        " AND ($2::text = '' OR r.target = $2::text)"
                        " AND ($3::text = '' OR r.fingerprint = $3::text)",
                        {key, target, fingerprint}, "listing schedules");
        std::set<std::string> out;
        for (int i = 0; i < q.rows(); ++i)
            out.insert(q.text(i, 0));
        return out;
    }

    int64_t num_records() const override {
        Result q = exec("SELECT COUNT(*) FROM records", {}, "counting records");
        return q.integer(0, 0);
    }

    int64_t prune(int keep_best, bool keep_errors) override {
        Transaction tx(*this);
        Result del = exec("DELETE FROM records WHERE id IN ("
                          "  SELECT id FROM (SELECT id, ROW_NUMBER() OVER ("
                          "      PARTITION BY workload_id, target, fingerprint"
                          "      ORDER BY rank_secs ASC, id ASC) AS pos"
                          "    FROM records WHERE error_code = 0) AS ranked"
                          "  WHERE pos > $1::bigint)"
                          " OR ($2::int = 0 AND error_code != 0)",
                          {std::to_string(keep_best), std::to_string(keep_errors ? 1 : 0)},
                          "pruning records");
        tx.commit();
        return del.changed();
    }

    std::string integrity_check() const override {
        // The server keeps its own storage sound; what can go wrong is in tessera's tables.
        std::string out;
        auto finding = [&](const char* sql, const char* what) {
            int64_t n = exec(sql, {}, "checking integrity").integer(0, 0);
            if (n)
                out += (out.empty() ? "" : "\n") + std::to_string(n) + " " + what;
        };
        Result v = exec("SELECT COUNT(*) FROM schema_version", {}, "checking integrity");
        if (v.integer(0, 0) != 1)
            out += "schema_version holds " + v.text(0, 0) + " rows, not 1";
        finding("SELECT COUNT(*) FROM records WHERE identity = ''", "records without identity");
        finding("SELECT COUNT(*) FROM records WHERE error_code = 0 AND median_secs IS NULL",
                "ok records without a median time");
        finding("SELECT COUNT(*) FROM records WHERE error_code = 0 AND rank_secs IS NULL",
                "ok records without a rank time");
        finding("SELECT COUNT(*) FROM records WHERE error_code < 0 OR error_code > 8",
                "records with an unknown error code");
        return out.empty() ? "ok" : out;
    }

    void save_cost_model(const std::string& name, const std::vector<uint8_t>& blob,
                         const std::string& created_at) override {
        static const char* kHex = "0123456789abcdef";
        std::string hex = "\\x"; // BYTEA's hex input format
        hex.reserve(2 + 2 * blob.size());
        for (uint8_t b : blob) {
            hex += kHex[b >> 4];
            hex += kHex[b & 15];
        }
        Transaction tx(*this);
        exec("INSERT INTO cost_models(name, blob, created_at) VALUES ($1, $2::bytea, $3)",
             {name, hex, created_at}, "saving a cost model");
        tx.commit();
    }

    std::optional<std::vector<uint8_t>> load_cost_model(const std::string& name) const override {
        Result q = exec("SELECT blob FROM cost_models WHERE name = $1 ORDER BY id DESC LIMIT 1",
                        {name}, "loading a cost model");
        if (!q.rows())
            return std::nullopt;
        return q.bytes(0, 0);
    }

  private:
    /// BEGIN and the write lock; rolled back unless commit() is reached.
    class Transaction {
      public:
        explicit Transaction(const PostgresEngine& e) : e_(e) {
            e_.exec("BEGIN", {}, "starting a transaction");
            try {
                e_.exec(kWriteLock, {}, "taking the write lock");
            } catch (...) {
                PQclear(PQexec(e_.conn_, "ROLLBACK"));
                throw;
            }
        }
        ~Transaction() {
            if (!done_)
                PQclear(PQexec(e_.conn_, "ROLLBACK"));
        }
        void commit() {
            e_.exec("COMMIT", {}, "committing a transaction");
            done_ = true;
        }
        Transaction(const Transaction&) = delete;
        Transaction& operator=(const Transaction&) = delete;

      private:
        const PostgresEngine& e_;
        bool done_ = false;
    };

    /// Runs one statement with text parameters; UserError naming the database on failure.
    Result exec(const std::string& sql, const std::vector<Param>& params, const char* what) const {
        std::vector<const char*> values;
        for (const Param& p : params)
            values.push_back(p ? p->c_str() : nullptr);
        // Without parameters PQexec, which also runs several statements (the schema) at once.
        Result r(values.empty() ? PQexec(conn_, sql.c_str())
                                : PQexecParams(conn_, sql.c_str(), int(values.size()), nullptr,
                                               values.data(), nullptr, nullptr, 0));
        if (r.status() != PGRES_COMMAND_OK && r.status() != PGRES_TUPLES_OK)
            throw UserError() << "tuning " << where_ << ": " << what << " failed ("
                              << one_line(PQerrorMessage(conn_)) << ")";
        return r;
    }
    void create_or_check_schema();

    std::string where_; // describe_url(url): names the database in every message
    PGconn* conn_ = nullptr;
};

PostgresEngine::PostgresEngine(const std::string& url) : where_(describe_url(url)) {
    // connect_timeout first and the URL after it: a timeout in the URL wins (libpq processes
    // the keywords in order, and expands the URL given as dbname in place).
    const char* keys[] = {"connect_timeout", "application_name", "dbname", nullptr};
    const char* values[] = {kDefaultConnectTimeout, "tessera", url.c_str(), nullptr};
    conn_ = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
    if (!conn_)
        throw UserError() << "cannot open tuning " << where_ << " (out of memory)";
    if (PQstatus(conn_) != CONNECTION_OK) {
        std::string reason = one_line(PQerrorMessage(conn_));
        PQfinish(conn_);
        conn_ = nullptr;
        throw UserError() << "cannot open tuning " << where_ << " (" << reason << ")";
    }
    // The server's notices are not the user's business (errors come back as results).
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
    try {
        create_or_check_schema();
    } catch (...) { // the destructor does not run for a constructor that throws
        PQfinish(conn_);
        conn_ = nullptr;
        throw;
    }
}

void PostgresEngine::create_or_check_schema() {
    auto has_schema = [&] { // throws on a database that holds something else
        Result tables = exec("SELECT table_name FROM information_schema.tables"
                             " WHERE table_schema = current_schema()",
                             {}, "listing tables");
        bool has_version = false;
        for (int i = 0; i < tables.rows(); ++i)
            has_version = has_version || tables.text(i, 0) == "schema_version";
        if (tables.rows() > 0 && !has_version)
            throw UserError() << where_ << " is not a tessera tuning database (it has tables but "
                              << "no schema_version table)";
        return has_version;
    };
    if (!has_schema()) {
        // Under the write lock, and checked again there: of two tuners opening a fresh
        // database at once, one creates the schema and the other finds it.
        Transaction tx(*this);
        if (!has_schema()) {
            exec(kCreateSchema, {}, "creating the schema");
            exec("INSERT INTO schema_version(version) VALUES ($1)",
                 {std::to_string(TuningDatabase::kSchemaVersion)}, "creating the schema");
        }
        tx.commit();
    }
    int64_t v = schema_version();
    if (v > TuningDatabase::kSchemaVersion)
        throw UserError() << "tuning " << where_ << " has schema version " << v
                          << ", newer than this tessera's schema version "
                          << TuningDatabase::kSchemaVersion << "; use a newer tessera";
    // Server databases start at version 2 (database.h).
    if (v < 2)
        throw UserError() << "tuning " << where_ << " has invalid schema version " << v;
    if (v < 3) {
        // Under the write lock, and the version read again there: of two tuners opening an old
        // database at once, one migrates it and the other finds it migrated.
        Transaction tx(*this);
        if (schema_version() < 3) {
            exec(migrate_records_2_to_3_sql("DOUBLE PRECISION") +
                     "UPDATE schema_version SET version = 3;",
                 {}, "migrating schema 2 to 3");
        }
        tx.commit();
    }
}

} // namespace

std::unique_ptr<DatabaseEngine> open_postgres_engine(const std::string& url) {
    return std::make_unique<PostgresEngine>(url);
}

} // namespace tessera::tune
