// tune_task: the measured-round loop, on the simulated measurer and in-memory databases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "tessera/cost_model/cost_model.h"
#include "tessera/schedule/step.h"
#include "tessera/support/error.h"
#include "tessera/support/rng.h"
#include "tessera/te/op_registry.h"
#include "tessera/te/workload_key.h"
#include "tessera/tuner/tune_task.h"

namespace tessera::tune {
namespace {

const TuneTarget kTarget{"llvm -mcpu=test", "00112233aabbccdd", "x86_64-avx2"};

te::OpInstance op(const std::string& spec) { return te::make_op(spec); }

/// Small, fast search options (the defaults are sized for real tuning).
SearchOptions small_options(uint64_t seed, int trials) {
    SearchOptions o;
    o.num_trials = trials;
    o.population = 48;
    o.generations = 2;
    o.measure_per_round = 8;
    o.init_from_db = 8;
    o.retrain_min_records = 8;
    o.seed = seed;
    o.sketch.num_cores = 8;
    o.sample.num_cores = 8;
    o.defaults.num_cores = 8;
    o.defaults.vector_lanes = o.sample.max_vectorize_lanes;
    o.search_threads = 2;
    return o;
}

cost::XGBoostOptions small_xgb() {
    cost::XGBoostOptions x;
    x.num_rounds = 30;
    return x;
}

/// (schedule_json, error_code, median) of every record of the workload, in id order.
std::vector<std::tuple<std::string, int, double>> contents(const TuningDatabase& db,
                                                           const std::string& key) {
    std::vector<std::tuple<std::string, int, double>> out;
    for (const TuningRecord& r : db.records_of(key))
        out.emplace_back(r.schedule_json, int(r.error_code), r.median_secs);
    return out;
}

std::vector<std::string> schedules_of(const TuningDatabase& db, const std::string& key) {
    std::vector<std::string> out;
    for (const TuningRecord& r : db.records_of(key))
        out.push_back(r.schedule_json);
    return out;
}

std::string user_error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const UserError& e) {
        return e.what();
    }
    return "(no UserError)";
}

TEST(TuneTask, SameSeedSameMeasurementsDifferentSeedDifferent) {
    const te::OpInstance mm = op("matmul:m=13,n=7,k=31");
    auto run = [&](uint64_t seed, TuningDatabase& db) {
        auto model = cost::make_xgboost_model(small_xgb());
        auto measurer = make_simulated_measurer(1);
        return tune_task(mm.compute, mm.flops, kTarget, db, *model, *measurer,
                         small_options(seed, 24));
    };
    TuningDatabase a(":memory:"), b(":memory:"), d(":memory:");
    const TuneResult ra = run(1, a);
    const TuneResult rb = run(1, b);
    run(2, d);
    EXPECT_EQ(ra.trials, 24);
    EXPECT_EQ(ra.rounds, 3);
    ASSERT_EQ(a.records_of(ra.workload_key).size(), 24u);
    EXPECT_EQ(contents(a, ra.workload_key), contents(b, rb.workload_key));
    EXPECT_NE(schedules_of(a, ra.workload_key), schedules_of(d, ra.workload_key));
    // No schedule is measured twice.
    const std::vector<std::string> s = schedules_of(a, ra.workload_key);
    EXPECT_EQ(std::set<std::string>(s.begin(), s.end()).size(), s.size());
    ASSERT_TRUE(ra.best.has_value());
    EXPECT_EQ(ra.best->error_code, MeasureError::Ok);
    EXPECT_EQ(ra.workload_key, te::workload_key(mm.compute));
}

TEST(TuneTask, SearchThreadsDoNotChangeTheMeasurements) {
    // Sampling, the pretrained prior's neighbour draws, the evolution's mutations and lowering
    // run on search_threads threads, each draw seeded in order from the task's generator.
    const te::OpInstance mm = op("matmul:m=13,n=7,k=31");
    auto run = [&](int threads, TuningDatabase& db) {
        auto model = cost::make_xgboost_model(small_xgb());
        auto measurer = make_simulated_measurer(1);
        SearchOptions o = small_options(1, 24);
        o.search_threads = threads;
        return tune_task(mm.compute, mm.flops, kTarget, db, *model, *measurer, o);
    };
    TuningDatabase a(":memory:"), b(":memory:");
    const TuneResult ra = run(1, a);
    const TuneResult rb = run(3, b);
    ASSERT_EQ(a.records_of(ra.workload_key).size(), 24u);
    EXPECT_EQ(contents(a, ra.workload_key), contents(b, rb.workload_key));
}

