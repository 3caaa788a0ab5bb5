// The vendor-kernel parts of the search space: the pack_panel sketch rule (sgemm's B copied
// into panels as wide as the register tile), the panel width that annotation and tile-size
// mutation keep equal to that tile, and register tiles of several vectors (split by the vector
// width, vectorized and unrolled). Every sampled state must replay from JSON and compute the
// reference's result on small odd shapes.
#include "sketch_fuzz_util.h"
#include "tessera/schedule/mutation.h"
#include "tessera/schedule/sampling.h"

namespace tessera::testing {
namespace {

using sched::IterAnnotation;
using sched::State;
using sched::StepKind;

int count_steps(const State& s, StepKind kind) {
    int n = 0;
    for (const auto& st : s.steps)
        n += st.kind == kind;
    return n;
}

sched::SampleOptions lanes8() {
    sched::SampleOptions o;
    o.num_cores = 4;
    o.max_vectorize_lanes = 8;
    return o;
}

/// The id of the panel copy (a cache-read stage with a layout) of s, or -1.
int panel_copy(const State& s) {
    for (size_t sid = 0; sid < s.stages.size(); ++sid)
        if (s.stages[sid].origin == sched::StageOrigin::CacheRead &&
            !s.stages[sid].layout.is_identity())
            return static_cast<int>(sid);
    return -1;
}

/// The sketches of c that pack a panel.
std::vector<State> packed_sketches(const te::Compute& c) {
    std::vector<State> out;
    for (State& s : sched::generate_sketches(c, fuzz_sketch_options()))
        if (panel_copy(s) >= 0)
            out.push_back(std::move(s));
    return out;
}

TEST(PackPanel, MatmulBIsPackedInEveryTilingVariant) {
    const te::Compute c = spec_compute("matmul:m=13,n=67,k=29");
    const std::vector<State> all = sched::generate_sketches(c, fuzz_sketch_options());
    const std::vector<State> packed = packed_sketches(c);
    // Each tiling variant (plain, cached at level 1 and 2) with and without panels.
    ASSERT_EQ(packed.size() * 2, all.size());
    ASSERT_FALSE(packed.empty());
    for (const State& s : packed) {
        const int copy = panel_copy(s);
        ASSERT_EQ(copy, 2);
        const sched::Stage& st = s.stages[copy];
        EXPECT_EQ(s.stages[copy - 1].tensor.name(), "b");
        EXPECT_EQ(st.location.kind, sched::ComputeLocKind::Root);
        // [K][N] stored as [N/w][K][w]: the factor on N, the panel index first.
        ASSERT_EQ(st.layout.factors.size(), 2u);
        EXPECT_EQ(st.layout.factors[0], 1);
        EXPECT_GT(st.layout.factors[1], 1);
        EXPECT_EQ(st.layout.order, (std::vector<int>{1, 0, 2}));
        EXPECT_EQ(s.consumers(copy).size(), 1u);
        EXPECT_EQ(count_steps(s, StepKind::CacheRead), 1);
    }
}

TEST(PackPanel, OnlyInputsReadAlongTheInnermostAxisAreWideEnough) {
    // A narrow B (n < 32): no panels.
    EXPECT_TRUE(packed_sketches(spec_compute("matmul:m=13,n=7,k=127")).empty());
    // dense reads w[n][k]: the last index is the reduce axis, not a spatial one.
    EXPECT_TRUE(packed_sketches(spec_compute("dense:m=7,n=67,k=33")).empty());
    // batch_matmul b[b][k][n]: the panel index goes after the batch dimension.
    const std::vector<State> bm = packed_sketches(spec_compute("batch_matmul:b=3,m=7,n=37,k=9"));
    ASSERT_FALSE(bm.empty());
    for (const State& s : bm)
        EXPECT_EQ(s.stages[panel_copy(s)].layout.order, (std::vector<int>{0, 2, 1, 3}));
}

TEST(PackPanel, SampledPanelsFollowTheRegisterTileAndComputeTheReference) {
    const te::Compute c = spec_compute("matmul:m=13,n=67,k=29");
    const std::vector<State> sketches = packed_sketches(c);
    ASSERT_FALSE(sketches.empty());
    const sched::SampleOptions opts = lanes8();
    const Reference ref(c);
    Rng rng(0x9a7e1);
    std::vector<State> states;
    std::vector<ir::LoweredFunc> funcs;
    int invalid = 0;
    for (int i = 0; i < 48; ++i) {
        const State& sketch = sketches[static_cast<size_t>(i) % sketches.size()];
        try {
            State s = sched::sample_initial_state(sketch, rng, opts);
            const int copy = panel_copy(s);
            ASSERT_GE(copy, 0);
            const int64_t w = s.stages[copy].layout.factors.back();
            EXPECT_EQ(w, sched::panel_width_for(s, copy, 1, opts)) << sched::steps_to_json(s.steps);
            EXPECT_GE(w, 8);
            EXPECT_LE(w, 67);
            ir::LoweredFunc f = sched::lower_state(s, "kernel");
            expect_round_trip(s, f);
            states.push_back(std::move(s));
            funcs.push_back(std::move(f));
        } catch (const ScheduleError&) {
            ++invalid;
        }
    }
    EXPECT_LE(invalid, 4);
    NumericsOptions nopts;
    nopts.jit_every = 6;
    EXPECT_GE(check_numerics(states, funcs, ref, nopts), 1);
}

TEST(PackPanel, TileSizeMutationKeepsThePanelWidthInStep) {
    const te::Compute c = spec_compute("matmul:m=13,n=67,k=29");
    const std::vector<State> sketches = packed_sketches(c);
    ASSERT_FALSE(sketches.empty());
    const sched::SampleOptions opts = lanes8();
    const Reference ref(c);
    Rng rng(0x71e5);
    std::vector<State> states;
    std::vector<ir::LoweredFunc> funcs;
    int changed_width = 0;
    for (int i = 0; i < 60 && states.size() < 24; ++i) {
        try {
            const State s =
                sched::sample_initial_state(sketches[static_cast<size_t>(i) % sketches.size()],
                                            rng, opts);
            const State m = sched::mutate_tile_size(s, rng, opts);
            const int copy = panel_copy(m);
            ASSERT_GE(copy, 0);
            EXPECT_EQ(m.stages[copy].layout.factors.back(),
                      sched::panel_width_for(m, copy, 1, opts))
                << sched::steps_to_json(m.steps);
            changed_width += m.stages[copy].layout.factors.back() !=
                             s.stages[panel_copy(s)].layout.factors.back();
            ir::LoweredFunc f = sched::lower_state(m, "kernel");
            expect_round_trip(m, f);
            states.push_back(m);
            funcs.push_back(std::move(f));
        } catch (const ScheduleError&) {
        }
    }
    EXPECT_GE(states.size(), 12u);
    EXPECT_GE(changed_width, 1) << "some mutation should resize the register tile";
    NumericsOptions nopts;
    nopts.jit_every = 8;
    check_numerics(states, funcs, ref, nopts);
}

TEST(PackPanel, RefreshRewritesAStaleWidth) {
    const te::Compute c = spec_compute("matmul:m=13,n=67,k=29");
    const std::vector<State> sketches = packed_sketches(c);
    ASSERT_FALSE(sketches.empty());
    const sched::SampleOptions opts = lanes8();
    Rng rng(5);
    const State s = sched::sample_initial_state(sketches.front(), rng, opts);
    std::vector<sched::Step> steps = s.steps;
    size_t k = 0;
    while (k < steps.size() && steps[k].kind != StepKind::TransformLayout)
        ++k;
    ASSERT_LT(k, steps.size());
    const int64_t right = steps[k].lengths.back();
    steps[k].lengths.back() = right == 9 ? 11 : 9; // stale, but still a legal layout
    const State stale = sched::replay(c, steps);
    const State fixed = sched::refresh_panel_widths(stale, opts);
    EXPECT_EQ(fixed.steps[k].lengths.back(), right);
    EXPECT_EQ(sched::steps_to_json(fixed.steps), sched::steps_to_json(s.steps));
}

TEST(PackPanel, WidthIsTheTileSpanThroughAnImperfectVectorSplit) {
    // A register tile of 64 columns whose vector split was sampled for a wider tile (48 lanes,
    // so 2 x 48 under a guard): the panel is as wide as the 64 columns the tile covers, not the
    // 96 of its loops (clamped to the 67 of the matrix before this was counted right).
    const te::Compute c = spec_compute("matmul:m=13,n=67,k=29");
    const std::string steps = R"({"version":1,"steps":[
        {"kind":"cache_write","stage":2,"scope":"local"},
        {"kind":"split","stage":2,"iter":0,"lengths":[5,1,3],"inner_to_outer":true},
        {"kind":"split","stage":2,"iter":4,"lengths":[2,1,64],"inner_to_outer":true},
        {"kind":"split","stage":2,"iter":8,"lengths":[29],"inner_to_outer":true},
        {"kind":"reorder","stage":2,"iters":[0,4,1,5,8,2,6,9,3,7]},
        {"kind":"follow_split","stage":3,"iter":0,"src_step":1,"n_split":1},
        {"kind":"follow_split","stage":3,"iter":2,"src_step":2,"n_split":1},
        {"kind":"reorder","stage":3,"iters":[0,2,1,3]},
        {"kind":"compute_at","stage":2,"target_stage":3,"target_iter":1},
        {"kind":"cache_read","stage":1,"scope":"global","readers":[2]},
        {"kind":"transform_layout","stage":2,"iters":[1,0,2],"lengths":[1,64]},
        {"kind":"split","stage":3,"iter":6,"lengths":[48],"inner_to_outer":true},
        {"kind":"annotate","stage":3,"iter":7,"annotation":"vectorize"}]})";
    const State s = sched::replay(c, sched::steps_from_json(steps));
    const int copy = panel_copy(s);
    ASSERT_GE(copy, 0);
    EXPECT_EQ(sched::panel_width_for(s, copy, 1, lanes8()), 64);
    const State refreshed = sched::refresh_panel_widths(s, lanes8());
    EXPECT_EQ(refreshed.stages[copy].layout.factors.back(), 64);
    expect_round_trip(refreshed, sched::lower_state(refreshed, "kernel"));
}

