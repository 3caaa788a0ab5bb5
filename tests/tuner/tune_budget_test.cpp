// How tuning spends its time: a fake clock that only measuring advances, so that budgets are
// checked without wall time. The budget holds within 5% (rounds cut to what the time left
// affords, batches cut at the deadline), records are committed in batches of commit_every,
// every task of a model is measured (seed round) before any task is searched, and transfer
// seeds (the best records of other machines) are measured in the first round.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "tessera/cost_model/cost_model.h"
#include "tessera/schedule/default_schedule.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/step.h"
#include "tessera/te/op_registry.h"
#include "tessera/te/workload_key.h"
#include "tessera/tuner/task_scheduler.h"
#include "tessera/tuner/tune_task.h"

namespace tessera::tune {
namespace {

const TuneTarget kTarget{"llvm -mcpu=znver1", "00112233aabbccdd",
                         "x86_64-pc-linux-gnu;avx,avx2,fma,sse4.2"};

/// The simulated measurer, with a fake clock that advances by `secs_per_candidate` for every
/// candidate measured; remembers each batch's size.
class ClockedMeasurer : public Measurer {
  public:
    explicit ClockedMeasurer(double secs_per_candidate)
        : inner_(make_simulated_measurer(1)), per_candidate_(secs_per_candidate) {}
    std::vector<MeasureResult> measure(const te::Compute& c,
                                       const std::vector<sched::State>& states) override {
        batches.push_back(int(states.size()));
        now += per_candidate_ * double(states.size());
        return inner_->measure(c, states);
    }
    std::string settings_json() const override { return inner_->settings_json(); }
    std::function<double()> clock() {
        return [this] { return now; };
    }

    double now = 1000; ///< Any start: budgets count from the call's first reading.
    std::vector<int> batches;