TEST(TuneTask, ResumeMeasuresOnlyNewSchedulesWithAWarmModel) {
    const te::OpInstance mm = op("matmul:m=13,n=7,k=31");
    TuningDatabase db(":memory:");
    auto measurer = make_simulated_measurer(1);
    auto first_model = cost::make_xgboost_model(small_xgb());
    const TuneResult first =
        tune_task(mm.compute, mm.flops, kTarget, db, *first_model, *measurer, small_options(3, 16));
    EXPECT_FALSE(first.warm_start);
    EXPECT_EQ(first.model_examples_at_start, 0);
    const std::vector<std::string> first_schedules = schedules_of(db, first.workload_key);
    ASSERT_EQ(first_schedules.size(), 16u);
    ASSERT_TRUE(db.load_cost_model(cost_model_name(*first_model, first.workload_key, kTarget)));

    // A new process: a fresh model object, the same seed (so the search meets the same
    // schedules again and must skip them).
    auto second_model = cost::make_xgboost_model(small_xgb());
    const TuneResult second = tune_task(mm.compute, mm.flops, kTarget, db, *second_model, *measurer,
                                        small_options(3, 16));
    EXPECT_TRUE(second.warm_start);
    EXPECT_EQ(second.model_examples_at_start, 16);
    EXPECT_EQ(second.trials, 16);
    EXPECT_GT(second.skipped_already_measured, 0);
    const std::vector<std::string> all = schedules_of(db, first.workload_key);
    ASSERT_EQ(all.size(), 32u);
    EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), 32u);
    // The best can only improve.
    ASSERT_TRUE(first.best && second.best);
    EXPECT_LE(second.best->median_secs, first.best->median_secs);
}

TEST(TuneTask, ErrorRecordsAreCommittedAndNeverBest) {
    const te::OpInstance mm = op("matmul:m=13,n=7,k=31");
    TuningDatabase db(":memory:");
    auto model = cost::make_xgboost_model(small_xgb());
    auto measurer = make_simulated_measurer(1, 0.3, MeasureError::RuntimeDevice);
    const TuneResult r =
        tune_task(mm.compute, mm.flops, kTarget, db, *model, *measurer, small_options(5, 24));
    int errors = 0;
    std::set<std::string> failed;
    for (const TuningRecord& rec : db.records_of(r.workload_key)) {
        if (rec.error_code == MeasureError::Ok)
            continue;
        ++errors;
        failed.insert(rec.schedule_json);
        EXPECT_EQ(rec.error_code, MeasureError::RuntimeDevice);
        EXPECT_NE(rec.error_message.find("simulated"), std::string::npos);
    }
    EXPECT_EQ(errors, r.errors);
    EXPECT_GE(errors, 2);
    EXPECT_LT(errors, 24);
    ASSERT_TRUE(r.best.has_value());
    EXPECT_EQ(r.best->error_code, MeasureError::Ok);
    EXPECT_EQ(failed.count(r.best->schedule_json), 0u);
}

/// Measures with the simulated measurer, then reports the fastest Ok candidate of every batch
/// as a WrongAnswer, keeping its (fastest) run times: the tuner must never take it as best.
class FastestIsWrongMeasurer : public Measurer {
  public:
    std::vector<MeasureResult> measure(const te::Compute& c,
                                       const std::vector<sched::State>& states) override {
        std::vector<MeasureResult> r = inner_->measure(c, states);
        int fastest = -1;
        for (size_t i = 0; i < r.size(); ++i)
            if (r[i].error == MeasureError::Ok &&
                (fastest < 0 || r[i].run_secs[1] < r[fastest].run_secs[1]))
                fastest = int(i);
        if (fastest >= 0) {
            r[fastest].error = MeasureError::WrongAnswer;
            r[fastest].error_message = "max relative error 0.5";
            r[fastest].max_rel_error = 0.5;
            wrong_secs.push_back(
                *std::min_element(r[fastest].run_secs.begin(), r[fastest].run_secs.end()));
        }
        return r;
    }
    std::string settings_json() const override { return inner_->settings_json(); }
    std::vector<double> wrong_secs;

  private:
    std::unique_ptr<Measurer> inner_ = make_simulated_measurer(2);
};

