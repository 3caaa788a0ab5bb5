// `tessera db`: share and maintain tuning databases (list, stats, export, import, merge, prune,
// verify). The JSONL format is tuner/record_jsonl.h's; tune_logs/README.md documents both.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace tessera::cli {

/// Every option of the `tessera db` subcommands, with its default.
struct DbOptions {
    std::string db = "tune_logs/tessera.db"; ///< --db: the database worked on (or written).
    // export
    bool best_only = false; ///< Only the fastest ok record per workload/target/fingerprint.
    std::string workload;   ///< Only this workload (key or unique key prefix).
    std::string target;     ///< Only records of exactly this target.
    std::string output;     ///< -o: the JSONL file (export) or database (merge) written.
    // import
    std::string input; ///< The JSONL file read.
    // merge
    std::vector<std::string> sources; ///< The two databases merged.
    // prune
    int keep_best = 0;        ///< Ok records kept per workload/target/fingerprint.
    bool keep_errors = false; ///< Keep error records (dropped by default).
    bool json = false;        ///< --json: one JSON object on stdout instead of the text report.
    // verify
    std::vector<std::string> tasks_of; ///< ONNX models whose tasks rebuild `tune MODEL` workloads.
};

/// Registers `db` and its subcommands on `app`; run() then runs the one the command line chose.
class DbCommand {
  public:
    explicit DbCommand(CLI::App& app);
    /// Whether the command line chose `db` (valid after parsing).
    bool chosen() const;
    /// Runs the chosen subcommand: reports to `out` (with --json one JSON object, written only
    /// once the subcommand succeeded), warnings to `err`. Returns the exit code: 0, or 1 when
    /// `verify` finds a problem (also with --json). Throws UserError on bad input (a missing or
    /// corrupted database, an unreadable file, a bad option value).
    int run(std::ostream& out, std::ostream& err) const;

  private:
    DbOptions opts_;
    CLI::App* db_ = nullptr;
    CLI::App *list_ = nullptr, *stats_ = nullptr, *export_ = nullptr, *import_ = nullptr,
             *merge_ = nullptr, *prune_ = nullptr, *verify_ = nullptr;
};

/// `db verify` on `db_path`: the storage engine's integrity check, then every best record (per
/// workload, target and fingerprint) replayed and lowered on its workload's Compute, rebuilt by
/// WorkloadComputes from the op spec of the workload's records or from the tasks of the models
/// in `tasks_of`. Reports each problem record (broken: its schedule no longer replays;
/// unverifiable: nothing rebuilds its workload) and a summary, as text or, with `json`, one
/// object. Returns 0 when the integrity check passes and every best record replays, 1
/// otherwise (also for an unverifiable one). Throws UserError for a missing database or a
/// model of `tasks_of` that does not import.
int run_db_verify(const std::string& db_path, const std::vector<std::string>& tasks_of,
                  std::ostream& out, bool json = false);

} // namespace tessera::cli
