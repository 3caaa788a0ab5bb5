// The reference evaluator's elementwise ops: unary math, broadcasting arithmetic, comparisons,
// Where, Clip and Cast, against formulas evaluated here in double.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "graph_test_util.h"

namespace tessera::testing {
namespace {

using graph::Attribute;
using graph::Op;

// f applied to each element of x (as double), rounded to f32.
TensorData map_ref(const TensorData& x, const std::function<double(double)>& f) {
    TensorData out(DType::F32, x.shape());
    for (int64_t i = 0; i < x.numel(); ++i)
        out.data<float>()[i] = static_cast<float>(f(x.data<float>()[i]));
    return out;
}

TEST(UnaryTest, EachOpMatchesItsFormula) {
    TensorData x = random_tensor({7, 13}, 101, -3.0f, 3.0f);
    TensorData pos = random_tensor({7, 13}, 102, 0.1f, 4.0f);
    struct Case {
        Op op;
        bool positive;
        std::function<double(double)> f;
        graph::Attributes attrs;
    };
    std::vector<Case> cases = {
        {Op::Relu, false, [](double v) { return v > 0 ? v : 0; }, {}},
        {Op::LeakyRelu,
         false,
         [](double v) { return v >= 0 ? v : 0.1 * v; },
         {{"alpha", Attribute::of_float(0.1f)}}},
        {Op::Sigmoid, false, [](double v) { return 1 / (1 + std::exp(-v)); }, {}},
        {Op::HardSigmoid,
         false,
         [](double v) { return std::clamp(0.3 * v + 0.4, 0.0, 1.0); },
         {{"alpha", Attribute::of_float(0.3f)}, {"beta", Attribute::of_float(0.4f)}}},
        {Op::HardSwish, false, [](double v) { return v * std::clamp(v / 6 + 0.5, 0.0, 1.0); }, {}},
        {Op::Tanh, false, [](double v) { return std::tanh(v); }, {}},
        {Op::Erf, false, [](double v) { return std::erf(v); }, {}},
        {Op::Sqrt, true, [](double v) { return std::sqrt(v); }, {}},
        {Op::Exp, false, [](double v) { return std::exp(v); }, {}},
        {Op::Log, true, [](double v) { return std::log(v); }, {}},
        {Op::Neg, false, [](double v) { return -v; }, {}},
        {Op::Reciprocal, true, [](double v) { return 1 / v; }, {}},
    };
    for (const Case& c : cases) {
        const TensorData& input = c.positive ? pos : x;
        auto out = run_node(c.op, {in(input)}, c.attrs);
        SCOPED_TRACE(graph::op_name(c.op));
        EXPECT_TENSOR_NEAR(out[0], map_ref(input, c.f), 1e-5, 1e-6);
    }
}

TEST(UnaryTest, IntegerReluNegAndBoolNot) {
    TensorData xi = random_ints({13}, 103, -50, 50);
    std::vector<int64_t> v = xi.to_vector<int64_t>(), relu, neg;
    for (int64_t a : v)
        relu.push_back(std::max<int64_t>(a, 0)), neg.push_back(-a);
    EXPECT_EQ(run_node(Op::Relu, {in(xi)})[0], TensorData::from_vector<int64_t>({13}, relu));
    EXPECT_EQ(run_node(Op::Neg, {in(xi)})[0], TensorData::from_vector<int64_t>({13}, neg));
    TensorData b = TensorData::from_vector<uint8_t>({4}, {1, 0, 0, 1});
    EXPECT_EQ(run_node(Op::Not, {in(b)})[0], TensorData::from_vector<uint8_t>({4}, {0, 1, 1, 0}));
    EXPECT_THROW(run_node(Op::Sigmoid, {in(xi)}), UserError);
}

TEST(BinaryTest, BroadcastingArithmetic) {
    TensorData a = random_tensor({7, 1, 13}, 111), b = random_tensor({5, 1}, 112, 0.5f, 2.0f);
    for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Max, Op::Min}) {
        auto out = run_node(op, {in(a), in(b)});
        TensorData want(DType::F32, {7, 5, 13});
        for (int64_t i = 0; i < 7; ++i)
            for (int64_t j = 0; j < 5; ++j)
                for (int64_t k = 0; k < 13; ++k) {
                    double x = a.data<float>()[i * 13 + k], y = b.data<float>()[j];
                    double r = op == Op::Add   ? x + y
                               : op == Op::Sub ? x - y
                               : op == Op::Mul ? x * y
                               : op == Op::Div ? x / y
                               : op == Op::Max ? std::max(x, y)
                                               : std::min(x, y);
                    want.data<float>()[(i * 5 + j) * 13 + k] = static_cast<float>(r);
                }
        SCOPED_TRACE(graph::op_name(op));
        EXPECT_TENSOR_NEAR(out[0], want, 1e-6, 1e-7);
    }
}