TEST(TuneTask, WrongAnswerIsNeverBestEvenWhenFastest) {
    const te::OpInstance mm = op("matmul:m=13,n=7,k=31");
    TuningDatabase db(":memory:");
    auto model = cost::make_xgboost_model(small_xgb());
    FastestIsWrongMeasurer measurer;
    const TuneResult r =
        tune_task(mm.compute, mm.flops, kTarget, db, *model, measurer, small_options(6, 24));
    ASSERT_EQ(measurer.wrong_secs.size(), 3u);
    ASSERT_TRUE(r.best.has_value());
    EXPECT_EQ(r.best->error_code, MeasureError::Ok);
    // The wrong answers were faster than the best that counts.
    EXPECT_LT(*std::min_element(measurer.wrong_secs.begin(), measurer.wrong_secs.end()),
              r.best->median_secs);
    int wrong = 0;
    for (const TuningRecord& rec : db.records_of(r.workload_key))
        if (rec.error_code == MeasureError::WrongAnswer) {
            ++wrong;
            EXPECT_NE(rec.schedule_json, r.best->schedule_json);
            EXPECT_TRUE(std::isinf(rec.median_secs));
        }
    EXPECT_EQ(wrong, 3);
    for (const auto& [trials, secs, best] : r.curve)
        EXPECT_GE(best, r.best->median_secs);
}

/// The ground truth of the measurers below: the simulated measurer's times, each Ok schedule's
/// true time (its median) noted, and the baseline (Measurer::set_baseline) measured alike.
class TruthfulMeasurer : public Measurer {
  public:
    std::string settings_json() const override { return inner_->settings_json(); }
    void set_baseline(const te::Compute&, const sched::State& baseline) override {
        if (baselines_on)
            baseline_ = baseline;
    }
    bool baselines_on = true;
    std::map<std::string, double> true_secs; ///< By schedule JSON.

  protected:
    /// The true results of `states`; `baseline_secs` gets the baseline's true runs (none
    /// without a baseline).
    std::vector<MeasureResult> measure_truly(const te::Compute& c,
                                             const std::vector<sched::State>& states,
                                             std::vector<double>& baseline_secs) {
        std::vector<MeasureResult> r = inner_->measure(c, states);
        for (MeasureResult& m : r)
            m.run_secs = eight_runs(m.run_secs);
        baseline_secs.clear();
        if (baseline_)
            baseline_secs = eight_runs(inner_->measure(c, {*baseline_}).at(0).run_secs);
        for (size_t i = 0; i < r.size(); ++i) {
            if (r[i].error != MeasureError::Ok)
                continue;
            std::vector<double> sorted = r[i].run_secs;
            std::sort(sorted.begin(), sorted.end());
            true_secs[sched::steps_to_json(states[i].steps)] = sorted[sorted.size() / 2];
        }
        return r;
    }
    bool has_baseline() const { return baseline_.has_value(); }

  private:
    /// The simulated runs repeated to eight, as many pairs as the real worker times at least
    /// before its ratio may end the timing: enough for a new best to prove its gain.
    static std::vector<double> eight_runs(const std::vector<double>& runs) {
        if (runs.empty())
            return runs;
        std::vector<double> eight;
        for (size_t i = 0; i < 8; ++i)
            eight.push_back(runs[i % runs.size()]);
        return eight;
    }
    std::unique_ptr<Measurer> inner_ = make_simulated_measurer(3);
    std::optional<sched::State> baseline_;
};

/// A host whose speed drifts: each candidate slowed by a factor of its own (1 or 3, seeded),
/// and the baseline timed beside it slowed by the same factor, as two kernels run in
/// alternation in one phase are. The first batch runs in a calm phase (factor 1).
class DriftingHostMeasurer : public TruthfulMeasurer {
  public:
    std::vector<MeasureResult> measure(const te::Compute& c,
                                       const std::vector<sched::State>& states) override {
        std::vector<double> baseline_secs;
        std::vector<MeasureResult> r = measure_truly(c, states, baseline_secs);
        for (MeasureResult& m : r) {
            if (m.error != MeasureError::Ok)
                continue;
            const double factor = calls_ == 0 ? 1.0 : (rng_.uniform_int(0, 1) ? 3.0 : 1.0);
            for (double& secs : m.run_secs)
                secs *= factor;
            for (double secs : baseline_secs)
                m.baseline_run_secs.push_back(secs * factor);
        }
        ++calls_;
        return r;
    }

  private:
    Rng rng_{17};
    int calls_ = 0;
};

