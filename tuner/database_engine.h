// The storage engines behind TuningDatabase (internal to the tuner layer, not a public header).
//
// TuningDatabase (include/tessera/tuner/database.h) owns the rules every engine shares: argument
// checks, record validation and the fields commit_batch fills (prepare_record below), record
// identity, merge. An engine owns the storage: SQL, transactions, concurrency, schema versions.
//   SqliteEngine   (sqlite_engine.cpp)    one file in WAL mode, or ":memory:".
//   PostgresEngine (postgres_engine.cpp)  a PostgreSQL server reached by a postgresql:// URL.
// make_database_engine picks one from the path. Every failure of the storage is a UserError
// naming the database (a database is the user's input, never a tessera bug).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/support/utc_time.h"
#include "tessera/tuner/database.h"

namespace tessera::tune {

/// One open database. Methods have the semantics of the TuningDatabase methods of the same name
/// (database.h); arguments arrive already checked there.
class DatabaseEngine {
  public:
    virtual ~DatabaseEngine() = default;

    virtual int schema_version() const = 0;
    virtual std::string journal_mode() const = 0;

    /// Adds (key, text) when the key is new; on a key present with another text, UserError.
    virtual void add_workload(const std::string& key, const std::string& text) = 0;
    virtual std::optional<std::string> compute_text(const std::string& key) const = 0;
    virtual std::vector<std::string> workload_keys() const = 0;

    /// Validates every record with prepare_record and inserts them in ONE transaction, all or
    /// nothing. import=false (commit_batch): every record is inserted and gets its id.
    /// import=true: a record whose identity is stored already (or earlier in `records`) is
    /// skipped with id 0 and counted as a duplicate. On success `records` hold the filled fields.
    virtual ImportCounts insert_records(std::vector<TuningRecord>& records, bool import) = 0;

    virtual std::optional<TuningRecord> best_record(const std::string& key,
                                                    const std::string& target,
                                                    const std::string& fingerprint) const = 0;
    /// Every Ok record of the workload on this ISA class, fastest first (ties by id); the
    /// caller keeps those of the wanted target family.
    virtual std::vector<TuningRecord> ok_records_for_isa(const std::string& key,
                                                         const std::string& isa_class) const = 0;
    virtual std::vector<TuningRecord> top_k(const std::string& key, int k,
                                            const std::string& target,
                                            const std::string& fingerprint) const = 0;
    virtual std::vector<TuningRecord> records_of(const std::string& key) const = 0;
    virtual bool has_measured(const std::string& key, const std::string& schedule_json,
                              const std::string& target, const std::string& fingerprint) const = 0;
    virtual std::set<std::string> measured_schedules(const std::string& key,
                                                     const std::string& target,
                                                     const std::string& fingerprint) const = 0;
    virtual int64_t num_records() const = 0;

    /// keep_best >= 0 (checked by the caller).
    virtual int64_t prune(int keep_best, bool keep_errors) = 0;
    virtual std::string integrity_check() const = 0;

    virtual void save_cost_model(const std::string& name, const std::vector<uint8_t>& blob,
                                 const std::string& created_at) = 0;
    virtual std::optional<std::vector<uint8_t>> load_cost_model(const std::string& name) const = 0;
};

/// Whether `path` names a PostgreSQL server ("postgresql://..." or "postgres://...").
bool is_postgres_url(const std::string& path);

/// Opens (creating and migrating when needed) the database `path` names: a PostgreSQL URL
/// opens a PostgresEngine, anything else an SqliteEngine. Throws UserError as
/// TuningDatabase's constructor documents.
std::unique_ptr<DatabaseEngine> make_database_engine(const std::string& path);

std::unique_ptr<DatabaseEngine> open_sqlite_engine(const std::string& path);
std::unique_ptr<DatabaseEngine> open_postgres_engine(const std::string& url);

/// Validates record `index` of a batch and fills what commit_batch fills: median_secs and
/// rank_secs (rank_secs = median_secs when 0; both +inf for errors), tessera_version and created_at
/// when empty (created_at = `now`), and schema_version (always on commit; on import only when 0).
/// Throws UserError naming the record (unknown error code, Ok without a valid run time, invalid
/// JSON, schema version out of range). Returns record_identity(r) of the filled record. Does not
/// check the workload.
std::string prepare_record(TuningRecord& r, size_t index, bool import, const std::string& now);

/// The stored form of run_secs: a JSON array, non-finite times as null; and back (null -> NaN).
std::string run_secs_to_json(const std::vector<double>& secs);
std::vector<double> run_secs_from_json(const std::string& json);

/// The SQL (several statements) that migrates a schema-2 records table to schema 3 in either
/// engine: the rank_secs column of `real_type` ("REAL", "DOUBLE PRECISION"), set to each
/// record's median (measured alone: ranked by it), and the lookup indexes ordered by it. The
/// caller runs it in its migration transaction and updates schema_version.
std::string migrate_records_2_to_3_sql(const char* real_type);

/// The message every batch error ends with.
inline constexpr const char* kNothingCommitted = "; nothing of the batch was committed";

} // namespace tessera::tune
