// The empty-tensors pass: values with a zero extent become constants, the nodes they feed fold
// or drop them, and a model with empty inputs, outputs and intermediates builds and runs.
#include <gtest/gtest.h>

#include "graph_test_util.h"
#include "op_case.h"
#include "passes_util.h"
#include "tessera/graph/pipeline.h"

namespace tessera::graph {
namespace {

using testing::ModelBuilder;

// No node reads or writes a non-constant value with a zero extent.
void expect_no_empty_computation(const Graph& g) {
    for (NodeId id : g.node_ids()) {
        const Node& n = g.node(id);
        for (ValueId v : n.inputs) {
            if (v != kNoValue && !g.value(v).is_constant()) {
                EXPECT_GT(shape_numel(g.value(v).shape), 0) << to_string(g);
            }
        }
        for (ValueId v : n.outputs)
            EXPECT_GT(shape_numel(g.value(v).shape), 0) << to_string(g);
    }
}

// x [3, 0, 5] reduced (sums, products: identities), concatenated with y (dropped), and y split
// with an empty part (the part dropped, the split kept); an empty graph output.
TEST(EmptyTensors, FoldsReductionsDropsConcatOperandsAndSplitParts) {
    GraphBuilder b;
    const ValueId x = b.input("x", {3, 0, 5});
    const ValueId y = b.input("y", {3, 4, 5});
    const Attributes keep = {{"keepdims", Attribute::of_int(1)}};
    const ValueId sum = b.op(Op::ReduceSum, {x, b.ints({1})}, keep);
    Attributes prod_attrs = keep;
    prod_attrs["axes"] = Attribute::of_ints({1});
    const ValueId prod = b.op(Op::ReduceProd, {x}, prod_attrs);
    const ValueId rx = b.op(Op::Relu, {x});
    const ValueId cat = b.op(Op::Concat, {rx, y, rx}, {{"axis", Attribute::of_int(1)}});
    const ValueId shifted = b.op(Op::Add, {cat, sum});
    const ValueId scaled = b.op(Op::Mul, {shifted, prod});
    Graph& g0 = b.g;
    const ValueId part0 = g0.add_value("part0"), part1 = g0.add_value("part1");
    g0.add_node(Op::Split, {scaled, b.ints({0, 4})}, {part0, part1},
                {{"axis", Attribute::of_int(1)}}, "split");
    const ValueId out = b.op(Op::Exp, {part1});
    Graph g = b.finish({out, rx, part0});
    ASSERT_EQ(g.value(part0).shape, (Shape{3, 0, 5}));

    const PassResult r = check_pass(g, drop_empty_tensors);
    EXPECT_GT(r.changes, 0);
    expect_no_empty_computation(g);
    EXPECT_EQ(count_op(g, Op::ReduceSum) + count_op(g, Op::ReduceProd) + count_op(g, Op::Relu), 0);
    ASSERT_EQ(count_op(g, Op::Concat), 1);
    EXPECT_EQ(first_node(g, Op::Concat).inputs, (std::vector<ValueId>{y}));
    ASSERT_EQ(count_op(g, Op::Split), 1);
    EXPECT_EQ(first_node(g, Op::Split).outputs.size(), 1u);
    // The empty outputs are empty constants of their types.
    EXPECT_TRUE(g.value(g.outputs[1]).is_constant());
    EXPECT_EQ(g.value(g.outputs[2]).shape, (Shape{3, 0, 5}));
}

// The pipeline runs the pass at every level when (and only when) a value is empty.
TEST(EmptyTensors, RunsAtEveryLevelOnlyWhenNeeded) {
    for (int level : {0, 3}) {
        GraphBuilder b;
        const ValueId x = b.input("x", {0, 7});
        Graph g = b.finish({b.op(Op::Relu, {x})});
        PipelineOptions o;
        o.level = level;
        std::vector<std::string> names;
        for (const PassResult& r : optimize(g, o))
            names.push_back(r.pass);
        EXPECT_EQ(names.at(1), "empty-tensors") << "-O" << level;
        EXPECT_EQ(g.num_nodes(), 0u);
        GraphBuilder full;
        Graph h = full.finish({full.op(Op::Relu, {full.input("x", {2, 7})})});
        for (const PassResult& r : optimize(h, o))
            EXPECT_NE(r.pass, "empty-tensors");
    }
}

// An ONNX model with an empty input, an empty intermediate (a Slice past the end) and an
// empty output builds at -O0 and -O2 and runs through the C API like the evaluator.
std::string empty_model() {
    ModelBuilder m(13);
    m.input("x", DType::F32, {2, 0, 4}).input("y", DType::F32, {2, 3, 4});
    m.initializer("axes", testing::i64s({1}));
    m.initializer("far", testing::i64s({1000})).initializer("farther", testing::i64s({2000}));
    m.node("ReduceSum", {"x", "axes"}, {"s"}).i("keepdims", 1);
    m.node("Slice", {"y", "far", "farther", "axes"}, {"none"});
    m.node("Concat", {"none", "y", "x"}, {"cat"}).i("axis", 1);
    m.node("Add", {"cat", "s"}, {"z"});
    m.node("Relu", {"x"}, {"rx"});
    m.output("z").output("rx");
    return m.bytes();
}

TEST(EmptyTensors, ModelWithEmptyValuesBuildsAndRuns) {
    for (int opt : {0, 2})
        expect_library_matches_evaluator(
            empty_model(), {TensorData(DType::F32, {2, 0, 4}), floats({2, 3, 4}, 1)}, opt);
}

} // namespace
} // namespace tessera::graph
