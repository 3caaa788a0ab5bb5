// The tuning database: every measurement ever taken, in one SQLite file (DESIGN.md decision 6).
//
// Tables (schema version 1):
//   schema_version(version)                        one row: the schema this file was written in
//   workloads(id, key UNIQUE, compute_text)        key = workload_key(compute_text)
//   records(id, workload_id, target, fingerprint, isa_class, schedule_json, run_secs_json,
//           median_secs, error_code, error_message, measure_settings_json, tessera_version,
//           schema_version, created_at)
//   cost_models(id, name, blob, created_at)
//
// The file is in WAL mode with a busy timeout, so several tuners on one machine can commit into
// one file; each commit_batch is ONE transaction, so a killed tuner loses nothing it committed
// and never leaves half a batch. ":memory:" opens a private in-memory database (for tests).
//
// Ordering is deterministic everywhere: by median time, ties broken by record id (insertion
// order). Error records (error_code != Ok) are kept but never count as best or in top-k.
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

struct sqlite3;

namespace tessera::tune {

/// The tessera version stored in each record (the CMake project version, e.g. "0.1.0").
const char* tessera_version();

/// Why a measurement failed. Stored as its integer value; the values never change meaning.
enum class MeasureError : int {
    Ok = 0,            ///< Measured; run_secs hold the times.
    Instantiation = 1, ///< The schedule did not replay or lower.
    CompileHost = 2,   ///< Code generation failed.
    CompileDevice = 3, ///< Device (GPU) code generation failed.
    RuntimeDevice = 4, ///< The candidate crashed (signal) or failed while running.
    WrongAnswer = 5,   ///< The output differed from the reference.
    BuildTimeout = 6,  ///< Compilation exceeded its time limit.
    RunTimeout = 7,    ///< Running exceeded its time limit (a hang).
    Unknown = 8,       ///< Any other failure.
};
/// "ok", "instantiation", "compile_host", ... (snake case of the enumerator).
const char* to_string(MeasureError e);

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
    MeasureError error_code = MeasureError::Ok;
    std::string error_message;                ///< Empty for Ok records.
    std::string measure_settings_json = "{}"; ///< How it was measured (repeats, flush, ...).
    std::string tessera_version;              ///< Filled by commit_batch when empty.
    int schema_version = 0; ///< Set by commit_batch to the database's schema version.
    std::string created_at; ///< ISO 8601 UTC, filled by commit_batch when empty.
};

class TuningDatabase {
  public:
    /// The schema this tessera writes. Older files would be migrated on open (none exist yet).
    static constexpr int kSchemaVersion = 1;

    /// Opens or creates the database at `path` (":memory:" for a private in-memory one).
    /// Throws UserError naming the path when the file cannot be opened or created, is not an
    /// SQLite file or not a tessera tuning database, is truncated or corrupted, or has a
    /// schema version newer than kSchemaVersion (naming both versions).
    explicit TuningDatabase(const std::string& path);
    ~TuningDatabase();
    TuningDatabase(TuningDatabase&&) noexcept;
    TuningDatabase& operator=(TuningDatabase&&) noexcept;
    TuningDatabase(const TuningDatabase&) = delete;
    TuningDatabase& operator=(const TuningDatabase&) = delete;

    const std::string& path() const { return path_; }
    /// The schema version stored in the file.
    int schema_version() const;
    /// SQLite's journal mode: "wal" for files, "memory" for ":memory:".
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

    /// The fastest Ok record of the workload measured for `target` on the machine with exactly
    /// this fingerprint hash (ties by id), if any.
    std::optional<TuningRecord> best_record(const std::string& workload_key,
                                            const std::string& target,
                                            const std::string& fingerprint) const;
    /// The fastest Ok record for `target` on any machine of this ISA class (the second lookup
    /// tier: a different machine of the same kind).
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

    /// Stores a cost-model blob under `name` (a new row; older ones are kept).
    void save_cost_model(const std::string& name, const std::vector<uint8_t>& blob);
    /// The most recently saved blob under `name`, if any.
    std::optional<std::vector<uint8_t>> load_cost_model(const std::string& name) const;

  private:
    void open_and_check();
    std::optional<TuningRecord> best_where(const std::string& key, const std::string& target,
                                           const char* column, const std::string& value) const;
    std::string path_;
    sqlite3* db_ = nullptr;
};

} // namespace tessera::tune
