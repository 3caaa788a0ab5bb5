// The ONNX importer on small ModelProtos built here: canonical forms across opsets, index
// tensors, static shapes from options, and errors naming the node, op and opset.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "graph_test_util.h"
#include "tessera/graph/import_onnx.h"

namespace tessera::graph {
namespace {

using testing::i64s;
using testing::ModelBuilder;
using testing::random_tensor;

Graph import(const ModelBuilder& b, const ImportOptions& options = {}) {
    return import_onnx_bytes(b.bytes(), "test.onnx", options);
}

std::string import_error(const ModelBuilder& b, const ImportOptions& options = {}) {
    try {
        import(b, options);
    } catch (const UserError& e) {
        return e.what();
    }
    return "no error";
}

#define EXPECT_CONTAINS(text, part)                                                                \
    EXPECT_NE(std::string(text).find(part), std::string::npos) << "in: " << (text)

TEST(ImportTest, MatMulAddReluWithRawAndTypedInitializers) {
    for (bool typed : {false, true}) {
        TensorData w = random_tensor({7, 5}, 1), b = random_tensor({5}, 2);
        ModelBuilder m(13);
        m.input("x", DType::F32, {3, 7}).initializer("w", w, typed).initializer("b", b, typed);
        m.node("MatMul", {"x", "w"}, {"h"}, "mm");
        m.node("Add", {"h", "b"}, {"s"}, "add");
        m.node("Relu", {"s"}, {"y"}, "relu");
        m.output("y", DType::F32, {3, 5});
        Graph g = import(m);
        EXPECT_EQ(op_histogram(g),
                  (std::map<std::string, int>{{"Add", 1}, {"MatMul", 1}, {"Relu", 1}}));
        EXPECT_EQ(g.opset, 13);
        ASSERT_EQ(g.inputs.size(), 1u);
        EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{3, 5}));
        TensorData x = random_tensor({3, 7}, 3);
        auto out = evaluate(g, {x});
        TensorData want(DType::F32, {3, 5});
        for (int64_t i = 0; i < 3; ++i)
            for (int64_t j = 0; j < 5; ++j) {
                double s = b.data<float>()[j];
                for (int64_t k = 0; k < 7; ++k)
                    s += double(x.data<float>()[i * 7 + k]) * w.data<float>()[k * 5 + j];
                want.data<float>()[i * 5 + j] = float(std::max(s, 0.0));
            }
        EXPECT_TENSOR_NEAR(out[0], want, 1e-5, 1e-6);
    }
}

// Two models that differ only in their opset's operand form import to the same computation.
void expect_same_results(const ModelBuilder& a, const ModelBuilder& b,
                         const std::vector<TensorData>& inputs) {
    Graph ga = import(a), gb = import(b);
    EXPECT_EQ(op_histogram(ga), op_histogram(gb)) << to_string(ga) << to_string(gb);
    auto oa = evaluate(ga, inputs), ob = evaluate(gb, inputs);
    ASSERT_EQ(oa.size(), ob.size());
    for (size_t i = 0; i < oa.size(); ++i)
        EXPECT_EQ(oa[i], ob[i]) << "output " << i;
}

TEST(ImportOpsetTest, SqueezeUnsqueezeReduceSumAxesMoveToInputsAt13) {
    auto build = [](int opset) {
        ModelBuilder m(opset);
        m.input("x", DType::F32, {1, 3, 1, 5});
        if (opset < 13) {
            m.node("Squeeze", {"x"}, {"s"}).ints("axes", {0, 2});
            m.node("Unsqueeze", {"s"}, {"u"}).ints("axes", {1});
            m.node("ReduceSum", {"u"}, {"r"}).ints("axes", {-1}).i("keepdims", 0);
        } else {
            m.initializer("sq_axes", i64s({0, 2}))
                .initializer("un_axes", i64s({1}))
                .initializer("rs_axes", i64s({-1}));
            m.node("Squeeze", {"x", "sq_axes"}, {"s"});
            m.node("Unsqueeze", {"s", "un_axes"}, {"u"});
            m.node("ReduceSum", {"u", "rs_axes"}, {"r"}).i("keepdims", 0);
        }
        m.output("u").output("r");
        return m;
    };
    TensorData x = random_tensor({1, 3, 1, 5}, 11);
    expect_same_results(build(11), build(13), {x});
    Graph g = import(build(11));
    EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{3, 1, 5}));
    EXPECT_EQ(g.value(g.outputs[1]).shape, (Shape{3, 1}));
    // Canonical form: the axes are a constant input.
    for (NodeId id : g.node_ids()) {
        ASSERT_EQ(g.node(id).inputs.size(), 2u) << op_name(g.node(id).op);
        EXPECT_TRUE(g.value(g.node(id).inputs[1]).is_constant());
    }
}

