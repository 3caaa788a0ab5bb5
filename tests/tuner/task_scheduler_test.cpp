// The gradient task scheduler (hand-made histories checked against hand computations) and
// tune_tasks, the round loop over several tasks, on the simulated measurer and in-memory
// databases.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "tessera/cost_model/cost_model.h"
#include "tessera/support/error.h"
#include "tessera/te/op_registry.h"
#include "tessera/te/workload_key.h"
#include "tessera/tuner/task_scheduler.h"

namespace tessera::tune {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const TuneTarget kTarget{"llvm -mcpu=test", "00112233aabbccdd", "x86_64-avx2"};

std::string user_error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const UserError& e) {
        return e.what();
    }
    return "(no UserError)";
}

/// Runs the warm-up (one round per task, in order) with the given best after each round.
void warm_up(GradientTaskScheduler& s, const std::vector<double>& bests) {
    for (size_t i = 0; i < bests.size(); ++i) {
        ASSERT_EQ(s.next_task(), int(i));
        s.record_round(int(i), bests[i]);
    }
}

TEST(GradientTaskScheduler, WarmUpVisitsEveryTaskOnceInOrder) {
    GradientTaskScheduler s({{1, 1e6, "a"}, {2, 5e5, "b"}, {1, 7e6, "c"}, {3, 13, "d"}});
    std::vector<int> order;
    for (int r = 0; r < 4; ++r) {
        const int t = s.next_task();
        order.push_back(t);
        s.record_round(t, 1e-3 * (r + 1));
    }
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
    for (int i = 0; i < 4; ++i)
        EXPECT_EQ(s.rounds(i), 1);
    // A best known from the database before any round does not skip the warm-up.
    GradientTaskScheduler k({{1, 1e6, ""}, {1, 1e6, ""}});
    k.set_known_best(1, 2e-3);
    EXPECT_EQ(k.next_task(), 0);
    k.record_round(0, 5e-3);
    EXPECT_EQ(k.next_task(), 1);
    EXPECT_EQ(k.rounds(1), 0);
}

TEST(GradientTaskScheduler, NextRoundGoesToTheLargestGradientByHand) {
    // alpha 0.2, beta 2, window 3 (the defaults).
    // Task 0: count 1, history 10, 8, 6, 5 (t = 4, g = 5):
    //   backward = (5 - 10) / 3 = -5/3; forward = (5 - 5/4) - 5 = -1.25;
    //   grad = 0.2 * -5/3 + 0.8 * -1.25 = -1/3 - 1 = -4/3.
    // Task 1: count 2, history 4, 4 (t = 2 <= window: backward 0; g = 4):
    //   forward = (4 - 2) - 4 = -2; grad = 2 * 0.8 * -2 = -3.2.
    // Task 2: count 1, history 9, 9, 9, 9, 9 (t = 5, g = 9): backward 0,
    //   forward = (9 - 9/5) - 9 = -1.8; grad = 0.8 * -1.8 = -1.44.
    GradientTaskScheduler s({{1, 1e6, "x"}, {2, 1e6, "y"}, {1, 1e6, "z"}});
    warm_up(s, {10, 4, 9});
    for (double b : {8, 6, 5})
        s.record_round(0, b);
    s.record_round(1, 4);
    for (int r = 0; r < 4; ++r)
        s.record_round(2, 9);
    EXPECT_NEAR(s.gradient(0), -4.0 / 3, 1e-12);
    EXPECT_NEAR(s.gradient(1), -3.2, 1e-12);
    EXPECT_NEAR(s.gradient(2), -1.44, 1e-12);
    EXPECT_EQ(s.next_task(), 1);

    // Task 1 improves a lot over its next rounds: 4 -> 1 in 3 rounds, t = 5, g = 1:
    //   backward = (1 - 4) / 3 = -1; forward = (1 - 1/5) - 1 = -0.2;
    //   grad = 2 * (0.2 * -1 + 0.8 * -0.2) = -0.72. Now task 2 (-1.44) beats task 0 (-4/3).
    for (double b : {3, 2, 1})
        s.record_round(1, b);
    EXPECT_NEAR(s.gradient(1), -0.72, 1e-12);
    EXPECT_EQ(s.next_task(), 2);
}

