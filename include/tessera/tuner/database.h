// The tuning database: every measurement ever taken (DESIGN.md decision 6), in one SQLite file
// or, for teams whose tuning outgrows one machine, in a shared PostgreSQL server database.
//
// The path decides the engine: "postgresql://..." or "postgres://..." (a libpq connection URI,
// e.g. postgresql://tuner@db.example:5432/tessera) opens a PostgreSQL database, anything else
// an SQLite file (":memory:" a private in-memory one, for tests). Both hold the same tables
// and answer every method below identically.
//
// Tables (schema version 3):
//   schema_version(version)                        one row: the schema this file was written in
//   workloads(id, key UNIQUE, compute_text)        key = workload_key(compute_text)
//   records(id, workload_id, target, fingerprint, isa_class, schedule_json, run_secs_json,
//           median_secs, rank_secs, error_code, error_message, measure_settings_json,
//           tessera_version, schema_version, created_at, identity)
//   cost_models(id, name, blob, created_at)
// (PostgreSQL: BIGSERIAL ids, DOUBLE PRECISION times, BYTEA blobs, TEXT elsewhere.)
//
// Schema history (a database of an older version is migrated on open, in one transaction):
//   1  the first schema (SQLite only: PostgreSQL databases start at version 2).
//   2  records.identity (record_identity(): what makes importing and merging idempotent) with
//      an index on it, and the ISA-class lookup index keyed by (workload, isa_class) since that
//      tier no longer compares the -mcpu of the target (see target_family()).
//   3  records.rank_secs (TuningRecord::rank_secs: the time records are ranked by), set to
//      median_secs for the records already stored; the lookup indexes order by it.
//
// Concurrency. SQLite: the file is in WAL mode with a busy timeout, so several tuners on one
// machine can commit into one file. PostgreSQL: tuners on many machines commit into one
// database; every write transaction takes one database-wide advisory lock, so writers queue,
// ids increase in commit order and import's identity check never races another writer.
// Either way each commit_batch is ONE transaction, so a killed tuner loses nothing it committed
// and never leaves half a batch.
//
// Ordering is deterministic everywhere: by rank time (TuningRecord::rank_secs), ties broken by
// record id (insertion order). Error records (error_code != Ok) are kept but never count as best
// or in top-k.
//
// The storage engine stays behind this class (tuner/database_engine.h; no SQLite or libpq type
// in this header), so callers never know which engine serves them.
//
// One TuningDatabase object must not be used from two threads at once; open one per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/te/compute.h"
#include "tessera/tuner/measure_error.h"