TEST(TuneTask, RecordsTimedBesideTheBestRankByTheirTrueSpeedOnADriftingHost) {
    const te::OpInstance mm = op("matmul:m=13,n=7,k=31");
    std::string best_with, best_without;
    for (bool beside : {true, false}) {
        TuningDatabase db(":memory:");
        auto model = cost::make_random_model(4);
        DriftingHostMeasurer measurer;
        measurer.baselines_on = beside;
        SearchOptions o = small_options(8, 48);
        o.measure_beside_best = beside;
        const TuneResult r = tune_task(mm.compute, mm.flops, kTarget, db, *model, measurer, o);
        ASSERT_TRUE(r.best.has_value());
        // The truly fastest schedule measured.
        std::string fastest;
        for (const auto& [json, secs] : measurer.true_secs)
            if (fastest.empty() || secs < measurer.true_secs[fastest])
                fastest = json;
        if (beside) {
            best_with = r.best->schedule_json;
            EXPECT_EQ(best_with, fastest);
            // Each record's rank is its true time (the anchor, measured calm, is true).
            for (const TuningRecord& rec : db.records_of(r.workload_key)) {
                if (rec.error_code == MeasureError::Ok) {
                    EXPECT_NEAR(rec.rank_secs, measurer.true_secs[rec.schedule_json],
                                1e-9 * rec.rank_secs);
                }
            }
        } else {
            best_without = r.best->schedule_json;
            // Alone, the drift decides: the best by median is not the fastest (this seed).
            EXPECT_NE(best_without, fastest);
            EXPECT_GT(measurer.true_secs[best_without], measurer.true_secs[fastest]);
        }
    }
}

/// The winner's curse made certain: a schedule's first measurement beside a baseline runs at
/// half its true time (the luckiest ratio of a batch), every later one at its true time.
class FirstTimeLuckyMeasurer : public TruthfulMeasurer {
  public:
    std::vector<MeasureResult> measure(const te::Compute& c,
                                       const std::vector<sched::State>& states) override {
        std::vector<double> baseline_secs;
        std::vector<MeasureResult> r = measure_truly(c, states, baseline_secs);
        for (size_t i = 0; i < r.size(); ++i) {
            if (r[i].error != MeasureError::Ok)
                continue;
            if (has_baseline() && times_measured[sched::steps_to_json(states[i].steps)]++ == 0)
                for (double& secs : r[i].run_secs)
                    secs *= 0.5;
            r[i].baseline_run_secs = baseline_secs;
        }
        return r;
    }
    std::map<std::string, int> times_measured;
};

TEST(TuneTask, ANewBestIsRankedByASecondMeasurementBesideTheBaseline) {
    const te::OpInstance mm = op("matmul:m=13,n=7,k=31");
    TuningDatabase db(":memory:");
    auto model = cost::make_random_model(4);
    FirstTimeLuckyMeasurer measurer;
    const TuneResult r =
        tune_task(mm.compute, mm.flops, kTarget, db, *model, measurer, small_options(8, 48));
    ASSERT_TRUE(r.best.has_value());
    int confirmed = 0;
    for (const TuningRecord& rec : db.records_of(r.workload_key)) {
        if (rec.error_code != MeasureError::Ok)
            continue;
        const nlohmann::json s = nlohmann::json::parse(rec.measure_settings_json);
        const double truth = measurer.true_secs.at(rec.schedule_json);
        if (s.contains("first_rank_secs")) {
            ++confirmed;
            EXPECT_EQ(measurer.times_measured[rec.schedule_json], 2);
            EXPECT_NEAR(s["first_rank_secs"].get<double>(), 0.5 * truth, 1e-9 * truth);
            EXPECT_NEAR(rec.rank_secs, truth, 1e-9 * truth); // the second ratio alone
        }
    }
    EXPECT_GE(confirmed, 1);
    // The best's rank is a true time, never a lucky half.
    EXPECT_NEAR(r.best->rank_secs, measurer.true_secs.at(r.best->schedule_json),
                1e-9 * r.best->rank_secs);
}

/// Every schedule exactly as fast as every other (1 ms), each timed run off by up to 3% of
/// seeded noise, the baseline's runs beside a candidate's alike: no candidate can truly beat
/// the baseline, while the smallest of a batch's measured ratios always lies below 1.
class EqualSpeedMeasurer : public Measurer {
  public:
    explicit EqualSpeedMeasurer(uint64_t seed) : rng_(seed) {}
    std::string settings_json() const override { return "{}"; }
    void set_baseline(const te::Compute&, const sched::State&) override { baseline_ = true; }
    std::vector<MeasureResult> measure(const te::Compute&,
                                       const std::vector<sched::State>& states) override {
        std::vector<MeasureResult> results(states.size());
        for (MeasureResult& r : results) {
            for (int i = 0; i < 8; ++i) {
                r.run_secs.push_back(1e-3 * (1 + 0.03 * (2 * rng_.uniform01() - 1)));
                if (baseline_)
                    r.baseline_run_secs.push_back(1e-3 * (1 + 0.03 * (2 * rng_.uniform01() - 1)));
            }
            r.build_secs = 1e-3;
        }
        return results;
    }