TEST(ImportOpsetTest, SplitSizesClipBoundsPadsAndSliceAttributesBecomeInputs) {
    auto build = [](int opset) {
        ModelBuilder m(opset);
        m.input("x", DType::F32, {4, 6});
        if (opset < 10) {
            m.node("Split", {"x"}, {"a", "b"}).i("axis", 1).ints("split", {2, 4});
            m.node("Clip", {"a"}, {"c"}).f("min", -0.25f).f("max", 0.5f);
            m.node("Pad", {"b"}, {"p"}).ints("pads", {1, 0, 0, 2}).f("value", 3.0f);
            m.node("Slice", {"p"}, {"s"})
                .ints("starts", {1, 1})
                .ints("ends", {4, 100})
                .ints("axes", {0, 1});
        } else {
            m.initializer("split", i64s({2, 4}))
                .initializer("lo", TensorData::scalar(-0.25f))
                .initializer("hi", TensorData::scalar(0.5f))
                .initializer("pads", i64s({1, 0, 0, 2}))
                .initializer("val", TensorData::scalar(3.0f))
                .initializer("st", i64s({1, 1}))
                .initializer("en", i64s({4, 100}))
                .initializer("ax", i64s({0, 1}));
            if (opset >= 13)
                m.node("Split", {"x", "split"}, {"a", "b"}).i("axis", 1);
            else
                m.node("Split", {"x"}, {"a", "b"}).i("axis", 1).ints("split", {2, 4});
            m.node("Clip", {"a", "lo", "hi"}, {"c"});
            m.node("Pad", {"b", "pads", "val"}, {"p"});
            m.node("Slice", {"p", "st", "en", "ax"}, {"s"});
        }
        m.output("c").output("s");
        return m;
    };
    TensorData x = random_tensor({4, 6}, 12);
    expect_same_results(build(7), build(11), {x});
    expect_same_results(build(9), build(13), {x});
    Graph g = import(build(13));
    auto out = evaluate(g, {x});
    EXPECT_EQ(out[1].shape(), (Shape{3, 5})); // Pad -> [5, 6], Slice [1:4, 1:] -> [3, 5]
    EXPECT_EQ(out[1].data<float>()[0], x.data<float>()[3]); // p[1][1] = b[0][1] = x[0][3]
    EXPECT_EQ(out[1].data<float>()[2 * 5 + 4], 3.0f);       // padding value
    for (int64_t i = 0; i < 8; ++i) {
        float v = x.data<float>()[(i / 2) * 6 + i % 2];
        EXPECT_EQ(out[0].data<float>()[i], std::clamp(v, -0.25f, 0.5f));
    }
}

TEST(ImportOpsetTest, ClipWithOnlyAMaxAndNoBounds) {
    ModelBuilder m(13);
    m.input("x", DType::F32, {5}).initializer("hi", TensorData::scalar(0.1f));
    m.node("Clip", {"x", "", "hi"}, {"c"});
    m.node("Clip", {"c"}, {"d"});
    m.output("d");
    TensorData x = random_tensor({5}, 13);
    auto out = evaluate(import(m), {x});
    for (int64_t i = 0; i < 5; ++i)
        EXPECT_EQ(out[0].data<float>()[i], std::min(x.data<float>()[i], 0.1f));
    ModelBuilder old(7);
    old.input("x", DType::F32, {5});
    old.node("Clip", {"x"}, {"d"}).f("max", 0.1f);
    old.output("d");
    EXPECT_EQ(evaluate(import(old), {x})[0], out[0]);
}

