// The graph IR: construction, rewriting helpers, topological order, dead-node removal,
// compaction, verification and printing.
#include <gtest/gtest.h>

#include "graph_test_util.h"

namespace tessera::graph {
namespace {

// x -> Relu -> a -> Exp -> b (output); a -> Neg -> c (dead)
struct Chain {
    Graph g;
    ValueId x, a, b, c;
    NodeId relu, exp, neg;
    Chain() {
        x = g.add_value("x", DType::F32, {3});
        g.inputs = {x};
        a = g.add_value("a");
        b = g.add_value("b");
        c = g.add_value("c");
        relu = g.add_node(Op::Relu, {x}, {a}, {}, "relu");
        exp = g.add_node(Op::Exp, {a}, {b}, {}, "exp");
        neg = g.add_node(Op::Neg, {a}, {c}, {}, "neg");
        g.outputs = {b};
    }
};

TEST(GraphTest, OpNamesRoundTrip) {
    EXPECT_STREQ(op_name(Op::Conv), "Conv");
    EXPECT_EQ(op_from_name("LayerNormalization"), Op::LayerNormalization);
    EXPECT_EQ(op_from_name("FastGelu"), std::nullopt);
    for (int i = 0; i <= static_cast<int>(Op::Not); ++i)
        EXPECT_EQ(op_from_name(op_name(static_cast<Op>(i))), static_cast<Op>(i));
}

TEST(GraphTest, UsersProducersAndReplace) {
    Chain t;
    EXPECT_EQ(t.g.value(t.a).producer, t.relu);
    EXPECT_EQ(t.g.users(t.a), (std::vector<NodeId>{t.exp, t.neg}));
    EXPECT_EQ(t.g.all_users()[t.a], (std::vector<NodeId>{t.exp, t.neg}));
    // Bypass Relu: Exp and Neg read x directly.
    EXPECT_EQ(t.g.replace_all_uses(t.a, t.x), 2);
    EXPECT_TRUE(t.g.users(t.a).empty());
    EXPECT_EQ(t.g.remove_dead_nodes(), 2); // Relu and Neg
    EXPECT_EQ(t.g.num_nodes(), 1u);
    EXPECT_FALSE(t.g.is_live(t.relu));
    EXPECT_EQ(t.g.value(t.a).producer, kNoNode);
    t.g.verify();
    t.g.compact();
    t.g.verify();
    ASSERT_EQ(t.g.node_ids(), (std::vector<NodeId>{0}));
    EXPECT_EQ(t.g.node(0).op, Op::Exp);
    EXPECT_EQ(t.g.num_values(), 2u); // x and b
    EXPECT_EQ(t.g.value(t.g.outputs[0]).name, "b");
    EXPECT_EQ(t.g.value(t.g.node(0).inputs[0]).name, "x");
}

TEST(GraphTest, ReplaceReachesGraphOutputs) {
    Chain t;
    EXPECT_EQ(t.g.replace_all_uses(t.b, t.c), 1);
    EXPECT_EQ(t.g.outputs, (std::vector<ValueId>{t.c}));
    EXPECT_EQ(t.g.remove_dead_nodes(), 1); // Exp
    EXPECT_TRUE(t.g.is_live(t.neg));
}

TEST(GraphTest, TopologicalOrderIsStableAndFollowsData) {
    Graph g;
    ValueId x = g.add_value("x", DType::F32, {2});
    g.inputs = {x};
    ValueId a = g.add_value("a"), b = g.add_value("b"), c = g.add_value("c");
    // Added consumers first.
    NodeId n0 = g.add_node(Op::Add, {a, b}, {c});
    NodeId n1 = g.add_node(Op::Exp, {x}, {b});
    NodeId n2 = g.add_node(Op::Relu, {x}, {a});
    g.outputs = {c};
    EXPECT_EQ(g.topological_order(), (std::vector<NodeId>{n1, n2, n0}));
    g.compact();
    EXPECT_EQ(g.node(2).op, Op::Add);
    EXPECT_EQ(g.node(0).op, Op::Exp);
}

TEST(GraphTest, CyclesAndUndefinedInputsAreErrors) {
    Graph g;
    ValueId x = g.add_value("x", DType::F32, {2});
    g.inputs = {x};
    ValueId a = g.add_value("a"), b = g.add_value("b");
    g.add_node(Op::Add, {x, b}, {a}, {}, "first");
    g.add_node(Op::Exp, {a}, {b}, {}, "second");
    g.outputs = {b};
    try {
        g.topological_order();
        FAIL();
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
    }
    Graph h;
    ValueId dangling = h.add_value("ghost");
    ValueId out = h.add_value("out");
    h.add_node(Op::Relu, {dangling}, {out}, {}, "r");
    h.outputs = {out};
    try {
        h.topological_order();
        FAIL();
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("node 'r' (Relu): input 'ghost'"), std::string::npos)
            << e.what();
    }
}

TEST(GraphTest, VerifyCatchesBrokenStructure) {
    Chain t;
    t.g.verify();
    t.g.outputs.push_back(t.g.add_value("nowhere"));
    EXPECT_THROW(t.g.verify(), InternalError);
    Chain u;
    EXPECT_THROW(u.g.add_node(Op::Relu, {u.x}, {u.a}), InternalError); // a is defined already
    EXPECT_THROW(u.g.add_node(Op::Relu, {u.x}, {u.x}), InternalError); // x is a graph input
}

TEST(GraphTest, AttributesTypedAccess) {
    Node n;
    n.op = Op::Conv;
    n.name = "c";
    n.attrs = {{"group", Attribute::of_int(2)},
               {"pads", Attribute::of_ints({1, 2, 3, 4})},
               {"mode", Attribute::of_string("edge")},
               {"alpha", Attribute::of_float(0.5f)}};
    EXPECT_EQ(n.attr_int("group", 1), 2);
    EXPECT_EQ(n.attr_int("missing", 7), 7);
    EXPECT_EQ(n.attr_ints("pads"), (std::vector<int64_t>{1, 2, 3, 4}));
    EXPECT_EQ(n.attr_string("mode"), "edge");
    EXPECT_EQ(n.attr_float("alpha", 0), 0.5f);
    EXPECT_EQ(n.attr_tensor("value"), nullptr);
    try {
        n.attr_int("pads", 0);
        FAIL();
    } catch (const UserError& e) {
        EXPECT_STREQ(e.what(), "node 'c' (Conv): attribute 'pads' is ints, expected int");
    }
    EXPECT_EQ(Attribute::of_tensor(testing::i64s({1, 2})),
              Attribute::of_tensor(testing::i64s({1, 2})));
    EXPECT_NE(Attribute::of_tensor(testing::i64s({1, 2})),
              Attribute::of_tensor(testing::i64s({1, 3})));
    EXPECT_NE(Attribute::of_int(1), Attribute::of_float(1));
}

TEST(GraphTest, PrinterShowsTypesAttributesAndSmallConstants) {
    Graph g;
    g.name = "p";
    ValueId x = g.add_value("x", DType::F32, {2, 6});
    g.inputs = {x};
    ValueId shape = g.add_constant("shape", testing::i64s({3, 4}));
    ValueId y = g.add_value("y", DType::F32, {3, 4});
    g.add_node(Op::Reshape, {x, shape}, {y}, {{"allowzero", Attribute::of_int(0)}}, "r");
    g.outputs = {y};
    EXPECT_EQ(to_string(g), "graph 'p' (opset 17, 1 nodes)\n"
                            "  input %0 x: f32[2,6]\n"
                            "  const %1 shape: i64[2] = [3,4]\n"
                            "  %2 y: f32[3,4] = Reshape(%0, %1) {allowzero=0}  # r\n"
                            "  output %2 y\n");
    EXPECT_EQ(op_histogram(g), (std::map<std::string, int>{{"Reshape", 1}}));
}

TEST(TensorDataTest, CastsAndConversions) {
    TensorData t = TensorData::from_vector<float>({2, 2}, {1.5f, -2.5f, 0.0f, 17179869184.0f});
    EXPECT_EQ(t.as_i64(), (std::vector<int64_t>{1, -2, 0, 17179869184}));
    EXPECT_EQ(t.cast(DType::I32).to_vector<int32_t>(),
              (std::vector<int32_t>{1, -2, 0, std::numeric_limits<int32_t>::max()}));
    EXPECT_EQ(t.cast(DType::Bool).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 1, 0, 1}));
    EXPECT_EQ(t.reshaped({4}).shape(), (Shape{4}));
    EXPECT_THROW(t.reshaped({3}), InternalError);
    EXPECT_THROW(t.data<int64_t>(), InternalError);
    EXPECT_EQ(TensorData().numel(), 1);
    EXPECT_EQ(TensorData(DType::I64, {0, 3}).numel(), 0);
    EXPECT_EQ(parse_dtype("bool"), DType::Bool);
    EXPECT_EQ(parse_dtype("f16"), DType::F16);
    EXPECT_EQ(parse_dtype("bf16"), DType::BF16);
    EXPECT_EQ(parse_dtype("f8"), std::nullopt);
    EXPECT_EQ(to_ir_type(DType::F32), ir::DataType::f32());
}

} // namespace
} // namespace tessera::graph