TEST(BinaryTest, IntegerDivisionTruncatesAndRejectsZero) {
    TensorData a = TensorData::from_vector<int64_t>({4}, {-7, 7, -8, 9});
    TensorData b = TensorData::from_vector<int64_t>({4}, {2, -2, 3, 1});
    EXPECT_EQ(run_node(Op::Div, {in(a), in(b)})[0],
              TensorData::from_vector<int64_t>({4}, {-3, -3, -2, 9}));
    TensorData z = TensorData::from_vector<int64_t>({4}, {1, 0, 1, 1});
    EXPECT_THROW(run_node(Op::Div, {in(a), in(z)}), UserError);
    TensorData f = random_tensor({4}, 1);
    EXPECT_THROW(run_node(Op::Add, {in(a), in(f)}), UserError); // dtypes differ
}

TEST(BinaryTest, PowWithIntegerExponent) {
    TensorData a = random_tensor({3, 5}, 121, 0.5f, 2.0f);
    TensorData e = TensorData::from_vector<int64_t>({5}, {0, 1, 2, 3, -1});
    auto out = run_node(Op::Pow, {in(a), konst(e)});
    TensorData want(DType::F32, {3, 5});
    for (int64_t i = 0; i < 15; ++i)
        want.data<float>()[i] =
            float(std::pow(double(a.data<float>()[i]), double(e.data<int64_t>()[i % 5])));
    EXPECT_TENSOR_NEAR(out[0], want, 1e-6, 1e-7);
    auto sq = run_node(Op::Pow, {in(a), konst(TensorData::scalar(2.0f))});
    EXPECT_TENSOR_NEAR(sq[0], map_ref(a, [](double v) { return v * v; }), 1e-6, 1e-7);
}

TEST(BinaryTest, VariadicMaxMin) {
    TensorData a = random_tensor({3, 1}, 131), b = random_tensor({5}, 132),
               c = random_tensor({1, 1}, 133);
    auto mx = run_node(Op::Max, {in(a), in(b), in(c)});
    auto mn = run_node(Op::Min, {in(a), in(b), in(c)});
    TensorData wmax(DType::F32, {3, 5}), wmin(DType::F32, {3, 5});
    for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 5; ++j) {
            float x = a.data<float>()[i], y = b.data<float>()[j], z = c.data<float>()[0];
            wmax.data<float>()[i * 5 + j] = std::max({x, y, z});
            wmin.data<float>()[i * 5 + j] = std::min({x, y, z});
        }
    EXPECT_EQ(mx[0], wmax);
    EXPECT_EQ(mn[0], wmin);
    EXPECT_EQ(run_node(Op::Max, {in(a)})[0], a);
}

TEST(CompareTest, ComparisonsNotAndWhere) {
    TensorData a = random_ints({7, 3}, 141, -3, 3), b = random_ints({3}, 142, -3, 3);
    auto eq = run_node(Op::Equal, {in(a), in(b)})[0];
    auto lt = run_node(Op::Less, {in(a), in(b)})[0];
    auto gt = run_node(Op::Greater, {in(a), in(b)})[0];
    ASSERT_EQ(eq.dtype(), DType::Bool);
    for (int64_t i = 0; i < 21; ++i) {
        int64_t x = a.data<int64_t>()[i], y = b.data<int64_t>()[i % 3];
        EXPECT_EQ(eq.data<uint8_t>()[i], x == y);
        EXPECT_EQ(lt.data<uint8_t>()[i], x < y);
        EXPECT_EQ(gt.data<uint8_t>()[i], x > y);
    }
    TensorData fx = random_tensor({7, 3}, 143), fy = random_tensor({1, 3}, 144);
    auto w = run_node(Op::Where, {in(lt), in(fx), in(fy)})[0];
    for (int64_t i = 0; i < 21; ++i)
        EXPECT_EQ(w.data<float>()[i],
                  lt.data<uint8_t>()[i] ? fx.data<float>()[i] : fy.data<float>()[i % 3]);
    // Equal takes bools; Less does not.
    EXPECT_EQ(run_node(Op::Equal, {in(eq), in(eq)})[0].as_i64(), std::vector<int64_t>(21, 1));
    EXPECT_THROW(run_node(Op::Less, {in(eq), in(eq)}), UserError);
    EXPECT_THROW(run_node(Op::Where, {in(fx), in(fx), in(fy)}), UserError);
}