TEST(ImportOpsetTest, SoftmaxBefore13CoercesTo2D) {
    TensorData x = random_tensor({2, 3, 4}, 14, -3.0f, 3.0f);
    for (int opset : {11, 13}) {
        ModelBuilder m(opset);
        m.input("x", DType::F32, {2, 3, 4});
        m.node("Softmax", {"x"}, {"y"}, "sm").i("axis", 1);
        m.output("y", DType::F32, {2, 3, 4});
        auto out = evaluate(import(m), {x})[0];
        // opset 11: normalized over the 12 trailing elements of each batch; 13: over axis 1.
        TensorData want(DType::F32, {2, 3, 4});
        for (int64_t i = 0; i < 24; ++i) {
            const int64_t b = i / 12, k = i % 4;
            double denom = 0;
            for (int64_t j = 0; j < 12; ++j)
                if (opset == 11 || j % 4 == k)
                    denom += std::exp(double(x.data<float>()[b * 12 + j]));
            want.data<float>()[i] = float(std::exp(double(x.data<float>()[i])) / denom);
        }
        EXPECT_TENSOR_NEAR(out, want, 1e-5, 1e-7);
    }
    // The last axis means the same in every opset: one Softmax node, no coercion.
    ModelBuilder m(11);
    m.input("x", DType::F32, {2, 3, 4});
    m.node("Softmax", {"x"}, {"y"}).i("axis", -1);
    m.output("y");
    EXPECT_EQ(op_histogram(import(m)), (std::map<std::string, int>{{"Softmax", 1}}));
}

TEST(ImportOpsetTest, DropoutIsAnIdentityInInference) {
    TensorData x = random_tensor({3, 5}, 15);
    ModelBuilder a(10);
    a.input("x", DType::F32, {3, 5});
    a.node("Dropout", {"x"}, {"y", "mask"}).f("ratio", 0.3f);
    a.output("y").output("mask", DType::Bool);
    ModelBuilder b(13);
    b.input("x", DType::F32, {3, 5})
        .initializer("ratio", TensorData::scalar(0.3f))
        .initializer("train", TensorData::from_vector<uint8_t>({}, {0}));
    b.node("Dropout", {"x", "ratio", "train"}, {"y", "mask"});
    b.output("y").output("mask", DType::Bool);
    expect_same_results(a, b, {x});
    auto out = evaluate(import(b), {x});
    EXPECT_EQ(out[0], x);
    ModelBuilder t(13);
    t.input("x", DType::F32, {3, 5})
        .initializer("train", TensorData::from_vector<uint8_t>({}, {1}));
    t.node("Dropout", {"x", "", "train"}, {"y"}, "drop");
    t.output("y");
    EXPECT_CONTAINS(import_error(t),
                    "node 'drop' (Dropout, opset 13): training_mode=true is not supported");
    // Training with a ratio of 0 drops nothing: an identity (torch's F.dropout(x, p=0.0)).
    for (float ratio : {0.0f, 0.1f}) {
        ModelBuilder z(13);
        z.input("x", DType::F32, {3, 5})
            .initializer("ratio", TensorData::scalar(ratio))
            .initializer("train", TensorData::from_vector<uint8_t>({}, {1}));
        z.node("Dropout", {"x", "ratio", "train"}, {"y"}, "drop");
        z.output("y");
        if (ratio == 0.0f)
            EXPECT_EQ(evaluate(import(z), {x})[0], x);
        else
            EXPECT_CONTAINS(import_error(z), "training_mode=true is not supported");
    }
    // A training_mode or (in training) ratio that is a graph input is named, for --bind.
    ModelBuilder in(13);
    in.input("x", DType::F32, {3, 5}).input("train", DType::Bool, {});
    in.node("Dropout", {"x", "", "train"}, {"y"}, "drop");
    in.output("y");
    EXPECT_CONTAINS(import_error(in), "training_mode 'train' must be a compile-time constant");
    ModelBuilder r(13);
    r.input("x", DType::F32, {3, 5})
        .input("ratio", DType::F32, {})
        .initializer("train", TensorData::from_vector<uint8_t>({}, {1}));
    r.node("Dropout", {"x", "ratio", "train"}, {"y"}, "drop");
    r.output("y");
    EXPECT_CONTAINS(import_error(r), "ratio 'ratio' must be a compile-time constant");
}

