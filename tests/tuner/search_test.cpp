// Evolutionary search (evolutionary_search.h) and the simulated measurer, on small odd shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "tessera/cost_model/cost_model.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"
#include "tessera/schedule/step.h"
#include "tessera/support/error.h"
#include "tessera/te/op_registry.h"
#include "tessera/tuner/evolutionary_search.h"
#include "tessera/tuner/tune_task.h"

namespace tessera::tune {
namespace {

te::Compute matmul(int64_t m, int64_t n, int64_t k) {
    return te::make_op("matmul:m=" + std::to_string(m) + ",n=" + std::to_string(n) +
                       ",k=" + std::to_string(k))
        .compute;
}

std::vector<sched::State> samples(const te::Compute& c, int n, uint64_t seed, SearchStats& stats) {
    const std::vector<sched::State> sketches = sched::generate_sketches(c);
    Rng rng(seed);
    return sample_states(sketches, n, rng, {}, stats);
}

std::vector<std::string> jsons(const std::vector<ScoredState>& v) {
    std::vector<std::string> out;
    for (const ScoredState& s : v)
        out.push_back(s.schedule_json);
    return out;
}

double median_of(const MeasureResult& r) {
    std::vector<double> v = r.run_secs;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

std::string user_error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const UserError& e) {
        return e.what();
    }
    return "(no UserError)";
}

TEST(SampleStates, CountAndDeterminism) {
    const te::Compute c = matmul(13, 7, 31);
    SearchStats s1, s2, s3;
    const auto a = samples(c, 20, 5, s1);
    const auto b = samples(c, 20, 5, s2);
    const auto d = samples(c, 20, 6, s3);
    ASSERT_EQ(a.size(), 20u);
    ASSERT_EQ(b.size(), 20u);
    EXPECT_EQ(s1.sampled, 20);
    std::vector<std::string> ja, jb, jd;
    for (size_t i = 0; i < 20; ++i) {
        ja.push_back(sched::steps_to_json(a[i].steps));
        jb.push_back(sched::steps_to_json(b[i].steps));
        jd.push_back(sched::steps_to_json(d[i].steps));
    }
    EXPECT_EQ(ja, jb);
    EXPECT_NE(ja, jd);
}

TEST(SampleStates, ThreadCountDoesNotChangeTheStates) {
    const std::vector<sched::State> sketches = sched::generate_sketches(matmul(13, 7, 31));
    auto run = [&](int threads) {
        Rng rng(5);
        SearchStats stats;
        std::vector<std::string> out;
        for (const sched::State& s :
             sample_states(sketches, 24, rng, {}, stats, sched::TargetKind::Cpu, threads))
            out.push_back(sched::steps_to_json(s.steps));
        out.push_back(std::to_string(rng.next())); // and leave the generator in the same state
        return out;
    };
    const std::vector<std::string> one = run(1);
    EXPECT_EQ(one.size(), 25u);
    EXPECT_EQ(run(3), one);
    EXPECT_EQ(run(0), one);
}

TEST(FeatureCache, LowersEachScheduleOnce) {
    const te::Compute c = matmul(7, 13, 9);
    SearchStats stats;
    const auto states = samples(c, 6, 1, stats);
    FeatureCache cache;
    for (const sched::State& s : states)
        ASSERT_NE(cache.features(s, sched::steps_to_json(s.steps), stats), nullptr);
    const int64_t lowered = stats.lowered;
    EXPECT_GE(lowered, 1);
    EXPECT_EQ(size_t(lowered), cache.size());
    for (const sched::State& s : states)
        cache.features(s, sched::steps_to_json(s.steps), stats);
    EXPECT_EQ(stats.lowered, lowered);
    EXPECT_NE(cache.find(sched::steps_to_json(states[0].steps)), nullptr);
    cache.clear();
    EXPECT_EQ(cache.find(sched::steps_to_json(states[0].steps)), nullptr);
}

TEST(ScoreStates, KeepsOrderAndModelScores) {
    const te::Compute c = matmul(13, 13, 7);
    SearchStats stats;
    const auto states = samples(c, 12, 2, stats);
    auto model = cost::make_random_model(3);
    FeatureCache cache;
    const std::vector<ScoredState> scored = score_states(states, *model, cache, stats);
    ASSERT_EQ(scored.size(), states.size()); // all of these lower
    std::vector<cost::ProgramFeatures> feats;
    for (size_t i = 0; i < states.size(); ++i) {
        EXPECT_EQ(scored[i].schedule_json, sched::steps_to_json(states[i].steps));
        feats.push_back(*cache.find(scored[i].schedule_json));
    }
    const std::vector<double> direct = model->predict(feats);
    for (size_t i = 0; i < states.size(); ++i)
        EXPECT_EQ(scored[i].score, direct[i]);
}

TEST(Evolve, DistinctSortedNotExcludedAndDeterministic) {
    const te::Compute c = matmul(13, 7, 31);
    SearchStats stats;
    const auto init = samples(c, 24, 4, stats);
    // Exclude a few of the initial population: they must never come out, and must be seen.
    std::set<std::string> exclude;
    for (int i = 0; i < 4; ++i)
        exclude.insert(sched::steps_to_json(init[i].steps));

    EvolutionOptions eo;
    eo.population = 24;
    eo.generations = 2;
    auto run = [&](uint64_t seed, std::set<std::string>* seen) {
        auto model = cost::make_random_model(7);
        FeatureCache cache;
        Rng rng(seed);
        SearchStats st;
        auto out = evolve(init, 10, exclude, *model, cache, eo, rng, st, seen);
        EXPECT_GT(st.mutations, 0);
        return out;
    };
    std::set<std::string> seen;
    const std::vector<ScoredState> a = run(1, &seen);
    ASSERT_EQ(a.size(), 10u);
    std::set<std::string> distinct;
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_TRUE(distinct.insert(a[i].schedule_json).second);
        EXPECT_EQ(exclude.count(a[i].schedule_json), 0u);
        EXPECT_EQ(a[i].schedule_json, sched::steps_to_json(a[i].state.steps));
        if (i > 0) {
            EXPECT_GE(a[i - 1].score, a[i].score);
        }
    }
    EXPECT_EQ(seen, exclude);
    EXPECT_EQ(jsons(run(1, nullptr)), jsons(a));
    EXPECT_NE(jsons(run(2, nullptr)), jsons(a));
}

