// layer_norm over trailing dims with and without gamma/beta.
#include "op_test_util.h"

#include <gmock/gmock.h>

namespace tessera::testing {
namespace {

using te::placeholder;
const ir::DataType f32 = ir::DataType::f32();

struct LnCase {
    std::vector<int64_t> shape;
    int64_t axis;
    bool gamma, beta;
};
void PrintTo(const LnCase& c, std::ostream* os) {
    *os << te::shape_to_string(c.shape) << " axis " << c.axis << " gamma " << c.gamma << " beta "
        << c.beta;
}

class LayerNorm : public ::testing::TestWithParam<LnCase> {};

TEST_P(LayerNorm, MatchesReference) {
    const auto& p = GetParam();
    size_t ax = (size_t)(p.axis < 0 ? p.axis + (int64_t)p.shape.size() : p.axis);
    std::vector<int64_t> inner(p.shape.begin() + (long)ax, p.shape.end());
    te::Tensor x = placeholder(p.shape, f32, "x");
    te::Tensor g = p.gamma ? placeholder(inner, f32, "gamma") : te::Tensor();
    te::Tensor b = p.beta ? placeholder(inner, f32, "beta") : te::Tensor();
    std::vector<te::Tensor> ins = {x};
    if (p.gamma)
        ins.push_back(g);
    if (p.beta)
        ins.push_back(b);
    te::Compute c = te::make_compute(ins, {te::layer_norm(x, g, b, p.axis, 1e-5)});
    auto in = random_inputs(c, 79, -2, 3);
    auto r = as_refs(c, in);
    const RefTensor* rg = p.gamma ? &r[1] : nullptr;
    const RefTensor* rb = p.beta ? &r[p.gamma ? 2 : 1] : nullptr;
    expect_output(c, in, ref::layer_norm(r[0], rg, rb, p.axis, 1e-5), 2e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, LayerNorm,
    ::testing::Values(LnCase{{7, 13}, -1, true, true}, LnCase{{2, 127}, 1, true, false},
                      LnCase{{3, 5, 7}, 1, false, true}, LnCase{{13}, 0, false, false},
                      LnCase{{2, 3, 7}, 0, true, true}, LnCase{{5, 1}, -1, true, true}));

TEST(LayerNorm, BadInputsAreUserErrors) {
    te::Tensor x = placeholder({4, 6}, f32, "x");
    try {
        te::layer_norm(x, placeholder({4}, f32, "gamma"), te::Tensor());
        FAIL() << "no error";
    } catch (const tessera::UserError& e) {
        EXPECT_THAT(e.what(),
                    ::testing::HasSubstr("layer_norm: 'gamma' must have the normalized shape [6]"));
    }
    EXPECT_THROW(te::layer_norm(x, te::Tensor(), te::Tensor(), 3), tessera::UserError);
    EXPECT_THROW(te::layer_norm(x, te::Tensor(), te::Tensor(), -1, -1.0), tessera::UserError);
}

} // namespace
} // namespace tessera::testing