  private:
    Rng rng_;
    bool baseline_ = false;
};

// Candidates no faster than the baseline do not become the best by the luck of their ratios:
// a new best must prove its gain in its second measurement, so the best's rank stays where
// the first batch (timed alone) put it instead of falling a little with every batch.
TEST(TuneTask, CandidatesAsFastAsTheBaselineDoNotDriftTheBestRankDown) {
    const te::OpInstance mm = op("matmul:m=13,n=7,k=31");
    // Without the proof, these seeds' best ranks fell 4-12% below the first batch's best.
    for (uint64_t seed : {1, 2, 3}) {
        TuningDatabase db(":memory:");
        auto model = cost::make_random_model(4);
        EqualSpeedMeasurer measurer(seed);
        const TuneResult r =
            tune_task(mm.compute, mm.flops, kTarget, db, *model, measurer, small_options(8, 96));
        ASSERT_TRUE(r.best.has_value());
        double first_batch_best = std::numeric_limits<double>::infinity();
        int unproven = 0;
        for (const TuningRecord& rec : db.records_of(r.workload_key)) {
            const nlohmann::json s = nlohmann::json::parse(rec.measure_settings_json);
            if (!s.contains("baseline_record"))
                first_batch_best = std::min(first_batch_best, rec.rank_secs);
            unproven += s.value("unproven", false);
        }
        EXPECT_GE(r.best->rank_secs, first_batch_best) << "seed " << seed;
        EXPECT_GE(unproven, 1) << "seed " << seed; // confirmations were tried, and refused
    }
}

TEST(TuneTask, TimeBudgetStopsTheLoop) {
    const te::OpInstance mm = op("matmul:m=13,n=7,k=31");
    TuningDatabase db(":memory:");
    auto model = cost::make_random_model(1);
    auto measurer = make_simulated_measurer(1);
    SearchOptions o = small_options(1, 0); // no trial limit: only the budget ends it
    o.time_budget_secs = 1e-9;
    const TuneResult r = tune_task(mm.compute, mm.flops, kTarget, db, *model, *measurer, o);
    EXPECT_LE(r.rounds, 1);
    EXPECT_LE(r.trials, o.measure_per_round);
    o.num_trials = 1000;
    const TuneResult r2 = tune_task(mm.compute, mm.flops, kTarget, db, *model, *measurer, o);
    EXPECT_LE(r2.trials, o.measure_per_round);
}

TEST(TuneTask, ProgressAndCurveFollowTheRounds) {
    const te::OpInstance mm = op("matmul:m=13,n=7,k=31");
    TuningDatabase db(":memory:");
    auto model = cost::make_random_model(2);
    auto measurer = make_simulated_measurer(1);
    std::vector<TuneProgress> seen;
    SearchOptions o = small_options(4, 20); // rounds of 8, 8, 4
    const TuneResult r = tune_task(mm.compute, mm.flops, kTarget, db, *model, *measurer, o,
                                   [&](const TuneProgress& p) { seen.push_back(p); });
    EXPECT_EQ(r.trials, 20);
    EXPECT_EQ(r.rounds, 3);
    ASSERT_EQ(seen.size(), 4u);
    EXPECT_EQ(seen[0].trials_done, 0);
    EXPECT_TRUE(std::isinf(seen[0].best_secs));
    EXPECT_EQ(seen[1].trials_done, 8);
    EXPECT_EQ(seen[2].trials_done, 16);
    EXPECT_EQ(seen[3].trials_done, 20);
    EXPECT_EQ(seen[3].trials_total, 20);
    ASSERT_EQ(r.curve.size(), 3u);
    EXPECT_EQ(std::get<0>(r.curve[2]), 20);
    for (size_t i = 1; i < r.curve.size(); ++i)
        EXPECT_LE(std::get<2>(r.curve[i]), std::get<2>(r.curve[i - 1]));
    ASSERT_TRUE(r.best.has_value());
    EXPECT_EQ(seen[3].best_secs, r.best->median_secs);
    EXPECT_DOUBLE_EQ(seen[3].best_gflops, mm.flops / r.best->median_secs / 1e9);
    EXPECT_EQ(std::get<2>(r.curve.back()), r.best->median_secs);
}