TEST(GradientTaskScheduler, ARevisedRoundIsNoProgress) {
    // Task 0's seed measured 10 at a bad moment, 4 when measured again: with the revision its
    // history reads 4, 4, 4, 4 after three searched rounds that found nothing better
    // (backward 0, as task 1's); kept as 10, 4, 4, 4, the retime would count as progress of
    // the search (backward (4 - 10) / 3).
    GradientTaskScheduler s({{1, 1e6, "x"}, {1, 1e6, "y"}});
    warm_up(s, {10, 4});
    s.revise_last_round(0, 4);
    EXPECT_EQ(s.rounds(0), 1);
    EXPECT_EQ(s.estimated_latency(), 8);
    for (int r = 0; r < 3; ++r) {
        s.record_round(0, 4);
        s.record_round(1, 4);
    }
    EXPECT_NEAR(s.gradient(0), s.gradient(1), 1e-12);
    // A revision never raises the best.
    s.revise_last_round(1, 7);
    EXPECT_EQ(s.estimated_latency(), 8);
    GradientTaskScheduler fresh({{1, 1e6, "x"}});
    EXPECT_THROW(fresh.revise_last_round(0, 1), InternalError);
}

TEST(GradientTaskScheduler, SimilarTasksPullASlowTaskForward) {
    // Tasks 0 and 1 share a tag; task 1 reached 1e6 flops in 1 s, task 0 (2e6 flops) takes 20 s.
    // Task 0, history 20, 20 (t = 2): g - g/t = 10; beta * C0 / max(C/g) = 2 * 2e6 / 1e6 = 4;
    //   forward = min(10, 4) - 20 = -16; grad = 0.8 * -16 = -12.8.
    // Task 2 (no similar task, same history as task 0): forward = 10 - 20; grad = -8.
    GradientTaskScheduler s({{1, 2e6, "conv/30"}, {1, 1e6, "conv/30"}, {1, 2e6, "gemm/30"}});
    warm_up(s, {20, 1, 20});
    s.record_round(0, 20);
    s.record_round(2, 20);
    s.record_round(1, 1);
    EXPECT_NEAR(s.gradient(0), -12.8, 1e-9);
    EXPECT_NEAR(s.gradient(2), -8, 1e-9);
    EXPECT_EQ(s.next_task(), 0);
}

TEST(GradientTaskScheduler, CountsWeightTheObjectiveAndTheChoice) {
    // Equal histories; the task that runs three times per model run gets the round.
    GradientTaskScheduler s({{1, 1e6, ""}, {3, 1e6, ""}});
    warm_up(s, {2e-3, 2e-3});
    EXPECT_NEAR(s.estimated_latency(), 1 * 2e-3 + 3 * 2e-3, 1e-15);
    EXPECT_NEAR(s.gradient(1), 3 * s.gradient(0), 1e-15);
    EXPECT_EQ(s.next_task(), 1);
    // Ties go to the lowest index.
    GradientTaskScheduler t({{2, 1e6, ""}, {2, 1e6, ""}});
    warm_up(t, {2e-3, 2e-3});
    EXPECT_EQ(t.next_task(), 0);
}

TEST(GradientTaskScheduler, DeadAndExhaustedTasksLeaveAndUnmeasuredOnesAreEstimated) {
    GradientTaskScheduler s({{1, 4e6, ""}, {2, 1e6, ""}, {1, 3e6, ""}});
    EXPECT_EQ(s.estimated_latency(), kInf); // nothing measured: no basis
    warm_up(s, {2.0, kInf, 0.5});
    EXPECT_TRUE(s.is_dead(1));
    EXPECT_FALSE(s.is_live(1));
    // Lowest measured throughput: task 0, 4e6 / 2 = 2e6 flops/s; task 1: 1e6 / 2e6 = 0.5 s.
    EXPECT_NEAR(s.estimated_task_secs(1), 0.5, 1e-12);
    EXPECT_NEAR(s.estimated_latency(), 2.0 + 2 * 0.5 + 0.5, 1e-12);
    for (int r = 0; r < 6; ++r) {
        const int t = s.next_task();
        EXPECT_NE(t, 1);
        s.record_round(t, s.best(t) * 0.9);
    }
    s.mark_exhausted(0);
    for (int r = 0; r < 3; ++r)
        EXPECT_EQ(s.next_task(), 2);
    s.mark_exhausted(2);
    EXPECT_EQ(s.next_task(), -1);
}

