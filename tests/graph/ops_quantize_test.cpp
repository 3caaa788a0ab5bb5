// QuantizeLinear and DequantizeLinear: ONNX's values worked out by hand (halves to even,
// saturation, zero points), per-tensor and per-axis forms of opsets 10, 13 and 21 through the
// importer, their kernels against the evaluator, and a QDQ convolution model through the whole
// build.
#include <gtest/gtest.h>

#include "graph_test_util.h"
#include "op_case.h"
#include "tessera/graph/evaluate.h"
#include "tessera/graph/import_onnx.h"

namespace tessera::graph {
namespace {

using testing::ModelBuilder;

std::string import_error(const ModelBuilder& m) {
    try {
        import_onnx_bytes(m.bytes(), "q.onnx");
    } catch (const UserError& e) {
        return e.what();
    }
    return "no error";
}

TensorData u8s(const Shape& s, std::vector<uint8_t> v) {
    return TensorData::from_vector<uint8_t>(s, v, DType::U8);
}

// y = Q(x) and z = DQ(y) at one opset; zp absent when `zero_point` is empty.
std::vector<TensorData> qdq(int64_t opset, const TensorData& x, const TensorData& scale,
                            const TensorData* zero_point, int64_t axis = 1) {
    ModelBuilder m(opset);
    m.input("x", DType::F32, x.shape());
    m.initializer("s", scale);
    std::vector<std::string> ins = {"x", "s"};
    if (zero_point) {
        m.initializer("zp", *zero_point);
        ins.push_back("zp");
    }
    auto q = m.node("QuantizeLinear", ins, {"y"});
    auto d = m.node("DequantizeLinear", {"y", "s", zero_point ? "zp" : ""}, {"z"});
    if (opset >= 13) {
        q.i("axis", axis);
        d.i("axis", axis);
    }
    const DType qt = zero_point ? zero_point->dtype() : DType::U8;
    m.output("y", qt).output("z", DType::F32);
    return evaluate(import_onnx_bytes(m.bytes(), "q.onnx"), {x});
}

TEST(QuantizeLinearTest, RoundsHalvesToEvenAndSaturates) {
    const TensorData x =
        TensorData::from_vector<float>({8}, {-1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 300, -300, 3.7f});
    const TensorData zp = TensorData::scalar<int8_t>(0);
    std::vector<TensorData> out = qdq(10, x, TensorData::scalar(1.0f), &zp);
    EXPECT_EQ(out[0].to_vector<int8_t>(), (std::vector<int8_t>{-2, 0, 0, 2, 2, 127, -128, 4}));
    EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{-2, 0, 0, 2, 2, 127, -128, 4}));
    // u8 with zero point 128 and scale 0.5: x / 0.5 + 128.
    const TensorData zu = u8s({}, {128});
    out = qdq(13, x, TensorData::scalar(0.5f), &zu);
    EXPECT_EQ(out[0].to_vector<uint8_t>(),
              (std::vector<uint8_t>{125, 127, 129, 131, 133, 255, 0, 135}));
    // No zero point: u8 with zero point 0.
    out = qdq(13, x, TensorData::scalar(1.0f), nullptr);
    EXPECT_EQ(out[0].dtype(), DType::U8);
    EXPECT_EQ(out[0].to_vector<uint8_t>(), (std::vector<uint8_t>{0, 0, 0, 2, 2, 255, 0, 4}));
}

TEST(QuantizeLinearTest, PerAxisScalesAndZeroPoints) {
    const TensorData x = floats({2, 3, 5}, 3, -4, 4);
    const TensorData scale = TensorData::from_vector<float>({3}, {0.5f, 0.25f, 0.125f});
    const TensorData zp = TensorData::from_vector<int8_t>({3}, {-3, 0, 7});
    const std::vector<TensorData> out = qdq(13, x, scale, &zp, 1);
    const float* px = x.data<float>();
    const int8_t* py = out[0].data<int8_t>();
    for (int64_t i = 0; i < x.numel(); ++i) {
        const int64_t c = (i / 5) % 3;
        const float want = std::nearbyint(px[i] / scale.data<float>()[c]) + zp.data<int8_t>()[c];
        EXPECT_EQ(py[i], static_cast<int8_t>(std::min(127.0f, std::max(-128.0f, want)))) << i;
        EXPECT_EQ(out[1].data<float>()[i], (py[i] - zp.data<int8_t>()[c]) * scale.data<float>()[c]);
    }
}