TEST(RegisterTileVectors, WideInnermostTilesAreSplitIntoUnrolledVectors) {
    // 8 lanes: an innermost register-tile loop of 16..64 columns (a multiple of 8) becomes an
    // unrolled loop over 8-lane vectors.
    const te::Compute c = spec_compute("matmul:m=7,n=64,k=13");
    const std::vector<State> sketches = sched::generate_sketches(c, fuzz_sketch_options());
    const sched::SampleOptions opts = lanes8();
    const Reference ref(c);
    Rng rng(0x3c1);
    std::vector<State> states;
    std::vector<ir::LoweredFunc> funcs;
    int split_tiles = 0;
    for (int i = 0; i < 80; ++i) {
        try {
            State s = sched::sample_initial_state(
                sketches[static_cast<size_t>(rng.uniform_int(0, int64_t(sketches.size()) - 1))],
                rng, opts);
            for (const sched::Stage& st : s.stages) {
                const size_t n = st.iters.size();
                if (n < 2 || st.iters[n - 1].annotation != IterAnnotation::Vectorize ||
                    st.iters[n - 2].annotation != IterAnnotation::Unroll)
                    continue;
                EXPECT_EQ(st.iters[n - 1].extent, 8);
                EXPECT_LE(st.iters[n - 2].extent, 8);
                ++split_tiles;
            }
            ir::LoweredFunc f = sched::lower_state(s, "kernel");
            expect_round_trip(s, f);
            states.push_back(std::move(s));
            funcs.push_back(std::move(f));
        } catch (const ScheduleError&) {
        }
    }
    EXPECT_GE(split_tiles, 5);
    EXPECT_GE(states.size(), 72u);
    NumericsOptions nopts;
    nopts.jit_every = 10;
    check_numerics(states, funcs, ref, nopts);
}

} // namespace
} // namespace tessera::testing
