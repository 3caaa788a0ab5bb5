// weight_blocked_tiling: conv2d, depthwise and dense register tiles vectorized along the
// output channels, with the weights (and a depthwise conv's padded input) blocked by the
// register tile's width. The rule applies only to inputs marked as weights; sampled states
// replay from JSON and compute the reference's result on small odd shapes.
#include "sketch_fuzz_util.h"
#include "tessera/schedule/mutation.h"
#include "tessera/schedule/sampling.h"
#include "tessera/te/op_registry.h"

namespace tessera::testing {
namespace {

using sched::State;

sched::SketchOptions with_weights(const te::OpInstance& op) {
    sched::SketchOptions o = fuzz_sketch_options();
    o.weight_inputs = op.weight_inputs;
    return o;
}

sched::SampleOptions lanes8() {
    sched::SampleOptions o;
    o.num_cores = 4;
    o.max_vectorize_lanes = 8;
    return o;
}

/// The sketches whose (first) weight input has a blocked layout.
std::vector<State> blocked_sketches(const te::OpInstance& op) {
    std::vector<State> out;
    const ir::Tensor& w = op.compute.inputs.at(static_cast<size_t>(op.weight_inputs.at(0)));
    for (State& s : sched::generate_sketches(op.compute, with_weights(op)))
        if (!s.stages[s.stage_id_of(w)].layout.is_identity())
            out.push_back(std::move(s));
    return out;
}

TEST(WeightBlockedTiling, OnlyInputsMarkedAsWeightsAreBlocked) {
    const te::OpInstance conv = te::make_op("conv2d:n=1,c=5,h=7,w=9,k=19,r=3,pad=1");
    EXPECT_EQ(conv.weight_inputs, (std::vector<int>{1}));
    EXPECT_TRUE(te::make_op("matmul:m=3,n=5,k=7").weight_inputs.empty());
    // Without the mark: the plain sketches only.
    const auto plain = sched::generate_sketches(conv.compute, fuzz_sketch_options());
    for (const State& s : plain)
        EXPECT_TRUE(s.stages[s.stage_id_of("w")].layout.is_identity());
    const auto all = sched::generate_sketches(conv.compute, with_weights(conv));
    const auto blocked = blocked_sketches(conv);
    EXPECT_EQ(blocked.size(), 2u); // fused at the 1st and the 2nd tile level
    EXPECT_EQ(all.size(), plain.size() + blocked.size());
}

TEST(WeightBlockedTiling, ConvTileRunsAlongOutputChannels) {
    const te::OpInstance conv = te::make_op("conv2d:n=1,c=5,h=7,w=9,k=19,r=3,pad=1");
    for (const State& s : blocked_sketches(conv)) {
        const int local = s.stage_id_of("conv2d.local");
        ASSERT_GE(local, 0);
        const sched::Stage& l = s.stages[local];
        EXPECT_EQ(l.location.kind, sched::ComputeLocKind::At);
        // The local tile is stored [n][oh][ow][k]; k is the innermost loop.
        EXPECT_EQ(l.layout.order, (std::vector<int>{0, 2, 3, 1}));
        EXPECT_EQ(l.iters.back().name.substr(0, 2), "k.");
        // OIHW filters blocked as [K/b][C][R][S][b].
        const sched::Stage& w = s.stages[s.stage_id_of("w")];
        EXPECT_EQ(w.layout.order, (std::vector<int>{0, 2, 3, 4, 1}));
        EXPECT_GT(w.layout.factors[0], 1);
        // The copy-out's innermost loop is k too.
        EXPECT_EQ(s.stages[local + 1].iters.back().name.substr(0, 2), "k.");
        // A regular conv reads its padded input at the input channel: not blocked.
        EXPECT_TRUE(s.stages[s.stage_id_of("conv2d_pad")].layout.is_identity());
    }
}

TEST(WeightBlockedTiling, MatmulWeightIsPackedInPanels) {
    // A MatMul whose B [K, N] is a weight, blocked along N: panels [N/b][K][b], contiguous
    // over the reduction, not [K][N/b][b] with N floats between reduce steps.
    te::Tensor a = te::placeholder({7, 13}, ir::DataType::f32(), "a");
    te::Tensor w = te::placeholder({13, 19}, ir::DataType::f32(), "w");
    te::Compute c = te::make_compute({a, w}, {te::matmul(a, w)});
    sched::SketchOptions o = fuzz_sketch_options();
    o.weight_inputs = {1};
    int blocked = 0;
    for (const State& s : sched::generate_sketches(c, o)) {
        const sched::Stage& ws = s.stages[s.stage_id_of("w")];
        if (ws.layout.is_identity())
            continue;
        ++blocked;
        EXPECT_EQ(ws.layout.order, (std::vector<int>{1, 0, 2}));
        EXPECT_GT(ws.layout.factors[1], 1);
    }
    EXPECT_GT(blocked, 0);
}

TEST(WeightBlockedTiling, DepthwiseBlocksItsPaddedInputToo) {
    const te::OpInstance dw = te::make_op("depthwise_conv2d:n=1,c=21,h=7,w=9,r=3,pad=1");
    const auto blocked = blocked_sketches(dw);
    ASSERT_FALSE(blocked.empty());
    for (const State& s : blocked) {
        const sched::Stage& pad = s.stages[s.stage_id_of("depthwise_conv2d_pad")];
        ASSERT_EQ(pad.layout.order, (std::vector<int>{0, 1, 3, 4, 2}));
        ASSERT_EQ(pad.layout.factors.size(), 4u);
        EXPECT_GT(pad.layout.factors[1], 1);
    }
}

TEST(WeightBlockedTiling, UnpaddedDepthwiseDoesNotGatherItsInput) {
    // Without padding a depthwise conv reads its input itself at the output channel, a whole
    // image apart from lane to lane, and an input is not re-laid out: no blocked sketch.
    EXPECT_TRUE(blocked_sketches(te::make_op("depthwise_conv2d:n=1,c=21,h=9,w=11,r=3")).empty());
    EXPECT_TRUE(
        blocked_sketches(te::make_op("depthwise_conv2d:n=1,c=21,h=9,w=11,r=3,stride=2")).empty());
    // A grouped conv reads one input value for the lanes of a group (a broadcast): blocked,
    // without padding as with it.
    for (const char* spec : {"conv2d:n=1,c=6,h=9,w=11,k=18,r=3,groups=2",
                             "conv2d:n=1,c=6,h=9,w=11,k=18,r=3,pad=1,groups=2"})
        EXPECT_FALSE(blocked_sketches(te::make_op(spec)).empty()) << spec;
}

/// A batched matmul whose b [B, K, N] is a weight (Winograd's per-position filters).
te::OpInstance batch_matmul_with_weight(int64_t b, int64_t m, int64_t n, int64_t k) {
    te::OpInstance op = te::make_op("batch_matmul:b=" + std::to_string(b) + ",m=" +
                                    std::to_string(m) + ",n=" + std::to_string(n) +
                                    ",k=" + std::to_string(k));
    op.weight_inputs = {1};
    return op;
}

TEST(WeightBlockedTiling, BatchedWeightIsPackedInPanelsPerBatch) {
    // b indexes the activation too, so it is a batch dimension: the weight is blocked along
    // N only, panels [N/b][B][K][b], prepared outside the call (not packed inside it).
    const te::OpInstance op = batch_matmul_with_weight(5, 7, 37, 13);
    const std::vector<State> blocked = blocked_sketches(op);
    ASSERT_FALSE(blocked.empty());
    for (const State& s : blocked) {
        const sched::Stage& w = s.stages[s.stage_id_of("b")];
        EXPECT_EQ(w.layout.order, (std::vector<int>{2, 0, 1, 3}));
        EXPECT_GT(w.layout.factors[2], 1);
        EXPECT_EQ(w.layout.factors[0], 1);
    }
}

TEST(WeightBlockedTiling, BatchMatmulWithoutAWeightIsNotBlocked) {
    const te::OpInstance op = te::make_op("batch_matmul:b=5,m=7,n=37,k=13");
    for (const State& s : sched::generate_sketches(op.compute, with_weights(op)))
        EXPECT_TRUE(s.stages[s.stage_id_of("b")].layout.is_identity());
}

/// Samples of the blocked sketches of `op`: every block width equals panel_width_for, and
/// every valid sample replays from JSON and matches the reference.
void check_samples(const te::OpInstance& op, uint64_t seed, bool mutate) {
    const std::vector<State> sketches = blocked_sketches(op);
    ASSERT_FALSE(sketches.empty());
    const sched::SampleOptions opts = lanes8();
    const Reference ref(op.compute);
    Rng rng(seed);
    std::vector<State> states;
    std::vector<ir::LoweredFunc> funcs;
    int invalid = 0;
    for (int i = 0; i < 20; ++i) {
        try {
            State s = sched::sample_initial_state(sketches[static_cast<size_t>(i) % sketches.size()],
                                                  rng, opts);
            if (mutate)
                s = sched::mutate_tile_size(s, rng, opts);
            for (const sched::Step& st : s.steps) {
                if (st.kind != sched::StepKind::TransformLayout)
                    continue;
                const State pre = sched::replay(
                    op.compute, std::vector<sched::Step>(
                                    s.steps.begin(), s.steps.begin() + (&st - s.steps.data())));
                if (!sched::is_panel_layout_step(pre, st))
                    continue;
                int64_t f = 1;
                for (int64_t x : st.lengths)
                    f = std::max(f, x);
                EXPECT_EQ(f, sched::panel_width_for(pre, st, opts)) << sched::steps_to_json(s.steps);
            }
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
    nopts.jit_every = 8;
    check_numerics(states, funcs, ref, nopts);
}

void check_samples(const std::string& spec, uint64_t seed, bool mutate) {
    SCOPED_TRACE(spec);
    check_samples(te::make_op(spec), seed, mutate);
}

TEST(WeightBlockedTiling, SampledConvMatchesTheReference) {
    check_samples("conv2d:n=1,c=5,h=7,w=9,k=19,r=3,pad=1", 0xc0, false);
}

TEST(WeightBlockedTiling, SampledDepthwiseMatchesTheReference) {
    check_samples("depthwise_conv2d:n=1,c=21,h=7,w=9,r=3,pad=1", 0xd1, false);
}

TEST(WeightBlockedTiling, SampledDenseMatchesTheReference) {
    check_samples("dense:m=7,n=37,k=13,bias=1,relu=1", 0xde, false);
}

TEST(WeightBlockedTiling, SampledBatchedWeightMatchesTheReference) {
    check_samples(batch_matmul_with_weight(5, 7, 37, 13), 0xb3, false);
}

TEST(WeightBlockedTiling, MutatedBlocksFollowTheTile) {
    check_samples("conv2d:n=1,c=5,h=7,w=9,k=19,r=3,pad=1", 0x77, true);
}

} // namespace
} // namespace tessera::testing