  private:
    std::unique_ptr<Measurer> inner_;
    double per_candidate_;
};

SearchOptions options(ClockedMeasurer& m, double budget) {
    SearchOptions o;
    o.num_trials = 0; // the budget alone ends the call
    o.time_budget_secs = budget;
    o.population = 32;
    o.generations = 1;
    o.measure_per_round = 64;
    o.init_from_db = 8;
    o.seed = 5;
    o.sketch.num_cores = 4;
    o.sample.num_cores = 4;
    o.sample.max_vectorize_lanes = 8;
    o.defaults.num_cores = 4;
    o.defaults.vector_lanes = 8;
    o.search_threads = 1;
    o.clock = m.clock();
    return o;
}

std::vector<TaskToTune> tasks_of(const std::vector<std::string>& specs) {
    std::vector<TaskToTune> tasks;
    for (const std::string& spec : specs) {
        const te::OpInstance op = te::make_op(spec);
        TaskToTune t;
        t.compute = op.compute;
        t.flops = op.flops;
        t.name = spec;
        tasks.push_back(std::move(t));
    }
    return tasks;
}

const std::vector<std::string> kSpecs = {"matmul:m=13,n=67,k=31", "matmul:m=29,n=17,k=61",
                                         "matmul:m=7,n=131,k=19"};

TEST(TuneBudget, TuneTaskEndsWithinFivePercentAndCommitsInBatches) {
    const te::OpInstance mm = te::make_op(kSpecs[0]);
    for (double per_candidate : {0.37, 1.0, 2.9}) {
        TuningDatabase db(":memory:");
        auto model = cost::make_random_model(1);
        ClockedMeasurer m(per_candidate);
        const double start = m.now;
        const TuneResult r =
            tune_task(mm.compute, mm.flops, kTarget, db, *model, m, options(m, 100));
        const double spent = m.now - start;
        EXPECT_LE(spent, 105) << per_candidate;
        EXPECT_GE(spent, 100 - 2 * per_candidate) << per_candidate; // no time left unused
        EXPECT_EQ(r.trials, db.num_records());
        for (int b : m.batches)
            EXPECT_LE(b, 16);
    }
}

TEST(TuneBudget, TheResultSaysWhereTheTimeWent) {
    // The fake clock advances only while candidates are measured: all of the call's time is
    // measuring, and the timed repeats within it are the records' run_secs, summed.
    const te::OpInstance mm = te::make_op(kSpecs[1]);
    TuningDatabase db(":memory:");
    auto model = cost::make_random_model(3);
    ClockedMeasurer m(0.5);
    const double start = m.now;
    const TuneResult r = tune_task(mm.compute, mm.flops, kTarget, db, *model, m, options(m, 20));
    ASSERT_GT(r.trials, 0);
    EXPECT_DOUBLE_EQ(r.measure_secs, m.now - start);
    EXPECT_DOUBLE_EQ(r.elapsed_secs, r.measure_secs);
    double repeats = 0;
    for (const TuningRecord& rec : db.records_of(te::workload_key(mm.compute)))
        for (double secs : rec.run_secs)
            repeats += secs;
    EXPECT_GT(repeats, 0);
    EXPECT_NEAR(r.repeat_secs, repeats, 1e-9 * repeats);
}

TEST(TuneBudget, ModelTuneMeasuresEveryTaskFirstThenHonoursTheBudget) {
    const std::vector<TaskToTune> tasks = tasks_of(kSpecs);
    TuningDatabase db(":memory:");
    ClockedMeasurer m(0.5);
    const double start = m.now;
    std::vector<TasksProgress> progress;
    const TasksResult r =
        tune_tasks(tasks, kTarget, db, [] { return cost::make_model("random", 1); }, m,
                   options(m, 120), {}, [&](const TasksProgress& p) { progress.push_back(p); });
    const double spent = m.now - start;
    EXPECT_LE(spent, 120 * 1.05);
    EXPECT_GE(spent, 110);
    // The seed rounds: one default schedule per task, in task order, within 1.5 fake seconds.
    ASSERT_GE(r.round_tasks.size(), 4u);
    EXPECT_EQ(std::vector<int>(r.round_tasks.begin(), r.round_tasks.begin() + 3),
              (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(std::vector<int>(m.batches.begin(), m.batches.begin() + 3),
              (std::vector<int>{1, 1, 1}));
    ASSERT_GE(r.curve.size(), 3u);
    EXPECT_LE(std::get<1>(r.curve[2]), 1.5);
    EXPECT_TRUE(std::isfinite(std::get<2>(r.curve[2]))); // every task has a measured time
    for (size_t i = 0; i < tasks.size(); ++i) {
        sched::DefaultScheduleOptions d;
        d.num_cores = 4;
        d.vector_lanes = 8;
        const std::string first = db.records_of(te::workload_key(tasks[i].compute))[0].schedule_json;
        EXPECT_EQ(first, sched::steps_to_json(sched::default_schedule(tasks[i].compute, d).steps))
            << "task " << i;
    }
    for (int b : m.batches)
        EXPECT_LE(b, 16);
    // Progress: batches within a round are reported (not only round ends), with growing trials.
    int batch_reports = 0;
    for (size_t k = 1; k < progress.size(); ++k) {
        EXPECT_GE(progress[k].trials_done, progress[k - 1].trials_done);
        if (!progress[k].round_done && progress[k].trials_done > progress[k - 1].trials_done)
            ++batch_reports;
    }
    EXPECT_GT(batch_reports, 0);
    EXPECT_EQ(progress.back().trials_done, r.trials);
}

/// A random model whose every prediction costs `secs` on the measurer's fake clock: a search
/// round's fixed cost (the evolution scores its population once per generation).
class SlowPredictions : public cost::CostModel {
  public:
    SlowPredictions(ClockedMeasurer& m, double secs)
        : inner_(cost::make_random_model(1)), m_(m), secs_(secs) {}
    std::string name() const override { return inner_->name(); }
    void train(const std::vector<cost::TrainingExample>& e) override { inner_->train(e); }
    std::vector<double> predict(const std::vector<cost::ProgramFeatures>& p) override {
        m_.now += secs_;
        return inner_->predict(p);
    }
    std::vector<uint8_t> save() const override { return inner_->save(); }
    void load(const std::vector<uint8_t>& blob) override { inner_->load(blob); }
    /// Never untrained: every searched round runs the evolution (rather than neighbours).
    int64_t num_trained() const override { return inner_->num_trained() + 1; }

  private:
    std::unique_ptr<cost::CostModel> inner_;
    ClockedMeasurer& m_;
    double secs_;
};

TEST(TuneBudget, ARoundStartsOnlyWhenItsSearchAndACandidateFit) {
    // Searched rounds cost 10 fake seconds of scoring (two predictions) besides 0.25 s per
    // candidate. Counting the search per candidate, a round started with time for a few
    // candidates but not its search, and ran past the deadline by up to the search (a budget
    // of 30 s ended at 35.25, 96.5 at 105.75). Now no round starts unless its search and one
    // candidate fit, so less than that is left unused.
    const std::vector<TaskToTune> tasks = tasks_of(kSpecs);
    for (double budget : {30.0, 51.0, 75.5, 96.5}) {
        TuningDatabase db(":memory:");
        ClockedMeasurer m(0.25);
        const double start = m.now;
        tune_tasks(
            tasks, kTarget, db, [&] { return std::make_unique<SlowPredictions>(m, 5.0); }, m,
            options(m, budget));
        const double spent = m.now - start;
        EXPECT_LE(spent, budget * 1.05) << "budget " << budget;
        EXPECT_GE(spent, budget - 10.25) << "budget " << budget;
    }
}

TEST(TuneBudget, ATrialLimitStillEndsTheCallBeforeTheBudget) {
    const std::vector<TaskToTune> tasks = tasks_of(kSpecs);
    TuningDatabase db(":memory:");
    ClockedMeasurer m(0.1);
    SearchOptions o = options(m, 1e6);
    o.num_trials = 40;
    const TasksResult r =
        tune_tasks(tasks, kTarget, db, [] { return cost::make_model("random", 1); }, m, o);
    EXPECT_EQ(r.trials, 40);
    EXPECT_EQ(db.num_records(), 40);
}

/// A vectorized matmul schedule (8 lanes: AVX on any x86-64 with it) recorded on another CPU.
sched::State foreign_schedule(const te::Compute& c) {
    sched::State s = sched::make_initial_state(c);
    const int out = int(s.stages.size()) - 1;
    sched::split(s, out, 1, {8});
    sched::reorder(s, out, {0, 1, 3, 2});
    sched::vectorize(s, out, 3);
    sched::parallel(s, out, 0);
    return s;
}

TEST(TuneBudget, TransferSeedsAreMeasuredInTheFirstRound) {
    const te::OpInstance mm = te::make_op(kSpecs[0]);
    TuningDatabase db(":memory:");
    const std::string key = db.add_workload(mm.compute);
    const std::string foreign_json = sched::steps_to_json(foreign_schedule(mm.compute).steps);
    std::vector<TuningRecord> rec(1);
    rec[0].workload_key = key;
    rec[0].target = "llvm -mcpu=rocketlake";
    rec[0].fingerprint = "ffffeeeeddddcccc";
    rec[0].isa_class = "x86_64-pc-linux-gnu;avx,avx2,avx512f,amx-tile,fma,sse4.2";
    rec[0].schedule_json = foreign_json;
    rec[0].run_secs = {1e-4};
    db.commit_batch(rec);

    auto model = cost::make_random_model(1);
    ClockedMeasurer m(0.1);
    SearchOptions o = options(m, 0);
    o.num_trials = 10;
    o.measure_per_round = 10;
    tune_task(mm.compute, mm.flops, kTarget, db, *model, m, o);
    std::vector<std::string> mine;
    for (const TuningRecord& r : db.records_of(key))
        if (r.fingerprint == kTarget.fingerprint)
            mine.push_back(r.schedule_json);
    ASSERT_EQ(mine.size(), 10u);
    // The default schedule first, then the transfer seed.
    EXPECT_EQ(mine[1], foreign_json);
    EXPECT_EQ(std::count(mine.begin(), mine.end(), foreign_json), 1);

    // Off: the foreign schedule is not measured first.
    TuningDatabase db2(":memory:");
    db2.add_workload(mm.compute);
    db2.commit_batch(rec);
    o.transfer_seeds = 0;
    auto model2 = cost::make_random_model(1);
    tune_task(mm.compute, mm.flops, kTarget, db2, *model2, m, o);
    const std::vector<TuningRecord> recs2 = db2.records_of(key);
    ASSERT_GE(recs2.size(), 3u);
    EXPECT_NE(recs2[2].schedule_json, foreign_json);
}

TEST(TuneBudget, BadBatchAndSeedOptionsNameTheValue) {
    SearchOptions o;
    o.commit_every = 0;
    try {
        validate(o);
        ADD_FAILURE() << "no error";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("commit_every must be at least 1, got 0"),
                  std::string::npos);
    }
    o.commit_every = 16;
    o.transfer_seeds = -1;
    try {
        validate(o);
        ADD_FAILURE() << "no error";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("transfer_seeds must be at least 0, got -1"),
                  std::string::npos);
    }
}

} // namespace
} // namespace tessera::tune
