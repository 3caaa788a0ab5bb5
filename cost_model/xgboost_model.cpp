// The XGBoost cost model (cost_model.h) over the XGBoost 1.7 C API, with two objectives:
// "pack-sum" (Ansor's: one tree-ensemble output per store row, a program's score is the sum
// of its rows' outputs, fit with a custom gradient) and "rank" (rank:pairwise on one row per
// program, the sum and max of its store rows, grouped by task).
#include "tessera/cost_model/cost_model.h"

#include "model_blob.h"
#include "tessera/support/error.h"
#include "tessera/support/rng.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <string>

namespace tessera::cost {

namespace {

void check_xgb(int rc, const char* call) {
    TESSERA_CHECK(rc == 0) << call << " failed: " << XGBGetLastError();
}

struct DMatrixFree {
    void operator()(void* h) const { XGDMatrixFree(h); }
};
struct BoosterFree {
    void operator()(void* h) const { XGBoosterFree(h); }
};
using DMatrix = std::unique_ptr<void, DMatrixFree>;
using Booster = std::unique_ptr<void, BoosterFree>;

// libgomp spin-waits by default, which makes nthread > 1 slower than 1 on a loaded machine
// (docs: shared/research/deps.md). Set once, before the first XGBoost call, and never over a
// value the user chose. libgomp reads its environment when it is loaded, so this only takes
// effect where XGBoost is loaded after it; the process environment (tests, CI) covers the rest.
void prepare_xgboost_runtime() {
    static const bool done = [] {
        setenv("OMP_WAIT_POLICY", "passive", 0);
        return true;
    }();
    (void)done;
}

// Validation needs enough programs to rank; below this, train the full round count.
constexpr size_t kMinProgramsForValidation = 100;
// One program in this many (drawn with the model seed) validates instead of training.
constexpr double kValidationFraction = 0.2;

/// Dense row-major float matrix, the form XGBoost ingests.
struct Matrix {
    std::vector<float> data;
    size_t rows = 0, cols = 0;
};

/// A training (or validation) set in the layout of one objective. Programs are grouped by
/// task, tasks in name order, so rank:pairwise groups are contiguous.
struct Dataset {
    Matrix x;                              ///< pack-sum: one row per store; rank: program_row()
    std::vector<float> label;              ///< per matrix row
    std::vector<float> weight;             ///< per matrix row (pack-sum only)
    std::vector<uint32_t> pack;            ///< pack-sum: the program of each row
    std::vector<unsigned> group;           ///< rank: programs per task
    std::vector<TrainingExample> programs; ///< for scoring the order (features dropped)
};

/// Columns of the rank objective's per-program input for rows of `cols` features.
size_t program_row_length(size_t cols) { return 2 * cols + 1; }

/// The rank objective's input for a program: per feature the sum and the max over its store
/// rows, then the number of rows. The max keeps what a sum blurs (which store holds the
/// costly access); sum and max together ranked better than the sum alone (README.md).
std::vector<float> program_row(const ProgramFeatures& p, size_t cols) {
    std::vector<float> out(program_row_length(cols), 0.0f);
    if (!p.rows.empty()) // features may be negative: the max starts below all of them
        std::fill(out.begin() + cols, out.begin() + 2 * cols, std::numeric_limits<float>::lowest());
    for (const std::vector<float>& row : p.rows) {
        for (size_t c = 0; c < cols; ++c) {
            out[c] += row[c];
            out[cols + c] = std::max(out[cols + c], row[c]);
        }
    }
    out[2 * cols] = static_cast<float>(p.rows.size());
    return out;
}

DMatrix make_dmatrix(const Dataset& d, bool rank) {
    DMatrixHandle h = nullptr;
    check_xgb(XGDMatrixCreateFromMat(d.x.data.data(), d.x.rows, d.x.cols, NAN, &h),
              "XGDMatrixCreateFromMat");
    DMatrix m(h);
    check_xgb(XGDMatrixSetFloatInfo(h, "label", d.label.data(), d.label.size()),
              "XGDMatrixSetFloatInfo(label)");
    if (rank)
        check_xgb(XGDMatrixSetUIntInfo(h, "group", d.group.data(), d.group.size()),
                  "XGDMatrixSetUIntInfo(group)");
    return m;
}

/// Per-program scores from per-matrix-row outputs.
std::vector<double> program_scores(const Dataset& d, const float* out, bool rank) {
    std::vector<double> s(d.programs.size(), 0.0);
    if (rank) {
        for (size_t i = 0; i < s.size(); ++i)
            s[i] = out[i];
    } else {
        for (size_t r = 0; r < d.pack.size(); ++r)
            s[d.pack[r]] += out[r];
    }
    return s;
}

class XGBoostModel : public CostModel {
  public:
    explicit XGBoostModel(const XGBoostOptions& opts) : opts_(opts) {
        if (opts.objective != "pack-sum" && opts.objective != "rank")
            throw UserError() << "unknown cost-model objective '" << opts.objective
                              << "' (expected pack-sum or rank)";
        if (opts.num_threads < 1)
            throw UserError() << "cost-model num_threads must be >= 1, got " << opts.num_threads;
        if (opts.num_rounds < 1)
            throw UserError() << "cost-model num_rounds must be >= 1, got " << opts.num_rounds;
        if (opts.prior_rounds_unvalidated < 0)
            throw UserError() << "cost-model prior_rounds_unvalidated must be >= 0, got "
                              << opts.prior_rounds_unvalidated;
        if (opts.max_bin < 2)
            throw UserError() << "cost-model max_bin must be >= 2, got " << opts.max_bin;
        if (opts.early_stopping_rounds < 1)
            throw UserError() << "cost-model early_stopping_rounds must be >= 1, got "
                              << opts.early_stopping_rounds;
        if (opts.max_depth < 1)
            throw UserError() << "cost-model max_depth must be >= 1, got " << opts.max_depth;
        if (!(opts.eta > 0))
            throw UserError() << "cost-model eta must be > 0, got " << opts.eta;
        prepare_xgboost_runtime();
    }

