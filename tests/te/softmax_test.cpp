// softmax along any axis, stable for large inputs.
#include "op_test_util.h"

namespace tessera::testing {
namespace {

using te::placeholder;
const ir::DataType f32 = ir::DataType::f32();

struct SoftmaxCase {
    std::vector<int64_t> shape;
    int64_t axis;
};
void PrintTo(const SoftmaxCase& c, std::ostream* os) {
    *os << te::shape_to_string(c.shape) << " axis " << c.axis;
}

class Softmax : public ::testing::TestWithParam<SoftmaxCase> {};

TEST_P(Softmax, MatchesReference) {
    const auto& p = GetParam();
    te::Tensor x = placeholder(p.shape, f32, "x");
    te::Compute c = te::make_compute({x}, {te::softmax(x, p.axis)});
    EXPECT_EQ(stage_names(c),
              (std::vector<std::string>{"softmax_max", "softmax_exp", "softmax_sum", "softmax"}));
    auto in = random_inputs(c, 71, -3, 3);
    expect_output(c, in, ref::softmax(as_refs(c, in)[0], p.axis));
}

INSTANTIATE_TEST_SUITE_P(Shapes, Softmax,
                         ::testing::Values(SoftmaxCase{{7, 13}, -1}, SoftmaxCase{{7, 13}, 0},
                                           SoftmaxCase{{3, 5, 7}, 1}, SoftmaxCase{{127}, 0},
                                           SoftmaxCase{{1, 1}, -1}, SoftmaxCase{{2, 127}, 1}));

TEST(Softmax, StableForLargeInputs) {
    // exp(90) overflows f32; subtracting the max keeps every term finite.
    te::Tensor x = placeholder({3, 13}, f32, "x");
    te::Compute c = te::make_compute({x}, {te::softmax(x)});
    auto in = random_inputs(c, 73, 80, 100);
    expect_output(c, in, ref::softmax(as_refs(c, in)[0], -1));
}

TEST(Softmax, BadInputsAreUserErrors) {
    EXPECT_THROW(te::softmax(placeholder({3, 4}, f32, "x"), 2), tessera::UserError);
    EXPECT_THROW(te::softmax(placeholder({3, 4}, ir::DataType::i32(), "x"), 1), tessera::UserError);
    EXPECT_THROW(te::softmax(placeholder({}, f32, "x"), 0), tessera::UserError);
}

} // namespace
} // namespace tessera::testing