TEST(GradientTaskScheduler, BadInputsNameTheValue) {
    EXPECT_NE(user_error_of([] { GradientTaskScheduler({}); }).find("at least one task"),
              std::string::npos);
    EXPECT_NE(user_error_of([] {
                  GradientTaskScheduler({{0, 1e6, ""}});
              }).find("count"),
              std::string::npos);
    EXPECT_NE(user_error_of([] {
                  GradientTaskScheduler({{1, -3, ""}});
              }).find("-3"),
              std::string::npos);
    GradientSchedulerOptions o;
    o.alpha = 1.5;
    EXPECT_NE(user_error_of([&] { validate(o); }).find("1.5"), std::string::npos);
    o = {};
    o.beta = 0;
    EXPECT_NE(user_error_of([&] { validate(o); }).find("beta"), std::string::npos);
    o = {};
    o.backward_window = 0;
    EXPECT_NE(user_error_of([&] { validate(o); }).find("backward_window"), std::string::npos);
}

TEST(GradientTaskScheduler, SimilarityTagsBucketFlopsByPowersOfTheGoldenRatio) {
    // log(231.6e6 + 1) / log(1.618) = 40.03 and log(231.3e6 + 1) / log(1.618) = 40.02: one bucket;
    // log(115.8e6 + 1) / log(1.618) = 38.58: another.
    EXPECT_EQ(similarity_tag("conv2d_nchwc", 231.6e6), "conv2d_nchwc/40");
    EXPECT_EQ(similarity_tag("conv2d_nchwc", 231.3e6), "conv2d_nchwc/40");
    EXPECT_EQ(similarity_tag("conv2d_nchwc", 115.8e6), "conv2d_nchwc/38");
    EXPECT_NE(similarity_tag("gemm", 231.6e6), similarity_tag("conv2d_nchwc", 231.6e6));
}

// ---------------------------------------------------------------------------------------------
// tune_tasks

std::vector<TaskToTune> three_tasks() {
    std::vector<TaskToTune> tasks;
    int count = 1;
    for (const char* spec :
         {"matmul:m=13,n=7,k=127", "matmul:m=7,n=13,k=31", "dense:m=1,n=13,k=127"}) {
        const te::OpInstance op = te::make_op(spec);
        TaskToTune t;
        t.compute = op.compute;
        t.flops = op.flops;
        t.count = count++;
        t.name = spec;
        t.similarity_tag = similarity_tag(op.name, op.flops);
        tasks.push_back(std::move(t));
    }
    return tasks;
}

SearchOptions small_options(uint64_t seed, int trials) {
    SearchOptions o;
    o.num_trials = trials;
    o.population = 24;
    o.generations = 1;
    o.measure_per_round = 8;
    o.init_from_db = 8;
    o.seed = seed;
    o.sketch.num_cores = 4;
    o.sample.num_cores = 4;
    o.defaults.num_cores = 4;
    o.defaults.vector_lanes = o.sample.max_vectorize_lanes;
    o.search_threads = 1;
    return o;
}

const std::function<std::unique_ptr<cost::CostModel>()> kRandomModel = [] {
    return cost::make_model("random", 1);
};

/// (workload, schedule_json, median) of every record, by workload then id.
std::vector<std::tuple<std::string, std::string, double>> contents(const TuningDatabase& db) {
    std::vector<std::tuple<std::string, std::string, double>> out;
    for (const std::string& key : db.workload_keys())
        for (const TuningRecord& r : db.records_of(key))
            out.emplace_back(key, r.schedule_json, r.median_secs);
    return out;
}

