// `tessera op run`: compile a built-in operator, check it against the reference, time it.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "tessera/tuner/lookup.h"

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
    /// A schedule JSON file (`op sample` output) to run instead of the default schedule.
    std::string schedule_file;
    /// A tuning database: run the best record of the op's workload for this target (see
    /// run_op). Excludes schedule_file.
    std::string db;
    /// Run the naive loop nest (lower_default) instead of the default schedule, for
    /// comparisons and tests. Excludes schedule_file and db.
    bool naive = false;
    /// "llvm": this CPU through the LLVM JIT. "cuda": CUDA device 0 (the schedule lowered for
    /// the GPU, CUDA C compiled by NVRTC, timed with CUDA events).
    std::string target = "llvm";
    /// cuda: f32 matrix products may run on tensor cores in TF32 (the default schedule's
    /// DefaultScheduleOptions::gpu_tf32; about 1e-3 relative error, so pass a --tolerance).
    bool tf32 = false;
    /// A second schedule timed in alternation with the first, run by run in one process (a
    /// schedule JSON file, or "default" for the default schedule); the report gives both
    /// medians and the median of the run-by-run ratios. CPU only.
    std::string beside;
};

/// What one `op run` measured.
struct OpRunResult {
    std::string op, spec, schedule;
    /// With --db: the lookup tier that chose the schedule (Default: none served, the
    /// default schedule ran); empty without --db.
    std::optional<tune::LookupTier> tier;
    int64_t record_id = 0;      ///< With --db and a record found: its id.
    int threads = 0;
    std::string device;         ///< --target cuda: the GPU ("NVIDIA H200 (sm_90)").
    double flops = 0;
    double median_ms = 0, min_ms = 0, max_ms = 0, spread_pct = 0;
    double gflops = 0;
    double max_rel_err = 0;
    int64_t checked = 0, total = 0; ///< Output elements checked, and in all.
    bool passed = false;            ///< Every checked schedule (this one and --beside's) passed.
    /// With --beside: its check, its median and this schedule's time over its, run by run.
    bool beside_passed = false;
    double beside_median_ms = 0;
    double ratio_median = 0, ratio_p10 = 0, ratio_p90 = 0;
};

/// Runs the operator and prints a human-readable report (and the JSON line) to out.
/// With opts.db, the schedule is the fastest Ok record of the op's workload for target
/// "llvm -mcpu=<host cpu>" measured on this machine (exact fingerprint), else on a machine of
/// the same ISA class (tune::lookup_best); without one (or when the record no longer replays on
/// this version) the rule-based default schedule (sched::default_schedule) runs, and the
/// report says which tier served and why. Without a schedule file or a database the default
/// schedule runs too; opts.naive runs the naive loop nest (lower_default) instead.
/// With opts.target "cuda" the kernel runs on CUDA device 0: records are looked up for target
/// "cuda -arch=sm_XX" (cuda_tune_target), a schedule file must hold a GPU schedule (bindings),
/// and without either the GPU default schedule runs (sched::default_schedule, target Gpu: what
/// an untuned CUDA model build runs); UserError "--target cuda: <reason>" without a device.
/// With opts.beside, a second schedule is checked and timed in alternation with the first
/// (UserError with --target cuda or a bad schedule file); passed covers both checks.
/// Throws UserError on a bad spec, a bad schedule file (missing, malformed, or illegal for
/// the operator), more than one of schedule file, database and naive, or a database that is
/// missing or not a tuning database. The result says whether the check passed.
OpRunResult run_op(const OpRunOptions& opts, std::ostream& out);

} // namespace tessera::cli