TEST(Evolve, ThreadCountDoesNotChangeTheResult) {
    const te::Compute c = matmul(13, 7, 31);
    SearchStats stats;
    const auto init = samples(c, 16, 8, stats);
    auto run = [&](int threads) {
        auto model = cost::make_random_model(2);
        FeatureCache cache;
        EvolutionOptions eo;
        eo.population = 16;
        eo.generations = 2;
        eo.num_threads = threads;
        Rng rng(3);
        SearchStats st;
        auto out = jsons(evolve(init, 6, {}, *model, cache, eo, rng, st));
        EXPECT_EQ(size_t(st.lowered), cache.size());
        return out;
    };
    const std::vector<std::string> one = run(1);
    EXPECT_EQ(one.size(), 6u);
    EXPECT_EQ(run(3), one);
    EXPECT_EQ(run(0), one);
}

TEST(Evolve, FindsHigherScoresThanItsInitialPopulation) {
    // The random model scores each program by a hash; evolution explores beyond the initial
    // population, so its best is at least the initial best, and its result includes
    // schedules the initial population did not have.
    const te::Compute c = matmul(31, 13, 17);
    SearchStats stats;
    const auto init = samples(c, 16, 9, stats);
    auto model = cost::make_random_model(11);
    FeatureCache cache;
    const auto init_scored = score_states(init, *model, cache, stats);
    double init_best = -1;
    std::set<std::string> init_json;
    for (const ScoredState& s : init_scored) {
        init_best = std::max(init_best, s.score);
        init_json.insert(s.schedule_json);
    }
    EvolutionOptions eo;
    eo.population = 32;
    eo.generations = 3;
    Rng rng(1);
    const auto out = evolve(init, 8, {}, *model, cache, eo, rng, stats);
    ASSERT_FALSE(out.empty());
    EXPECT_GE(out.front().score, init_best);
    EXPECT_TRUE(std::any_of(out.begin(), out.end(), [&](const ScoredState& s) {
        return init_json.count(s.schedule_json) == 0;
    }));
}

TEST(Evolve, ZeroGenerationsRanksTheInitialPopulation) {
    const te::Compute c = matmul(7, 7, 13);
    SearchStats stats;
    const auto init = samples(c, 10, 3, stats);
    auto model = cost::make_random_model(5);
    FeatureCache cache;
    auto scored = score_states(init, *model, cache, stats);
    std::stable_sort(scored.begin(), scored.end(),
                     [](const ScoredState& a, const ScoredState& b) { return a.score > b.score; });
    // Duplicated samples appear once.
    std::vector<std::string> want;
    for (const ScoredState& s : scored)
        if (std::find(want.begin(), want.end(), s.schedule_json) == want.end())
            want.push_back(s.schedule_json);
    want.resize(std::min<size_t>(want.size(), 5));
    EvolutionOptions eo;
    eo.generations = 0;
    Rng rng(1);
    EXPECT_EQ(jsons(evolve(init, 5, {}, *model, cache, eo, rng, stats)), want);
}