TEST(ClipTest, OptionalBounds) {
    TensorData x = random_tensor({13}, 151, -2.0f, 2.0f);
    auto lo = TensorData::scalar(-0.5f), hi = TensorData::scalar(0.75f);
    EXPECT_TENSOR_NEAR(run_node(Op::Clip, {in(x), konst(lo), konst(hi)})[0],
                       map_ref(x, [](double v) { return std::clamp(v, -0.5, 0.75); }), 0, 0);
    EXPECT_TENSOR_NEAR(run_node(Op::Clip, {in(x), none(), konst(hi)})[0],
                       map_ref(x, [](double v) { return std::min(v, 0.75); }), 0, 0);
    EXPECT_TENSOR_NEAR(run_node(Op::Clip, {in(x), konst(lo)})[0],
                       map_ref(x, [](double v) { return std::max(v, -0.5); }), 0, 0);
    EXPECT_EQ(run_node(Op::Clip, {in(x)})[0], x);
    TensorData xi = TensorData::from_vector<int64_t>({3}, {-9, 4, 9});
    EXPECT_EQ(run_node(Op::Clip, {in(xi), konst(TensorData::scalar<int64_t>(0)),
                                  konst(TensorData::scalar<int64_t>(5))})[0]
                  .to_vector<int64_t>(),
              (std::vector<int64_t>{0, 4, 5}));
    EXPECT_THROW(run_node(Op::Clip, {in(x), konst(TensorData::scalar<int64_t>(0))}), UserError);
}

TEST(CastTest, BetweenDtypes) {
    TensorData x = TensorData::from_vector<float>({5}, {-2.7f, -0.2f, 0.0f, 1.5f, 3.9f});
    auto i = run_node(Op::Cast, {in(x)}, {{"to", Attribute::of_string("i64")}})[0];
    EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{-2, 0, 0, 1, 3}));
    auto b = run_node(Op::Cast, {in(x)}, {{"to", Attribute::of_string("bool")}})[0];
    EXPECT_EQ(b.to_vector<uint8_t>(), (std::vector<uint8_t>{1, 1, 0, 1, 1}));
    auto back = run_node(Op::Cast, {in(i)}, {{"to", Attribute::of_string("f32")}})[0];
    EXPECT_EQ(back.to_vector<float>(), (std::vector<float>{-2, 0, 0, 1, 3}));
    auto d = run_node(Op::Cast, {in(x)}, {{"to", Attribute::of_string("f64")}})[0];
    EXPECT_EQ(d.dtype(), DType::F64);
    auto h = run_node(Op::Cast, {in(x)}, {{"to", Attribute::of_string("f16")}})[0];
    EXPECT_EQ(h.dtype(), DType::F16);
    EXPECT_EQ(h.cast(DType::F32).to_vector<float>(), // the nearest f16 values
              (std::vector<float>{-2.69921875f, -0.199951171875f, 0, 1.5f, 3.900390625f}));
    auto u = run_node(Op::Cast, {in(i)}, {{"to", Attribute::of_string("u8")}})[0];
    EXPECT_EQ(u.dtype(), DType::U8);
    EXPECT_EQ(u.to_vector<uint8_t>(), (std::vector<uint8_t>{254, 0, 0, 1, 3})); // wraps
    auto bf = run_node(Op::Cast, {in(x)}, {{"to", Attribute::of_string("bf16")}})[0];
    EXPECT_EQ(bf.dtype(), DType::BF16);
    EXPECT_EQ(bf.cast(DType::F32).to_vector<float>(), // the nearest bf16 values
              (std::vector<float>{-2.703125f, -0.2001953125f, 0, 1.5f, 3.90625f}));
    EXPECT_THROW(run_node(Op::Cast, {in(x)}, {{"to", Attribute::of_string("f8")}}), UserError);
}

} // namespace
} // namespace tessera::testing
