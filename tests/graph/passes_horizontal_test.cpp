// Horizontal fusion (passes.h fuse_horizontally, fuse_convs_horizontally): MatMuls of one input
// by constant weights merged, and Convs of one input with the same geometry; each pass checked
// by evaluating the graph before and after on seeded random inputs.
#include <gtest/gtest.h>

#include "passes_util.h"
#include "tessera/graph/evaluate.h"
#include "tessera/graph/passes.h"
#include "tessera/graph/pipeline.h"

namespace tessera::graph {
namespace {

using testing::random_tensor;

// x [1, 7, 13] -> three projections (N = 5, 11, 3) with or without biases, each reshaped.
Graph projections(bool biases, bool mixed = false) {
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 7, 13});
    std::vector<ValueId> outs;
    const int64_t ns[] = {5, 11, 3};
    for (int i = 0; i < 3; ++i) {
        const ValueId w = b.constant(random_tensor({13, ns[i]}, 10 + i, -1.0f, 1.0f));
        ValueId y = b.op(Op::MatMul, {x, w});
        if (biases && !(mixed && i == 1))
            y = b.op(Op::Add, {y, b.constant(random_tensor({ns[i]}, 20 + i, -1.0f, 1.0f))});
        outs.push_back(b.op(Op::Relu, {y}));
    }
    return b.finish(outs);
}

void expect_same(const Graph& before, const Graph& after) {
    const std::vector<TensorData> in = {random_tensor({1, 7, 13}, 3, -1.0f, 1.0f)};
    const std::vector<TensorData> want = evaluate(before, in), got = evaluate(after, in);
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) {
        const testing::Closeness c = testing::compare(got[i], want[i], 1e-5, 1e-6);
        EXPECT_TRUE(c.ok) << "output " << i << ": " << c.message;
    }
}

TEST(HorizontalFusion, MergesProjectionsAndTheirBiases) {
    for (bool biases : {false, true}) {
        SCOPED_TRACE(biases ? "biases" : "no biases");
        const Graph before = projections(biases);
        Graph g = before;
        const PassResult r = fuse_horizontally(g);
        eliminate_dead_code(g);
        g.verify();
        EXPECT_EQ(r.changes, 1);
        std::map<std::string, int> want = {{"MatMul", 1}, {"Slice", 3}, {"Relu", 3}};
        if (biases)
            want["Add"] = 1;
        EXPECT_EQ(op_histogram(g), want);
        expect_same(before, g);
    }
}

TEST(HorizontalFusion, ABranchWithoutBiasKeepsTheOthersAdds) {
    const Graph before = projections(true, true);
    Graph g = before;
    EXPECT_EQ(fuse_horizontally(g).changes, 1);
    eliminate_dead_code(g);
    EXPECT_EQ(op_histogram(g),
              (std::map<std::string, int>{{"MatMul", 1}, {"Slice", 3}, {"Add", 2}, {"Relu", 3}}));
    expect_same(before, g);
}

TEST(HorizontalFusion, LeavesWhatItCannotMerge) {
    GraphBuilder b;
    const ValueId x = b.input("x", {7, 13});
    const ValueId runtime_w = b.input("w", {13, 5});
    // One constant-weight MatMul, one by a runtime value, one reading x as B: nothing to merge.
    const ValueId a = b.op(Op::MatMul, {x, b.constant(random_tensor({13, 5}, 1, -1.0f, 1.0f))});
    const ValueId c = b.op(Op::MatMul, {x, runtime_w});
    const ValueId d = b.op(Op::MatMul, {b.constant(random_tensor({5, 7}, 2, -1.0f, 1.0f)), x});
    Graph g = b.finish({a, c, d});
    EXPECT_EQ(fuse_horizontally(g).changes, 0);
}

// The pipeline runs it from -O2 on when asked.
TEST(HorizontalFusion, RunsInThePipelineFromO2WhenAsked) {
    for (bool asked : {false, true})
        for (int level : {1, 2}) {
            Graph g = projections(true);
            PipelineOptions o;
            o.level = level;
            o.horizontal_fusion = asked;
            optimize(g, o);
            EXPECT_EQ(op_histogram(g)["MatMul"], asked && level >= 2 ? 1 : 3)
                << "-O" << level << (asked ? " asked" : "");
        }
}