    std::string name() const override { return "xgboost"; }

    void train(const std::vector<TrainingExample>& examples) override;
    std::vector<double> predict(const std::vector<ProgramFeatures>& programs) override;
    std::vector<uint8_t> save() const override;
    void load(const std::vector<uint8_t>& blob) override;
    int64_t num_trained() const override { return num_trained_; }
    void set_prior(const std::vector<uint8_t>& blob) override;
    bool has_prior() const override { return prior_.has_value(); }

  private:
    /// The fields of a blob save() wrote, checked against this model's kind and objective.
    struct Blob {
        size_t row_length = 0;
        int64_t num_trained = 0;
        std::vector<uint8_t> booster; ///< XGBoost UBJ; empty for an untrained model
    };
    Blob parse(const std::vector<uint8_t>& blob) const;
    bool rank() const { return opts_.objective == "rank"; }
    Dataset make_dataset(const std::vector<const TrainingExample*>& programs) const;
    /// A booster over `cache` with this model's parameters, starting from the trees of
    /// `start` (an XGBoost UBJ model) when it is not empty.
    Booster new_booster(const std::vector<DMatrixHandle>& cache,
                        const std::vector<uint8_t>& start) const;
    void set_runtime_params(BoosterHandle h) const;

    XGBoostOptions opts_;
    Booster booster_;       ///< null while untrained without a prior
    size_t row_length_ = 0; ///< features per row the booster was trained on
    int64_t num_trained_ = 0;
    std::optional<Blob> prior_; ///< set_prior's blob (its booster is never empty)
};

Dataset XGBoostModel::make_dataset(const std::vector<const TrainingExample*>& programs) const {
    // Group by task (tasks in name order, programs in input order within a task).
    std::map<std::string, std::vector<const TrainingExample*>> by_task;
    for (const TrainingExample* e : programs)
        by_task[e->task].push_back(e);
    Dataset d;
    d.x.cols = rank() ? program_row_length(row_length_) : row_length_;
    for (const auto& [task, list] : by_task) {
        d.group.push_back(static_cast<unsigned>(list.size()));
        for (const TrainingExample* e : list) {
            auto y = static_cast<float>(e->normalized_throughput);
            auto id = static_cast<uint32_t>(d.programs.size());
            if (rank()) {
                std::vector<float> sum = program_row(e->features, row_length_);
                d.x.data.insert(d.x.data.end(), sum.begin(), sum.end());
                d.label.push_back(y);
            } else {
                for (const std::vector<float>& row : e->features.rows) {
                    d.x.data.insert(d.x.data.end(), row.begin(), row.end());
                    d.label.push_back(y);
                    // Ansor weights each program by its normalized throughput: getting the
                    // fast programs right matters most; error records (0) carry no weight.
                    d.weight.push_back(y);
                    d.pack.push_back(id);
                }
            }
            d.programs.push_back(TrainingExample{{}, e->task, e->normalized_throughput});
        }
    }
    d.x.rows = d.label.size();
    return d;
}

void XGBoostModel::set_runtime_params(BoosterHandle h) const {
    check_xgb(XGBoosterSetParam(h, "nthread", std::to_string(opts_.num_threads).c_str()),
              "XGBoosterSetParam(nthread)");
    check_xgb(XGBoosterSetParam(h, "verbosity", "0"), "XGBoosterSetParam(verbosity)");
}

Booster XGBoostModel::new_booster(const std::vector<DMatrixHandle>& cache,
                                  const std::vector<uint8_t>& start) const {
    BoosterHandle h = nullptr;
    check_xgb(XGBoosterCreate(cache.data(), cache.size(), &h), "XGBoosterCreate");
    Booster b(h);
    // The trees first, then the parameters: loading a model restores the parameters it was
    // trained with, and this model's must win (runtime ones and the training ones alike).
    if (!start.empty())
        check_xgb(XGBoosterLoadModelFromBuffer(h, start.data(), start.size()),
                  "XGBoosterLoadModelFromBuffer");
    set_runtime_params(h);
    auto set = [&](const char* key, const std::string& value) {
        check_xgb(XGBoosterSetParam(h, key, value.c_str()), "XGBoosterSetParam");
    };
    set("tree_method", "hist");
    set("max_depth", std::to_string(opts_.max_depth));
    set("max_bin", std::to_string(opts_.max_bin));
    set("eta", std::to_string(opts_.eta));
    set("seed", std::to_string(opts_.seed));
    set("base_score", "0");
    set("disable_default_eval_metric", "1");
    if (rank()) {
        set("objective", "rank:pairwise");
    } else {
        // The gradient is ours (BoostOneIter); the objective only fixes the identity output
        // transform. Weights below 1 per row must still allow splits: no minimum child weight.
        set("objective", "reg:squarederror");
        set("min_child_weight", "0");
    }
    return b;
}

void XGBoostModel::train(const std::vector<TrainingExample>& examples) {
    booster_.reset();
    num_trained_ = 0;
    row_length_ = prior_ ? prior_->row_length : 0; // 0: the first example decides
    // Programs without stores have no rows to learn from.
    std::vector<const TrainingExample*> usable;
    for (const TrainingExample& e : examples) {
        if (e.features.rows.empty())
            continue;
        if (row_length_ == 0)
            row_length_ = e.features.rows.front().size();
        for (const std::vector<float>& row : e.features.rows)
            TESSERA_CHECK(row.size() == row_length_)
                << "feature rows of " << row.size() << " and " << row_length_ << " floats";
        usable.push_back(&e);
    }
    if (usable.empty() || row_length_ == 0) {
        if (prior_) // nothing to add: the prior alone
            booster_ = new_booster({}, prior_->booster);
        return;
    }

    // A seeded draw sends some programs to validation; the round with the best validation
    // ranking is kept (early stopping), so training time adapts to the data. A validation set
    // without a pair to order cannot judge a round: then every program trains, every round.
    std::vector<const TrainingExample*> train_set, valid_set;
    if (usable.size() >= kMinProgramsForValidation) {
        Rng rng(opts_.seed);
        for (const TrainingExample* e : usable)
            (rng.uniform01() < kValidationFraction ? valid_set : train_set).push_back(e);
    }
    Dataset valid = make_dataset(valid_set);
    if (ranking_quality(valid.programs, std::vector<double>(valid.programs.size(), 0.0))
            .num_pairs == 0) {
        train_set = usable;
        valid = Dataset{};
    }
    Dataset train = make_dataset(train_set);
    DMatrix dtrain = make_dmatrix(train, rank());
    DMatrix dvalid;
    std::vector<DMatrixHandle> cache = {dtrain.get()};
    if (!valid.programs.empty()) {
        dvalid = make_dmatrix(valid, rank());
        cache.push_back(dvalid.get());
    }
    Booster b = new_booster(cache, prior_ ? prior_->booster : std::vector<uint8_t>{});
    // With a prior, its trees stay and new ones are added: rounds count from the prior's.
    int prior_rounds = 0;
    check_xgb(XGBoosterBoostedRounds(b.get(), &prior_rounds), "XGBoosterBoostedRounds");
    // Without a validation set to stop early, a prior gets few new trees: a handful of a
    // task's records cannot say much beyond what the corpus taught (README.md, fine-tuning).
    const int num_rounds = !prior_ || dvalid ? opts_.num_rounds
                                                   : std::min(opts_.num_rounds,
                                                              opts_.prior_rounds_unvalidated);
    auto valid_accuracy = [&] {
        bst_ulong len = 0;
        const float* out = nullptr;
        check_xgb(XGBoosterPredict(b.get(), dvalid.get(), 1, 0, 0, &len, &out),
                  "XGBoosterPredict(valid)");
        return ranking_quality(valid.programs, program_scores(valid, out, rank()))
            .pairwise_accuracy;
    };

    std::vector<float> grad(train.x.rows), hess(train.x.rows);
    double best_accuracy = -1;
    int best_rounds = prior_rounds + num_rounds;
    if (dvalid && prior_rounds > 0) { // the prior alone may rank best: then no tree is added
        best_accuracy = valid_accuracy();
        best_rounds = prior_rounds;
    }
    for (int round = 0; round < num_rounds; ++round) {
        const int iteration = prior_rounds + round;
        if (rank()) {
            check_xgb(XGBoosterUpdateOneIter(b.get(), iteration, dtrain.get()),
                      "XGBoosterUpdateOneIter");
        } else {
            bst_ulong len = 0;
            const float* out = nullptr;
            // Margins of the training rows (XGBoost adds only the newest tree each round).
            check_xgb(XGBoosterPredict(b.get(), dtrain.get(), 1, 0, 1, &len, &out),
                      "XGBoosterPredict(train)");
            std::vector<double> sums = program_scores(train, out, false);
            // Squared error of the packed sum: d/d(row output) = w * (sum - y), d2 = w.
            for (size_t r = 0; r < train.x.rows; ++r) {
                grad[r] =
                    static_cast<float>((sums[train.pack[r]] - train.label[r]) * train.weight[r]);
                hess[r] = train.weight[r];
            }
            check_xgb(XGBoosterBoostOneIter(b.get(), dtrain.get(), grad.data(), hess.data(),
                                            train.x.rows),
                      "XGBoosterBoostOneIter");
        }
        if (!dvalid)
            continue;
        const double accuracy = valid_accuracy();
        if (accuracy > best_accuracy) {
            best_accuracy = accuracy;
            best_rounds = iteration + 1;
        } else if (iteration + 1 - best_rounds >= opts_.early_stopping_rounds) {
            break;
        }
    }
    int rounds = 0;
    check_xgb(XGBoosterBoostedRounds(b.get(), &rounds), "XGBoosterBoostedRounds");
    if (best_rounds < rounds) {
        BoosterHandle sliced = nullptr;
        check_xgb(XGBoosterSlice(b.get(), 0, best_rounds, 1, &sliced), "XGBoosterSlice");
        b.reset(sliced);
        set_runtime_params(sliced);
    }
    booster_ = std::move(b);
    num_trained_ = static_cast<int64_t>(usable.size());
}

std::vector<double> XGBoostModel::predict(const std::vector<ProgramFeatures>& programs) {
    std::vector<double> scores(programs.size(), 0.0);
    if (!booster_)
        return scores;
    Matrix x;
    x.cols = rank() ? program_row_length(row_length_) : row_length_;
    std::vector<size_t> owner; // program of each matrix row
    for (size_t i = 0; i < programs.size(); ++i) {
        const ProgramFeatures& p = programs[i];
        if (p.rows.empty())
            continue; // no stores: score 0
        for (const std::vector<float>& row : p.rows)
            TESSERA_CHECK(row.size() == row_length_)
                << "feature row of " << row.size() << " floats, the model was trained on "
                << row_length_;
        if (rank()) {
            std::vector<float> sum = program_row(p, row_length_);
            x.data.insert(x.data.end(), sum.begin(), sum.end());
            owner.push_back(i);
        } else {
            for (const std::vector<float>& row : p.rows) {
                x.data.insert(x.data.end(), row.begin(), row.end());
                owner.push_back(i);
            }
        }
    }
    x.rows = owner.size();
    if (x.rows == 0)
        return scores;
    std::string array = "{\"data\":[" + std::to_string(reinterpret_cast<uintptr_t>(x.data.data())) +
                        ",true],\"shape\":[" + std::to_string(x.rows) + "," +
                        std::to_string(x.cols) + "],\"typestr\":\"<f4\",\"version\":3}";
    // type 1 = margin; "cache_id" is required by 1.7's config parser.
    const char* config = "{\"type\":1,\"training\":false,\"cache_id\":0,\"iteration_begin\":0,"
                         "\"iteration_end\":0,\"strict_shape\":false,\"missing\":NaN}";
    const bst_ulong* shape = nullptr;
    bst_ulong dim = 0;
    const float* out = nullptr;
    check_xgb(XGBoosterPredictFromDense(booster_.get(), array.c_str(), config, nullptr, &shape,
                                        &dim, &out),
              "XGBoosterPredictFromDense");
    for (size_t r = 0; r < x.rows; ++r)
        scores[owner[r]] += out[r];
    return scores;
}

std::vector<uint8_t> XGBoostModel::save() const {
    detail::BlobWriter w(name());
    w.str(opts_.objective);
    w.u64(row_length_);
    w.i64(num_trained_);
    if (!booster_) {
        w.bytes(nullptr, 0);
        return w.take();
    }
    bst_ulong len = 0;
    const char* buf = nullptr;
    check_xgb(XGBoosterSaveModelToBuffer(booster_.get(), "{\"format\":\"ubj\"}", &len, &buf),
              "XGBoosterSaveModelToBuffer");
    w.bytes(reinterpret_cast<const uint8_t*>(buf), len);
    return w.take();
}

XGBoostModel::Blob XGBoostModel::parse(const std::vector<uint8_t>& blob) const {
    detail::BlobReader r(blob, name());
    std::string objective = r.str();
    if (objective != opts_.objective)
        throw UserError() << "cost-model blob was trained with objective '" << objective
                          << "', this model uses '" << opts_.objective << "'";
    Blob out;
    out.row_length = static_cast<size_t>(r.u64());
    out.num_trained = r.i64();
    out.booster = r.bytes();
    r.expect_end();
    return out;
}

/// A booster holding the trees of an XGBoost UBJ model; throws UserError when XGBoost cannot
/// read it.
Booster read_booster(const std::vector<uint8_t>& ubj) {
    BoosterHandle h = nullptr;
    check_xgb(XGBoosterCreate(nullptr, 0, &h), "XGBoosterCreate");
    Booster b(h);
    if (XGBoosterLoadModelFromBuffer(h, ubj.data(), ubj.size()) != 0)
        throw UserError() << "cost-model blob holds an unreadable XGBoost model: "
                          << XGBGetLastError();
    return b;
}

void XGBoostModel::load(const std::vector<uint8_t>& blob) {
    Blob parsed = parse(blob);
    Booster b;
    if (!parsed.booster.empty()) {
        b = read_booster(parsed.booster);
        set_runtime_params(b.get());
    }
    booster_ = std::move(b);
    row_length_ = parsed.row_length;
    num_trained_ = booster_ ? parsed.num_trained : 0;
}

void XGBoostModel::set_prior(const std::vector<uint8_t>& blob) {
    Blob parsed = parse(blob);
    if (parsed.booster.empty() || parsed.row_length == 0)
        throw UserError() << "cost-model blob holds an untrained model: nothing to start from";
    Booster b = read_booster(parsed.booster);
    set_runtime_params(b.get());
    booster_ = std::move(b);
    row_length_ = parsed.row_length;
    num_trained_ = 0;
    prior_ = std::move(parsed);
}

} // namespace

std::unique_ptr<CostModel> make_xgboost_model(const XGBoostOptions& opts) {
    return std::make_unique<XGBoostModel>(opts);
}

} // namespace tessera::cost
