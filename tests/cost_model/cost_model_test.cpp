// Cost models (cost_model/cost_model.h): the random model, the XGBoost model on a synthetic
// task family whose throughput is a known function of a few features, blob checks, and
// ranking_quality on hand-made cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tessera/cost_model/cost_model.h"
#include "tessera/cost_model/features.h"
#include "tessera/support/error.h"
#include "tessera/support/rng.h"

namespace tessera::cost {
namespace {

/// A synthetic task family. Programs of task t have 1 + t % 2 store rows (schedules of one
/// task mostly share their store structure) of `cols` features drawn in [0, 6) (the range of
/// log2-scaled counts). A row's run time depends on its first three features:
/// exp(0.6 x0 - 0.4 x1) * (1 + (x2 - 3)^2 / 4), scaled per task; the program's throughput is
/// 1 / (sum of its rows' times) with seeded +-2.5% noise, normalized by the best program of
/// its task. About 5% of programs are error records (throughput 0). The other features are
/// noise the model must learn to ignore.
std::vector<TrainingExample> synthetic_programs(int num_tasks, int per_task, int cols,
                                                uint64_t seed) {
    Rng rng(seed);
    std::vector<TrainingExample> out;
    for (int t = 0; t < num_tasks; ++t) {
        size_t first = out.size();
        double best = 0;
        for (int p = 0; p < per_task; ++p) {
            TrainingExample e;
            e.task = "task" + std::to_string(t);
            int num_rows = 1 + t % 2;
            double time = 0;
            for (int r = 0; r < num_rows; ++r) {
                std::vector<float> row(static_cast<size_t>(cols));
                rng.fill(row, 0.0f, 6.0f);
                auto x = [&](int i) { return i < cols ? static_cast<double>(row[i]) : 0.0; };
                time += (1.0 + t) * std::exp(0.6 * x(0) - 0.4 * x(1)) *
                        (1.0 + (x(2) - 3.0) * (x(2) - 3.0) / 4.0);
                e.features.rows.push_back(std::move(row));
            }
            double noise = 1.0 + 0.05 * (rng.uniform01() - 0.5);
            bool error = rng.uniform01() < 0.05;
            e.normalized_throughput = error ? 0.0 : noise / time;
            best = std::max(best, e.normalized_throughput);
            out.push_back(std::move(e));
        }
        for (size_t i = first; i < out.size(); ++i)
            out[i].normalized_throughput /= best;
    }
    return out;
}

std::vector<ProgramFeatures> features_of(const std::vector<TrainingExample>& examples) {
    std::vector<ProgramFeatures> out;
    for (const TrainingExample& e : examples)
        out.push_back(e.features);
    return out;
}

TrainingExample example(const std::string& task, double throughput) {
    TrainingExample e;
    e.task = task;
    e.normalized_throughput = throughput;
    return e;
}

// ---- random model ----------------------------------------------------------------------------

TEST(RandomModel, SameSeedSameScoresOtherSeedOtherScores) {
    std::vector<ProgramFeatures> programs = features_of(synthetic_programs(1, 13, 7, 3));
    std::unique_ptr<CostModel> a = make_random_model(42), b = make_random_model(42),
                               c = make_random_model(43);
    std::vector<double> sa = a->predict(programs), sb = b->predict(programs),
                        sc = c->predict(programs);
    ASSERT_EQ(sa.size(), programs.size());
    EXPECT_EQ(sa, sb);
    EXPECT_NE(sa, sc);
    for (double s : sa) {
        EXPECT_GE(s, 0.0);
        EXPECT_LT(s, 1.0);
    }
    // A program's score does not depend on its batch or on earlier calls.
    std::vector<ProgramFeatures> reversed(programs.rbegin(), programs.rend());
    std::vector<double> sr = a->predict(reversed);
    std::reverse(sr.begin(), sr.end());
    EXPECT_EQ(sr, sa);
    EXPECT_EQ(a->name(), "random");
}

TEST(RandomModel, ScoresSpreadOverTheUnitInterval) {
    std::vector<ProgramFeatures> programs = features_of(synthetic_programs(1, 127, 7, 5));
    std::vector<double> s = make_random_model(1)->predict(programs);
    double mean = 0;
    for (double v : s)
        mean += v / static_cast<double>(s.size());
    EXPECT_NEAR(mean, 0.5, 0.1);
    EXPECT_LT(*std::min_element(s.begin(), s.end()), 0.1);
    EXPECT_GT(*std::max_element(s.begin(), s.end()), 0.9);
}

TEST(RandomModel, TrainCountsAndSaveLoadKeepsSeedAndCount) {
    std::vector<TrainingExample> examples = synthetic_programs(1, 7, 13, 9);
    std::unique_ptr<CostModel> m = make_random_model(7);
    EXPECT_EQ(m->num_trained(), 0);
    m->train(examples);
    EXPECT_EQ(m->num_trained(), 7);
    std::unique_ptr<CostModel> other = make_random_model(8);
    other->load(m->save());
    EXPECT_EQ(other->num_trained(), 7);
    EXPECT_EQ(other->predict(features_of(examples)), m->predict(features_of(examples)));
}

// ---- XGBoost model ---------------------------------------------------------------------------

TEST(XGBoostModel, UntrainedPredictsZero) {
    std::unique_ptr<CostModel> m = make_xgboost_model();
    EXPECT_EQ(m->name(), "xgboost");
    EXPECT_EQ(m->num_trained(), 0);
    std::vector<double> s = m->predict(features_of(synthetic_programs(1, 7, 13, 1)));
    EXPECT_EQ(s, std::vector<double>(7, 0.0));
    // Training on nothing leaves it untrained.
    m->train({});
    EXPECT_EQ(m->num_trained(), 0);
    EXPECT_EQ(m->predict(features_of(synthetic_programs(1, 1, 13, 2))), std::vector<double>{0.0});
}

/// Trains on one draw of the family and scores the ranking of another (held-out programs of
/// the same tasks).
RankingQuality held_out_quality(const XGBoostOptions& opts, int cols) {
    std::vector<TrainingExample> train = synthetic_programs(3, 255, cols, 11);
    std::vector<TrainingExample> test = synthetic_programs(3, 127, cols, 12);
    std::unique_ptr<CostModel> m = make_xgboost_model(opts);
    m->train(train);
    EXPECT_EQ(m->num_trained(), static_cast<int64_t>(train.size()));
    return ranking_quality(test, m->predict(features_of(test)));
}

TEST(XGBoostModel, DefaultObjectiveRanksHeldOutPrograms) {
    RankingQuality q = held_out_quality(XGBoostOptions{}, 13);
    EXPECT_GE(q.pairwise_accuracy, 0.8) << "default objective " << XGBoostOptions{}.objective;
    EXPECT_EQ(q.num_tasks, 3);
    EXPECT_GE(q.peak_score_at_32, 0.8);
}

TEST(XGBoostModel, BothObjectivesLearnTheFamily) {
    for (const char* objective : {"pack-sum", "rank"}) {
        XGBoostOptions opts;
        opts.objective = objective;
        RankingQuality q = held_out_quality(opts, 7);
        EXPECT_GE(q.pairwise_accuracy, 0.75) << objective;
    }
}

TEST(XGBoostModel, TrainingIsDeterministic) {
    std::vector<TrainingExample> train = synthetic_programs(2, 127, 7, 21);
    std::vector<ProgramFeatures> test = features_of(synthetic_programs(2, 13, 7, 22));
    for (const char* objective : {"pack-sum", "rank"}) {
        XGBoostOptions opts;
        opts.objective = objective;
        std::unique_ptr<CostModel> a = make_xgboost_model(opts), b = make_xgboost_model(opts);
        a->train(train);
        b->train(train);
        EXPECT_EQ(a->predict(test), b->predict(test)) << objective;
    }
}

TEST(XGBoostModel, SaveLoadGivesIdenticalPredictions) {
    std::vector<TrainingExample> train = synthetic_programs(2, 127, 13, 31);
    std::vector<ProgramFeatures> test = features_of(synthetic_programs(2, 13, 13, 32));
    for (const char* objective : {"pack-sum", "rank"}) {
        XGBoostOptions opts;
        opts.objective = objective;
        std::unique_ptr<CostModel> m = make_xgboost_model(opts);
        m->train(train);
        std::unique_ptr<CostModel> loaded = make_xgboost_model(opts);
        loaded->load(m->save());
        EXPECT_EQ(loaded->num_trained(), m->num_trained()) << objective;
        std::vector<double> expected = m->predict(test);
        EXPECT_EQ(loaded->predict(test), expected) << objective;
        // The predictions carry information (not all equal).
        EXPECT_NE(*std::min_element(expected.begin(), expected.end()),
                  *std::max_element(expected.begin(), expected.end()))
            << objective;
    }
    // An untrained model round-trips to an untrained model.
    std::unique_ptr<CostModel> empty = make_xgboost_model();
    empty->load(make_xgboost_model()->save());
    EXPECT_EQ(empty->num_trained(), 0);
    EXPECT_EQ(empty->predict(test), std::vector<double>(test.size(), 0.0));
}

TEST(XGBoostModel, WorksForAnyRowLength) {
    // Rows of one feature: only x0 is informative.
    std::vector<TrainingExample> train = synthetic_programs(1, 127, 1, 41);
    std::vector<TrainingExample> test = synthetic_programs(1, 127, 1, 42);
    std::unique_ptr<CostModel> m = make_xgboost_model();
    m->train(train);
    RankingQuality q = ranking_quality(test, m->predict(features_of(test)));
    EXPECT_GE(q.pairwise_accuracy, 0.8);
}

TEST(XGBoostModel, TrainsWhenNoPairCanBeOrdered) {
    // Only error records: no validation pair exists, every program trains on every round.
    std::vector<TrainingExample> errors = synthetic_programs(1, 127, 7, 71);
    for (TrainingExample& e : errors)
        e.normalized_throughput = 0;
    for (const char* objective : {"pack-sum", "rank"}) {
        XGBoostOptions opts;
        opts.objective = objective;
        std::unique_ptr<CostModel> m = make_xgboost_model(opts);
        m->train(errors);
        EXPECT_EQ(m->num_trained(), 127) << objective;
        for (double s : m->predict(features_of(errors)))
            EXPECT_TRUE(std::isfinite(s)) << objective;
    }
}

TEST(XGBoostModel, ProgramWithoutStoresScoresZeroUnderPackSum) {
    XGBoostOptions opts;
    opts.objective = "pack-sum";
    std::unique_ptr<CostModel> m = make_xgboost_model(opts);
    m->train(synthetic_programs(1, 13, 7, 51));
    std::vector<ProgramFeatures> programs = features_of(synthetic_programs(1, 1, 7, 52));
    programs.push_back(ProgramFeatures{});
    std::vector<double> s = m->predict(programs);
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[1], 0.0);
}

/// Byte offset of the feature layout version in a blob of `kind`: magic (4), blob format
/// (8), the kind as a length-prefixed string (8 + size). Mirrors cost_model/model_blob.cpp.
size_t layout_version_offset(const std::string& kind) { return 4 + 8 + 8 + kind.size(); }

/// Runs f and returns the UserError message it throws ("" when it throws none).
template <typename F> std::string user_error_of(F f) {
    try {
        f();
    } catch (const UserError& e) {
        return e.what();
    }
    return "";
}

TEST(XGBoostModel, LoadRejectsOtherKindsLayoutsObjectivesAndGarbage) {
    std::unique_ptr<CostModel> xgb = make_xgboost_model();
    xgb->train(synthetic_programs(1, 13, 7, 61));
    std::vector<uint8_t> blob = xgb->save();

    std::string msg =
        user_error_of([&] { make_xgboost_model()->load(make_random_model(1)->save()); });
    EXPECT_NE(msg.find("'random'"), std::string::npos) << msg;
    msg = user_error_of([&] { make_random_model(1)->load(blob); });
    EXPECT_NE(msg.find("'xgboost'"), std::string::npos) << msg;

    std::vector<uint8_t> other_layout = blob;
    other_layout[layout_version_offset("xgboost")] ^= 0x40;
    msg = user_error_of([&] { make_xgboost_model()->load(other_layout); });
    EXPECT_NE(msg.find("layout version " + std::to_string(kFeatureLayoutVersion ^ 0x40)),
              std::string::npos)
        << msg;

    XGBoostOptions pack_sum;
    pack_sum.objective = "pack-sum";
    msg = user_error_of([&] { make_xgboost_model(pack_sum)->load(blob); });
    EXPECT_NE(msg.find("objective '" + XGBoostOptions{}.objective + "'"), std::string::npos) << msg;

    msg = user_error_of([&] { make_xgboost_model()->load({1, 2, 3, 4, 5, 6, 7}); });
    EXPECT_NE(msg.find("not a tessera cost-model blob"), std::string::npos) << msg;
    std::vector<uint8_t> truncated(blob.begin(), blob.begin() + static_cast<long>(blob.size() / 2));
    msg = user_error_of([&] { make_xgboost_model()->load(truncated); });
    EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

// ---- priors (pretrained models) ----------------------------------------------------------

TEST(XGBoostModel, PriorPredictsLikeThePretrainedModelUntilTrained) {
    std::unique_ptr<CostModel> pretrained = make_xgboost_model();
    pretrained->train(synthetic_programs(3, 127, 13, 81));
    const std::vector<ProgramFeatures> test = features_of(synthetic_programs(2, 17, 13, 82));

    std::unique_ptr<CostModel> m = make_xgboost_model();
    EXPECT_FALSE(m->has_prior());
    m->set_prior(pretrained->save());
    EXPECT_TRUE(m->has_prior());
    EXPECT_EQ(m->num_trained(), 0); // the prior's examples are not the task's
    const std::vector<double> expected = pretrained->predict(test);
    EXPECT_EQ(m->predict(test), expected);
    // Nothing to learn from: the prior alone still predicts.
    m->train({});
    EXPECT_EQ(m->num_trained(), 0);
    EXPECT_EQ(m->predict(test), expected);
}

TEST(XGBoostModel, PriorRefinedByAFewRecordsRanksANewTaskBetterThanTheRecordsAlone) {
    // The corpus: tasks 0..3 of the family. The new task: task 5 of another draw, whose first
    // 12 programs are all a tune has measured so far; the next 127 are what it will meet.
    std::unique_ptr<CostModel> pretrained = make_xgboost_model();
    pretrained->train(synthetic_programs(4, 127, 13, 91));
    std::vector<TrainingExample> task5;
    for (TrainingExample& e : synthetic_programs(6, 139, 13, 92))
        if (e.task == "task5")
            task5.push_back(std::move(e));
    const std::vector<TrainingExample> first(task5.begin(), task5.begin() + 12);
    const std::vector<TrainingExample> rest(task5.begin() + 12, task5.end());

    std::unique_ptr<CostModel> own = make_xgboost_model();
    own->train(first);
    std::unique_ptr<CostModel> refined = make_xgboost_model();
    refined->set_prior(pretrained->save());
    refined->train(first);
    EXPECT_EQ(refined->num_trained(), 12);
    const double own_acc = ranking_quality(rest, own->predict(features_of(rest))).pairwise_accuracy;
    const double refined_acc =
        ranking_quality(rest, refined->predict(features_of(rest))).pairwise_accuracy;
    EXPECT_GE(refined_acc, 0.75);
    EXPECT_GT(refined_acc, own_acc);
    // The refined model is the prior's trees plus new ones: it no longer predicts the prior's
    // scores, it saves and loads like any model, and retraining it is deterministic.
    EXPECT_NE(refined->predict(features_of(rest)), pretrained->predict(features_of(rest)));
    std::unique_ptr<CostModel> loaded = make_xgboost_model();
    loaded->load(refined->save());
    EXPECT_EQ(loaded->predict(features_of(rest)), refined->predict(features_of(rest)));
    std::unique_ptr<CostModel> again = make_xgboost_model();
    again->set_prior(pretrained->save());
    again->train(first);
    EXPECT_EQ(again->predict(features_of(rest)), refined->predict(features_of(rest)));
}

TEST(XGBoostModel, SetPriorRejectsUntrainedOtherLayoutAndKindsWithoutPriors) {
    std::unique_ptr<CostModel> trained = make_xgboost_model();
    trained->train(synthetic_programs(1, 13, 7, 101));
    const std::vector<uint8_t> blob = trained->save();
    const std::vector<ProgramFeatures> test = features_of(synthetic_programs(1, 5, 7, 102));

    std::unique_ptr<CostModel> m = make_xgboost_model();
    std::string msg = user_error_of([&] { m->set_prior(make_xgboost_model()->save()); });
    EXPECT_NE(msg.find("untrained"), std::string::npos) << msg;
    std::vector<uint8_t> other_layout = blob;
    other_layout[layout_version_offset("xgboost")] ^= 0x40;
    msg = user_error_of([&] { m->set_prior(other_layout); });
    EXPECT_NE(msg.find("layout version"), std::string::npos) << msg;
    // A failed set_prior leaves the model as it was.
    EXPECT_FALSE(m->has_prior());
    EXPECT_EQ(m->predict(test), std::vector<double>(test.size(), 0.0));

    msg = user_error_of([&] { make_random_model(1)->set_prior(blob); });
    EXPECT_NE(msg.find("random cost model cannot start from a pretrained model"),
              std::string::npos)
        << msg;
}

TEST(XGBoostModel, BadOptionsAreUserErrors) {
    XGBoostOptions o;
    o.objective = "lambdamart";
    EXPECT_NE(user_error_of([&] { make_xgboost_model(o); }).find("'lambdamart'"),
              std::string::npos);
    o = XGBoostOptions{};
    o.num_threads = 0;
    EXPECT_NE(user_error_of([&] { make_xgboost_model(o); }).find("num_threads"), std::string::npos);
    o = XGBoostOptions{};
    o.max_bin = 1;
    EXPECT_NE(user_error_of([&] { make_xgboost_model(o); }).find("max_bin"), std::string::npos);
    o = XGBoostOptions{};
    o.eta = 0;
    EXPECT_NE(user_error_of([&] { make_xgboost_model(o); }).find("eta"), std::string::npos);
}

// ---- ranking_quality -------------------------------------------------------------------------

TEST(RankingQuality, PerfectReversedAndTiedOrders) {
    std::vector<TrainingExample> e = {example("a", 1.0), example("a", 0.5), example("a", 0.25),
                                      example("a", 0.0)};
    RankingQuality perfect = ranking_quality(e, {4, 3, 2, 1});
    EXPECT_EQ(perfect.pairwise_accuracy, 1.0);
    EXPECT_EQ(perfect.num_pairs, 6);
    EXPECT_EQ(perfect.num_tasks, 1);
    EXPECT_EQ(perfect.peak_score_at_1, 1.0);
    RankingQuality reversed = ranking_quality(e, {1, 2, 3, 4});
    EXPECT_EQ(reversed.pairwise_accuracy, 0.0);
    EXPECT_EQ(reversed.peak_score_at_1, 0.0); // the top prediction is the error record
    EXPECT_EQ(reversed.peak_score_at_5, 1.0);
    // A constant model orders no pair: half credit each.
    EXPECT_EQ(ranking_quality(e, {7, 7, 7, 7}).pairwise_accuracy, 0.5);
}

TEST(RankingQuality, PairsStayWithinTasksAndEqualMeasurementsArePaired) {
    // Cross-task pairs would be wrong here; within each task the order is right. Equal
    // measurements (0.5, 0.5 in task b) make no pair.
    std::vector<TrainingExample> e = {example("a", 1.0), example("a", 0.2), example("b", 1.0),
                                      example("b", 0.5), example("b", 0.5)};
    RankingQuality q = ranking_quality(e, {0.1, 0.0, 9.0, 5.0, 6.0});
    EXPECT_EQ(q.pairwise_accuracy, 1.0);
    EXPECT_EQ(q.num_pairs, 1 + 2);
    EXPECT_EQ(q.num_tasks, 2);
}

TEST(RankingQuality, PeakScoresAverageOverTasksAndSkipErrorOnlyTasks) {
    // Task a: the model's top-1 is 0.5 of the best; task b: top-1 is the best.
    // Task c has only error records and does not count.
    std::vector<TrainingExample> e = {example("a", 1.0), example("a", 0.5), example("b", 0.8),
                                      example("b", 0.4), example("c", 0.0), example("c", 0.0)};
    RankingQuality q = ranking_quality(e, {1, 2, 3, 1, 5, 6});
    EXPECT_EQ(q.num_tasks, 2);
    EXPECT_DOUBLE_EQ(q.peak_score_at_1, (0.5 + 1.0) / 2);
    EXPECT_DOUBLE_EQ(q.peak_score_at_5, 1.0);
    EXPECT_DOUBLE_EQ(q.peak_score_at_32, 1.0);
    EXPECT_EQ(q.pairwise_accuracy, 0.5); // a: wrong, b: right
    // With 7 programs in one task, top-5 misses the best when the model puts it 6th.
    std::vector<TrainingExample> seven;
    std::vector<double> pred;
    for (int i = 0; i < 7; ++i) {
        seven.push_back(example("t", (i + 1) / 7.0));
        pred.push_back(i == 6 ? 1.0 : 10.0 - i); // best program (i = 6) predicted last
    }
    RankingQuality s = ranking_quality(seven, pred);
    EXPECT_DOUBLE_EQ(s.peak_score_at_1, (1 / 7.0) / 1.0);
    EXPECT_DOUBLE_EQ(s.peak_score_at_5, (5 / 7.0) / 1.0);
    EXPECT_DOUBLE_EQ(s.peak_score_at_32, 1.0);
}

} // namespace
} // namespace tessera::cost
