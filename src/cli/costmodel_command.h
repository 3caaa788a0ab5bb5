// `tessera costmodel eval`: how well a cost model ranks held-out measured schedules.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace tessera::cli {

/// Options of `tessera costmodel eval`, with their defaults.
struct CostModelEvalOptions {
    std::string db;                  ///< The tuning database to learn from (must exist).
    std::string model = "xgboost";   ///< "xgboost" or "random" (the baseline).
    std::string holdout = "records"; ///< "records": a share of each task; "tasks": whole workloads.
    double holdout_share = 0.2;      ///< Share held out for testing, in (0, 1).
    uint64_t seed = 1;               ///< Seeds the split and the model.
};

/// What one evaluation measured (also printed).
struct CostModelEvalResult {
    int workloads = 0;            ///< Workloads whose Compute could be rebuilt.
    int skipped_workloads = 0;    ///< Workloads without a record naming their registry op.
    int64_t records = 0;          ///< Records used (Ok and errors) ...
    int64_t error_records = 0;    ///< ... of which errors (throughput 0).
    int64_t unusable_records = 0; ///< Records whose schedule no longer replays or lowers.
    int64_t train_examples = 0, test_examples = 0;
    int train_tasks = 0, test_tasks = 0;
    double pairwise_accuracy = 0;
    double peak_score_at_1 = 0, peak_score_at_5 = 0, peak_score_at_32 = 0;
    int64_t num_pairs = 0;        ///< Test pairs with different measured throughput.
    int num_scored_tasks = 0;     ///< Test tasks with at least one Ok record.
};

/// Loads every record (Ok and error) of every workload of opts.db, rebuilds each workload's
/// Compute from the registry op named in its records' measure settings (`tessera tune` writes
/// it, see tune_command.h; workloads without one are skipped and counted), replays and lowers
/// each schedule and extracts its features. A task is one workload on one (target,
/// fingerprint); throughput is normalized by the task's best, errors are 0. The split is
/// seeded: "records" holds out round(share x n) random records of every task with n >= 2;
/// "tasks" holds out round(share x W) whole workloads (at least 1, at most W - 1; needs W >= 2).
/// The model is trained on the rest and cost::ranking_quality of its predictions on the
/// held-out examples is printed to out. Throws UserError on a bad option (naming it), a missing
/// or non-tuning database, fewer than 2 workloads for "tasks", or nothing to hold out.
CostModelEvalResult run_costmodel_eval(const CostModelEvalOptions& opts, std::ostream& out);

} // namespace tessera::cli