namespace tessera::tune {

class DatabaseEngine;

/// The tessera version stored in each record (the CMake project version, e.g. "0.1.0").
const char* tessera_version();

/// The target without its -mcpu=... option, other words joined by single spaces:
/// "llvm -mcpu=skylake-avx512" -> "llvm". Two targets of one family generate the same code on
/// machines of one ISA class (the ISA features, not the CPU's name, decide codegen), so the
/// ISA-class lookup tier compares families; the exact tier compares whole target strings.
std::string target_family(const std::string& target);

/// Whether `path` names a server database ("postgresql://..." or "postgres://...") rather than
/// a file: callers that check a file exists, or create its folder, skip that for a server.
bool is_server_database(const std::string& path);

/// `path` as output may show it: a server URL without its password (the userinfo's ":secret"
/// and any password= parameter dropped), e.g. "postgresql://tuner@db:5432/t"; a file path as is.
std::string database_display_name(const std::string& path);

/// One measurement of one schedule of one workload on one machine.
struct TuningRecord {
    int64_t id = 0;               ///< Assigned by commit_batch (increasing); 0 before.
    std::string workload_key;     ///< Key of a workload added with add_workload.
    std::string target;           ///< Target string, e.g. "llvm -mcpu=skylake-avx512".
    std::string fingerprint;      ///< HardwareFingerprint::hash() of the measuring machine.
    std::string isa_class;        ///< HardwareFingerprint::isa_class() of the measuring machine.
    std::string schedule_json;    ///< sched::steps_to_json of the measured steps.
    std::vector<double> run_secs; ///< Every repeat, in seconds, in measuring order.
    /// Median of run_secs, computed by commit_batch for Ok records; +infinity for errors.
    double median_secs = 0;
    /// The time the record is ranked by (best, top-k, prune, the cost model's labels). Measured
    /// alone: median_secs. Measured in alternation with a baseline (the task's best record at
    /// the time, timed run for run beside it in one process; Measurer::set_baseline): the
    /// median of the pairs' ratios (its run / the baseline's) x the baseline's rank_secs, so
    /// that a phase of the host that slows both alike cancels out (the tuner writes the
    /// baseline's record id and median into measure_settings_json as "baseline_record" and
    /// "baseline_median_secs"). A record that beat its baseline is ranked by a second such
    /// measurement ("first_rank_secs": the first one's rank), and no better than the baseline
    /// when that one did not prove the gain ("unproven": true; tune_task.cpp). 0 or unset:
    /// commit_batch sets median_secs; +infinity for errors.
    double rank_secs = 0;
    MeasureError error_code = MeasureError::Ok;
    std::string error_message;                ///< Empty for Ok records.
    std::string measure_settings_json = "{}"; ///< How it was measured (repeats, flush, ...).
    std::string tessera_version;              ///< Filled by commit_batch when empty.
    int schema_version = 0; ///< Set by commit_batch to the database's schema version.
    std::string created_at; ///< ISO 8601 UTC, filled by commit_batch when empty.
};

/// The median of run times (the mean of the middle two for an even count), as commit_batch
/// computes TuningRecord::median_secs. Pre: `secs` is not empty.
double median_secs_of(std::vector<double> secs);

/// What makes two records the same measurement (for idempotent import and merge): the SHA-256
/// (hex) of workload key, target, fingerprint, schedule JSON, created_at and the run times.
/// Ids, versions and messages are left out: the same measurement keeps its identity in every
/// file it is copied to.
std::string record_identity(const TuningRecord& r);

/// What import_records and merge_from did.
struct ImportCounts {
    int64_t workloads_added = 0; ///< Workloads new to this database (merge_from only).
    int64_t records_added = 0;   ///< Records new to this database.
    int64_t duplicates = 0;      ///< Records already present (same record_identity), skipped.
};

class TuningDatabase {
  public:
    /// The schema this tessera writes. Older files are migrated to it on open (file comment).
    static constexpr int kSchemaVersion = 3;

    /// Opens or creates the database at `path` (":memory:" for a private in-memory one, a
    /// postgresql:// URL for a server database, whose tables are created on first open); a
    /// database of an older schema version is migrated to kSchemaVersion in one transaction.
    /// Throws UserError naming the path when the file cannot be opened or created, is not an
    /// SQLite file or not a tessera tuning database, is truncated or corrupted, or has a
    /// schema version newer than kSchemaVersion (naming both versions). For a server: UserError
    /// naming host and port (never the password) and the server's reason when it cannot be
    /// reached, refuses the credentials or has no such database; nothing is written then.
    explicit TuningDatabase(const std::string& path);
    ~TuningDatabase();
    TuningDatabase(TuningDatabase&&) noexcept;
    TuningDatabase& operator=(TuningDatabase&&) noexcept;
    TuningDatabase(const TuningDatabase&) = delete;
    TuningDatabase& operator=(const TuningDatabase&) = delete;

    const std::string& path() const { return path_; }
    /// The schema version stored in the file.
    int schema_version() const;
    /// SQLite's journal mode: "wal" for files, "memory" for ":memory:"; "server" for
    /// PostgreSQL.
    std::string journal_mode() const;