TEST(ImportOpsetTest, ConvAutoPadResolvesToPads) {
    TensorData w = random_tensor({2, 3, 3, 2}, 16);
    struct Case {
        const char* auto_pad;
        std::vector<int64_t> pads;
    };
    // Input 7x8, kernel 3x2, stride 2: SAME output 4x4, total pads 2 (h) and 0 (w).
    for (const Case& c : {Case{"SAME_UPPER", {1, 0, 1, 0}}, Case{"SAME_LOWER", {1, 0, 1, 0}},
                          Case{"VALID", {0, 0, 0, 0}}}) {
        ModelBuilder m(13);
        m.input("x", DType::F32, {1, 3, 7, 8}).initializer("w", w);
        m.node("Conv", {"x", "w"}, {"y"}, "conv").s("auto_pad", c.auto_pad).ints("strides", {2, 2});
        m.output("y");
        Graph g = import(m);
        const Node& n = g.node(g.node_ids()[0]);
        EXPECT_EQ(n.attr_ints("pads"), c.pads) << c.auto_pad;
        EXPECT_EQ(n.attr_ints("kernel_shape"), (std::vector<int64_t>{3, 2}));
        EXPECT_FALSE(n.has_attr("auto_pad"));
    }
    ModelBuilder m(13);
    m.input("x", DType::F32, {1, 3, 6, 6}).initializer("w", random_tensor({1, 3, 2, 2}, 17));
    m.node("Conv", {"x", "w"}, {"y"}).s("auto_pad", "SAME_LOWER");
    m.output("y");
    Graph g = import(m);
    EXPECT_EQ(g.node(g.node_ids()[0]).attr_ints("pads"), (std::vector<int64_t>{1, 1, 0, 0}));
    EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{1, 1, 6, 6}));
}

TEST(ImportOpsetTest, AttributesOutsideTheirOpsetAreRejected) {
    auto pool = [](int opset) {
        ModelBuilder m(opset);
        m.input("x", DType::F32, {1, 2, 7, 7});
        m.node("MaxPool", {"x"}, {"y"}, "pool")
            .ints("kernel_shape", {2, 2})
            .ints("strides", {2, 2})
            .i("ceil_mode", 1);
        m.output("y");
        return m;
    };
    Graph g = import(pool(10));
    EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{1, 2, 4, 4}));
    EXPECT_EQ(import_error(pool(9)),
              "node 'pool' (MaxPool, opset 9): unsupported attribute 'ceil_mode'");
    ModelBuilder m(13);
    m.input("x", DType::F32, {2, 2});
    m.node("Squeeze", {"x"}, {"y"}, "sq").ints("axes", {0});
    m.output("y");
    EXPECT_EQ(import_error(m), "node 'sq' (Squeeze, opset 13): unsupported attribute 'axes'");
}

TEST(ImportTest, LayerNormalizationNeedsOpset17) {
    for (int opset : {13, 17}) {
        ModelBuilder m(opset);
        m.input("x", DType::F32, {2, 7})
            .initializer("g", random_tensor({7}, 18))
            .initializer("b", random_tensor({7}, 19));
        m.node("LayerNormalization", {"x", "g", "b"}, {"y"}, "ln").f("epsilon", 1e-3f);
        m.output("y");
        if (opset == 13) {
            EXPECT_EQ(import_error(m),
                      "node 'ln' (LayerNormalization, opset 13): op LayerNormalization "
                      "does not exist before opset 17");
        } else {
            Graph g = import(m);
            EXPECT_EQ(g.node(g.node_ids()[0]).attr_int("axis", 0), 1); // normalized from -1
        }
    }
}

TEST(ImportTest, IndexTensorsFromShapeChainsAndConstants) {
    // ids [1, 6] -> Gather embeddings; Reshape of the embedding by Concat(Shape(ids), [2, -1]);
    // Constant nodes (value_ints, tensor) become constant values.
    ModelBuilder m(13);
    m.input("ids", DType::I64, {1, 6}).initializer("table", random_tensor({9, 4}, 20));
    m.node("Constant", {}, {"tail"}, "c1").ints("value_ints", {2, -1});
    m.node("Constant", {}, {"zero"}, "c2").t("value", TensorData::scalar<int64_t>(0));
    m.node("Gather", {"table", "ids"}, {"emb"}, "gather");
    m.node("Shape", {"ids"}, {"shp"}, "shape");
    m.node("Concat", {"shp", "tail"}, {"newshape"}, "concat").i("axis", 0);
    m.node("Reshape", {"emb", "newshape"}, {"r"}, "reshape");
    m.node("Equal", {"ids", "zero"}, {"pad"}, "eq");
    m.node("Less", {"ids", "zero"}, {"neg"}, "lt");
    m.node("Greater", {"ids", "zero"}, {"posi"}, "gt");
    m.node("Not", {"pad"}, {"keep"}, "not");
    m.node("Cast", {"keep"}, {"keepf"}, "cast").i("to", onnx::TensorProto::FLOAT);
    m.output("r").output("keepf").output("neg", DType::Bool).output("posi", DType::Bool);
    Graph g = import(m);
    EXPECT_EQ(op_histogram(g).count("Constant"), 0u);
    EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{1, 6, 2, 2}));
    EXPECT_EQ(static_value(g, g.find_value("newshape")), i64s({1, 6, 2, -1}));
    TensorData ids = TensorData::from_vector<int64_t>({1, 6}, {3, 0, 8, 0, 1, 2});
    auto out = evaluate(g, {ids});
    EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{1, 0, 1, 0, 1, 1}));
    EXPECT_EQ(out[2].as_i64(), (std::vector<int64_t>(6, 0)));
    EXPECT_EQ(out[3].as_i64(), (std::vector<int64_t>{1, 0, 1, 0, 1, 1}));
    const TensorData& table = *g.value(g.find_value("table")).constant;
    EXPECT_EQ(out[0].data<float>()[2 * 4 + 3], table.data<float>()[8 * 4 + 3]);
}

