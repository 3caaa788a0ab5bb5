// Common-subexpression elimination.
#include <gtest/gtest.h>

#include "passes_util.h"

namespace tessera::graph {
namespace {

// Two copies of Relu(x) + c (the constants are distinct values with equal contents) merge,
// and with them the Exp that reads each copy.
TEST(Cse, MergesDuplicateSubgraphs) {
    GraphBuilder b;
    ValueId x = b.input("x", {7, 13});
    const TensorData c = testing::random_tensor({13}, 11);
    ValueId a1 = b.op(Op::Exp, {b.op(Op::Add, {b.op(Op::Relu, {x}), b.constant(c)})});
    ValueId a2 = b.op(Op::Exp, {b.op(Op::Add, {b.op(Op::Relu, {x}), b.constant(c)})});
    ValueId y = b.op(Op::Mul, {a1, a2});
    Graph g = b.finish({y});
    PassResult r = check_pass(g, eliminate_common_subexpressions);
    EXPECT_EQ(r.changes, 4); // one constant, Relu, Add, Exp
    EXPECT_EQ(r.nodes_after, 4);
    EXPECT_EQ(op_histogram(g),
              (std::map<std::string, int>{{"Add", 1}, {"Exp", 1}, {"Mul", 1}, {"Relu", 1}}));
    const Node& mul = first_node(g, Op::Mul);
    EXPECT_EQ(mul.inputs[0], mul.inputs[1]);
}

// Same op and inputs but different attributes, or constants that differ: nothing merges.
TEST(Cse, KeepsDifferentAttributesAndConstants) {
    GraphBuilder b;
    ValueId x = b.input("x", {13});
    ValueId l1 = b.op(Op::LeakyRelu, {x}, {{"alpha", Attribute::of_float(0.1f)}});
    ValueId l2 = b.op(Op::LeakyRelu, {x}, {{"alpha", Attribute::of_float(0.2f)}});
    ValueId m1 = b.op(Op::Mul, {l1, b.constant_f32({13}, 1)});
    ValueId m2 = b.op(Op::Mul, {l2, b.constant_f32({13}, 2)});
    ValueId y = b.op(Op::Add, {m1, m2});
    Graph g = b.finish({y});
    PassResult r = check_pass(g, eliminate_common_subexpressions);
    EXPECT_EQ(r.changes, 0);
    EXPECT_EQ(g.num_nodes(), 5u);
}

// Two graph outputs computed the same way stay distinct values (their names are the
// interface), but what feeds them merges.
TEST(Cse, KeepsDistinctGraphOutputs) {
    GraphBuilder b;
    ValueId x = b.input("x", {1, 7});
    ValueId t1 = b.op(Op::Tanh, {b.op(Op::Sigmoid, {x})});
    ValueId t2 = b.op(Op::Tanh, {b.op(Op::Sigmoid, {x})});
    Graph g = b.finish({t1, t2});
    PassResult r = check_pass(g, eliminate_common_subexpressions);
    EXPECT_EQ(r.changes, 1);
    EXPECT_EQ(count_op(g, Op::Sigmoid), 1);
    EXPECT_EQ(count_op(g, Op::Tanh), 2);
    EXPECT_NE(g.outputs[0], g.outputs[1]);
}

} // namespace
} // namespace tessera::graph