TEST(TuneTasks, SeedRoundsThenGradientRoundsCommitEveryTask) {
    const std::vector<TaskToTune> tasks = three_tasks();
    TuningDatabase db(":memory:");
    auto measurer = make_simulated_measurer(3);
    std::vector<TasksProgress> progress;
    const TasksResult r =
        tune_tasks(tasks, kTarget, db, kRandomModel, *measurer, small_options(7, 80), {},
                   [&](const TasksProgress& p) { progress.push_back(p); });
    EXPECT_EQ(r.trials, 80);
    // Three seed rounds (each task's default schedule), each best measured once more (no
    // round of its own), then ceil(74 / 8) searched rounds.
    ASSERT_EQ(r.round_tasks.size(), 13u);
    EXPECT_EQ(std::vector<int>(r.round_tasks.begin(), r.round_tasks.begin() + 3),
              (std::vector<int>{0, 1, 2}));
    ASSERT_EQ(r.tasks.size(), 3u);
    int trials = 0;
    for (size_t i = 0; i < tasks.size(); ++i) {
        EXPECT_EQ(r.tasks[i].workload_key, te::workload_key(tasks[i].compute));
        EXPECT_EQ(int(db.records_of(r.tasks[i].workload_key).size()), r.tasks[i].trials);
        EXPECT_GE(r.tasks[i].trials, 1) << "task " << i;
        ASSERT_TRUE(r.tasks[i].best.has_value());
        trials += r.tasks[i].trials;
        // The seed measured twice: once in its round, once marked as a retime.
        int retimes = 0;
        std::string retimed;
        for (const TuningRecord& rec : db.records_of(r.tasks[i].workload_key))
            if (nlohmann::json::parse(rec.measure_settings_json).value("retime", false)) {
                ++retimes;
                retimed = rec.schedule_json;
            }
        EXPECT_EQ(retimes, 1) << "task " << i;
        EXPECT_EQ(db.records_of(r.tasks[i].workload_key).front().schedule_json, retimed)
            << "task " << i;
    }
    EXPECT_EQ(trials, 80);
    // The estimate is the count-weighted sum of the bests.
    double sum = 0;
    for (size_t i = 0; i < tasks.size(); ++i)
        sum += tasks[i].count * r.tasks[i].best->median_secs;
    EXPECT_NEAR(r.estimated_secs_after, sum, 1e-12 * sum);
    EXPECT_EQ(r.estimated_secs_before, kInf);
    ASSERT_EQ(r.curve.size(), 13u);
    EXPECT_EQ(std::get<2>(r.curve.back()), r.estimated_secs_after);
    // Progress: the start, then a start and an end per round naming the task, with one report
    // per retimed best (not a round end) after the three seed rounds; trials never go back.
    ASSERT_EQ(progress.size(), 1u + 2 * 13 + 3);
    EXPECT_EQ(progress[0].task, -1);
    for (size_t k = 0, at = 1; k < 13; ++k, at += 2) {
        if (k == 3)
            for (int t = 0; t < 3; ++t, ++at) {
                EXPECT_FALSE(progress[at].round_done);
                EXPECT_EQ(progress[at].task, t);
                EXPECT_EQ(progress[at].round, 3);
                EXPECT_EQ(progress[at].trials_done, progress[at - 1].trials_done + 1);
            }
        EXPECT_FALSE(progress[at].round_done);
        EXPECT_TRUE(progress[at + 1].round_done);
        EXPECT_EQ(progress[at + 1].task, r.round_tasks[k]);
        EXPECT_EQ(progress[at + 1].round, int(k) + 1);
    }
    for (size_t k = 1; k < progress.size(); ++k)
        EXPECT_GE(progress[k].trials_done, progress[k - 1].trials_done);
    EXPECT_EQ(progress.back().trials_done, 80);

    // Resuming: the estimate before is the one after the first call.
    auto measurer2 = make_simulated_measurer(3);
    const TasksResult again =
        tune_tasks(tasks, kTarget, db, kRandomModel, *measurer2, small_options(7, 24));
    EXPECT_EQ(again.estimated_secs_before, r.estimated_secs_after);
    EXPECT_LE(again.estimated_secs_after, again.estimated_secs_before);
}

TEST(TuneTasks, SameSeedSameRoundsDifferentSeedDifferent) {
    const std::vector<TaskToTune> tasks = three_tasks();
    auto run = [&](uint64_t seed, TuningDatabase& db) {
        auto measurer = make_simulated_measurer(5);
        return tune_tasks(tasks, kTarget, db, kRandomModel, *measurer, small_options(seed, 64));
    };
    TuningDatabase a(":memory:"), b(":memory:"), c(":memory:");
    const TasksResult ra = run(11, a), rb = run(11, b);
    run(12, c);
    EXPECT_EQ(ra.round_tasks, rb.round_tasks);
    EXPECT_EQ(contents(a), contents(b));
    EXPECT_NE(contents(a), contents(c));
}

TEST(TuneTasks, SessionRoundsMeasureWhatTuneTaskMeasures) {
    const te::OpInstance op = te::make_op("matmul:m=13,n=7,k=127");
    TuningDatabase a(":memory:"), b(":memory:");
    const SearchOptions o = small_options(3, 24);
    {
        auto model = cost::make_model("random", 1);
        auto measurer = make_simulated_measurer(1);
        tune_task(op.compute, op.flops, kTarget, a, *model, *measurer, o);
    }
    auto model = cost::make_model("random", 1);
    auto measurer = make_simulated_measurer(1);
    TaskTuningSession session(op.compute, op.flops, kTarget, b, *model, *measurer, o);
    for (int r = 0; r < 3; ++r)
        EXPECT_TRUE(session.run_round(100));
    EXPECT_EQ(session.result().trials, 24);
    EXPECT_EQ(session.result().rounds, 3);
    EXPECT_EQ(contents(a), contents(b));
    EXPECT_FALSE(session.run_round(0));
}

