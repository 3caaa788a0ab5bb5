// Shape inference: static shapes through shape-computing chains, compile-time values, and
// mismatches reported naming the node.
#include <gtest/gtest.h>

#include "graph_test_util.h"

namespace tessera::graph {
namespace {

using testing::i64s;

std::string infer_error(Graph& g) {
    try {
        infer_shapes(g);
    } catch (const UserError& e) {
        return e.what();
    }
    return "no error";
}

// A BERT-style dynamic reshape: x [B, S, H] -> Reshape(x, Concat(Shape(x)[0:2], [4, -1])).
struct DynamicReshape {
    Graph g;
    ValueId x, shape, dims, head, cat, y;
    DynamicReshape() {
        x = g.add_value("x", DType::F32, {2, 7, 12});
        g.inputs = {x};
        shape = g.add_value("shape");
        dims = g.add_value("dims");
        head = g.add_constant("head", i64s({4, -1}));
        cat = g.add_value("cat");
        y = g.add_value("y");
        g.add_node(Op::Shape, {x}, {shape}, {}, "shape");
        g.add_node(Op::Slice,
                   {shape, g.add_constant("s", i64s({0})), g.add_constant("e", i64s({2}))}, {dims},
                   {}, "slice");
        g.add_node(Op::Concat, {dims, head}, {cat}, {{"axis", Attribute::of_int(0)}}, "concat");
        g.add_node(Op::Reshape, {x, cat}, {y}, {}, "reshape");
        g.outputs = {y};
    }
};

TEST(ShapeInferenceTest, ShapeChainsGiveStaticShapes) {
    DynamicReshape t;
    EXPECT_EQ(infer_shapes(t.g), 4);
    EXPECT_EQ(t.g.value(t.shape).shape, (Shape{3}));
    EXPECT_EQ(t.g.value(t.shape).dtype, DType::I64);
    EXPECT_EQ(t.g.value(t.y).shape, (Shape{2, 7, 4, 3}));
    EXPECT_EQ(infer_shapes(t.g), 0); // up to date
    std::optional<TensorData> v = static_value(t.g, t.cat);
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(*v, i64s({2, 7, 4, -1}));
    EXPECT_EQ(static_value(t.g, t.y), std::nullopt); // depends on x's data
    EXPECT_EQ(static_value(t.g, t.head), i64s({4, -1}));
    // The reference evaluator agrees with the inferred shape.
    auto out = evaluate(t.g, {testing::random_tensor({2, 7, 12}, 1)});
    EXPECT_EQ(out[0].shape(), (Shape{2, 7, 4, 3}));
}

TEST(ShapeInferenceTest, IndexTensorsThroughGatherRangeAndConstantOfShape) {
    // ids [1, 5] i64 -> Gather rows of a [11, 3] table; positions Range(0, S) Unsqueeze; a mask
    // ConstantOfShape(Shape(ids)) compared with Equal, Where, Cast, Not, Expand.
    Graph g;
    ValueId ids = g.add_value("ids", DType::I64, {1, 5});
    g.inputs = {ids};
    ValueId table = g.add_constant("table", testing::random_tensor({11, 3}, 2));
    auto v = [&](const char* n) { return g.add_value(n); };
    ValueId emb = v("emb"), shp = v("shp"), seq = v("seq"), pos = v("pos"), pos2 = v("pos2"),
            ones = v("ones"), eq = v("eq"), neq = v("neq"), f = v("f"), w = v("w"), ex = v("ex");
    g.add_node(Op::Gather, {table, ids}, {emb}, {{"axis", Attribute::of_int(0)}}, "gather");
    g.add_node(Op::Shape, {ids}, {shp}, {}, "shape");
    g.add_node(Op::Gather, {shp, g.add_constant("one", TensorData::scalar<int64_t>(1))}, {seq}, {},
               "seq");
    g.add_node(Op::Range,
               {g.add_constant("zero", TensorData::scalar<int64_t>(0)), seq,
                g.add_constant("step", TensorData::scalar<int64_t>(1))},
               {pos}, {}, "range");
    g.add_node(Op::Unsqueeze, {pos, g.add_constant("ax", i64s({0}))}, {pos2}, {}, "unsq");
    g.add_node(Op::ConstantOfShape, {shp}, {ones},
               {{"value", Attribute::of_tensor(TensorData::from_vector<int64_t>({1}, {1}))}},
               "cos");
    g.add_node(Op::Equal, {ids, ones}, {eq}, {}, "eq");
    g.add_node(Op::Not, {eq}, {neq}, {}, "not");
    g.add_node(Op::Cast, {neq}, {f}, {{"to", Attribute::of_string("f32")}}, "cast");
    g.add_node(Op::Where, {eq, pos2, ids}, {w}, {}, "where");
    g.add_node(Op::Expand, {f, g.add_constant("to", i64s({2, 1, 1}))}, {ex}, {}, "expand");
    g.outputs = {emb, w, ex};
    infer_shapes(g);
    EXPECT_EQ(g.value(emb).shape, (Shape{1, 5, 3}));
    EXPECT_EQ(g.value(pos).shape, (Shape{5}));
    EXPECT_EQ(g.value(w).dtype, DType::I64);
    EXPECT_EQ(g.value(ex).shape, (Shape{2, 1, 5}));
    EXPECT_EQ(static_value(g, pos2), TensorData::from_vector<int64_t>({1, 5}, {0, 1, 2, 3, 4}));
    TensorData in = TensorData::from_vector<int64_t>({1, 5}, {1, 4, 1, 10, 0});
    auto out = evaluate(g, {in});
    EXPECT_EQ(out[1].to_vector<int64_t>(), (std::vector<int64_t>{0, 4, 2, 10, 0}));
    EXPECT_EQ(out[2].to_vector<float>(), (std::vector<float>{0, 1, 0, 1, 1, 0, 1, 0, 1, 1}));
    EXPECT_EQ(out[0].data<float>()[3], g.value(table).constant->data<float>()[4 * 3]);
}

TEST(ShapeInferenceTest, MismatchesNameTheNode) {
    {
        Graph g;
        ValueId a = g.add_value("a", DType::F32, {3, 4}), b = g.add_value("b", DType::F32, {5, 2});
        g.inputs = {a, b};
        ValueId c = g.add_value("c");
        g.add_node(Op::MatMul, {a, b}, {c}, {}, "mm");
        g.outputs = {c};
        EXPECT_EQ(infer_error(g), "node 'mm' (MatMul): matmul inner dims differ: [3,4] x [5,2]");
    }
    {
        Graph g;
        ValueId a = g.add_value("a", DType::F32, {3, 4}), b = g.add_value("b", DType::F32, {3});
        g.inputs = {a, b};
        ValueId c = g.add_value("c");
        g.add_node(Op::Add, {a, b}, {c}, {}, "add");
        g.outputs = {c};
        EXPECT_EQ(infer_error(g), "node 'add' (Add): shapes [3,4] and [3] do not broadcast");
    }
    {
        Graph g;
        ValueId x = g.add_value("x", DType::F32, {1, 3, 8});
        ValueId w = g.add_constant("w", testing::random_tensor({2, 3, 3, 3}, 3));
        g.inputs = {x};
        ValueId y = g.add_value("y");
        g.add_node(Op::Conv, {x, w}, {y}, {}, "conv");
        g.outputs = {y};
        EXPECT_EQ(infer_error(g), "node 'conv' (Conv): X 'x' must have rank 4, got shape [1,3,8]");
    }
    {
        // Reshape to a shape computed from runtime data cannot have a static shape.
        Graph g;
        ValueId x = g.add_value("x", DType::F32, {6}), s = g.add_value("s", DType::I64, {2});
        g.inputs = {x, s};
        ValueId y = g.add_value("y");
        g.add_node(Op::Reshape, {x, s}, {y}, {}, "reshape");
        g.outputs = {y};
        EXPECT_EQ(infer_error(g),
                  "node 'reshape' (Reshape): shape 's' must be a compile-time constant (a graph "
                  "input: give its value with --bind NAME=FILE.npy)");
    }
    {
        Graph g;
        ValueId x = g.add_value("x", DType::I64, {6});
        g.inputs = {x};
        ValueId y = g.add_value("y");
        g.add_node(Op::Softmax, {x}, {y}, {{"axis", Attribute::of_int(0)}}, "sm");
        g.outputs = {y};
        EXPECT_EQ(infer_error(g), "node 'sm' (Softmax): input 'x' is i64, expected f32");
    }
}

} // namespace
} // namespace tessera::graph