TEST(QuantizeLinearTest, ImportRefusesWhatItCannotRepresent) {
    ModelBuilder block(21);
    block.input("x", DType::F32, {4, 8});
    block.initializer("s", floats({4, 2}, 1, 0.1f, 1.0f));
    block.node("QuantizeLinear", {"x", "s"}, {"y"}, "q").i("axis", 1).i("block_size", 4);
    block.output("y", DType::U8);
    EXPECT_EQ(import_error(block),
              "node 'q' (QuantizeLinear, opset 21): block quantization (block_size 4) is not "
              "supported");
    ModelBuilder axis(13);
    axis.input("x", DType::F32, {4, 8});
    axis.initializer("s", floats({5}, 1, 0.1f, 1.0f));
    axis.node("QuantizeLinear", {"x", "s"}, {"y"}, "q").i("axis", 1);
    axis.output("y", DType::U8);
    EXPECT_EQ(import_error(axis),
              "node 'q' (QuantizeLinear, opset 13): scale has 5 elements for axis 1 of extent 8");
    ModelBuilder out_type(21);
    out_type.input("x", DType::F32, {4, 8});
    out_type.initializer("s", TensorData::scalar(0.5f));
    out_type.node("QuantizeLinear", {"x", "s"}, {"y"}, "q").i("output_dtype", 3); // int8
    out_type.output("y", DType::I8);
    EXPECT_EQ(
        evaluate(import_onnx_bytes(out_type.bytes(), "q.onnx"), {floats({4, 8}, 2)})[0].dtype(),
        DType::I8);
}

std::vector<OpCase> quantize_op_cases() {
    return {
        {"QuantizeU8PerTensor",
         {Op::QuantizeLinear},
         [](Case& c) -> std::vector<ValueId> {
             return {c.op(Op::QuantizeLinear,
                          {c.input(floats({2, 7, 9}, 1, -3, 3)),
                           c.constant(TensorData::scalar(0.023f)), c.constant(u8s({}, {131}))})};
         }},
        {"QuantizeI8PerAxis",
         {Op::QuantizeLinear},
         [](Case& c) -> std::vector<ValueId> {
             return {
                 c.op(Op::QuantizeLinear, {c.input(floats({2, 3, 5}, 2, -3, 3)),
                                           c.constant(floats({1, 3, 1}, 3, 0.01f, 0.05f)),
                                           c.constant(ints({1, 3, 1}, 4, -9, 9).cast(DType::I8))})};
         }},
        {"DequantizeU8AndI32",
         {Op::DequantizeLinear},
         [](Case& c) -> std::vector<ValueId> {
             return {c.op(Op::DequantizeLinear, {c.input(ints({3, 11}, 5, 0, 255).cast(DType::U8)),
                                                 c.constant(floats({3, 1}, 6, 0.01f, 0.1f)),
                                                 c.constant(u8s({3, 1}, {3, 128, 250}))}),
                     c.op(Op::DequantizeLinear,
                          {c.input(ints({3, 11}, 7, -5000, 5000).cast(DType::I32)),
                           c.constant(TensorData::scalar(0.002f)),
                           c.constant(TensorData::scalar<int32_t>(0))})};
         }},
    };
}
TESSERA_REGISTER_OP_CASES(quantize_op_cases);

// The QDQ form that static quantization writes: activations u8 per tensor, weights s8 per
// output channel, bias f32; Conv -> Relu between Q/DQ pairs.
TEST(QdqModelTest, LibraryMatchesEvaluator) {
    ModelBuilder m(13);
    m.input("x", DType::F32, {1, 3, 9, 11});
    m.initializer("xs", TensorData::scalar(0.02f)).initializer("xz", u8s({}, {128}));
    m.initializer("W", ints({4, 3, 3, 3}, 8, -127, 127).cast(DType::I8));
    m.initializer("ws", floats({4}, 9, 0.001f, 0.01f));
    m.initializer("wz", TensorData(DType::I8, {4}));
    m.initializer("B", floats({4}, 10));
    m.initializer("ys", TensorData::scalar(0.01f)).initializer("yz", u8s({}, {0}));
    m.node("QuantizeLinear", {"x", "xs", "xz"}, {"xq"});
    m.node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"});
    m.node("DequantizeLinear", {"W", "ws", "wz"}, {"wd"}).i("axis", 0);
    m.node("Conv", {"xd", "wd", "B"}, {"c"}).ints("pads", {1, 1, 1, 1});
    m.node("Relu", {"c"}, {"r"});
    m.node("QuantizeLinear", {"r", "ys", "yz"}, {"rq"});
    m.node("DequantizeLinear", {"rq", "ys", "yz"}, {"y"});
    m.output("y", DType::F32);
    const std::vector<TensorData> feeds = {floats({1, 3, 9, 11}, 11, -2, 2)};
    for (int level : {0, 2}) // one quantization step of slack: sums that land on a half
        expect_library_matches_evaluator(m.bytes(), feeds, level, 0, 0.0100001);
}

} // namespace
} // namespace tessera::graph
