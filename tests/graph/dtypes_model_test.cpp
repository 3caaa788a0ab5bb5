// Element types beyond f32 through the whole build (import, passes, kernels, the library's C
// API) against the graph evaluator: f16 and bf16 models, whose computing ops run in f32 between
// Casts that the importer places, and the integer widths 8 to 64 (wrapping arithmetic,
// comparisons, casts).
#include <gtest/gtest.h>

#include "graph_test_util.h"
#include "op_case.h"
#include "tessera/graph/evaluate.h"
#include "tessera/graph/import_onnx.h"

namespace tessera::graph {
namespace {

using testing::ModelBuilder;

// Conv -> Relu -> GlobalAveragePool -> Flatten -> MatMul -> Softmax, with 16-bit float input,
// weights (one raw, one in int32_data as bits) and output; a Transpose and a Gather of the input
// (ops that only move elements) and a Cast of it to f32.
std::string cnn_model(DType t) {
    ModelBuilder m(13);
    m.input("x", t, {1, 3, 9, 11});
    m.initializer("W", floats({5, 3, 3, 3}, 2, -0.5f, 0.5f).cast(t));
    m.initializer("B", floats({5}, 3).cast(t), /*typed=*/true);
    m.initializer("M", floats({5, 7}, 4).cast(t));
    m.initializer("idx", TensorData::from_vector<int64_t>({2}, {2, 0}));
    m.node("Conv", {"x", "W", "B"}, {"c"}).ints("pads", {1, 0, 1, 0});
    m.node("Relu", {"c"}, {"r"});
    m.node("GlobalAveragePool", {"r"}, {"p"});
    m.node("Flatten", {"p"}, {"f"});
    m.node("MatMul", {"f", "M"}, {"mm"});
    m.node("Softmax", {"mm"}, {"y"}).i("axis", -1);
    m.node("Transpose", {"x"}, {"xt"}).ints("perm", {0, 2, 3, 1});
    m.node("Gather", {"xt", "idx"}, {"g"}).i("axis", 1);
    m.node("Cast", {"x"}, {"x32"}).i("to", onnx::TensorProto::FLOAT);
    m.output("y", t).output("g", t).output("x32", DType::F32);
    return m.bytes();
}

// The 16-bit float storage types: f16 and bf16.
class StorageFloatModelTest : public ::testing::TestWithParam<DType> {
  protected:
    DType t() const { return GetParam(); }
    /// One rounding step of the type, relative.
    double step() const { return t() == DType::BF16 ? 1.0 / 128 : 1.0 / 1024; }
};

TEST_P(StorageFloatModelTest, ComputingOpsRunInF32BetweenCasts) {
    const Graph g = import_onnx_bytes(cnn_model(t()), "narrow.onnx");
    for (NodeId id : g.node_ids()) {
        const Node& n = g.node(id);
        const bool moves = n.op == Op::Cast || n.op == Op::Transpose || n.op == Op::Gather ||
                           n.op == Op::Flatten || n.op == Op::Identity;
        if (moves)
            continue;
        for (ValueId v : n.inputs) {
            if (v != kNoValue) {
                EXPECT_NE(g.value(v).dtype, t()) << describe_node(n, id);
            }
        }
        for (ValueId v : n.outputs)
            EXPECT_NE(g.value(v).dtype, t()) << describe_node(n, id);
    }
    EXPECT_EQ(g.value(g.outputs[0]).dtype, t());
    EXPECT_EQ(g.value(g.outputs[0]).name, "y"); // the model's names stay on the narrow values
    EXPECT_EQ(g.value(g.outputs[1]).dtype, t());
    EXPECT_EQ(g.value(g.outputs[2]).dtype, DType::F32);
}

TEST_P(StorageFloatModelTest, AgreesWithTheF32ModelToItsPrecision) {
    const TensorData x = floats({1, 3, 9, 11}, 1);
    const std::vector<TensorData> narrow =
        evaluate(import_onnx_bytes(cnn_model(t()), "narrow.onnx"), {x.cast(t())});
    const std::vector<TensorData> full =
        evaluate(import_onnx_bytes(cnn_model(DType::F32), "full.onnx"), {x});
    for (size_t i = 0; i < narrow.size(); ++i) {
        testing::Closeness c = testing::compare(narrow[i].cast(DType::F32), full[i], 2 * step(),
                                                        2 * step());
        EXPECT_TRUE(c.ok) << i << ": " << c.message;
    }
}

TEST_P(StorageFloatModelTest, LibraryMatchesEvaluator) {
    const std::vector<TensorData> feeds = {floats({1, 3, 9, 11}, 1).cast(t())};
    for (int level : {0, 2}) // one rounding step of slack: the sums run in other orders
        expect_library_matches_evaluator(cnn_model(t()), feeds, level, 2 * step(), step());
}

INSTANTIATE_TEST_SUITE_P(NarrowFloats, StorageFloatModelTest,
                         ::testing::Values(DType::F16, DType::BF16),
                         [](const ::testing::TestParamInfo<DType>& i) {
                             return std::string(dtype_name(i.param));
                         });

// Arithmetic wraps, comparisons, Where, Cast to and from f32, and a Reshape, on one width.
std::string int_model(DType t) {
    ModelBuilder m(14);
    m.input("a", t, {3, 5, 7}).input("b", t, {5, 7});
    for (const char* op : {"Add", "Sub", "Mul", "Max", "Min"})
        m.node(op, {"a", "b"}, {op});
    m.node("Less", {"a", "b"}, {"lt"});
    m.node("Where", {"lt", "Add", "Mul"}, {"w"});
    m.node("Cast", {"a"}, {"af"}).i("to", onnx::TensorProto::FLOAT);
    m.node("Cast", {"af"}, {"back"}).i("to", dtype_info(t).onnx);
    m.initializer("shape", TensorData::from_vector<int64_t>({2}, {15, 7}));
    m.node("Reshape", {"Sub", "shape"}, {"rs"});
    for (const char* out : {"Add", "Max", "Min", "w", "back", "rs"})
        m.output(out, t);
    m.output("lt", DType::Bool).output("af", DType::F32);
    return m.bytes();
}

TEST(IntegerModelTest, EveryWidthMatchesTheEvaluator) {
    for (DType t : {DType::I8, DType::U8, DType::I16, DType::U16, DType::U32, DType::U64}) {
        SCOPED_TRACE(dtype_name(t));
        const int64_t lo = is_integer(t) && dtype_info(t).is_signed ? -120 : 0;
        const std::vector<TensorData> feeds = {ints({3, 5, 7}, 5, lo, 127).cast(t),
                                               ints({5, 7}, 6, lo, 127).cast(t)};
        expect_library_matches_evaluator(int_model(t), feeds, 2);
    }
}

TEST(IntegerModelTest, NarrowArithmeticWraps) {
    const Graph g = import_onnx_bytes(int_model(DType::U8), "u8.onnx");
    const TensorData a =
        TensorData::from_vector<uint8_t>({3, 5, 7}, std::vector<uint8_t>(105, 250), DType::U8);
    const TensorData b =
        TensorData::from_vector<uint8_t>({5, 7}, std::vector<uint8_t>(35, 10), DType::U8);
    const std::vector<TensorData> out = evaluate(g, {a, b});
    EXPECT_EQ(out[0].data<uint8_t>()[0], 4);   // 250 + 10 wraps
    EXPECT_EQ(out[3].data<uint8_t>()[0], 196); // a < b is false: Mul, 2500 mod 256
}

} // namespace
} // namespace tessera::graph