TEST(TuneTask, BadOptionsNameOptionAndValue) {
    const te::OpInstance mm = op("matmul:m=7,n=7,k=7");
    TuningDatabase db(":memory:");
    auto model = cost::make_random_model(1);
    auto measurer = make_simulated_measurer(1);
    auto error_of = [&](const std::function<void(SearchOptions&)>& edit, double flops = 1e3) {
        SearchOptions o = small_options(1, 8);
        edit(o);
        return user_error_of(
            [&] { tune_task(mm.compute, flops, kTarget, db, *model, *measurer, o); });
    };
    EXPECT_EQ(error_of([](SearchOptions& o) { o.population = 0; }),
              "population must be at least 1, got 0");
    EXPECT_EQ(error_of([](SearchOptions& o) { o.eps_greedy = 1.5; }),
              "eps_greedy must be in [0, 1], got 1.5");
    EXPECT_EQ(error_of([](SearchOptions& o) { o.eps_greedy = -0.1; }),
              "eps_greedy must be in [0, 1], got -0.1");
    EXPECT_EQ(error_of([](SearchOptions& o) { o.mutation_probability = 2; }),
              "mutation_probability must be in [0, 1], got 2");
    EXPECT_EQ(error_of([](SearchOptions& o) { o.generations = -1; }),
              "generations must be at least 0, got -1");
    EXPECT_EQ(error_of([](SearchOptions& o) { o.measure_per_round = 0; }),
              "measure_per_round must be at least 1, got 0");
    EXPECT_EQ(error_of([](SearchOptions& o) { o.num_trials = -5; }),
              "num_trials must be at least 0, got -5");
    EXPECT_EQ(error_of([](SearchOptions& o) { o.time_budget_secs = -1; }),
              "time_budget_secs must be a finite number >= 0, got -1");
    EXPECT_EQ(error_of([](SearchOptions& o) { o.num_trials = 0; }),
              "num_trials 0 (no limit) needs a time_budget_secs above 0, got 0");
    EXPECT_EQ(error_of([](SearchOptions& o) { o.init_from_db = -1; }),
              "init_from_db must be at least 0, got -1");
    EXPECT_EQ(error_of([](SearchOptions& o) { o.retrain_min_records = 0; }),
              "retrain_min_records must be at least 1, got 0");
    EXPECT_EQ(error_of([](SearchOptions& o) { o.defaults.target = sched::TargetKind::Gpu; }),
              "defaults.target must be sketch.target (cpu)");
    EXPECT_EQ(error_of([](SearchOptions&) {}, 0.0),
              "flops of the task must be a finite number above 0, got 0");
    // Nothing was measured or committed by the rejected calls.
    EXPECT_EQ(db.num_records(), 0);
}

// One description fills the sketch's, the sampler's and the seeded default's view of the
// target, so a tune never seeds a default schedule for other cores, lanes or registers than it
// searches.
TEST(TuneTask, SearchOptionsForATargetAgreeOnItsCoresLanesAndRegisters) {
    const SearchOptions avx512 = search_options_for(parse_target("llvm -mcpu=skylake-avx512"), 3);
    EXPECT_EQ(avx512.sketch.num_cores, 3);
    EXPECT_EQ(avx512.sample.num_cores, 3);
    EXPECT_EQ(avx512.defaults.num_cores, 3);
    EXPECT_EQ(avx512.sample.max_vectorize_lanes, 16);
    EXPECT_EQ(avx512.defaults.vector_lanes, 16);
    EXPECT_EQ(avx512.defaults.vector_registers, 32);
    validate(avx512);

    const SearchOptions avx2 = search_options_for(parse_target("llvm -mcpu=haswell -num-cores=5"));
    EXPECT_EQ(avx2.sample.num_cores, 5);
    EXPECT_EQ(avx2.defaults.num_cores, 5);
    EXPECT_EQ(avx2.sample.max_vectorize_lanes, 8);
    EXPECT_EQ(avx2.defaults.vector_lanes, 8);
    EXPECT_EQ(avx2.defaults.vector_registers, 16);

    const SearchOptions gpu = search_options_for(parse_target("cuda"));
    EXPECT_EQ(gpu.sketch.target, sched::TargetKind::Gpu);
    EXPECT_EQ(gpu.defaults.target, sched::TargetKind::Gpu);
    validate(gpu);
}

} // namespace
} // namespace tessera::tune
