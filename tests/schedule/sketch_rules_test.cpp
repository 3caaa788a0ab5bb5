// Sketch generation: which rules fire for which stages, the loop structures they make, and
// that every sketch (with its placeholder tile sizes) is itself a correct schedule.
#include <algorithm>

#include "sketch_fuzz_util.h"

namespace tessera::testing {
namespace {

using sched::IterKind;
using sched::RuleCondition;
using sched::State;
using sched::StepKind;

sched::SketchOptions cores(int n) {
    sched::SketchOptions o;
    o.num_cores = n;
    return o;
}

int count_steps(const State& s, StepKind k) {
    return static_cast<int>(std::count_if(s.steps.begin(), s.steps.end(),
                                          [&](const sched::Step& st) { return st.kind == k; }));
}

/// The iterator kinds of a stage, as a string of S and R.
std::string kinds(const sched::Stage& st) {
    std::string out;
    for (const auto& it : st.iters)
        out += it.kind == IterKind::Spatial ? 'S' : 'R';
    return out;
}

TEST(SketchRules, MatmulHasTilingAndTwoCachedFusions) {
    const te::Compute c = spec_compute("matmul:m=64,n=64,k=64");
    const std::vector<State> all = sched::generate_sketches(c, cores(4));
    ASSERT_EQ(all.size(), 6u); // each variant with and without B packed into panels
    std::vector<State> sk;
    for (const State& s : all)
        if (count_steps(s, StepKind::CacheRead) == 0)
            sk.push_back(s);
    ASSERT_EQ(sk.size(), 3u);
    // Plain tiling: i and j in four levels, k in two, ordered S S R S R S.
    const State& plain = sk[0];
    ASSERT_EQ(plain.stages.size(), 3u);
    EXPECT_EQ(kinds(plain.stages[2]), "SSSSRSSRSS");
    std::vector<std::string> names;
    for (const auto& it : plain.stages[2].iters)
        names.push_back(it.name);
    EXPECT_EQ(names, (std::vector<std::string>{"i0.0", "i1.0", "i0.1", "i1.1", "k.0", "i0.2",
                                               "i1.2", "k.1", "i0.3", "i1.3"}));
    // Cached variants: a local stage computed at the copy-out's 1st or 2nd tile level.
    for (size_t v = 1; v <= 2; ++v) {
        const State& s = sk[v];
        ASSERT_EQ(s.stages.size(), 4u);
        EXPECT_EQ(s.stages[2].origin, sched::StageOrigin::CacheWrite);
        EXPECT_EQ(s.stages[2].scope, sched::StageScope::Local);
        EXPECT_EQ(s.stages[2].location.kind, sched::ComputeLocKind::At);
        EXPECT_EQ(s.stages[2].location.stage, 3);
        EXPECT_EQ(s.stages[2].location.iter, static_cast<int>(v) * 2 - 1);
        EXPECT_EQ(count_steps(s, StepKind::FollowSplit), 2);
        EXPECT_EQ(kinds(s.stages[2]), "SSSSRSSRSS");
    }
    // Placeholder lengths everywhere.
    for (const State& s : sk)
        for (const auto& st : s.steps)
            if (st.kind == StepKind::Split) {
                for (int64_t l : st.lengths)
                    EXPECT_EQ(l, 1);
            }
}

TEST(SketchRules, DenseBiasReluInlinesTheBiasAndFusesIntoRelu) {
    const te::Compute c = spec_compute("dense:m=7,n=13,k=33,bias=1,relu=1");
    const State init = sched::make_initial_state(c);
    const int dense = init.stage_id_of("dense"), bias = init.stage_id_of("dense_bias"),
              relu = init.stage_id_of("relu");
    ASSERT_GE(dense, 0);
    ASSERT_GE(bias, 0);
    ASSERT_GE(relu, 0);
    const sched::SketchOptions o = cores(4);
    EXPECT_EQ(sched::make_always_inline_rule(o)->check(init, bias),
              RuleCondition::ApplyAndSkipRest);
    EXPECT_EQ(sched::make_always_inline_rule(o)->check(init, relu), RuleCondition::Skip);  // output
    EXPECT_EQ(sched::make_always_inline_rule(o)->check(init, dense), RuleCondition::Skip); // reduce
    EXPECT_EQ(sched::make_skip_stage_rule(o)->check(init, 0), RuleCondition::Apply);

    const std::vector<State> sk = sched::generate_sketches(c, o);
    ASSERT_EQ(sk.size(), 3u); // fused at level 1, at level 2, unfused
    int fused = 0;
    for (const State& s : sk) {
        EXPECT_EQ(s.stages[bias].location.kind, sched::ComputeLocKind::Inlined);
        if (s.stages[dense].location.kind == sched::ComputeLocKind::At) {
            EXPECT_EQ(s.stages[dense].location.stage, relu);
            ++fused;
        }
        EXPECT_EQ(count_steps(s, StepKind::CacheWrite), 0) << "a fusible consumer needs no cache";
    }
    EXPECT_EQ(fused, 2);
}

TEST(SketchRules, FusibleConsumerLooksThroughInlinedStages) {
    const te::Compute c = spec_compute("dense:m=7,n=13,k=33,bias=1,relu=1");
    State s = sched::make_initial_state(c);
    const int dense = s.stage_id_of("dense"), bias = s.stage_id_of("dense_bias"),
              relu = s.stage_id_of("relu");
    EXPECT_EQ(sched::fusible_consumer(s, dense), bias);
    sched::compute_inline(s, bias);
    EXPECT_EQ(sched::fusible_consumer(s, dense), relu);
    // A conv reads its pad stage through windows, not elementwise.
    State conv = sched::make_initial_state(spec_compute("conv2d:n=1,c=2,h=7,w=7,k=3,r=3,pad=1"));
    EXPECT_EQ(sched::fusible_consumer(conv, conv.stage_id_of("conv2d_pad")), -1);
    EXPECT_EQ(sched::fusible_consumer(conv, conv.stage_id_of("conv2d")), -1); // an output
}

TEST(SketchRules, ConvKeepsItsPadStageForAnnotation) {
    const te::Compute c = spec_compute("conv2d:n=1,c=3,h=13,w=7,k=4,r=3,pad=1");
    const std::vector<State> sk = sched::generate_sketches(c, cores(4));
    ASSERT_EQ(sk.size(), 3u);
    for (const State& s : sk) {
        const int pad = s.stage_id_of("conv2d_pad");
        ASSERT_GE(pad, 0);
        // The pad stage has a Select: not strictly inlinable, left at root untouched.
        EXPECT_EQ(s.stages[pad].location.kind, sched::ComputeLocKind::Root);
        EXPECT_TRUE(s.stages[pad].relations.empty());
    }
}

TEST(SketchRules, RfactorForLongReductionsOverLittleOutput) {
    // matmul 2x3x500: spatial 6 <= reduce 500 and <= 16 x cores.
    const std::vector<State> mm =
        sched::generate_sketches(spec_compute("matmul:m=2,n=3,k=500"), cores(4));
    int rf = 0;
    for (const State& s : mm)
        if (count_steps(s, StepKind::Rfactor) == 1) {
            ++rf;
            ASSERT_EQ(s.stages.size(), 4u);
            EXPECT_EQ(s.stages[2].origin, sched::StageOrigin::Rfactor);
        }
    EXPECT_EQ(rf, 2);         // the outer and the inner part factored
    ASSERT_EQ(mm.size(), 5u); // plus plain tiling and two cached fusions

    // A big output has enough parallelism: no rfactor.
    for (const State& s :
         sched::generate_sketches(spec_compute("matmul:m=64,n=64,k=500"), cores(4)))
        EXPECT_EQ(count_steps(s, StepKind::Rfactor), 0);

    // Softmax: two untiled reductions of 127 > 4 cores, three choices each.
    const std::vector<State> sm =
        sched::generate_sketches(spec_compute("softmax:m=7,n=127"), cores(4));
    EXPECT_EQ(sm.size(), 9u);
    // The inner-part variant moves the factored axis innermost (to vectorize it).
    bool inner_seen = false;
    for (const State& s : sm)
        for (const auto& st : s.stages)
            if (st.origin == sched::StageOrigin::Rfactor &&
                st.iters.back().kind == IterKind::Spatial) {
                inner_seen = true;
                EXPECT_EQ(kinds(st), "SRS");
            }
    EXPECT_TRUE(inner_seen);
    // With more cores than the reduction is long, no rfactor.
    EXPECT_EQ(sched::generate_sketches(spec_compute("softmax:m=7,n=127"), cores(200)).size(), 1u);
}

TEST(SketchRules, ElementwiseChainInlinesStagesReadOnceOrCheap) {
    const te::Compute c = elementwise_chain();
    const std::vector<State> sk = sched::generate_sketches(c, cores(4));
    ASSERT_EQ(sk.size(), 1u);
    int inlined = 0, root = 0;
    for (const auto& st : sk[0].stages) {
        if (st.is_input())
            continue;
        if (st.location.kind == sched::ComputeLocKind::Inlined)
            ++inlined;
        else
            ++root;
    }
    // add, relu, multiply, and the sigmoid (exp): read once per element by its one reader
    // (the subtract), inlining it computes nothing twice; the output stays.
    EXPECT_EQ(inlined, 4);
    EXPECT_EQ(root, 1);
}

TEST(SketchRules, CustomRuleListsAndStructures) {
    const te::Compute c = spec_compute("matmul:m=8,n=8,k=8");
    sched::SketchRules only_skip;
    only_skip.push_back(sched::make_skip_stage_rule({}));
    const std::vector<State> sk = sched::generate_sketches(c, only_skip);
    ASSERT_EQ(sk.size(), 1u);
    EXPECT_TRUE(sk[0].steps.empty());

    State s = sched::make_initial_state(c);
    const std::vector<int> srcs = sched::multi_level_tile(s, 2, "SRS");
    EXPECT_EQ(srcs.size(), 2u);
    EXPECT_EQ(kinds(s.stages[2]), "SSRSS");
    EXPECT_TRUE(sched::is_tiled(s.stages[2]));
    State bad = sched::make_initial_state(c);
    EXPECT_THROW(sched::multi_level_tile(bad, 2, "SXS"), ScheduleError);
    EXPECT_THROW(sched::multi_level_tile(bad, 2, "RR"), ScheduleError);

    sched::SketchOptions gpu;
    gpu.target = sched::TargetKind::Gpu;
    EXPECT_EQ(sched::make_default_sketch_rules(gpu).size(), 8u); // tests/cuda covers them
    EXPECT_EQ(sched::make_default_sketch_rules(cores(4)).size(), 8u);
}

class SketchesOfWorkload : public ::testing::TestWithParam<Workload> {};

TEST_P(SketchesOfWorkload, AreDeterministicAndCorrectAsTheyAre) {
    const Workload& w = GetParam();
    const std::vector<State> a = sched::generate_sketches(w.compute, fuzz_sketch_options());
    const std::vector<State> b = sched::generate_sketches(w.compute, fuzz_sketch_options());
    ASSERT_EQ(a.size(), b.size());
    EXPECT_GE(a.size(), 1u);
    EXPECT_LE(a.size(), 16u);
    std::vector<ir::LoweredFunc> funcs;
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(sched::steps_to_json(a[i].steps), sched::steps_to_json(b[i].steps));
        // Every stage that needs tiling is tiled, fused or cached in every sketch.
        for (size_t sid = 0; sid < a[i].stages.size(); ++sid)
            if (a[i].stages[sid].origin == sched::StageOrigin::Original &&
                a[i].needs_multi_level_tiling(static_cast<int>(sid)) &&
                a[i].stages[sid].location.kind != sched::ComputeLocKind::Inlined) {
                EXPECT_TRUE(sched::is_tiled(a[i].stages[sid]) ||
                            a[i].stages[sid - 1].origin == sched::StageOrigin::CacheWrite)
                    << w.name << " sketch " << i << " stage " << sid;
            }
        ir::LoweredFunc f = sched::lower_state(a[i], "sketch");
        expect_round_trip(a[i], f);
        funcs.push_back(f);
    }
    NumericsOptions opts;
    opts.jit_every = 0;
    check_numerics(a, funcs, Reference(w.compute), opts);
}

INSTANTIATE_TEST_SUITE_P(Canonical, SketchesOfWorkload, ::testing::ValuesIn(canonical_workloads()),
                         workload_name);

} // namespace
} // namespace tessera::testing
