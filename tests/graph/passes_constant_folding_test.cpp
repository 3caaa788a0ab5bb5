// Constant folding, DCE and shape inference as passes.
#include <gtest/gtest.h>

#include "passes_util.h"

namespace tessera::graph {
namespace {

// Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])): the whole shape computation
// folds into one constant; only the Reshape (and the Relu) stay.
TEST(ConstantFolding, FoldsShapeGatherConcatReshapeChain) {
    GraphBuilder b;
    ValueId x = b.input("x", {7, 3, 13});
    ValueId r = b.op(Op::Relu, {x});
    ValueId s = b.op(Op::Shape, {r});
    ValueId d0 = b.op(Op::Gather, {s, b.constant(TensorData::scalar<int64_t>(0))},
                      {{"axis", Attribute::of_int(0)}});
    ValueId u = b.op(Op::Unsqueeze, {d0, b.ints({0})});
    ValueId spec = b.op(Op::Concat, {u, b.ints({-1})}, {{"axis", Attribute::of_int(0)}});
    ValueId y = b.op(Op::Reshape, {r, spec}, {{"allowzero", Attribute::of_int(0)}});
    Graph g = b.finish({y});
    PassResult res = check_pass(g, fold_constants);
    EXPECT_EQ(res.changes, 4);
    EXPECT_EQ(count_op(g, Op::Shape), 0);
    res = check_pass(g, eliminate_dead_code);
    EXPECT_EQ(res.changes, 0); // folded nodes are removed, not left dead
    EXPECT_EQ(op_histogram(g), (std::map<std::string, int>{{"Relu", 1}, {"Reshape", 1}}));
    EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{7, 39}));
}

// Shape with start/end folds to the selected dims; the Cast of it folds too.
TEST(ConstantFolding, FoldsShapeWithStartEnd) {
    GraphBuilder b;
    ValueId x = b.input("x", {7, 3, 13});
    ValueId s =
        b.op(Op::Shape, {x}, {{"start", Attribute::of_int(1)}, {"end", Attribute::of_int(-1)}});
    ValueId c = b.op(Op::Cast, {s}, {{"to", Attribute::of_string("f32")}});
    ValueId y = b.op(Op::Add, {x, c});
    Graph g = b.finish({y});
    PassResult r = check_pass(g, fold_constants);
    EXPECT_EQ(r.changes, 2);
    EXPECT_NE(r.summary.find("1 Shape"), std::string::npos) << r.summary;
    const Node& add = first_node(g, Op::Add);
    ASSERT_TRUE(g.value(add.inputs[1]).is_constant());
    EXPECT_EQ(g.value(add.inputs[1]).constant->to_vector<float>(), (std::vector<float>{3.0f}));
}

// A weight-only subgraph (Transpose, Mul by a constant, Add) folds; the MatMul on the input
// stays and reads one constant.
TEST(ConstantFolding, FoldsWeightOnlySubgraph) {
    GraphBuilder b;
    ValueId x = b.input("x", {1, 127});
    ValueId w = b.constant_f32({13, 127}, 3);
    ValueId wt = b.op(Op::Transpose, {w}, {{"perm", Attribute::of_ints({1, 0})}});
    ValueId ws = b.op(Op::Mul, {wt, b.scalar(0.5f)});
    ValueId wa = b.op(Op::Add, {ws, b.constant_f32({13}, 4)});
    ValueId y = b.op(Op::MatMul, {x, wa});
    Graph g = b.finish({y});
    PassResult res = check_pass(g, fold_constants);
    EXPECT_EQ(res.changes, 3);
    EXPECT_EQ(res.nodes_before, 4);
    EXPECT_EQ(res.nodes_after, 1);
    EXPECT_EQ(op_histogram(g), (std::map<std::string, int>{{"MatMul", 1}}));
    const Node& mm = g.node(g.node_ids()[0]);
    EXPECT_TRUE(g.value(mm.inputs[1]).is_constant());
}

TEST(ConstantFolding, KeepsNodesReadingInputs) {
    GraphBuilder b;
    ValueId x = b.input("x", {7});
    ValueId y = b.op(Op::Exp, {b.op(Op::Add, {x, b.constant_f32({7}, 5)})});
    Graph g = b.finish({y});
    PassResult res = check_pass(g, fold_constants);
    EXPECT_EQ(res.changes, 0);
    EXPECT_EQ(g.num_nodes(), 2u);
}

// A graph output computed from constants only becomes a constant with the output's name.
TEST(ConstantFolding, OutputBecomesNamedConstant) {
    GraphBuilder b;
    ValueId x = b.input("x", {3});
    ValueId k = b.op(Op::Neg, {b.constant_f32({3}, 6)});
    ValueId y = b.op(Op::Add, {x, b.constant_f32({3}, 7)});
    Graph g = b.finish({y, k});
    const std::string name = g.value(k).name;
    check_pass(g, fold_constants);
    EXPECT_TRUE(g.value(g.outputs[1]).is_constant());
    EXPECT_EQ(g.value(g.outputs[1]).name, name);
}

TEST(DeadCode, RemovesUnusedBranch) {
    GraphBuilder b;
    ValueId x = b.input("x", {13});
    ValueId y = b.op(Op::Relu, {x});
    b.op(Op::Exp, {b.op(Op::Sigmoid, {x})}); // nobody reads it
    Graph g = b.finish({y});
    PassResult res = check_pass(g, eliminate_dead_code);
    EXPECT_EQ(res.changes, 2);
    EXPECT_EQ(op_histogram(g), (std::map<std::string, int>{{"Relu", 1}}));
    EXPECT_EQ(check_pass(g, eliminate_dead_code).changes, 0);
}

TEST(ShapeInferencePass, TypesNewValuesOnce) {
    Graph g;
    ValueId x = g.add_value("x", DType::F32, {1, 7});
    g.inputs.push_back(x);
    ValueId y = g.add_value("y");
    g.add_node(Op::Tanh, {x}, {y});
    g.outputs.push_back(y);
    PassResult r = shape_inference_pass(g);
    EXPECT_EQ(r.pass, "shape-inference");
    EXPECT_EQ(r.changes, 1);
    EXPECT_EQ(g.value(y).shape, (Shape{1, 7}));
    EXPECT_EQ(check_pass(g, shape_inference_pass).changes, 0);
}

} // namespace
} // namespace tessera::graph