TEST(ImportTest, RangeConstantOfShapeExpandWhereAtOpset11) {
    ModelBuilder m(11);
    m.input("x", DType::F32, {3, 1});
    m.initializer("start", TensorData::scalar<int64_t>(0))
        .initializer("delta", TensorData::scalar<int64_t>(1))
        .initializer("limit", TensorData::scalar<int64_t>(4))
        .initializer("shape", i64s({3, 4}));
    m.node("Range", {"start", "limit", "delta"}, {"pos"});
    m.node("ConstantOfShape", {"shape"}, {"twos"})
        .t("value", TensorData::from_vector<int64_t>({1}, {2}));
    m.node("Less", {"pos", "twos"}, {"lt"});
    m.node("Expand", {"x", "shape"}, {"xe"});
    m.node("Neg", {"xe"}, {"nx"});
    m.node("Where", {"lt", "xe", "nx"}, {"y"});
    m.output("y");
    TensorData x = random_tensor({3, 1}, 21);
    auto out = evaluate(import(m), {x});
    ASSERT_EQ(out[0].shape(), (Shape{3, 4}));
    for (int64_t i = 0; i < 12; ++i)
        EXPECT_EQ(out[0].data<float>()[i], (i % 4 < 2 ? 1 : -1) * x.data<float>()[i / 4]);
}

TEST(ImportTest, SymbolicDimsNeedInputShapes) {
    ModelBuilder m(13);
    m.input("x", DType::F32, {-1, 4}).initializer("w", random_tensor({4, 2}, 22));
    m.node("MatMul", {"x", "w"}, {"y"});
    m.output("y");
    EXPECT_CONTAINS(import_error(m), "graph input 'x' has symbolic dim 0 'N'");
    EXPECT_CONTAINS(import_error(m), "--input-shape x=");
    ImportOptions o;
    o.input_shapes["x"] = {5, 4};
    Graph g = import(m, o);
    EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{5, 2}));
    o.input_shapes["x"] = {5, 3};
    EXPECT_EQ(import_error(m, o), "input shape [5,3] for 'x' does not match the model's ?x4");
    o.input_shapes = {{"y", {1}}};
    EXPECT_EQ(import_error(m, o),
              "input shape given for 'y', which is not an input of 'test.onnx' (inputs: x)");
    auto [name, shape] = parse_input_shape("input=1x3x224x224");
    EXPECT_EQ(name, "input");
    EXPECT_EQ(shape, (Shape{1, 3, 224, 224}));
    EXPECT_EQ(parse_input_shape("s=").second, Shape{});
    EXPECT_THROW(parse_input_shape("input"), UserError);
    EXPECT_THROW(parse_input_shape("input=1x-3"), UserError);
    EXPECT_THROW(parse_input_shape("input=1x"), UserError);
}

TEST(ImportErrorTest, UnknownOpNamesOpNodeAndOpset) {
    ModelBuilder m(13);
    m.input("x", DType::F32, {2});
    m.node("FooBar", {"x"}, {"y"}, "weird");
    m.output("y");
    EXPECT_EQ(import_error(m), "unsupported op 'FooBar' in node 'weird' (opset 13)");
    ModelBuilder d(13);
    d.input("x", DType::F32, {2});
    d.node("Relu", {"x"}, {"y"}, "ms").proto()->set_domain("com.microsoft");
    d.output("y");
    EXPECT_EQ(import_error(d),
              "unsupported op 'Relu' of domain 'com.microsoft' in node 'ms' (opset 13)");
}