TEST(Evolve, BadOptionsNameOptionAndValue) {
    EvolutionOptions eo;
    eo.population = 0;
    EXPECT_EQ(user_error_of([&] { validate(eo); }), "population must be at least 1, got 0");
    eo = {};
    eo.generations = -2;
    EXPECT_EQ(user_error_of([&] { validate(eo); }), "generations must be at least 0, got -2");
    eo = {};
    eo.mutation_probability = 1.5;
    EXPECT_EQ(user_error_of([&] { validate(eo); }),
              "mutation_probability must be in [0, 1], got 1.5");
    eo = {};
    eo.num_threads = -1;
    EXPECT_EQ(user_error_of([&] { validate(eo); }), "num_threads must be at least 0, got -1");
}

TEST(SimulatedMeasurer, DeterministicAndSeeded) {
    const te::Compute c = matmul(13, 7, 31);
    SearchStats stats;
    const auto states = samples(c, 8, 1, stats);
    auto m1 = make_simulated_measurer(1);
    auto m1b = make_simulated_measurer(1);
    auto m2 = make_simulated_measurer(2);
    const auto r1 = m1->measure(c, states);
    const auto r1b = m1b->measure(c, states);
    const auto r2 = m2->measure(c, states);
    ASSERT_EQ(r1.size(), states.size());
    bool any_differs = false;
    for (size_t i = 0; i < states.size(); ++i) {
        ASSERT_EQ(r1[i].error, MeasureError::Ok) << r1[i].error_message;
        ASSERT_FALSE(r1[i].run_secs.empty());
        EXPECT_EQ(r1[i].run_secs, r1b[i].run_secs);
        EXPECT_GT(median_of(r1[i]), 0);
        // The seed only moves the +-5% noise.
        EXPECT_NEAR(median_of(r2[i]) / median_of(r1[i]), 1.0, 0.11);
        any_differs |= r2[i].run_secs != r1[i].run_secs;
    }
    EXPECT_TRUE(any_differs);
    EXPECT_NE(m1->settings_json().find("simulated"), std::string::npos);
}

TEST(SimulatedMeasurer, FavoursParallelVectorizedSchedules) {
    // The naive loop nest (no parallel, no vector) is slower than the best of a few random
    // annotations (which all parallelize, and most vectorize), and a schedule's time follows
    // its structure: the spread over samples is large compared with the 5% noise.
    const te::Compute c = matmul(127, 127, 127);
    SearchStats stats;
    std::vector<sched::State> states = samples(c, 16, 3, stats);
    states.push_back(sched::make_initial_state(c));
    auto m = make_simulated_measurer(0);
    const auto r = m->measure(c, states);
    double best = 1e30, worst = 0;
    for (size_t i = 0; i + 1 < r.size(); ++i) {
        ASSERT_EQ(r[i].error, MeasureError::Ok) << r[i].error_message;
        best = std::min(best, median_of(r[i]));
        worst = std::max(worst, median_of(r[i]));
    }
    ASSERT_EQ(r.back().error, MeasureError::Ok);
    EXPECT_GT(median_of(r.back()), 4 * best);
    EXPECT_GT(worst, 1.5 * best);
}

TEST(SimulatedMeasurer, ErrorShareFailsAStableSubset) {
    const te::Compute c = matmul(13, 7, 31);
    SearchStats stats;
    const auto states = samples(c, 40, 2, stats);
    auto none = make_simulated_measurer(4, 0.0);
    auto some = make_simulated_measurer(4, 0.3, MeasureError::CompileHost);
    auto all = make_simulated_measurer(4, 1.0, MeasureError::WrongAnswer);
    const auto rn = none->measure(c, states);
    const auto rs = some->measure(c, states);
    const auto rs2 = some->measure(c, states);
    const auto ra = all->measure(c, states);
    int failed = 0;
    for (size_t i = 0; i < states.size(); ++i) {
        EXPECT_EQ(rn[i].error, MeasureError::Ok);
        EXPECT_EQ(ra[i].error, MeasureError::WrongAnswer);
        EXPECT_TRUE(ra[i].run_secs.empty());
        EXPECT_EQ(rs[i].error, rs2[i].error);
        if (rs[i].error != MeasureError::Ok) {
            EXPECT_EQ(rs[i].error, MeasureError::CompileHost);
            EXPECT_FALSE(rs[i].error_message.empty());
            ++failed;
        } else {
            EXPECT_EQ(rs[i].run_secs, rn[i].run_secs);
        }
    }
    EXPECT_GE(failed, 4);
    EXPECT_LE(failed, 22);
}

TEST(SimulatedMeasurer, BadArguments) {
    EXPECT_EQ(user_error_of([] { make_simulated_measurer(0, 1.5); }),
              "error_share must be in [0, 1], got 1.5");
    EXPECT_EQ(user_error_of([] { make_simulated_measurer(0, 0.1, MeasureError::Ok); }),
              "error_kind of the simulated measurer must be an error, got ok");
}

} // namespace
} // namespace tessera::tune
