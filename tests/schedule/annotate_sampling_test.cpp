// Annotation: tile size sampling, the annotation phases and determinism.
#include <algorithm>
#include <set>

#include "sketch_fuzz_util.h"
#include "tessera/schedule/sampling.h"

namespace tessera::testing {
namespace {

using sched::IterAnnotation;
using sched::State;
using sched::StepKind;

sched::SampleOptions fuzz_sample_options() {
    sched::SampleOptions o;
    o.num_cores = 4;
    o.max_vectorize_lanes = 8;
    return o;
}

TEST(AnnotateSampling, SplitLengthsCoverTheExtentWithoutMuchWaste) {
    Rng rng(3);
    const sched::SampleOptions opts = fuzz_sample_options();
    int perfect = 0, total = 0;
    for (int64_t extent : {1, 2, 7, 12, 13, 64, 127, 360, 1000}) {
        for (size_t n : {1u, 3u}) {
            for (int rep = 0; rep < 200; ++rep) {
                const auto l = sched::sample_split_lengths(extent, n, rng, opts);
                ASSERT_EQ(l.size(), n);
                int64_t prod = 1;
                for (int64_t v : l) {
                    ASSERT_GE(v, 1);
                    prod *= v;
                }
                EXPECT_LE(l.back(), opts.max_innermost_split_factor);
                // Iterations of the split loops: prod * ceil(extent / prod), at most 2^n x extent.
                const int64_t iters = prod * ((extent + prod - 1) / prod);
                EXPECT_LE(iters, extent << n) << extent << " " << n;
                perfect += extent % prod == 0 && iters == extent;
                ++total;
            }
        }
    }
    // Mostly perfect tiles (divisors), but imperfect ones too.
    EXPECT_GT(perfect, total / 2);
    EXPECT_LT(perfect, total);

    sched::SampleOptions divisors_only = opts;
    divisors_only.divisor_probability = 1.0;
    for (int rep = 0; rep < 300; ++rep) {
        const auto l = sched::sample_split_lengths(360, 3, rng, divisors_only);
        EXPECT_EQ(360 % (l[0] * l[1] * l[2]), 0);
    }
    sched::SampleOptions any = opts;
    any.divisor_probability = 0.0;
    std::set<int64_t> seen;
    for (int rep = 0; rep < 300; ++rep)
        seen.insert(sched::sample_split_lengths(127, 1, rng, any)[0]);
    EXPECT_GT(seen.size(), 20u); // not only 1 and 127 for a prime extent
}

TEST(AnnotateSampling, SameSeedSameScheduleDifferentSeedsDiffer) {
    const te::Compute c = spec_compute("conv2d:n=1,c=3,h=13,w=7,k=4,r=3,pad=1");
    const auto sketches = sched::generate_sketches(c, fuzz_sketch_options());
    std::set<std::string> distinct;
    for (uint64_t seed = 1; seed <= 20; ++seed) {
        Rng a(seed), b(seed);
        const State sa =
            sched::sample_initial_state(sketches[seed % sketches.size()], a, fuzz_sample_options());
        const State sb =
            sched::sample_initial_state(sketches[seed % sketches.size()], b, fuzz_sample_options());
        EXPECT_EQ(sched::steps_to_json(sa.steps), sched::steps_to_json(sb.steps));
        distinct.insert(sched::steps_to_json(sa.steps));
    }
    EXPECT_GE(distinct.size(), 15u);
}

TEST(AnnotateSampling, RegisterResidentSamplesHaveNoCacheTile) {
    // Counts, over sampled states of a conv and a matmul, the four-part spatial splits (S S R
    // S R S tiles) and those with a second-innermost part > 1 (a cache tile around the register
    // tile, whose accumulators then outlive the outer reduce loops in memory).
    struct Count {
        int tiles = 0, cache_tiles = 0;
    };
    auto count = [](const State& s, Count& n) {
        for (size_t k = 0; k < s.steps.size(); ++k) {
            const sched::Step& st = s.steps[k];
            if (st.kind != StepKind::Split || st.lengths.size() != 3)
                continue;
            const State pre =
                sched::replay(s.compute, {s.steps.begin(), s.steps.begin() + long(k)});
            if (pre.stages[st.stage].iters[st.iter].kind != sched::IterKind::Spatial)
                continue;
            ++n.tiles;
            n.cache_tiles += st.lengths[1] > 1;
        }
    };
    for (const char* spec : {"conv2d:n=1,c=5,h=13,w=14,k=7,r=3,pad=1", "matmul:m=13,n=67,k=29"}) {
        SCOPED_TRACE(spec);
        const te::Compute c = spec_compute(spec);
        const auto sketches = sched::generate_sketches(c, fuzz_sketch_options());
        const Reference ref(c);
        for (double p : {0.0, 1.0}) {
            sched::SampleOptions o = fuzz_sample_options();
            o.register_resident_probability = p;
            Count n;
            std::vector<State> states;
            std::vector<ir::LoweredFunc> funcs;
            for (uint64_t seed = 1; seed <= 40; ++seed) {
                Rng rng(seed);
                try {
                    State s = sched::sample_initial_state(sketches[seed % sketches.size()], rng, o);
                    count(s, n);
                    if (p == 1.0 && states.size() < 12) {
                        funcs.push_back(sched::lower_state(s, "kernel"));
                        states.push_back(std::move(s));
                    }
                } catch (const ScheduleError&) {
                }
            }
            ASSERT_GT(n.tiles, 20) << "p " << p;
            if (p == 0.0)
                EXPECT_GT(n.cache_tiles, n.tiles / 4) << "independent sampling keeps cache tiles";
            else
                EXPECT_EQ(n.cache_tiles, 0);
            if (!states.empty())
                check_numerics(states, funcs, ref);
        }
    }
}

TEST(AnnotateSampling, AnnotationsFollowTheOptions) {
    const te::Compute c = spec_compute("matmul:m=64,n=96,k=32");
    const auto sketches = sched::generate_sketches(c, fuzz_sketch_options());
    const sched::SampleOptions opts = fuzz_sample_options();
    Rng rng(17);
    int parallel = 0, vectorized = 0, pragmas = 0;
    for (int i = 0; i < 60; ++i) {
        const State& sketch = sketches[i % sketches.size()];
        const State s = sched::sample_initial_state(sketch, rng, opts);
        // The sketch's steps come first, with the same kinds and (for all but splits) fields.
        ASSERT_GE(s.steps.size(), sketch.steps.size());
        for (size_t k = 0; k < sketch.steps.size(); ++k) {
            EXPECT_EQ(s.steps[k].kind, sketch.steps[k].kind);
            // Splits get sampled lengths, panel layouts the register tile's width.
            if (s.steps[k].kind != StepKind::Split &&
                s.steps[k].kind != StepKind::TransformLayout) {
                EXPECT_EQ(s.steps[k], sketch.steps[k]);
            }
        }
        for (const auto& st : s.stages) {
            int par_loops = 0;
            for (const auto& it : st.iters) {
                if (it.annotation == IterAnnotation::Parallel) {
                    ++par_loops;
                    EXPECT_EQ(it.kind, sched::IterKind::Spatial);
                }
                if (it.annotation == IterAnnotation::Vectorize) {
                    ++vectorized;
                    EXPECT_LE(it.extent, opts.max_vectorize_lanes);
                    EXPECT_EQ(&it, &st.iters.back()) << "only the innermost loop is vectorized";
                }
            }
            EXPECT_LE(par_loops, 1);
            parallel += par_loops;
            if (st.auto_unroll_max_step > 0) {
                ++pragmas;
                EXPECT_NE(std::find(opts.auto_unroll_configs.begin(),
                                    opts.auto_unroll_configs.end(), st.auto_unroll_max_step),
                          opts.auto_unroll_configs.end());
            }
        }
    }
    EXPECT_GE(parallel, 50);
    EXPECT_GE(vectorized, 15); // an innermost tile within the vector width (Ansor: often not)
    EXPECT_GE(pragmas, 20);
}

TEST(AnnotateSampling, ComputeLocationsOfThePadStage) {
    const te::Compute c = spec_compute("conv2d:n=1,c=3,h=13,w=7,k=4,r=3,pad=1");
    const auto sketches = sched::generate_sketches(c, fuzz_sketch_options());
    const State& plain = sketches[0]; // conv tiled in place, no cache
    const int pad = plain.stage_id_of("conv2d_pad"), conv = plain.stage_id_of("conv2d");
    EXPECT_TRUE(sched::can_change_compute_location(plain, pad));
    EXPECT_FALSE(sched::can_change_compute_location(plain, conv)); // output, tiled
    // The conv's loops are placeholders of extent 1 in the sketch; with real tiles the pad stage
    // may go to the S0, S1 and R0 levels.
    Rng rng(5);
    sched::SampleOptions no_move = fuzz_sample_options();
    no_move.change_compute_location = false;
    const State s = sched::sample_initial_state(plain, rng, no_move);
    for (const auto& st : s.steps)
        EXPECT_TRUE(st.kind != StepKind::ComputeAt && st.kind != StepKind::ComputeRoot &&
                    st.kind != StepKind::ComputeInline);
    const auto cands = sched::compute_location_candidates(s, pad);
    ASSERT_FALSE(cands.empty());
    for (const auto& [stage, iter] : cands) {
        EXPECT_EQ(stage, conv);
        EXPECT_GT(s.stages[conv].iters[iter].extent, 1);
        EXPECT_LT(iter, 16); // outside the S2 level (S0 S1 R0 each have 4 + 3 loops)
    }
    // Inlining, root and every candidate show up over many samples.
    std::set<std::string> seen;
    for (int i = 0; i < 200; ++i) {
        const State t = sched::sample_initial_state(plain, rng, fuzz_sample_options());
        seen.insert(sched::to_string(t.stages[pad].location.kind));
    }
    EXPECT_EQ(seen.size(), 3u);
}

TEST(AnnotateSampling, BrokenSketchesAreScheduleErrors) {
    const te::Compute c = spec_compute("matmul:m=8,n=8,k=8");
    State sketch = sched::make_initial_state(c);
    sched::Step bad;
    bad.kind = StepKind::Split;
    bad.stage = 2;
    bad.iter = 7; // out of range
    bad.lengths = {1};
    sketch.steps.push_back(bad);
    Rng rng(1);
    EXPECT_THROW(sched::sample_initial_state(sketch, rng), ScheduleError);
}

} // namespace
} // namespace tessera::testing