TEST(ImportErrorTest, BadAttributes) {
    ModelBuilder m(13);
    m.input("x", DType::F32, {2});
    m.node("Relu", {"x"}, {"y"}, "r").i("alpha", 1);
    m.output("y");
    EXPECT_EQ(import_error(m), "node 'r' (Relu, opset 13): unsupported attribute 'alpha'");
    ModelBuilder k(13);
    k.input("a", DType::F32, {2, 2}).input("b", DType::F32, {2, 2});
    k.node("Gemm", {"a", "b"}, {"y"}, "gemm").i("alpha", 2);
    k.output("y");
    EXPECT_EQ(import_error(k), "node 'gemm' (Gemm, opset 13): attribute 'alpha' must be float");
    ModelBuilder c(13);
    c.input("x", DType::F32, {2});
    c.node("Cast", {"x"}, {"y"}, "cast").i("to", onnx::TensorProto::COMPLEX64);
    c.output("y");
    EXPECT_EQ(import_error(c), "node 'cast' (Cast, opset 13): cast to complex64 is not supported");
    ModelBuilder p(13);
    p.input("x", DType::F32, {1, 1, 4, 4});
    p.node("AveragePool", {"x"}, {"y"}, "pool").ints("kernel_shape", {2, 2}).s("auto_pad", "SAME");
    p.output("y");
    EXPECT_EQ(import_error(p), "node 'pool' (AveragePool, opset 13): unsupported auto_pad 'SAME'");
    ModelBuilder bn(13);
    bn.input("x", DType::F32, {1, 2, 3});
    for (const char* n : {"s", "b", "mu", "var"})
        bn.initializer(n, random_tensor({2}, 23, 0.5f, 1.0f));
    bn.node("BatchNormalization", {"x", "s", "b", "mu", "var"}, {"y", "rm"}, "bn");
    bn.output("y");
    EXPECT_CONTAINS(import_error(bn),
                    "node 'bn' (BatchNormalization, opset 13): output 1 ('rm') is not "
                    "supported");
}

TEST(ImportErrorTest, MissingInitializerNamesTheNode) {
    ModelBuilder m(13);
    m.input("x", DType::F32, {2, 3});
    m.node("Add", {"x", "bias"}, {"y"}, "add");
    m.output("y");
    EXPECT_EQ(import_error(m),
              "node 'add' (Add, opset 13): input 'bias' is not defined (no initializer, "
              "graph input or earlier node output has that name)");
}

TEST(ImportErrorTest, RankAndShapeMismatchesNameTheNode) {
    ModelBuilder c(13);
    c.input("x", DType::F32, {1, 3, 2, 2, 2, 8})
        .initializer("w", random_tensor({2, 3, 1, 1, 1, 3}, 24));
    c.node("Conv", {"x", "w"}, {"y"}, "conv4d");
    c.output("y");
    EXPECT_EQ(import_error(c),
              "node 'conv4d' (Conv, opset 13): input 'x' has shape [1,3,2,2,2,8]: only 1-D, "
              "2-D and 3-D (3-D to 5-D input) Conv is supported");
    ModelBuilder g(13);
    g.input("x", DType::F32, {1, 3, 8, 8}).initializer("w", random_tensor({2, 4, 3, 3}, 25));
    g.node("Conv", {"x", "w"}, {"y"}, "conv");
    g.output("y");
    EXPECT_EQ(import_error(g),
              "node 'conv' (Conv): X [1,3,8,8] and W [2,4,3,3] do not match group 1");
    ModelBuilder r(13);
    r.input("x", DType::F32, {2, 6}).initializer("s", i64s({4, 4}));
    r.node("Reshape", {"x", "s"}, {"y"}, "reshape");
    r.output("y");
    EXPECT_EQ(import_error(r),
              "node 'reshape' (Reshape): cannot reshape [2,6] (12 elements) to [4,4]");
    ModelBuilder o(13);
    o.input("x", DType::F32, {2, 6});
    o.node("Relu", {"x"}, {"y"}, "relu");
    o.output("y", DType::F32, {2, 5});
    EXPECT_EQ(import_error(o),
              "graph output 'y' has a declared shape that differs from the inferred [2,6]");
}

