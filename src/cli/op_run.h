// `tessera op run`: compile a built-in operator, check it against the reference, time it.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace tessera::cli {

/// Every option of `tessera op run`, with its default.
struct OpRunOptions {
    std::string spec;          ///< NAME:key=value,... (see `tessera op list`).
    int threads = 0;           ///< Runtime threads; 0 = one per core.
    int repeat = 10;           ///< Timed runs after one warm-up run.
    uint64_t seed = 1;         ///< Seed of the random inputs.
    double tolerance = 1e-4;   ///< Largest accepted |got - ref| / max(|ref|, 1).
    int64_t check_budget = 50'000'000; ///< Reference operations spent on checking.
    bool json = false;         ///< End the output with one JSON object on its own line.
    /// A schedule JSON file (`op sample` output) to run instead of the default loop nest.
    std::string schedule_file;
};

/// What one `op run` measured.
struct OpRunResult {
    std::string op, spec, schedule;
    int threads = 0;
    double flops = 0;
    double median_ms = 0, min_ms = 0, max_ms = 0, spread_pct = 0;
    double gflops = 0;
    double max_rel_err = 0;
    int64_t checked = 0, total = 0; ///< Output elements checked, and in all.
    bool passed = false;
};

/// Runs the operator and prints a human-readable report (and the JSON line) to out.
/// Throws UserError on a bad spec or a bad schedule file (missing, malformed, or illegal for
/// the operator). The result says whether the check passed.
OpRunResult run_op(const OpRunOptions& opts, std::ostream& out);

} // namespace tessera::cli
