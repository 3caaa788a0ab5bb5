// max_pool2d, avg_pool2d (with/without padding in the count, ceil mode) and global pools.
#include "op_test_util.h"

#include <gmock/gmock.h>

namespace tessera::testing {
namespace {

using te::placeholder;
const ir::DataType f32 = ir::DataType::f32();

struct PoolCase {
    std::vector<int64_t> shape;
    ref::PoolArgs a;
};
void PrintTo(const PoolCase& c, std::ostream* os) {
    *os << te::shape_to_string(c.shape) << " kernel " << c.a.kernel_h << "x" << c.a.kernel_w
        << " stride " << c.a.stride_h << "x" << c.a.stride_w << " pads " << c.a.pad_top << ","
        << c.a.pad_left << "," << c.a.pad_bottom << "," << c.a.pad_right << " ceil "
        << c.a.ceil_mode << " include_pad " << c.a.count_include_pad;
}

ref::PoolArgs pool_args(int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t pt, int64_t pl,
                        int64_t pb, int64_t pr, bool ceil_mode, bool include_pad, int64_t dil = 1) {
    ref::PoolArgs a;
    a.kernel_h = kh, a.kernel_w = kw, a.stride_h = sh, a.stride_w = sw;
    a.pad_top = pt, a.pad_left = pl, a.pad_bottom = pb, a.pad_right = pr;
    a.ceil_mode = ceil_mode, a.count_include_pad = include_pad;
    a.dilation_h = a.dilation_w = dil;
    return a;
}

te::Pool2dParams params_of(const ref::PoolArgs& a) {
    te::Pool2dParams p;
    p.kernel_h = a.kernel_h, p.kernel_w = a.kernel_w, p.stride_h = a.stride_h,
    p.stride_w = a.stride_w;
    p.pad_top = a.pad_top, p.pad_left = a.pad_left, p.pad_bottom = a.pad_bottom,
    p.pad_right = a.pad_right;
    p.dilation_h = a.dilation_h, p.dilation_w = a.dilation_w;
    p.ceil_mode = a.ceil_mode, p.count_include_pad = a.count_include_pad;
    return p;
}

const std::vector<PoolCase> kCases = {
    {{1, 3, 7, 7}, pool_args(2, 2, 2, 2, 0, 0, 0, 0, false, false)},
    {{2, 2, 13, 11}, pool_args(3, 3, 2, 2, 1, 1, 1, 1, false, false)},
    {{2, 2, 13, 11}, pool_args(3, 3, 2, 2, 1, 1, 1, 1, false, true)},
    {{1, 2, 13, 13}, pool_args(3, 2, 2, 3, 1, 0, 0, 1, true, false)},
    {{1, 2, 13, 13}, pool_args(3, 2, 2, 3, 1, 0, 0, 1, true, true)},
    {{1, 1, 127, 7}, pool_args(5, 1, 4, 1, 2, 0, 2, 0, true, false)},
    {{1, 1, 1, 1}, pool_args(1, 1, 1, 1, 0, 0, 0, 0, false, false)},
    {{1, 3, 8, 8}, pool_args(3, 3, 3, 3, 1, 1, 1, 1, true, true)},
};

class MaxPool : public ::testing::TestWithParam<PoolCase> {};
TEST_P(MaxPool, MatchesReference) {
    const PoolCase& p = GetParam();
    te::Tensor x = placeholder(p.shape, f32, "x");
    te::Compute c = te::make_compute({x}, {te::max_pool2d(x, params_of(p.a))});
    auto in = random_inputs(c, 41);
    expect_output(c, in, ref::max_pool2d(as_refs(c, in)[0], p.a));
}
INSTANTIATE_TEST_SUITE_P(Shapes, MaxPool, ::testing::ValuesIn(kCases));

class AvgPool : public ::testing::TestWithParam<PoolCase> {};
TEST_P(AvgPool, MatchesReference) {
    const PoolCase& p = GetParam();
    te::Tensor x = placeholder(p.shape, f32, "x");
    te::Compute c = te::make_compute({x}, {te::avg_pool2d(x, params_of(p.a))});
    auto in = random_inputs(c, 43);
    expect_output(c, in, ref::avg_pool2d(as_refs(c, in)[0], p.a));
}
INSTANTIATE_TEST_SUITE_P(Shapes, AvgPool, ::testing::ValuesIn(kCases));

TEST(MaxPool, DilationMatchesReference) {
    te::Tensor x = placeholder({1, 2, 13, 11}, f32, "x");
    ref::PoolArgs a = pool_args(3, 2, 2, 1, 2, 1, 1, 1, false, false, 2);
    te::Compute c = te::make_compute({x}, {te::max_pool2d(x, params_of(a))});
    auto in = random_inputs(c, 47);
    expect_output(c, in, ref::max_pool2d(as_refs(c, in)[0], a));
}

TEST(MaxPool, PadsWithLowestNotZero) {
    // All-negative input: a zero pad would win the max at the borders.
    te::Tensor x = placeholder({1, 1, 7, 7}, f32, "x");
    ref::PoolArgs a = pool_args(3, 3, 1, 1, 1, 1, 1, 1, false, false);
    te::Compute c = te::make_compute({x}, {te::max_pool2d(x, params_of(a))});
    auto in = random_inputs(c, 53, -2.0f, -1.0f);
    expect_output(c, in, ref::max_pool2d(as_refs(c, in)[0], a));
}

TEST(GlobalPool, AvgAndMaxMatchReference) {
    for (auto shape : {std::vector<int64_t>{2, 3, 7, 13}, std::vector<int64_t>{1, 1, 1, 1},
                       std::vector<int64_t>{1, 2, 127, 3}}) {
        te::Tensor x = placeholder(shape, f32, "x");
        te::Compute ca = te::make_compute({x}, {te::global_avg_pool2d(x)});
        auto in = random_inputs(ca, 59);
        expect_output(ca, in, ref::global_avg_pool2d(as_refs(ca, in)[0]));
        te::Compute cm = te::make_compute({x}, {te::global_max_pool2d(x)});
        expect_output(cm, in, ref::global_max_pool2d(as_refs(cm, in)[0]));
    }
}

TEST(GlobalPool, KeepsLeadingDimsForOtherRanks) {
    te::Tensor x = placeholder({2, 3, 5}, f32, "x");
    EXPECT_EQ(te::global_avg_pool2d(x).shape(), (std::vector<int64_t>{2, 3, 1}));
    EXPECT_THROW(te::global_avg_pool2d(placeholder({2, 3}, f32, "y")), tessera::UserError);
}

TEST(Pool, BadParamsAreUserErrors) {
    te::Tensor x = placeholder({1, 1, 7, 7}, f32, "x");
    try {
        te::max_pool2d(x, te::Pool2dParams::make(2, 2, 2));
        FAIL() << "no error";
    } catch (const tessera::UserError& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr("max_pool2d: height pads 2,2"));
    }
    EXPECT_THROW(te::max_pool2d(x, te::Pool2dParams::make(9, 1, 0)), tessera::UserError);
    EXPECT_THROW(te::max_pool2d(x, te::Pool2dParams::make(2, 0, 0)), tessera::UserError);
    te::Pool2dParams dil = te::Pool2dParams::make(2, 1, 0);
    dil.dilation_h = 0;
    EXPECT_THROW(te::avg_pool2d(x, dil), tessera::UserError);
    EXPECT_THROW(te::avg_pool2d(placeholder({7, 7}, ir::DataType::i32(), "xi"),
                                te::Pool2dParams::make(2, 2, 0)),
                 tessera::UserError);
    EXPECT_THROW(te::max_pool2d(placeholder({7}, f32, "x1"), te::Pool2dParams::make(2, 2, 0)),
                 tessera::UserError);
}

TEST(Pool, WorksOnRank2AndIntegers) {
    te::Tensor x = placeholder({7, 13}, f32, "x");
    te::Tensor y = te::max_pool2d(x, te::Pool2dParams::make(2, 2, 0));
    EXPECT_EQ(y.shape(), (std::vector<int64_t>{3, 6}));
    te::Tensor xi = placeholder({1, 1, 4, 4}, ir::DataType::i32(), "xi");
    EXPECT_EQ(te::max_pool2d(xi, te::Pool2dParams::make(2, 2, 1)).dtype(), ir::DataType::i32());
}

} // namespace
} // namespace tessera::testing