TEST(ImportErrorTest, VersionsAndStructure) {
    auto model = [](int opset, int ir) {
        ModelBuilder m(opset, ir);
        m.input("x", DType::F32, {2});
        m.node("Relu", {"x"}, {"y"}, "relu");
        m.output("y");
        return m;
    };
    EXPECT_EQ(import_error(model(29, 10)),
              "'test.onnx' uses unsupported opset 29 (supported: 1 to 28)");
    EXPECT_EQ(import_error(model(0, 3)),
              "'test.onnx' uses unsupported opset 0 (supported: 1 to 28)");
    EXPECT_EQ(import_error(model(13, 15)),
              "'test.onnx' has unsupported ONNX IR version 15 (supported: 3 to 14)");
    EXPECT_NO_THROW(import(model(17, 10)));
    EXPECT_NO_THROW(import(model(28, 14)));
    EXPECT_NO_THROW(import(model(7, 3)));
    EXPECT_NO_THROW(import(model(6, 3)));
    ModelBuilder none = model(13, 7);
    none.proto().mutable_opset_import(0)->set_domain("ai.onnx.ml");
    EXPECT_EQ(import_error(none), "'test.onnx' imports no ai.onnx opset");
    ModelBuilder lost = model(13, 7);
    lost.output("z");
    EXPECT_EQ(import_error(lost),
              "graph output 'z' is not produced by any node, input or initializer");
    ModelBuilder twice = model(13, 7);
    twice.node("Neg", {"x"}, {"y"}, "neg");
    EXPECT_EQ(import_error(twice), "node 'neg' (Neg, opset 13): value 'y' is already defined");
    ModelBuilder cyc(13);
    cyc.input("x", DType::F32, {2});
    cyc.node("Add", {"x", "b"}, {"a"}, "first");
    cyc.node("Relu", {"a"}, {"b"}, "second");
    cyc.output("b");
    EXPECT_EQ(import_error(cyc), "node 'first' (Add) is part of a cycle");
}

TEST(ImportErrorTest, TruncatedAndCorruptedFiles) {
    ModelBuilder m(13);
    m.input("x", DType::F32, {16, 16}).initializer("w", random_tensor({16, 16}, 26));
    m.node("MatMul", {"x", "w"}, {"y"}, "mm");
    m.output("y");
    const std::string bytes = m.bytes();
    const std::string path = std::filesystem::temp_directory_path().string() + "/tessera_trunc_" +
                             std::to_string(::getpid()) + ".onnx";
    // Every cut inside the initializer's data is a parse error naming the file.
    for (size_t cut : {bytes.size() / 2, bytes.size() - 1, size_t(7)}) {
        std::ofstream(path, std::ios::binary) << bytes.substr(0, cut);
        try {
            import_onnx(path);
            ADD_FAILURE() << "cut at " << cut << " imported";
        } catch (const UserError& e) {
            EXPECT_CONTAINS(e.what(), "'" + path + "'");
        }
    }
    std::ofstream(path, std::ios::binary) << std::string("\x08\x07\x12\xff\xff\xff\x0f", 7);
    EXPECT_THROW(import_onnx(path), UserError);
    std::ofstream(path, std::ios::binary | std::ios::trunc);
    EXPECT_EQ(
        [&] {
            try {
                import_onnx(path);
            } catch (const UserError& e) {
                return std::string(e.what());
            }
            return std::string();
        }(),
        "'" + path + "' is empty, not an ONNX model");
    std::filesystem::remove(path);
    EXPECT_THROW(import_onnx(path), UserError); // missing file
    // Bytes flipped at every position never crash the importer.
    for (size_t i = 0; i < bytes.size(); i += 7) {
        std::string bad = bytes;
        bad[i] = static_cast<char>(bad[i] ^ 0x5a);
        try {
            Graph g = import_onnx_bytes(bad, "fuzz");
            (void)g;
        } catch (const UserError&) {
        }
    }
}

