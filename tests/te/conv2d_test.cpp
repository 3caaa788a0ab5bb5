// conv2d and depthwise_conv2d against the naive reference: strides, asymmetric pads,
// dilations, groups, bias.
#include "op_test_util.h"

#include <gmock/gmock.h>

namespace tessera::testing {
namespace {

using te::placeholder;
const ir::DataType f32 = ir::DataType::f32();

struct ConvCase {
    int64_t n, c, h, w, k, r, s;
    ref::ConvArgs a;
    bool bias;
};
void PrintTo(const ConvCase& c, std::ostream* os) {
    *os << "x[" << c.n << "," << c.c << "," << c.h << "," << c.w << "] w[" << c.k << ",.," << c.r
        << "," << c.s << "] stride " << c.a.stride_h << "x" << c.a.stride_w << " pads "
        << c.a.pad_top << "," << c.a.pad_left << "," << c.a.pad_bottom << "," << c.a.pad_right
        << " dil " << c.a.dilation_h << "x" << c.a.dilation_w << " groups " << c.a.groups
        << " bias " << c.bias;
}

ref::ConvArgs args(int64_t sh, int64_t sw, int64_t pt, int64_t pl, int64_t pb, int64_t pr,
                   int64_t dh, int64_t dw, int64_t groups) {
    ref::ConvArgs a;
    a.stride_h = sh, a.stride_w = sw;
    a.pad_top = pt, a.pad_left = pl, a.pad_bottom = pb, a.pad_right = pr;
    a.dilation_h = dh, a.dilation_w = dw;
    a.groups = groups;
    return a;
}

te::Conv2dParams params_of(const ref::ConvArgs& a) {
    te::Conv2dParams p;
    p.stride_h = a.stride_h, p.stride_w = a.stride_w;
    p.pad_top = a.pad_top, p.pad_left = a.pad_left, p.pad_bottom = a.pad_bottom,
    p.pad_right = a.pad_right;
    p.dilation_h = a.dilation_h, p.dilation_w = a.dilation_w;
    p.groups = a.groups;
    return p;
}

class Conv2dCases : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Conv2dCases, MatchesReference) {
    const ConvCase& p = GetParam();
    te::Tensor x = placeholder({p.n, p.c, p.h, p.w}, f32, "x");
    te::Tensor w = placeholder({p.k, p.c / p.a.groups, p.r, p.s}, f32, "w");
    te::Tensor bias = p.bias ? placeholder({p.k}, f32, "bias") : te::Tensor();
    std::vector<te::Tensor> ins = {x, w};
    if (p.bias)
        ins.push_back(bias);
    te::Compute c = te::make_compute(ins, {te::conv2d(x, w, params_of(p.a), bias)});
    auto in = random_inputs(c, 31);
    auto r = as_refs(c, in);
    expect_output(c, in, ref::conv2d(r[0], r[1], p.a, p.bias ? &r[2] : nullptr));
    bool padded = p.a.pad_top || p.a.pad_left || p.a.pad_bottom || p.a.pad_right;
    EXPECT_EQ(stage_names(c).front() == "conv2d_pad", padded);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Conv2dCases,
    ::testing::Values(ConvCase{1, 3, 7, 7, 4, 3, 3, args(1, 1, 1, 1, 1, 1, 1, 1, 1), false},
                      ConvCase{2, 4, 13, 11, 6, 3, 5, args(2, 1, 1, 2, 0, 1, 1, 2, 2), true},
                      ConvCase{1, 1, 127, 5, 1, 7, 1, args(3, 1, 3, 0, 2, 0, 1, 1, 1), false},
                      ConvCase{1, 2, 1, 1, 3, 1, 1, args(1, 1, 0, 0, 0, 0, 1, 1, 1), true},
                      ConvCase{1, 3, 13, 13, 2, 3, 3, args(1, 1, 2, 2, 2, 2, 2, 2, 1), false},
                      ConvCase{1, 6, 13, 13, 6, 3, 3, args(2, 2, 1, 1, 1, 1, 1, 1, 6), false},
                      ConvCase{1, 6, 7, 13, 3, 2, 2, args(2, 3, 0, 0, 0, 0, 1, 1, 3), true}));

TEST(DepthwiseConv2d, MatchesGroupedReference) {
    for (int64_t mult : {1, 2}) {
        te::Tensor x = placeholder({1, 5, 13, 7}, f32, "x");
        te::Tensor w = placeholder({5 * mult, 1, 3, 3}, f32, "w");
        te::Tensor bias = placeholder({5 * mult}, f32, "bias");
        te::Conv2dParams p = te::Conv2dParams::make(2, 1);
        te::Compute c = te::make_compute({x, w, bias}, {te::depthwise_conv2d(x, w, p, bias)});
        auto in = random_inputs(c, 37);
        auto r = as_refs(c, in);
        expect_output(c, in, ref::conv2d(r[0], r[1], args(2, 2, 1, 1, 1, 1, 1, 1, 5), &r[2]));
    }
}

void expect_conv_error(const te::Tensor& x, const te::Tensor& w, const te::Conv2dParams& p,
                       const std::string& what) {
    try {
        te::conv2d(x, w, p);
        FAIL() << "no error, wanted " << what;
    } catch (const tessera::UserError& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr(what));
    }
}

TEST(Conv2d, BadShapesAndParamsAreUserErrors) {
    te::Tensor x = placeholder({1, 6, 7, 7}, f32, "x");
    expect_conv_error(x, placeholder({4, 6, 3, 3}, f32, "w"), te::Conv2dParams::make(1, 0, 1, 4),
                      "conv2d: input channels 6 not divisible by groups 4");
    expect_conv_error(x, placeholder({4, 3, 3, 3}, f32, "w"), te::Conv2dParams::make(1, 0),
                      "must have 6 input channels");
    expect_conv_error(x, placeholder({4, 6, 9, 3}, f32, "w"), te::Conv2dParams::make(1, 0),
                      "larger than the padded input");
    expect_conv_error(x, placeholder({4, 6, 3, 3}, f32, "w"), te::Conv2dParams::make(0, 0),
                      "strides must be positive");
    expect_conv_error(x, placeholder({4, 6, 3, 3}, f32, "w"), te::Conv2dParams::make(1, -1),
                      "pads must be non-negative");
    expect_conv_error(placeholder({6, 7, 7}, f32, "x3"), placeholder({4, 6, 3, 3}, f32, "w"),
                      te::Conv2dParams::make(1, 0), "conv2d: input 'x3' must have rank 4");
    EXPECT_THROW(te::conv2d(x, placeholder({4, 6, 3, 3}, f32, "w"), te::Conv2dParams::make(1, 0),
                            placeholder({5}, f32, "b")),
                 tessera::UserError);
    EXPECT_THROW(
        te::depthwise_conv2d(x, placeholder({4, 1, 3, 3}, f32, "w"), te::Conv2dParams::make(1, 0)),
        tessera::UserError);
}

} // namespace
} // namespace tessera::testing