TEST(TuneTasks, CancelFlagStopsAfterTheRoundInProgress) {
    const std::vector<TaskToTune> tasks = three_tasks();
    TuningDatabase db(":memory:");
    auto measurer = make_simulated_measurer(3);
    std::atomic<bool> cancel{false};
    SearchOptions o = small_options(7, 1000);
    o.cancel = &cancel;
    // Round 4's start is the 11th report: after the start, three seed rounds (a start and an
    // end each) and the three retimed bests.
    int reports = 0;
    const TasksResult r =
        tune_tasks(tasks, kTarget, db, kRandomModel, *measurer, o, {}, [&](const TasksProgress& p) {
            if (++reports == 11) {
                EXPECT_EQ(p.round, 3);
                EXPECT_FALSE(p.round_done);
                cancel = true; // while round 4 is being measured
            }
        });
    EXPECT_TRUE(r.cancelled);
    EXPECT_EQ(r.round_tasks.size(), 4u);
    // Three seed rounds of one, the three bests retimed, then one searched round.
    EXPECT_EQ(r.trials, 3 + 3 + 8);
    EXPECT_EQ(db.num_records(), 14);

    // tune_task reads the flag between its rounds too.
    const te::OpInstance op = te::make_op("matmul:m=13,n=7,k=127");
    auto model = cost::make_model("random", 1);
    const TuneResult t = tune_task(op.compute, op.flops, kTarget, db, *model, *measurer, o);
    EXPECT_EQ(t.trials, 0);
}

/// The simulated measurer, except that every candidate of one workload fails.
class FailingTaskMeasurer : public Measurer {
  public:
    explicit FailingTaskMeasurer(std::string key)
        : inner_(make_simulated_measurer(1)), key_(std::move(key)) {}
    std::vector<MeasureResult> measure(const te::Compute& c,
                                       const std::vector<sched::State>& states) override {
        if (te::workload_key(c) != key_)
            return inner_->measure(c, states);
        MeasureResult failed;
        failed.error = MeasureError::CompileHost;
        failed.error_message = "fails on purpose";
        return std::vector<MeasureResult>(states.size(), failed);
    }
    std::string settings_json() const override { return inner_->settings_json(); }

  private:
    std::unique_ptr<Measurer> inner_;
    std::string key_;
};

TEST(TuneTasks, ATaskWithoutACorrectCandidateGetsOnlyItsWarmUpRound) {
    const std::vector<TaskToTune> tasks = three_tasks();
    TuningDatabase db(":memory:");
    FailingTaskMeasurer measurer(te::workload_key(tasks[1].compute));
    const TasksResult r =
        tune_tasks(tasks, kTarget, db, kRandomModel, measurer, small_options(7, 64));
    EXPECT_EQ(r.trials, 64);
    // Its seed round (the default schedule) and, since that failed too, a searched round.
    EXPECT_EQ(r.tasks[1].trials, 1 + 8);
    EXPECT_EQ(r.tasks[1].errors, 1 + 8);
    EXPECT_FALSE(r.tasks[1].best.has_value());
    EXPECT_EQ(std::count(r.round_tasks.begin(), r.round_tasks.end(), 1), 1);
    EXPECT_TRUE(std::isfinite(r.estimated_secs_after)); // task 1 estimated from the others
}

TEST(TuneTasks, BadInputsAreUserErrors) {
    TuningDatabase db(":memory:");
    auto measurer = make_simulated_measurer(1);
    EXPECT_NE(user_error_of([&] {
                  tune_tasks({}, kTarget, db, kRandomModel, *measurer, small_options(1, 8));
              }).find("no task"),
              std::string::npos);
    std::vector<TaskToTune> tasks = three_tasks();
    tasks[2].count = 0;
    EXPECT_NE(user_error_of([&] {
                  tune_tasks(tasks, kTarget, db, kRandomModel, *measurer, small_options(1, 8));
              }).find("task 2"),
              std::string::npos);
}

} // namespace
} // namespace tessera::tune
