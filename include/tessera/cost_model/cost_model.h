// Cost models: predict how fast schedules of a task run, from their program features
// (features.h), so that search measures only the promising ones.
//
// A model scores a program; a higher score means faster (scores of one task are comparable,
// across tasks only roughly). Training data are programs with their measured throughput
// normalized per task: flops / seconds divided by the best of that task, so 1.0 = the best
// known schedule of the task and error records are 0.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/cost_model/features.h"

namespace tessera::cost {

/// One training example: a program's features, its task (workload key) and its normalized
/// throughput in [0, 1] (0 for error records).
struct TrainingExample {
    ProgramFeatures features;
    std::string task;
    double normalized_throughput = 0;
};

class CostModel {
  public:
    virtual ~CostModel() = default;
    /// "xgboost" or "random".
    virtual std::string name() const = 0;
    /// Replaces the model with one trained on all `examples` (callers pass everything they
    /// have; retraining from scratch is cheap at these sizes). A model with no examples
    /// predicts without information (see each model).
    virtual void train(const std::vector<TrainingExample>& examples) = 0;
    /// One score per program, higher = faster. Deterministic for a given model state.
    virtual std::vector<double> predict(const std::vector<ProgramFeatures>& programs) = 0;
    /// Serializes the model (with kFeatureLayoutVersion inside) for TuningDatabase storage.
    virtual std::vector<uint8_t> save() const = 0;
    /// Loads what save() wrote. Throws UserError on a blob of another model kind, of another
    /// feature layout version or (XGBoost) of another objective, and on a damaged blob (the
    /// caller then retrains). The model is unchanged when load() throws.
    virtual void load(const std::vector<uint8_t>& blob) = 0;
    /// Number of examples the current model was trained on (0 = untrained).
    virtual int64_t num_trained() const = 0;
    /// Starts the model from pretrained knowledge: a blob save() wrote for a corpus of other
    /// tasks (the built-in one comes from pretrained.h). From then on an untrained model
    /// predicts with the prior, and train() fits its examples on top of the prior instead of
    /// starting empty (XGBoost: boosting continues from the prior's trees), so a task's first
    /// records refine what the corpus taught rather than replace it. Replaces the current
    /// model by the prior. Throws UserError like load() on a blob this model cannot start from
    /// (another kind, feature layout or objective, or damaged); the model is unchanged then.
    /// The default: this kind of model has no use for a prior (UserError).
    virtual void set_prior(const std::vector<uint8_t>& blob);
    /// Whether set_prior() succeeded: predictions carry information even before train().
    virtual bool has_prior() const { return false; }
};

/// Options of the XGBoost model, one documented default each. The defaults were chosen by
/// the held-out measurements in cost_model/README.md.
struct XGBoostOptions {
    /// "rank": rank:pairwise on per-program features (the sum of the program's rows), grouped
    /// by task. "pack-sum": per-store regression whose per-program sum is fit to the
    /// normalized throughput, weighted by it (Ansor's objective, custom gradient). The
    /// default is the one with the better measured held-out pairwise accuracy (README.md).
    std::string objective = "rank";
    int num_threads = 1;  ///< XGBoost nthread, set explicitly (OMP_WAIT_POLICY=passive too).
    int max_depth = 6;    ///< Tree depth; 6 ranked better than Ansor's 10 at our data sizes.
    double eta = 0.2;     ///< Learning rate.
    int max_bin = 64;     ///< Histogram bins per feature (tree_method hist); 4x faster than 256.
    int num_rounds = 200; ///< Most boosting rounds per training (early stop may end sooner).
    /// Training with at least 100 programs holds 20% of them out (drawn with `seed`) and stops
    /// after this many rounds without a better held-out pairwise accuracy, keeping the best.
    int early_stopping_rounds = 20;
    uint64_t seed = 0; ///< Seed of the validation draw and of XGBoost's pair sampling.
    /// Rounds added to a prior (CostModel::set_prior) when there are too few programs to
    /// validate on (fewer than 100): then nothing stops the new trees from fitting a handful
    /// of records at the corpus's expense, so they are few (cost_model/README.md, fine-tuning).
    int prior_rounds_unvalidated = 20;
};

/// The XGBoost model (C API, tree_method hist). Untrained, it predicts 0 for every program;
/// a program without stores (no feature rows) always scores 0 and is not trained on.
/// All feature rows given to one model must have one length (any length). Throws UserError on
/// an unknown objective or a non-positive num_threads, max_depth, eta, max_bin, num_rounds.
std::unique_ptr<CostModel> make_xgboost_model(const XGBoostOptions& opts = {});

/// A model that predicts seeded uniform random scores in [0, 1), for tests and for the
/// random-search baseline. A score is a hash of the seed and the program's features, so a
/// program gets the same score in any batch and call order. train() only counts examples;
/// save()/load() keep the seed and the count.
std::unique_ptr<CostModel> make_random_model(uint64_t seed);

/// The model called `name` ("xgboost" with default options and this seed, or "random" with this
/// seed), as the command line names them. Throws UserError naming an unknown name.
std::unique_ptr<CostModel> make_model(const std::string& name, uint64_t seed);

/// Ranking quality of predictions against measurements within each task:
struct RankingQuality {
    /// Fraction of pairs (same task, different measured throughput) ordered the same way; a
    /// pair the predictions tie counts one half (a constant model scores 0.5). 0 without pairs.
    double pairwise_accuracy = 0;
    /// Average over tasks of best measured throughput among the model's top-k / best overall
    /// (Ansor's average peak score), for k = 1, 5, 32; predictions that tie keep input order.
    double peak_score_at_1 = 0, peak_score_at_5 = 0, peak_score_at_32 = 0;
    int64_t num_pairs = 0; ///< Pairs counted in pairwise_accuracy.
    int num_tasks = 0;     ///< Tasks in the peak averages: those with a throughput above 0.
};
/// Pre: predictions.size() == examples.size() (InternalError otherwise). Quadratic in the
/// size of the largest task.
RankingQuality ranking_quality(const std::vector<TrainingExample>& examples,
                               const std::vector<double>& predictions);

} // namespace tessera::cost
