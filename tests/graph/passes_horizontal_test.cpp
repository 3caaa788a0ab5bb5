// Horizontal fusion (passes.h fuse_horizontally): MatMuls of one input by constant weights
// merged, each pass checked by evaluating the graph before and after on seeded random inputs.
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

} // namespace
} // namespace tessera::graph
