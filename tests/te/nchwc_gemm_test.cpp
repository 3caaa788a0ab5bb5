// The NCHW[x]c builders (layout_to_nchwc, conv2d_nchwc, layout_from_nchwc) and gemm against the
// naive references, through lower_default + the interpreter and the LLVM JIT; count_flops.
#include "op_test_util.h"

#include "tessera/te/flops.h"

namespace tessera::testing {
namespace {

using te::placeholder;
const ir::DataType f32 = ir::DataType::f32();

struct BlockedConvCase {
    int64_t c, h, w, k, r, block;
    int64_t stride, pad;
    bool depthwise, bias;
    int64_t groups = 1; ///< groups of whole blocks (c and k multiples of block * groups)
};
void PrintTo(const BlockedConvCase& p, std::ostream* os) {
    *os << "c" << p.c << " " << p.h << "x" << p.w << " k" << p.k << " r" << p.r << " block "
        << p.block << " stride " << p.stride << " pad " << p.pad
        << (p.depthwise ? " depthwise" : "") << (p.bias ? " bias" : "") << " groups " << p.groups;
}

class BlockedConv : public ::testing::TestWithParam<BlockedConvCase> {};

// NCHW in -> blocked -> conv2d_nchwc -> NCHW out equals the NCHW conv whose weights are read
// out of the blocked ones. The weights' padding entries are random: they meet only the zero
// padding channels of the input, or feed padding channels the output drops.
TEST_P(BlockedConv, MatchesNchwReference) {
    const BlockedConvCase& p = GetParam();
    const int64_t b = p.block, cb = (p.c + b - 1) / b, kb = (p.k + b - 1) / b;
    te::Tensor x = placeholder({1, p.c, p.h, p.w}, f32, "x");
    te::Tensor wb = p.depthwise ? placeholder({kb, 1, p.r, p.r, 1, b}, f32, "wb")
                                : placeholder({kb, cb / p.groups, p.r, p.r, b, b}, f32, "wb");
    te::Tensor bb = p.bias ? placeholder({kb, b}, f32, "bb") : te::Tensor();
    te::Conv2dParams params = te::Conv2dParams::make(p.stride, p.pad, 1, p.groups);
    te::Tensor y = te::conv2d_nchwc(te::layout_to_nchwc(x, b), wb, params, bb, p.depthwise);
    std::vector<te::Tensor> ins = {x, wb};
    if (p.bias)
        ins.push_back(bb);
    te::Compute c = te::make_compute(ins, {te::layout_from_nchwc(y, p.k)});
    auto in = random_inputs(c, 41);
    const int64_t cw = p.depthwise ? 1 : p.c / p.groups;
    RefTensor w({p.k, cw, p.r, p.r});
    const int64_t xc = p.depthwise ? 1 : b, cbw = p.depthwise ? 1 : cb / p.groups;
    for (int64_t k = 0; k < p.k; ++k)
        for (int64_t ci = 0; ci < cw; ++ci)
            for (int64_t r = 0; r < p.r; ++r)
                for (int64_t s = 0; s < p.r; ++s)
                    w.data[((k * cw + ci) * p.r + r) * p.r + s] =
                        in[1][((((k / b) * cbw + ci / xc) * p.r + r) * p.r + s) * xc * b +
                              (ci % xc) * b + k % b];
    RefTensor bias({p.k});
    if (p.bias)
        for (int64_t k = 0; k < p.k; ++k)
            bias.data[k] = in[2][k];
    ref::ConvArgs a;
    a.stride_h = a.stride_w = p.stride;
    a.pad_top = a.pad_left = a.pad_bottom = a.pad_right = p.pad;
    a.groups = p.depthwise ? p.c : p.groups;
    expect_output(c, in,
                  ref::conv2d(RefTensor({1, p.c, p.h, p.w}, in[0]), w, a,
                              p.bias ? &bias : nullptr));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BlockedConv,
    ::testing::Values(BlockedConvCase{13, 7, 9, 11, 3, 8, 1, 1, false, true},
                      BlockedConvCase{16, 13, 5, 16, 3, 8, 2, 1, false, false},
                      BlockedConvCase{3, 13, 13, 7, 1, 4, 1, 0, false, true},
                      BlockedConvCase{1, 7, 7, 1, 3, 1, 1, 1, false, true},
                      BlockedConvCase{5, 9, 7, 5, 3, 4, 1, 1, true, true},
                      BlockedConvCase{8, 7, 13, 8, 3, 8, 2, 0, true, false},
                      // Groups of 2 input and 2 output blocks, of one
                      // each (strided), of 1 input and 2 output blocks.
                      BlockedConvCase{32, 9, 7, 32, 3, 8, 1, 1, false, true, 2},
                      BlockedConvCase{24, 11, 9, 24, 3, 8, 2, 1, false, false, 3},
                      BlockedConvCase{16, 7, 5, 32, 1, 8, 1, 0, false, true, 2}));

TEST(BlockedLayout, RoundTripAndErrors) {
    te::Tensor x = placeholder({2, 13, 3, 5}, f32, "x");
    te::Compute c = te::make_compute({x}, {te::layout_from_nchwc(te::layout_to_nchwc(x, 8), 13)});
    auto in = random_inputs(c, 5);
    expect_output(c, in, RefTensor({2, 13, 3, 5}, in[0]), 0.0);
    EXPECT_EQ(te::layout_to_nchwc(x, 8).shape(), (std::vector<int64_t>{2, 2, 3, 5, 8}));
    EXPECT_THROW(te::layout_to_nchwc(x, 0), UserError);
    EXPECT_THROW(te::layout_from_nchwc(te::layout_to_nchwc(x, 8), 17), UserError);
    te::Tensor xb = placeholder({1, 2, 5, 5, 8}, f32, "xb");
    EXPECT_THROW(te::conv2d_nchwc(xb, placeholder({2, 3, 3, 3, 8, 8}, f32, "w"),
                                  te::Conv2dParams::make(1, 1)),
                 UserError);
    // Groups are given, not read off the weight: one input block per output block is two
    // groups only when p.groups says so.
    te::Tensor w_half = placeholder({2, 1, 3, 3, 8, 8}, f32, "w_half");
    EXPECT_THROW(te::conv2d_nchwc(xb, w_half, te::Conv2dParams::make(1, 1)), UserError);
    EXPECT_NO_THROW(te::conv2d_nchwc(xb, w_half, te::Conv2dParams::make(1, 1, 1, 2)));
}

struct GemmCase {
    int64_t m, k, n;
    bool trans_a, trans_b;
    double alpha, beta;
    std::vector<int64_t> c_shape; ///< empty: no C
};
void PrintTo(const GemmCase& g, std::ostream* os) {
    *os << g.m << "x" << g.k << "x" << g.n << " tA " << g.trans_a << " tB " << g.trans_b
        << " alpha " << g.alpha << " beta " << g.beta << " C rank " << g.c_shape.size();
}

class Gemm : public ::testing::TestWithParam<GemmCase> {};

TEST_P(Gemm, MatchesReference) {
    const GemmCase& p = GetParam();
    te::Tensor a = placeholder(p.trans_a ? std::vector<int64_t>{p.k, p.m}
                                         : std::vector<int64_t>{p.m, p.k},
                               f32, "a");
    te::Tensor b = placeholder(p.trans_b ? std::vector<int64_t>{p.n, p.k}
                                         : std::vector<int64_t>{p.k, p.n},
                               f32, "b");
    te::Tensor cc = p.c_shape.empty() ? te::Tensor() : placeholder(p.c_shape, f32, "c");
    std::vector<te::Tensor> ins = {a, b};
    if (cc.defined())
        ins.push_back(cc);
    te::Compute c = te::make_compute(
        ins, {te::gemm(a, b, cc, p.alpha, p.beta, p.trans_a, p.trans_b)});
    auto in = random_inputs(c, 53);
    RefTensor want({p.m, p.n});
    for (int64_t i = 0; i < p.m; ++i)
        for (int64_t j = 0; j < p.n; ++j) {
            double acc = 0;
            for (int64_t q = 0; q < p.k; ++q)
                acc += double(in[0][p.trans_a ? q * p.m + i : i * p.k + q]) *
                       in[1][p.trans_b ? j * p.k + q : q * p.n + j];
            double cv = 0;
            if (!p.c_shape.empty()) {
                const auto& s = p.c_shape;
                int64_t off = 0;
                if (s.size() == 1)
                    off = s[0] == 1 ? 0 : j;
                else if (s.size() == 2)
                    off = (s[0] == 1 ? 0 : i) * s[1] + (s[1] == 1 ? 0 : j);
                cv = in[2][off];
            }
            want.data[i * p.n + j] = static_cast<float>(p.alpha * acc + p.beta * cv);
        }
    expect_output(c, in, want);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Gemm,
                         ::testing::Values(GemmCase{7, 13, 5, false, true, 1.0, 1.0, {5}},
                                           GemmCase{1, 127, 13, true, false, 0.5, 2.0, {1, 13}},
                                           GemmCase{13, 7, 1, true, true, 1.0, 1.0, {13, 1}},
                                           GemmCase{1, 1, 1, false, false, 1.0, 1.0, {}},
                                           GemmCase{7, 5, 13, false, false, 1.5, 0.25, {7, 13}},
                                           GemmCase{5, 3, 7, false, false, 1.0, 1.0, {}}));

TEST(Gemm, BadShapesAreUserErrors) {
    te::Tensor a = placeholder({7, 5}, f32, "a");
    EXPECT_THROW(te::gemm(a, placeholder({4, 3}, f32, "b"), te::Tensor()), UserError);
    EXPECT_THROW(te::gemm(a, placeholder({5, 3}, f32, "b"), placeholder({4}, f32, "c")),
                 UserError);
}

TEST(CountFlops, BlockedConvCountsMultiplyAddsTwice) {
    te::Tensor xb = placeholder({1, 2, 7, 7, 8}, f32, "xb");
    te::Tensor wb = placeholder({3, 2, 3, 3, 8, 8}, f32, "wb");
    te::Tensor bb = placeholder({3, 8}, f32, "bb");
    te::Tensor y = te::conv2d_nchwc(xb, wb, te::Conv2dParams::make(1, 1), bb);
    const int64_t outputs = 1 * 24 * 7 * 7;
    // Per output: 16 input channels x 9 taps multiply-adds, then one bias add; the pad stage
    // moves data only.
    EXPECT_EQ(te::count_flops(te::make_compute({xb, wb, bb}, {y})),
              outputs * (2 * 16 * 9) + outputs);
    // Softmax along 13: max (1 per element), exp(x - max) (2), sum (1), divide (1).
    te::Tensor in = placeholder({7, 13}, f32, "in");
    EXPECT_EQ(te::count_flops(te::make_compute({in}, {te::softmax(in)})), 7 * 13 * 5);
}

} // namespace
} // namespace tessera::testing
