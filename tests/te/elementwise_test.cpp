// Broadcast binary ops and unary activations against the references.
#include "op_test_util.h"

#include <gmock/gmock.h>

#include <cmath>

namespace tessera::testing {
namespace {

using te::placeholder;
const ir::DataType f32 = ir::DataType::f32();

struct BinaryCase {
    std::vector<int64_t> a, b;
};
void PrintTo(const BinaryCase& c, std::ostream* os) {
    *os << te::shape_to_string(c.a) << " op " << te::shape_to_string(c.b);
}

class Broadcast : public ::testing::TestWithParam<BinaryCase> {};

TEST_P(Broadcast, AllBinaryOpsMatchReference) {
    const auto& p = GetParam();
    using Op = te::Tensor (*)(const te::Tensor&, const te::Tensor&);
    struct Named {
        Op op;
        std::function<double(double, double)> f;
    };
    std::vector<Named> ops = {
        {te::add, [](double x, double y) { return (float)x + (float)y; }},
        {te::subtract, [](double x, double y) { return (float)x - (float)y; }},
        {te::multiply, [](double x, double y) { return (float)x * (float)y; }},
        {te::divide, [](double x, double y) { return (float)x / (float)y; }},
        {te::maximum, [](double x, double y) { return std::max(x, y); }},
        {te::minimum, [](double x, double y) { return std::min(x, y); }},
    };
    for (const auto& op : ops) {
        te::Tensor a = placeholder(p.a, f32, "a"), b = placeholder(p.b, f32, "b");
        te::Compute c = te::make_compute({a, b}, {op.op(a, b)});
        auto in = random_inputs(c, 61);
        for (float& v : in[1])
            v = v < 0 ? v - 0.5f : v + 0.5f; // keep divisors away from 0
        auto r = as_refs(c, in);
        expect_output(c, in, ref::binary(r[0], r[1], op.f));
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, Broadcast,
                         ::testing::Values(BinaryCase{{7, 13}, {13}}, BinaryCase{{1, 13}, {7, 1}},
                                           BinaryCase{{127}, {1}}, BinaryCase{{2, 1, 5}, {3, 1}},
                                           BinaryCase{{7, 13}, {7, 13}}, BinaryCase{{}, {3}},
                                           BinaryCase{{1}, {1}}));

TEST(Broadcast, MismatchNamesOpAndShapes) {
    te::Tensor a = placeholder({7, 13}, f32, "a"), b = placeholder({7}, f32, "b");
    try {
        te::add(a, b);
        FAIL() << "no error";
    } catch (const tessera::UserError& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr("add: shapes [7, 13] and [7] do not broadcast"));
    }
    EXPECT_THROW(te::add(a, placeholder({13}, ir::DataType::i32(), "c")), tessera::UserError);
}

struct UnaryCase {
    const char* name;
    std::function<te::Tensor(const te::Tensor&)> op;
    std::function<double(double)> f;
    float lo, hi;
};

TEST(Unary, AllActivationsMatchReference) {
    std::vector<UnaryCase> cases = {
        {"relu", te::relu, ref::relu, -1, 1},
        {"sigmoid", te::sigmoid, ref::sigmoid, -8, 8},
        {"tanh", static_cast<te::Tensor (*)(const te::Tensor&)>(te::tanh),
         [](double x) { return std::tanh(x); }, -3, 3},
        {"erf", static_cast<te::Tensor (*)(const te::Tensor&)>(te::erf),
         [](double x) { return std::erf(x); }, -3, 3},
        {"gelu", te::gelu, ref::gelu, -4, 4},
        {"exp", static_cast<te::Tensor (*)(const te::Tensor&)>(te::exp),
         [](double x) { return std::exp(x); }, -4, 4},
        {"sqrt", static_cast<te::Tensor (*)(const te::Tensor&)>(te::sqrt),
         [](double x) { return std::sqrt(x); }, 0, 9},
        {"clip", [](const te::Tensor& x) { return te::clip(x, -0.25, 0.5); },
         [](double x) { return std::min(std::max(x, -0.25), 0.5); }, -1, 1},
        {"leaky_relu", [](const te::Tensor& x) { return te::leaky_relu(x, 0.125); },
         [](double x) { return x > 0 ? x : 0.125 * x; }, -1, 1},
    };
    for (const auto& u : cases) {
        for (auto shape :
             {std::vector<int64_t>{1}, std::vector<int64_t>{7, 13}, std::vector<int64_t>{127}}) {
            te::Tensor x = placeholder(shape, f32, "x");
            te::Compute c = te::make_compute({x}, {u.op(x)});
            EXPECT_EQ(c.outputs[0].name(), u.name);
            auto in = random_inputs(c, 67, u.lo, u.hi);
            SCOPED_TRACE(u.name);
            expect_output(c, in, ref::unary(as_refs(c, in)[0], u.f), 2e-6);
        }
    }
}

TEST(Unary, FloatOnlyOpsRejectIntegers) {
    te::Tensor xi = placeholder({4}, ir::DataType::i32(), "xi");
    EXPECT_NO_THROW(te::relu(xi));
    EXPECT_NO_THROW(te::clip(xi, -1, 1));
    for (auto op : {te::sigmoid, te::gelu})
        EXPECT_THROW(op(xi), tessera::UserError);
    try {
        te::exp(xi);
        FAIL() << "no error";
    } catch (const tessera::UserError& e) {
        EXPECT_STREQ(e.what(), "exp: input 'xi' must be float, got i32");
    }
    EXPECT_THROW(te::clip(placeholder({4}, f32, "x"), 1, 0), tessera::UserError);
}

TEST(Unary, IntegerReluRunsThroughTheInterpreter) {
    te::Tensor xi = placeholder({5}, ir::DataType::i32(), "xi");
    te::Compute c = te::make_compute({xi}, {te::relu(xi)});
    ir::LoweredFunc f = lower::lower_default(c, "k");
    std::vector<int32_t> in = {-3, 0, 7, -1, 2}, out(5, 99);
    ir::interpret(f, {in.data(), out.data()});
    EXPECT_EQ(out, (std::vector<int32_t>{0, 0, 7, 0, 2}));
}

} // namespace
} // namespace tessera::testing
