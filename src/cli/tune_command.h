// `tessera tune`: tune one built-in operator on this machine into the tuning database.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "tessera/tuner/tune_task.h"

namespace tessera::cli {

/// Every option of `tessera tune`, with its default.
struct TuneOptions {
    std::string op;                        ///< NAME:key=value,... (see `tessera op list`).
    /// Candidates to measure in this run; 0 = no limit (then time_budget_secs must be > 0).
    int trials = 1000;
    double time_budget_secs = 0;           ///< Wall-clock limit of the run; 0 = none.
    /// --time-budget was given: the run ends by time alone (trials must then be 0) and the
    /// budget must be above 0.
    bool time_bounded = false;
    std::string db = "tune_logs/tessera.db"; ///< The tuning database (its folder is created).
    uint64_t seed = 1;                     ///< Seeds the search, the model and the inputs.
    int threads = 0;                       ///< Threads of the measured kernels; 0 = all cores.
    int population = 2048;                 ///< States kept per generation.
    int generations = 4;                   ///< Evolution rounds between measurements.
    int measure_per_round = 64;            ///< Candidates measured and committed per round.
    double eps_greedy = 0.05;              ///< Share of each round that is random samples.
    std::string model = "xgboost";         ///< "xgboost" or "random".
    /// "local" (real) or "simulated" (synthetic times, under kSimulatedTargetPrefix's target).
    std::string runner = "local";
    std::string curve_file;                ///< CSV of the best-so-far per round; empty = none.
    bool json = false;                     ///< Summary as one JSON object instead of text.
};

/// The key under which `tessera tune` adds the operator's canonical spec to every record's
/// measure_settings_json ({"op_spec": "matmul:m=13,n=7,k=127", ...}), so that tools that need
/// the Compute back (`costmodel eval`) can rebuild it from the registry.
constexpr const char* kOpSpecSettingsKey = "op_spec";

/// `--runner simulated` records are stored under target "simulated:" + the host target, so
/// that their synthetic times never count as real measurements of the host target.
constexpr const char* kSimulatedTargetPrefix = "simulated:";

/// The target and machine identity of records measured here: target "llvm -mcpu=<host cpu>",
/// the host's fingerprint hash and ISA class. `op run --db` looks records up with the same.
tune::TuneTarget host_tune_target();

/// Tunes opts.op into opts.db. Progress goes to `progress` (rewritten in place when
/// `progress_is_terminal`, one line per round otherwise); the summary (text, or one JSON line
/// with opts.json) goes to `out`. Every record of a measured round is committed before the next
/// round starts, so an interrupted run keeps what it measured and a rerun resumes.
/// Throws UserError naming the option and value on a bad option, a bad spec, a database that
/// cannot be opened or a curve file that cannot be written.
tune::TuneResult run_tune(const TuneOptions& opts, std::ostream& out, std::ostream& progress,
                          bool progress_is_terminal);

} // namespace tessera::cli