    /// Adds a workload; idempotent. Returns its key. On a key already present, checks that the
    /// stored text equals this one (a mismatch is a SHA-256 collision or a corrupted file:
    /// UserError naming the key).
    std::string add_workload(const te::Compute& c);
    /// The same, for an already canonical text; `key` must be workload_key_of_text(text)
    /// (UserError otherwise).
    void add_workload(const std::string& key, const std::string& compute_text);
    bool has_workload(const std::string& key) const;
    /// The stored canonical text of a workload, if present.
    std::optional<std::string> compute_text(const std::string& key) const;
    /// Every workload key, sorted.
    std::vector<std::string> workload_keys() const;

    /// Commits all records in ONE transaction and sets their id, median_secs, schema_version
    /// and the empty tessera_version/created_at fields. All or nothing: throws UserError (and
    /// commits none) when a record names an unknown workload, an Ok record has no run time or
    /// a non-finite or negative one, an error code is outside MeasureError, or schedule_json or
    /// measure_settings_json is not JSON.
    void commit_batch(std::vector<TuningRecord>& records);

    /// The fastest Ok record (by rank_secs) of the workload measured for `target` on the machine
    /// with exactly this fingerprint hash (ties by id), if any.
    std::optional<TuningRecord> best_record(const std::string& workload_key,
                                            const std::string& target,
                                            const std::string& fingerprint) const;
    /// The fastest Ok record measured on any machine of this ISA class for a target of the same
    /// target_family() as `target` (the second lookup tier: a different machine of the same
    /// kind, whose -mcpu name may differ).
    std::optional<TuningRecord> best_record_for_isa(const std::string& workload_key,
                                                    const std::string& target,
                                                    const std::string& isa_class) const;
    /// Up to k fastest Ok records, fastest first (ties by id). An empty target or fingerprint
    /// matches any.
    std::vector<TuningRecord> top_k(const std::string& workload_key, int k,
                                    const std::string& target = "",
                                    const std::string& fingerprint = "") const;
    /// Every record of the workload, errors included, in id order.
    std::vector<TuningRecord> records_of(const std::string& workload_key) const;
    /// Whether this schedule of the workload was already measured (any outcome), for resume
    /// and deduplication. An empty target or fingerprint matches any.
    bool has_measured(const std::string& workload_key, const std::string& schedule_json,
                      const std::string& target = "", const std::string& fingerprint = "") const;
    /// The schedule_json of every record of the workload (any outcome), for bulk dedup.
    std::set<std::string> measured_schedules(const std::string& workload_key,
                                             const std::string& target = "",
                                             const std::string& fingerprint = "") const;
    /// Number of records (all workloads, errors included).
    int64_t num_records() const;

    /// Adds records copied from elsewhere (an export file, another database) in ONE
    /// transaction, keeping their created_at, tessera_version and schema_version (empty or 0
    /// ones are filled as commit_batch does); ids are assigned here. A record whose
    /// record_identity() is already stored (or earlier in `records`) is skipped and counted as
    /// a duplicate, so importing the same file twice adds nothing. Validation and errors as
    /// commit_batch (all or nothing); the workloads must have been added first.
    ImportCounts import_records(const std::vector<TuningRecord>& records);
    /// Copies every workload and record of `other` into this database (import_records rules).
    ImportCounts merge_from(const TuningDatabase& other);
    /// Keeps, per (workload, target, fingerprint), the `keep_best` fastest Ok records (ties by
    /// id) and deletes the other Ok records, and every error record unless `keep_errors`; one
    /// transaction. Returns the number of records deleted. UserError if keep_best < 0.
    int64_t prune(int keep_best, bool keep_errors);
    /// The storage engine's own consistency check: "ok", or its findings one per line
    /// (PostgreSQL: checks of the tessera tables, since the server keeps its own files sound).
    std::string integrity_check() const;

    /// Stores a cost-model blob under `name` (a new row; older ones are kept).
    void save_cost_model(const std::string& name, const std::vector<uint8_t>& blob);
    /// The most recently saved blob under `name`, if any.
    std::optional<std::vector<uint8_t>> load_cost_model(const std::string& name) const;

  private:
    std::string path_;
    std::unique_ptr<DatabaseEngine> engine_; // SQLite or PostgreSQL (tuner/database_engine.h)
};

} // namespace tessera::tune
