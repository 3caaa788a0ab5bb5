// `tessera costmodel eval`: how well a cost model ranks held-out measured schedules.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "costmodel_corpus.h"

namespace tessera::cli {

/// Options of `tessera costmodel eval`, with their defaults.
struct CostModelEvalOptions {
    std::string db;                  ///< The tuning database to learn from (must exist).
    std::string model = "xgboost";   ///< "xgboost" or "random" (the baseline).
    std::string holdout = "records"; ///< "records": a share of each task; "tasks": whole workloads.
    double holdout_share = 0.2;      ///< Share held out for testing, in (0, 1).
    uint64_t seed = 1;               ///< Seeds the split and the model.
    /// ONNX models whose tasks rebuild the workloads of `tune MODEL` records (load_corpus).
    std::vector<std::string> tasks_of;
    /// With holdout "tasks" and K > 0: also how the first K records of each held-out task (in
    /// the order they were measured, as a tune sees them) serve, three ways: the model
    /// trained on the other tasks alone (the pretrained model), a model trained on the K
    /// records alone, and the first as a prior refined by the K records (what `tune` does).
    int finetune = 0;
    bool json = false; ///< One JSON object (the result's metrics) instead of text.
};

/// The quality of one way of ranking the held-out records.
struct FinetuneQuality {
    double pairwise_accuracy = 0;
    double peak_score_at_5 = 0;
};

/// What one evaluation measured (also printed).
struct CostModelEvalResult {
    CorpusCounts corpus;
    int64_t train_examples = 0, test_examples = 0;
    int train_tasks = 0, test_tasks = 0;
    double pairwise_accuracy = 0;
    double peak_score_at_1 = 0, peak_score_at_5 = 0, peak_score_at_32 = 0;
    int64_t num_pairs = 0;        ///< Test pairs with different measured throughput.
    int num_scored_tasks = 0;     ///< Test tasks with at least one Ok record.
    /// With finetune > 0, on the held-out records after each task's first K: the pretrained
    /// model alone, a model of the K records alone, and the pretrained one refined by them.
    FinetuneQuality pretrained_alone, own_records_alone, pretrained_refined;
    int64_t finetune_ranked = 0; ///< With finetune > 0: the held-out records after the first K.
    double train_secs = 0;       ///< Wall time of training the model.
};

/// Loads every usable record of opts.db (load_corpus with opts.tasks_of). The split is
/// seeded: "records" holds out round(share x n) random records of every task with n >= 2;
/// "tasks" holds out round(share x W) whole workloads (at least 1, at most W - 1; needs W >= 2).
/// The model is trained on the rest and cost::ranking_quality of its predictions on the
/// held-out examples is printed to out (with opts.finetune, the three ways above as well);
/// with opts.json one JSON object of the same numbers instead, printed only on success:
/// {"database", "model", "holdout", "holdout_share", "seed", "corpus" (corpus_counts_json),
/// "train_records", "train_tasks", "test_records", "test_tasks", "train_secs",
/// "pairwise_accuracy", "num_pairs", "peak_score_at_1", "peak_score_at_5", "peak_score_at_32",
/// "scored_tasks", "finetune"} where "finetune" is null without opts.finetune, else {"k",
/// "ranked_records", "pretrained_alone", "own_records_alone", "pretrained_refined"}, each of
/// those three {"pairwise_accuracy", "peak_score_at_5"}.
/// Throws UserError on a bad option (naming it), a missing or non-tuning database, fewer than
/// 2 workloads for "tasks", or nothing to hold out.
CostModelEvalResult run_costmodel_eval(const CostModelEvalOptions& opts, std::ostream& out);

} // namespace tessera::cli