// An Inception-like block on x [1, 5, 9, 11]: 1x1 convs with `channels` outputs (a bias on all
// but the second, each followed by Relu unless `relu_on` says otherwise), a 3x3 conv with
// padding 1 beside them (another geometry), and the 1x1 branches read again by a 3x3 conv and
// a Concat of the branches' outputs along the channels.
Graph inception(const std::vector<int64_t>& channels, std::vector<bool> relu_on = {}) {
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 5, 9, 11});
    Attributes one = {{"kernel_shape", Attribute::of_ints({1, 1})}};
    Attributes three = {{"kernel_shape", Attribute::of_ints({3, 3})},
                        {"pads", Attribute::of_ints({1, 1, 1, 1})}};
    std::vector<ValueId> outs;
    for (size_t i = 0; i < channels.size(); ++i) {
        const int64_t k = channels[i];
        std::vector<ValueId> ins = {x, b.constant(random_tensor({k, 5, 1, 1}, 30 + i, -1, 1))};
        if (i != 1)
            ins.push_back(b.constant(random_tensor({k}, 40 + i, -1, 1)));
        ValueId y = b.op(Op::Conv, ins, one);
        if (relu_on.empty() || relu_on[i])
            y = b.op(Op::Relu, {y});
        if (i == 1) // a second stage on this branch
            y = b.op(Op::Conv, {y, b.constant(random_tensor({3, k, 3, 3}, 50, -1, 1))}, three);
        outs.push_back(y);
    }
    outs.push_back(b.op(Op::Conv, {x, b.constant(random_tensor({4, 5, 3, 3}, 60, -1, 1))}, three));
    return b.finish({b.op(Op::Concat, outs, {{"axis", Attribute::of_int(1)}})});
}

void expect_same_conv(const Graph& before, const Graph& after) {
    const std::vector<TensorData> in = {random_tensor({1, 5, 9, 11}, 7, -1.0f, 1.0f)};
    const std::vector<TensorData> want = evaluate(before, in), got = evaluate(after, in);
    ASSERT_EQ(want.size(), got.size());
    const testing::Closeness c = testing::compare(got[0], want[0], 1e-5, 1e-5);
    EXPECT_TRUE(c.ok) << c.message;
}

TEST(HorizontalConvFusion, MergesTheOneByOneConvsOfAnInput) {
    const Graph before = inception({6, 7, 3});
    Graph g = before;
    const PassResult r = fuse_convs_horizontally(g, 1);
    eliminate_dead_code(g);
    g.verify();
    EXPECT_EQ(r.changes, 1);
    // One 1x1 conv (16 channels) with one Relu; the 3x3 convs stay.
    EXPECT_EQ(op_histogram(g), (std::map<std::string, int>{
                                   {"Conv", 3}, {"Relu", 1}, {"Slice", 3}, {"Concat", 1}}));
    expect_same_conv(before, g);
}

TEST(HorizontalConvFusion, ReluMergesOnlyWhenEveryBranchHasOne) {
    const Graph before = inception({6, 7, 3}, {true, false, true});
    Graph g = before;
    EXPECT_EQ(fuse_convs_horizontally(g, 1).changes, 1);
    eliminate_dead_code(g);
    EXPECT_EQ(op_histogram(g), (std::map<std::string, int>{
                                   {"Conv", 3}, {"Relu", 2}, {"Slice", 3}, {"Concat", 1}}));
    expect_same_conv(before, g);
}

TEST(HorizontalConvFusion, ChannelBlocksBoundTheSlices) {
    // Blocks of 4: 8 and 4 fill whole blocks, 6 and 3 do not; one partial branch may end the
    // merge (the first, 6), the other stays alone.
    const Graph before = inception({8, 6, 4, 3});
    Graph g = before;
    EXPECT_EQ(fuse_convs_horizontally(g, 4).changes, 1);
    eliminate_dead_code(g);
    EXPECT_EQ(op_histogram(g)["Conv"], 4); // merged 1x1 (8 + 4 + 6), the 3-channel 1x1, two 3x3
    expect_same_conv(before, g);
    // Only partial branches: at most one may merge, so none do.
    Graph h = inception({6, 7, 3});
    EXPECT_EQ(fuse_convs_horizontally(h, 4).changes, 0);
}

TEST(HorizontalConvFusion, RunsInThePipelineAndTheLayoutSlicesBlocks) {
    // -O3: the merged conv moves to NCHW4c and the branches' slices stay blocked (no
    // conversion back to NCHW between the merged conv and the second-stage conv).
    for (int level : {1, 2, 3}) {
        SCOPED_TRACE(level);
        const Graph before = inception({8, 4, 4});
        Graph g = before;
        PipelineOptions o;
        o.level = level;
        o.layout_block = 4;
        o.horizontal_fusion = true;
        optimize(g, o);
        std::map<std::string, int> h = op_histogram(g);
        EXPECT_EQ(h["Slice"], level >= 2 ? 3 : 0);
        if (level == 3) {
            int blocked_slices = 0;
            for (NodeId id : g.node_ids()) {
                const Node& n = g.node(id);
                blocked_slices += n.op == Op::Slice && g.value(n.inputs[0]).shape.size() == 5;
            }
            EXPECT_EQ(blocked_slices, 3) << h["LayoutFromBlocked"];
        }
        expect_same_conv(before, g);
        // Not asked (the default), nothing merges.
        Graph off = before;
        o.horizontal_fusion = false;
        optimize(off, o);
        EXPECT_EQ(op_histogram(off)["Slice"], 0);
    }
}

} // namespace
} // namespace tessera::graph