TEST(ImportTest, ActivationsAndVariadicOpsAtOpset14) {
    ModelBuilder m(14);
    m.input("x", DType::F32, {3, 5});
    m.node("LeakyRelu", {"x"}, {"a"}).f("alpha", 0.2f);
    m.node("Sigmoid", {"a"}, {"b"});
    m.node("HardSigmoid", {"x"}, {"c"}).f("alpha", 0.3f).f("beta", 0.4f);
    m.node("HardSwish", {"x"}, {"d"});
    m.node("Tanh", {"d"}, {"e"});
    m.node("Exp", {"e"}, {"f"});
    m.node("Log", {"f"}, {"g"});
    m.node("Reciprocal", {"f"}, {"h"});
    m.node("Max", {"b", "c", "g"}, {"mx"});
    m.node("Min", {"h", "mx"}, {"mn"});
    m.node("Mul", {"mn", "x"}, {"p"});
    m.node("ReduceMax", {"p"}, {"r"}).ints("axes", {1}).i("keepdims", 0);
    m.node("Identity", {"r"}, {"y"});
    m.output("y", DType::F32, {3});
    Graph g = import(m);
    EXPECT_EQ(g.num_nodes(), 13u);
    TensorData x = random_tensor({3, 5}, 29, -4.0f, 4.0f);
    auto out = evaluate(g, {x});
    for (int64_t i = 0; i < 3; ++i) {
        double best = -INFINITY;
        for (int64_t j = 0; j < 5; ++j) {
            double v = x.data<float>()[i * 5 + j];
            double a = v >= 0 ? v : 0.2 * v, b = 1 / (1 + std::exp(-a));
            double c = std::clamp(0.3 * v + 0.4, 0.0, 1.0),
                   d = v * std::clamp(v / 6 + 0.5, 0.0, 1.0);
            double f = std::exp(std::tanh(d)), g2 = std::log(f), h = 1 / f;
            best = std::max(best, std::min(h, std::max({b, c, g2})) * v);
        }
        EXPECT_NEAR(out[0].data<float>()[i], best, 1e-5) << i;
    }
}

TEST(ImportTest, ExternalDataBesideTheModel) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("tessera_ext_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    TensorData w = random_tensor({4, 3}, 30);
    {
        std::ofstream bin(dir / "weights.bin", std::ios::binary);
        bin << "PAD!"; // offset 4
        bin.write(reinterpret_cast<const char*>(w.raw()), static_cast<std::streamsize>(w.nbytes()));
    }
    auto build = [&](const std::string& location, int64_t offset) {
        ModelBuilder m(13);
        m.input("x", DType::F32, {2, 4});
        onnx::TensorProto t;
        t.set_name("w");
        t.set_data_type(onnx::TensorProto::FLOAT);
        t.add_dims(4);
        t.add_dims(3);
        t.set_data_location(onnx::TensorProto::EXTERNAL);
        auto* kv = t.add_external_data();
        kv->set_key("location");
        kv->set_value(location);
        kv = t.add_external_data();
        kv->set_key("offset");
        kv->set_value(std::to_string(offset));
        *m.proto().mutable_graph()->add_initializer() = t;
        m.node("MatMul", {"x", "w"}, {"y"});
        m.output("y");
        std::ofstream(dir / "model.onnx", std::ios::binary) << m.bytes();
        return (dir / "model.onnx").string();
    };
    Graph g = import_onnx(build("weights.bin", 4));
    EXPECT_EQ(*g.value(g.find_value("w")).constant, w);
    try {
        import_onnx(build("../etc/passwd", 0));
        ADD_FAILURE();
    } catch (const UserError& e) {
        EXPECT_CONTAINS(
            e.what(),
            "initializer 'w': external data location '../etc/passwd' is not a relative path");
    }
    try {
        import_onnx(build("weights.bin", 8));
        ADD_FAILURE();
    } catch (const UserError& e) {
        EXPECT_CONTAINS(e.what(), "is too short");
    }
    EXPECT_THROW(import_onnx_bytes(ModelBuilder(13).bytes(), "m"), UserError); // no graph outputs
    fs::remove_all(dir);
}

TEST(ImportTest, OutOfOrderNodesAndInitializersListedAsInputs) {
    ModelBuilder m(9, 3);
    TensorData b = random_tensor({3}, 27);
    m.input("x", DType::F32, {2, 3}).input("b", DType::F32, {3}).initializer("b", b);
    m.node("Relu", {"s"}, {"y"}, "relu"); // before its producer
    m.node("Add", {"x", "b"}, {"s"}, "add");
    m.output("y");
    Graph g = import(m);
    ASSERT_EQ(g.inputs.size(), 1u); // b is a constant
    TensorData x = random_tensor({2, 3}, 28);
    auto out = evaluate(g, {x});
    for (int64_t i = 0; i < 6; ++i)
        EXPECT_EQ(out[0].data<float>()[i],
                  std::max(0.0f, x.data<float>()[i] + b.data<float>()[i % 3]));
}

} // namespace
} // namespace tessera::graph
