// QuantizeLinear and DequantizeLinear: ONNX's values worked out by hand (halves to even,
// saturation, zero points), per-tensor and per-axis forms of opsets 10, 13 and 21 through the
// importer, their kernels against the evaluator, and a QDQ convolution model through the whole
// build.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "graph_test_util.h"
#include "op_case.h"
#include "tessera/graph/evaluate.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/support/narrow_types.h"

namespace tessera::graph {
namespace {

using testing::model_import_error;
using testing::ModelBuilder;

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
    EXPECT_EQ(model_import_error(block),
              "node 'q' (QuantizeLinear, opset 21): block quantization (block_size 4) is not "
              "supported");
    ModelBuilder axis(13);
    axis.input("x", DType::F32, {4, 8});
    axis.initializer("s", floats({5}, 1, 0.1f, 1.0f));
    axis.node("QuantizeLinear", {"x", "s"}, {"y"}, "q").i("axis", 1);
    axis.output("y", DType::U8);
    EXPECT_EQ(model_import_error(axis),
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

// The narrow quantized types (opsets 19-21): QuantizeLinear then DequantizeLinear through each,
// against the definition computed here with the support library's codecs; the library built at
// -O0 and -O2 matches the evaluator.
TEST(QuantizeLinearTest, NarrowTypesFollowTheDefinition) {
    const std::vector<std::pair<DType, double>> types = {
        {DType::I4, -3},          {DType::U4, 5},          {DType::I2, -1},
        {DType::U2, 1},           {DType::F8E4M3FN, 0},    {DType::F8E5M2, 0},
        {DType::F4E2M1, 0}};
    const TensorData x = floats({3, 7}, 12, -4, 4);
    const float scale = 0.37f;
    for (const auto& [t, zp] : types) {
        SCOPED_TRACE(dtype_name(t));
        const NarrowFormat f = *narrow_format(t);
        const NarrowFormatInfo& info = narrow_format_info(f);
        TensorData zp_t(t, {1}); // one element as [1] against a scalar scale
        zp_t.raw()[0] = info.is_float ? narrow_encode(f, zp)
                                      : narrow_encode_integer(f, static_cast<int64_t>(zp));
        ModelBuilder m(21);
        m.input("x", DType::F32, {3, 7});
        m.initializer("s", TensorData::scalar(scale)).initializer("zp", zp_t);
        m.node("QuantizeLinear", {"x", "s", "zp"}, {"q"});
        m.node("DequantizeLinear", {"q", "s", "zp"}, {"y"});
        m.output("q", t).output("y", DType::F32);
        const std::vector<TensorData> got = evaluate(import_onnx_bytes(m.bytes(), "q.onnx"), {x});
        ASSERT_EQ(got[0].dtype(), t);
        for (int64_t i = 0; i < x.numel(); ++i) {
            const float scaled = x.data<float>()[i] / scale;
            uint8_t want;
            if (info.is_float) {
                want = narrow_encode(f, static_cast<double>(scaled + static_cast<float>(zp)));
            } else {
                const double hi = (1 << (info.bits - (info.is_signed ? 1 : 0))) - 1;
                const double lo = info.is_signed ? -hi - 1 : 0;
                const double q = std::clamp(std::nearbyint(scaled) + zp, lo, hi);
                want = narrow_encode_integer(f, static_cast<int64_t>(q));
            }
            EXPECT_EQ(got[0].raw()[i], want) << "element " << i << ": " << x.data<float>()[i];
            const float back =
                static_cast<float>(narrow_decode(f, want) - zp) * scale; // f32, as ONNX's
            EXPECT_EQ(got[1].data<float>()[i], back) << "element " << i;
        }
        ModelBuilder dq(21); // the library's f32 output, through the narrow values
        dq.input("x", DType::F32, {3, 7});
        dq.initializer("s", TensorData::scalar(scale)).initializer("zp", zp_t);
        dq.node("QuantizeLinear", {"x", "s", "zp"}, {"q"});
        dq.node("DequantizeLinear", {"q", "s", "zp"}, {"y"});
        dq.output("y", DType::F32);
        for (int level : {0, 2})
            expect_library_matches_evaluator(dq.bytes(), {x}, level, 0, 0);
    }
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

namespace tessera::graph {
namespace {

// ---- the QOperator ops, expanded at import, against naive int32 references ----

template <typename T> std::vector<int64_t> as_ints(const TensorData& t) {
    std::vector<int64_t> v;
    for (T x : t.to_vector<T>())
        v.push_back(x);
    return v;
}

TEST(QOperatorTest, MatMulIntegerAndQLinearMatMulMatchInt32References) {
    const int64_t M = 3, K = 7, N = 5;
    const TensorData a = ints({M, K}, 21, 0, 255).cast(DType::U8);
    const TensorData b = ints({K, N}, 22, -128, 127).cast(DType::I8);
    const TensorData a_zp = u8s({}, {3});
    const TensorData b_zp = ints({N}, 23, -9, 9).cast(DType::I8);
    const TensorData b_s = floats({N}, 24, 0.001f, 0.01f);
    ModelBuilder m(13);
    m.input("a", DType::U8, {M, K}).input("b", DType::I8, {K, N});
    m.initializer("a_zp", a_zp).initializer("b_zp", b_zp).initializer("b_s", b_s);
    m.initializer("a_s", TensorData::scalar(0.02f)).initializer("y_s", TensorData::scalar(0.05f));
    m.initializer("y_zp", u8s({}, {128}));
    m.node("MatMulInteger", {"a", "b", "a_zp", "b_zp"}, {"acc"});
    m.node("QLinearMatMul", {"a", "a_s", "a_zp", "b", "b_s", "b_zp", "y_s", "y_zp"}, {"y"});
    m.output("acc", DType::I32).output("y", DType::U8);
    const std::vector<TensorData> out = evaluate(import_onnx_bytes(m.bytes(), "qmm.onnx"), {a, b});
    const std::vector<int64_t> av = as_ints<uint8_t>(a), bv = as_ints<int8_t>(b),
                               bz = as_ints<int8_t>(b_zp);
    const std::vector<int32_t> acc = out[0].to_vector<int32_t>();
    const std::vector<uint8_t> y = out[1].to_vector<uint8_t>();
    int exact = 0;
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            int64_t want = 0;
            for (int64_t k = 0; k < K; ++k)
                want += (av[i * K + k] - 3) * (bv[k * N + j] - bz[j]);
            EXPECT_EQ(acc[i * N + j], want) << i << "," << j;
            const double q = std::nearbyint(double(want) * 0.02 * b_s.data<float>()[j] / 0.05);
            const double yq = std::min(255.0, std::max(0.0, q + 128));
            EXPECT_LE(std::abs(y[i * N + j] - yq), 1.0) << i << "," << j; // f32 products
            exact += y[i * N + j] == yq;
        }
    EXPECT_GE(exact, M * N - 1);
    expect_library_matches_evaluator(m.bytes(), {a, b}, 2, 0, 0);
}

TEST(QOperatorTest, ConvIntegerAndQLinearConvMatchInt32References) {
    const int64_t C = 2, H = 5, W = 6, O = 3;
    const TensorData x = ints({1, C, H, W}, 31, 0, 255).cast(DType::U8);
    const TensorData w = ints({O, C, 3, 3}, 32, -128, 127).cast(DType::I8);
    const TensorData w_zp = ints({O}, 33, -5, 5).cast(DType::I8);
    const TensorData w_s = floats({O}, 34, 0.002f, 0.02f);
    const TensorData bias = ints({O}, 35, -2000, 2000).cast(DType::I32);
    ModelBuilder m(13);
    m.input("x", DType::U8, {1, C, H, W});
    m.initializer("w", w).initializer("w_zp", w_zp).initializer("w_s", w_s);
    m.initializer("x_zp", u8s({}, {7})).initializer("x_s", TensorData::scalar(0.03f));
    m.initializer("y_s", TensorData::scalar(0.4f)).initializer("y_zp", u8s({}, {100}));
    m.initializer("B", bias);
    m.node("ConvInteger", {"x", "w", "x_zp", "w_zp"}, {"acc"}).ints("pads", {1, 1, 1, 1});
    m.node("QLinearConv", {"x", "x_s", "x_zp", "w", "w_s", "w_zp", "y_s", "y_zp", "B"}, {"y"})
        .ints("pads", {1, 1, 1, 1});
    m.output("acc", DType::I32).output("y", DType::U8);
    const std::vector<TensorData> out = evaluate(import_onnx_bytes(m.bytes(), "qc.onnx"), {x});
    const std::vector<int64_t> xv = as_ints<uint8_t>(x), wv = as_ints<int8_t>(w),
                               wz = as_ints<int8_t>(w_zp), bv = as_ints<int32_t>(bias);
    const std::vector<int32_t> acc = out[0].to_vector<int32_t>();
    const std::vector<uint8_t> y = out[1].to_vector<uint8_t>();
    for (int64_t o = 0; o < O; ++o)
        for (int64_t h = 0; h < H; ++h)
            for (int64_t c = 0; c < W; ++c) {
                int64_t want = 0;
                for (int64_t ci = 0; ci < C; ++ci)
                    for (int64_t r = 0; r < 3; ++r)
                        for (int64_t s = 0; s < 3; ++s) {
                            const int64_t ih = h + r - 1, iw = c + s - 1;
                            if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                                continue; // padding is the zero point: x - x_zp = 0
                            want += (xv[(ci * H + ih) * W + iw] - 7) *
                                    (wv[((o * C + ci) * 3 + r) * 3 + s] - wz[o]);
                        }
                const int64_t i = (o * H + h) * W + c;
                EXPECT_EQ(acc[i], want) << i;
                const double q =
                    std::nearbyint(double(want + bv[o]) * 0.03 * w_s.data<float>()[o] / 0.4);
                EXPECT_LE(std::abs(y[i] - std::min(255.0, std::max(0.0, q + 100))), 1.0) << i;
            }
    expect_library_matches_evaluator(m.bytes(), {x}, 2, 0, 1.0);
}

TEST(QOperatorTest, ImportChecksOperandCountsAndOpsets) {
    ModelBuilder m(13);
    m.input("a", DType::U8, {2, 3}).input("b", DType::U8, {3, 2});
    m.node("QLinearMatMul", {"a", "b"}, {"y"}, "qmm");
    m.output("y", DType::U8);
    EXPECT_EQ(model_import_error(m), "node 'qmm' (QLinearMatMul): has 2 inputs, expected 8");
    ModelBuilder old(10);
    old.input("x", DType::F32, {2, 3});
    old.node("DynamicQuantizeLinear", {"x"}, {"y", "s", "zp"}, "dq");
    old.output("y", DType::U8);
    EXPECT_EQ(model_import_error(old), "node 'dq' (DynamicQuantizeLinear) is not defined at opset 10");
}

TEST(QOperatorTest, DynamicQuantizeLinearFollowsOnnxDefinition) {
    ModelBuilder m(13);
    m.input("x", DType::F32, {3, 5});
    m.node("DynamicQuantizeLinear", {"x"}, {"y", "s", "zp"});
    m.output("y", DType::U8).output("s", DType::F32).output("zp", DType::U8);
    const TensorData x = floats({3, 5}, 41, -0.7f, 2.3f);
    const std::vector<TensorData> out = evaluate(import_onnx_bytes(m.bytes(), "dq.onnx"), {x});
    const std::vector<float> xv = x.to_vector<float>();
    const float lo = std::min(0.0f, *std::min_element(xv.begin(), xv.end()));
    const float hi = std::max(0.0f, *std::max_element(xv.begin(), xv.end()));
    const float scale = (hi - lo) / 255.0f;
    const float zp = std::min(255.0f, std::max(0.0f, std::nearbyint((0 - lo) / scale)));
    EXPECT_EQ(out[1].data<float>()[0], scale);
    EXPECT_EQ(out[2].data<uint8_t>()[0], static_cast<uint8_t>(zp));
    for (size_t i = 0; i < xv.size(); ++i)
        EXPECT_EQ(out[0].data<uint8_t>()[i],
                  static_cast<uint8_t>(
                      std::min(255.0f, std::max(0.0f, std::nearbyint(xv[i] / scale) + zp))))
            << i;
    expect_library_matches_evaluator(m.bytes(), {x}, 2);
}

} // namespace
} // namespace tessera::graph
