// The mutations one by one: what each changes in the step list, and their errors.
#include <algorithm>
#include <set>

#include "sketch_fuzz_util.h"
#include "tessera/schedule/mutation.h"
#include "tessera/schedule/sampling.h"

namespace tessera::testing {
namespace {

using sched::IterAnnotation;
using sched::State;
using sched::Step;
using sched::StepKind;

sched::SampleOptions opts4() {
    sched::SampleOptions o;
    o.num_cores = 4;
    o.max_vectorize_lanes = 8;
    return o;
}

/// A sampled schedule of a 3x3 conv with a cache-write sketch (splits, a movable pad stage, a
/// parallel loop and a pragma).
State conv_state(uint64_t seed) {
    const te::Compute c = spec_compute("conv2d:n=1,c=3,h=13,w=7,k=4,r=3,pad=1");
    const auto sketches = sched::generate_sketches(c, fuzz_sketch_options());
    Rng rng(seed);
    return sched::sample_initial_state(sketches.back(), rng, opts4());
}

std::vector<size_t> differing_steps(const State& a, const State& b) {
    std::vector<size_t> out;
    for (size_t i = 0; i < std::max(a.steps.size(), b.steps.size()); ++i)
        if (i >= a.steps.size() || i >= b.steps.size() || a.steps[i] != b.steps[i])
            out.push_back(i);
    return out;
}

/// The four-part spatial splits of a state whose second-innermost part (the cache tile
/// between the two reduce levels of S S R S R S) is larger than 1: {step index, stage}.
std::vector<std::pair<size_t, int>> cache_tile_splits(const State& s) {
    std::vector<std::pair<size_t, int>> out;
    for (size_t k = 0; k < s.steps.size(); ++k) {
        const Step& st = s.steps[k];
        if (st.kind != StepKind::Split || st.lengths.size() != 3 || st.lengths[1] == 1)
            continue;
        const State pre = sched::replay(s.compute, {s.steps.begin(), s.steps.begin() + long(k)});
        if (pre.stages[st.stage].iters[st.iter].kind == sched::IterKind::Spatial)
            out.emplace_back(k, st.stage);
    }
    return out;
}

TEST(MutateRules, TileSizeChangesOneSplit) {
    sched::SampleOptions o = opts4();
    o.register_resident_probability = 0; // one split at a time (dropping a cache tile aside)
    for (uint64_t seed = 1; seed <= 20; ++seed) {
        const State s = conv_state(seed);
        Rng rng(seed);
        const State m = sched::mutate_tile_size(s, rng, o);
        const auto diff = differing_steps(s, m);
        ASSERT_EQ(diff.size(), 1u) << sched::steps_to_json(m.steps);
        const Step& st = m.steps[diff[0]];
        EXPECT_EQ(st.kind, StepKind::Split);
        EXPECT_EQ(st.lengths.size(), s.steps[diff[0]].lengths.size());
        EXPECT_LE(st.lengths.back(), opts4().max_innermost_split_factor);
        // Deterministic.
        Rng again(seed);
        EXPECT_EQ(sched::steps_to_json(sched::mutate_tile_size(s, again, o).steps),
                  sched::steps_to_json(m.steps));
    }
    // Nothing to mutate without splits.
    Rng rng(1);
    const State plain = sched::make_initial_state(spec_compute("relu:m=3,n=5"));
    EXPECT_THROW(sched::mutate_tile_size(plain, rng), ScheduleError);
}

TEST(MutateRules, TileSizeMutationDropsACacheTileAndKeepsTheNumbers) {
    // A conv with room for cache tiles (odd sizes), sampled without the register-resident rule
    // so that most states have one; the mutation with probability 1 drops one stage's.
    const te::Compute c = spec_compute("conv2d:n=1,c=5,h=13,w=14,k=7,r=3,pad=1");
    const auto sketches = sched::generate_sketches(c, fuzz_sketch_options());
    sched::SampleOptions sample = opts4();
    sample.register_resident_probability = 0;
    sched::SampleOptions drop = opts4();
    drop.register_resident_probability = 1;
    const Reference ref(c);
    std::vector<State> states;
    std::vector<ir::LoweredFunc> funcs;
    for (uint64_t seed = 1; seed <= 60 && states.size() < 12; ++seed) {
        Rng rng(seed);
        State s;
        try {
            s = sched::sample_initial_state(sketches[seed % sketches.size()], rng, sample);
        } catch (const ScheduleError&) {
            continue;
        }
        const auto before = cache_tile_splits(s);
        if (before.empty())
            continue;
        const State m = sched::mutate_tile_size(s, rng, drop);
        // One stage lost its cache tile: each of its four-part spatial splits has a
        // second-innermost part of 1 and the same product of the two outer parts.
        const auto after = cache_tile_splits(m);
        EXPECT_LT(after.size(), before.size()) << sched::steps_to_json(m.steps);
        std::set<int> dropped;
        for (auto [k, stage] : before)
            if (std::find(after.begin(), after.end(), std::make_pair(k, stage)) == after.end())
                dropped.insert(stage);
        ASSERT_EQ(dropped.size(), 1u) << sched::steps_to_json(m.steps);
        for (auto [k, stage] : before) {
            const Step& was = s.steps[k];
            const Step& now = m.steps[k];
            if (stage != *dropped.begin()) {
                EXPECT_EQ(now.lengths, was.lengths);
                continue;
            }
            EXPECT_EQ(now.lengths[1], 1);
            EXPECT_EQ(now.lengths[0], was.lengths[0] * was.lengths[1]);
            EXPECT_EQ(now.lengths[2], was.lengths[2]);
        }
        funcs.push_back(sched::lower_state(m, "kernel"));
        states.push_back(m);
    }
    ASSERT_GE(states.size(), 6u) << "too few sampled states with a cache tile";
    check_numerics(states, funcs, ref);

    // A state without any cache tile gets an ordinary tile-size mutation instead.
    sched::SampleOptions resident = opts4();
    resident.register_resident_probability = 1;
    Rng rng(5);
    const State s = sched::sample_initial_state(sketches.front(), rng, resident);
    ASSERT_TRUE(cache_tile_splits(s).empty()) << sched::steps_to_json(s.steps);
    EXPECT_EQ(differing_steps(s, sched::mutate_tile_size(s, rng, resident)).size(), 1u);
}

TEST(MutateRules, AutoUnrollPicksAnotherConfiguredValue) {
    const State s = conv_state(3);
    Rng rng(4);
    const State m = sched::mutate_auto_unroll(s, rng, opts4());
    const auto diff = differing_steps(s, m);
    ASSERT_EQ(diff.size(), 1u);
    EXPECT_EQ(m.steps[diff[0]].kind, StepKind::Pragma);
    EXPECT_NE(m.steps[diff[0]].value, s.steps[diff[0]].value);
    const auto& cfg = opts4().auto_unroll_configs;
    EXPECT_NE(std::find(cfg.begin(), cfg.end(), m.steps[diff[0]].value), cfg.end());

    sched::SampleOptions one = opts4();
    one.auto_unroll_configs = {s.steps[diff[0]].value};
    State only_that = s;
    Rng r2(4);
    EXPECT_THROW(sched::mutate_auto_unroll(only_that, r2, one), ScheduleError);
    Rng r3(1);
    EXPECT_THROW(
        sched::mutate_auto_unroll(sched::make_initial_state(spec_compute("relu:m=3,n=5")), r3),
        ScheduleError);
}

TEST(MutateRules, ComputeLocationMovesThePadStage) {
    int moved = 0;
    for (uint64_t seed = 1; seed <= 20; ++seed) {
        const State s = conv_state(seed);
        const int pad = s.stage_id_of("conv2d_pad");
        Rng rng(seed);
        const State m = sched::mutate_compute_location(s, rng, opts4());
        const auto& a = s.stages[pad].location;
        const auto& b = m.stages[pad].location;
        moved += a.kind != b.kind || a.stage != b.stage || a.iter != b.iter;
        expect_state_round_trips_and_lowers(m);
    }
    EXPECT_GE(moved, 15); // another location, but the same loops may be chosen again by id
    // A matmul has no movable stage.
    const te::Compute mm = spec_compute("matmul:m=8,n=8,k=8");
    Rng rng(2);
    const State s = sched::sample_initial_state(
        sched::generate_sketches(mm, fuzz_sketch_options())[0], rng, opts4());
    EXPECT_THROW(sched::mutate_compute_location(s, rng, opts4()), ScheduleError);
}

TEST(MutateRules, ParallelChangesTheFusedLoopsAndKeepsLaterIdsRight) {
    // A root stage with three spatial loops: parallel fuses some of them, vectorize comes after.
    const te::Compute c = spec_compute("matmul:m=64,n=64,k=4");
    State s = sched::make_initial_state(c);
    sched::split(s, 2, 1, {8}); // i0, i1.0, i1.1, k
    sched::reorder(s, 2, {0, 1, 3, 2});
    sched::fuse(s, 2, {0, 1});
    sched::parallel(s, 2, 0);
    sched::vectorize(s, 2, 2); // i1.1
    Rng rng(1);
    const State m = sched::mutate_parallel(s, rng, opts4());
    // The only other choice: no fuse, the parallel loop is i0 alone; vectorize moves to id 3.
    const auto& it = m.stages[2].iters;
    ASSERT_EQ(it.size(), 4u);
    EXPECT_EQ(it[0].annotation, IterAnnotation::Parallel);
    EXPECT_EQ(it[0].extent, 64);
    EXPECT_EQ(it[3].annotation, IterAnnotation::Vectorize);
    EXPECT_EQ(it[3].extent, 8);
    expect_state_round_trips_and_lowers(m);
    // And back.
    Rng rng2(1);
    const State back = sched::mutate_parallel(m, rng2, opts4());
    EXPECT_EQ(sched::steps_to_json(back.steps), sched::steps_to_json(s.steps));
    Rng r3(1);
    EXPECT_THROW(sched::mutate_parallel(sched::make_initial_state(c), r3), ScheduleError);
}

TEST(MutateRules, WeightedPickAndFailures) {
    const State s = conv_state(9);
    Rng rng(5);
    sched::MutationWeights only_unroll{0, 1, 0, 0};
    for (int i = 0; i < 10; ++i) {
        auto m = sched::mutate(s, rng, opts4(), only_unroll);
        ASSERT_TRUE(m.has_value());
        const auto diff = differing_steps(s, *m);
        ASSERT_EQ(diff.size(), 1u);
        EXPECT_EQ(m->steps[diff[0]].kind, StepKind::Pragma);
    }
    EXPECT_FALSE(sched::mutate(s, rng, opts4(), {0, 0, 0, 0}).has_value());
    // Nothing to mutate: nullopt, not an exception.
    const State plain = sched::make_initial_state(spec_compute("relu:m=3,n=5"));
    EXPECT_FALSE(sched::mutate(plain, rng).has_value());
}

} // namespace
} // namespace tessera::testing
