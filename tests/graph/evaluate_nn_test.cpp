// The reference evaluator's neural-network ops against naive loops written here (direct
// definitions with double accumulation), on random inputs with odd sizes.
#include <gtest/gtest.h>

#include <cmath>

#include "graph_test_util.h"

namespace tessera::testing {
namespace {

using graph::Attribute;
using graph::Attributes;
using graph::Op;

// ---- Conv --------------------------------------------------------------------------------------

struct ConvCase {
    int64_t n, c, h, w, m, kh, kw;
    int64_t sh, sw, pt, pl, pb, pr, dh, dw, group;
    bool bias;
};

TensorData conv_ref(const TensorData& x, const TensorData& w, const TensorData* b,
                    const ConvCase& p) {
    const int64_t oh_n = (p.h + p.pt + p.pb - (p.kh - 1) * p.dh - 1) / p.sh + 1;
    const int64_t ow_n = (p.w + p.pl + p.pr - (p.kw - 1) * p.dw - 1) / p.sw + 1;
    TensorData out(DType::F32, {p.n, p.m, oh_n, ow_n});
    const float* px = x.data<float>();
    const float* pw = w.data<float>();
    const int64_t cg = p.c / p.group, mg = p.m / p.group;
    for (int64_t n = 0; n < p.n; ++n)
        for (int64_t m = 0; m < p.m; ++m)
            for (int64_t oh = 0; oh < oh_n; ++oh)
                for (int64_t ow = 0; ow < ow_n; ++ow) {
                    double acc = b ? b->data<float>()[m] : 0.0;
                    for (int64_t ic = 0; ic < cg; ++ic)
                        for (int64_t kh = 0; kh < p.kh; ++kh)
                            for (int64_t kw = 0; kw < p.kw; ++kw) {
                                int64_t ih = oh * p.sh - p.pt + kh * p.dh;
                                int64_t iw = ow * p.sw - p.pl + kw * p.dw;
                                if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w)
                                    continue;
                                int64_t c = (m / mg) * cg + ic;
                                acc += double(px[((n * p.c + c) * p.h + ih) * p.w + iw]) *
                                       pw[((m * cg + ic) * p.kh + kh) * p.kw + kw];
                            }
                    out.data<float>()[((n * p.m + m) * oh_n + oh) * ow_n + ow] =
                        static_cast<float>(acc);
                }
    return out;
}

class ConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTest, MatchesNaiveLoops) {
    const ConvCase& p = GetParam();
    TensorData x = random_tensor({p.n, p.c, p.h, p.w}, 11);
    TensorData w = random_tensor({p.m, p.c / p.group, p.kh, p.kw}, 12);
    TensorData b = random_tensor({p.m}, 13);
    Attributes attrs = {{"strides", Attribute::of_ints({p.sh, p.sw})},
                        {"pads", Attribute::of_ints({p.pt, p.pl, p.pb, p.pr})},
                        {"dilations", Attribute::of_ints({p.dh, p.dw})},
                        {"group", Attribute::of_int(p.group)},
                        {"kernel_shape", Attribute::of_ints({p.kh, p.kw})}};
    std::vector<Operand> ops = {in(x), konst(w)};
    if (p.bias)
        ops.push_back(konst(b));
    auto out = run_node(Op::Conv, ops, attrs);
    EXPECT_TENSOR_NEAR(out[0], conv_ref(x, w, p.bias ? &b : nullptr, p), 1e-5, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvTest,
    ::testing::Values(ConvCase{1, 3, 13, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},
                      ConvCase{2, 4, 9, 11, 6, 3, 2, 2, 1, 0, 1, 2, 0, 1, 2, 2, false},
                      ConvCase{1, 6, 7, 7, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 6, true},
                      ConvCase{1, 1, 28, 28, 7, 5, 5, 1, 1, 0, 0, 0, 0, 1, 1, 1, true},
                      ConvCase{1, 5, 13, 13, 3, 1, 1, 3, 3, 0, 0, 0, 0, 1, 1, 1, false},
                      ConvCase{1, 2, 5, 6, 1, 7, 3, 1, 2, 3, 0, 3, 2, 1, 1, 1, true}));

TEST(ConvTest, RejectsGroupMismatchNamingTheNode) {
    TensorData x = random_tensor({1, 4, 5, 5}, 1), w = random_tensor({3, 2, 1, 1}, 2);
    try {
        run_node(Op::Conv, {in(x), konst(w)}, {{"group", Attribute::of_int(2)}});
        FAIL() << "expected UserError";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("node 'n' (Conv)"), std::string::npos) << e.what();
    }
}

// ---- pools -------------------------------------------------------------------------------------

struct PoolCase {
    bool is_max;
    int64_t h, w, kh, kw, sh, sw, pt, pl, pb, pr, dil;
    bool ceil, include_pad;
};

TensorData pool_ref(const TensorData& x, const PoolCase& p) {
    auto out_dim = [&](int64_t in, int64_t k, int64_t s, int64_t pa, int64_t pe) {
        double span = double(in + pa + pe - (k - 1) * p.dil - 1) / s;
        int64_t o = (p.ceil ? int64_t(std::ceil(span)) : int64_t(std::floor(span))) + 1;
        if (p.ceil && (o - 1) * s >= in + pa)
            --o;
        return o;
    };
    const int64_t N = x.shape()[0], C = x.shape()[1];
    const int64_t OH = out_dim(p.h, p.kh, p.sh, p.pt, p.pb),
                  OW = out_dim(p.w, p.kw, p.sw, p.pl, p.pr);
    TensorData out(DType::F32, {N, C, OH, OW});
    for (int64_t nc = 0; nc < N * C; ++nc)
        for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t ow = 0; ow < OW; ++ow) {
                double best = -INFINITY, sum = 0;
                int64_t cnt = 0, cnt_pad = 0;
                for (int64_t kh = 0; kh < p.kh; ++kh)
                    for (int64_t kw = 0; kw < p.kw; ++kw) {
                        int64_t ih = oh * p.sh - p.pt + kh * p.dil,
                                iw = ow * p.sw - p.pl + kw * p.dil;
                        if (ih < p.h + p.pb && iw < p.w + p.pr)
                            ++cnt_pad; // inside explicit pads
                        if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w)
                            continue;
                        float v = x.data<float>()[(nc * p.h + ih) * p.w + iw];
                        best = std::max(best, double(v));
                        sum += v;
                        ++cnt;
                    }
                double r = p.is_max ? best : sum / double(p.include_pad ? cnt_pad : cnt);
                out.data<float>()[(nc * OH + oh) * OW + ow] = static_cast<float>(r);
            }
    return out;
}

class PoolTest : public ::testing::TestWithParam<PoolCase> {};

TEST_P(PoolTest, MatchesNaiveLoops) {
    const PoolCase& p = GetParam();
    TensorData x = random_tensor({2, 3, p.h, p.w}, 21);
    Attributes attrs = {{"kernel_shape", Attribute::of_ints({p.kh, p.kw})},
                        {"strides", Attribute::of_ints({p.sh, p.sw})},
                        {"pads", Attribute::of_ints({p.pt, p.pl, p.pb, p.pr})},
                        {"ceil_mode", Attribute::of_int(p.ceil)}};
    if (p.is_max)
        attrs["dilations"] = Attribute::of_ints({p.dil, p.dil});
    else
        attrs["count_include_pad"] = Attribute::of_int(p.include_pad);
    auto out = run_node(p.is_max ? Op::MaxPool : Op::AveragePool, {in(x)}, attrs);
    EXPECT_TENSOR_NEAR(out[0], pool_ref(x, p), 1e-6, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PoolTest,
    ::testing::Values(PoolCase{true, 13, 13, 3, 3, 2, 2, 1, 1, 1, 1, 1, false, false},
                      PoolCase{true, 7, 11, 2, 3, 2, 2, 0, 0, 0, 0, 1, true, false},
                      PoolCase{true, 13, 7, 3, 2, 1, 2, 1, 0, 0, 1, 2, false, false},
                      PoolCase{false, 13, 13, 3, 3, 2, 2, 1, 1, 1, 1, 1, false, false},
                      PoolCase{false, 13, 13, 3, 3, 2, 2, 1, 1, 1, 1, 1, false, true},
                      PoolCase{false, 7, 8, 3, 2, 2, 3, 1, 0, 1, 1, 1, true, true},
                      PoolCase{false, 7, 8, 3, 2, 2, 3, 1, 0, 1, 1, 1, true, false}));

TEST(PoolTest, GlobalAveragePool) {
    TensorData x = random_tensor({2, 3, 5, 7}, 31);
    auto out = run_node(Op::GlobalAveragePool, {in(x)});
    TensorData want(DType::F32, {2, 3, 1, 1});
    for (int64_t p = 0; p < 6; ++p) {
        double s = 0;
        for (int64_t i = 0; i < 35; ++i)
            s += x.data<float>()[p * 35 + i];
        want.data<float>()[p] = static_cast<float>(s / 35);
    }
    EXPECT_TENSOR_NEAR(out[0], want, 1e-6, 1e-6);
}

// ---- Gemm and MatMul ---------------------------------------------------------------------------

// Batched naive matmul with explicit broadcasting of batch dims of equal rank.
TensorData matmul_ref(const TensorData& a, const TensorData& b, const Shape& out_shape) {
    TensorData out(DType::F32, out_shape);
    const Shape& as = a.shape();
    const Shape& bs = b.shape();
    const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
    const int64_t batch = graph::shape_numel(out_shape) / (M * N);
    for (int64_t bi = 0; bi < batch; ++bi) {
        // Decompose bi over the output batch dims, then map to a and b with broadcasting.
        int64_t rem = bi, aoff = 0, boff = 0, astride = 1, bstride = 1;
        for (int64_t d = static_cast<int64_t>(out_shape.size()) - 3; d >= 0; --d) {
            int64_t idx = rem % out_shape[d];
            rem /= out_shape[d];
            int64_t ad = d - (int64_t(out_shape.size()) - int64_t(as.size()));
            int64_t bd = d - (int64_t(out_shape.size()) - int64_t(bs.size()));
            if (ad >= 0)
                aoff += (as[ad] == 1 ? 0 : idx) * astride, astride *= as[ad];
            if (bd >= 0)
                boff += (bs[bd] == 1 ? 0 : idx) * bstride, bstride *= bs[bd];
        }
        for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
                double s = 0;
                for (int64_t k = 0; k < K; ++k)
                    s += double(a.data<float>()[aoff * M * K + i * K + k]) *
                         b.data<float>()[boff * K * N + k * N + j];
                out.data<float>()[bi * M * N + i * N + j] = static_cast<float>(s);
            }
    }
    return out;
}

TEST(MatMulTest, MatchesNaiveWithBatchBroadcast) {
    struct Case {
        Shape a, b, out;
    };
    for (const Case& c :
         {Case{{13, 7}, {7, 5}, {13, 5}}, Case{{2, 1, 3, 5}, {4, 5, 7}, {2, 4, 3, 7}},
          Case{{1, 127, 13}, {13, 1}, {1, 127, 1}}}) {
        TensorData a = random_tensor(c.a, 41), b = random_tensor(c.b, 42);
        auto out = run_node(Op::MatMul, {in(a), konst(b)});
        EXPECT_TENSOR_NEAR(out[0], matmul_ref(a, b, c.out), 1e-5, 1e-5);
    }
}

TEST(MatMulTest, VectorOperandsDropTheirDim) {
    TensorData v = random_tensor({5}, 43), m = random_tensor({5, 3}, 44),
               m2 = random_tensor({4, 5}, 45);
    auto vm = run_node(Op::MatMul, {in(v), in(m)});
    EXPECT_TENSOR_NEAR(vm[0], matmul_ref(v.reshaped({1, 5}), m, {1, 3}).reshaped({3}), 1e-5, 1e-5);
    auto mv = run_node(Op::MatMul, {in(m2), in(v)});
    EXPECT_TENSOR_NEAR(mv[0], matmul_ref(m2, v.reshaped({5, 1}), {4, 1}).reshaped({4}), 1e-5, 1e-5);
    auto vv = run_node(Op::MatMul, {in(v), in(v)});
    EXPECT_EQ(vv[0].shape(), Shape{});
    EXPECT_TENSOR_NEAR(
        vv[0], matmul_ref(v.reshaped({1, 5}), v.reshaped({5, 1}), {1, 1}).reshaped({}), 1e-5, 1e-5);
}

TEST(GemmTest, TransposesScalesAndBroadcastsC) {
    const int64_t M = 7, K = 13, N = 5;
    for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb)
            for (const Shape& cs : {Shape{N}, Shape{M, 1}, Shape{}, Shape{M, N}}) {
                TensorData a = random_tensor(ta ? Shape{K, M} : Shape{M, K}, 51);
                TensorData b = random_tensor(tb ? Shape{N, K} : Shape{K, N}, 52);
                TensorData c = random_tensor(cs, 53);
                auto out = run_node(Op::Gemm, {in(a), konst(b), konst(c)},
                                    {{"transA", Attribute::of_int(ta)},
                                     {"transB", Attribute::of_int(tb)},
                                     {"alpha", Attribute::of_float(0.5f)},
                                     {"beta", Attribute::of_float(2.0f)}});
                TensorData want(DType::F32, {M, N});
                for (int64_t i = 0; i < M; ++i)
                    for (int64_t j = 0; j < N; ++j) {
                        double s = 0;
                        for (int64_t k = 0; k < K; ++k)
                            s += double(a.data<float>()[ta ? k * M + i : i * K + k]) *
                                 b.data<float>()[tb ? j * K + k : k * N + j];
                        int64_t ci = cs.empty()       ? 0
                                     : cs.size() == 1 ? j
                                     : cs[1] == 1     ? i
                                                      : i * N + j;
                        want.data<float>()[i * N + j] = float(0.5 * s + 2.0 * c.data<float>()[ci]);
                    }
                EXPECT_TENSOR_NEAR(out[0], want, 1e-5, 1e-5);
            }
}

TEST(GemmTest, InnerDimMismatchIsAnError) {
    TensorData a = random_tensor({3, 4}, 1), b = random_tensor({5, 2}, 2);
    EXPECT_THROW(run_node(Op::Gemm, {in(a), in(b)}), UserError);
}

// ---- normalizations and softmax
// ------------------------------------------------------------------

TEST(NormTest, BatchNormalization) {
    TensorData x = random_tensor({2, 3, 5, 7}, 61);
    TensorData scale = random_tensor({3}, 62), bias = random_tensor({3}, 63),
               mean = random_tensor({3}, 64), var = random_tensor({3}, 65, 0.5f, 2.0f);
    auto out = run_node(Op::BatchNormalization,
                        {in(x), konst(scale), konst(bias), konst(mean), konst(var)},
                        {{"epsilon", Attribute::of_float(1e-3f)}});
    TensorData want(DType::F32, x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) {
        int64_t c = (i / 35) % 3;
        double v = (x.data<float>()[i] - mean.data<float>()[c]) /
                       std::sqrt(double(var.data<float>()[c]) + 1e-3f) * scale.data<float>()[c] +
                   bias.data<float>()[c];
        want.data<float>()[i] = static_cast<float>(v);
    }
    EXPECT_TENSOR_NEAR(out[0], want, 1e-5, 1e-6);
}

TEST(NormTest, SoftmaxAlongEachAxis) {
    TensorData x = random_tensor({3, 5, 7}, 71, -4.0f, 4.0f);
    const Shape s = x.shape();
    for (int64_t axis : {0, 1, 2, -1}) {
        auto out = run_node(Op::Softmax, {in(x)}, {{"axis", Attribute::of_int(axis)}});
        const int64_t a = axis < 0 ? axis + 3 : axis;
        TensorData want(DType::F32, s);
        for (int64_t i = 0; i < x.numel(); ++i) {
            int64_t idx[3] = {i / 35, (i / 7) % 5, i % 7};
            double denom = 0;
            for (int64_t k = 0; k < s[a]; ++k) {
                int64_t j[3] = {idx[0], idx[1], idx[2]};
                j[a] = k;
                denom += std::exp(double(x.data<float>()[(j[0] * 5 + j[1]) * 7 + j[2]]));
            }
            want.data<float>()[i] =
                static_cast<float>(std::exp(double(x.data<float>()[i])) / denom);
        }
        EXPECT_TENSOR_NEAR(out[0], want, 1e-5, 1e-7);
    }
}

TEST(NormTest, LayerNormalizationWithStatistics) {
    TensorData x = random_tensor({2, 3, 5}, 81, -2.0f, 3.0f);
    for (int64_t axis : {-1, 1}) {
        const int64_t len = axis == -1 ? 5 : 15;
        Shape ns = axis == -1 ? Shape{5} : Shape{3, 5};
        TensorData scale = random_tensor(ns, 82), bias = random_tensor({5}, 83);
        auto out = run_node(
            Op::LayerNormalization, {in(x), konst(scale), konst(bias)},
            {{"axis", Attribute::of_int(axis)}, {"epsilon", Attribute::of_float(1e-5f)}}, 3);
        TensorData want(DType::F32, x.shape());
        Shape stat = axis == -1 ? Shape{2, 3, 1} : Shape{2, 1, 1};
        TensorData mean_want(DType::F32, stat), inv_want(DType::F32, stat);
        for (int64_t r = 0; r < 30 / len; ++r) {
            double m = 0, v = 0;
            for (int64_t k = 0; k < len; ++k)
                m += x.data<float>()[r * len + k];
            m /= len;
            for (int64_t k = 0; k < len; ++k)
                v += std::pow(x.data<float>()[r * len + k] - m, 2);
            v /= len;
            for (int64_t k = 0; k < len; ++k)
                want.data<float>()[r * len + k] =
                    float((x.data<float>()[r * len + k] - m) / std::sqrt(v + 1e-5) *
                              scale.data<float>()[k] +
                          bias.data<float>()[k % 5]);
            mean_want.data<float>()[r] = float(m);
            inv_want.data<float>()[r] = float(1 / std::sqrt(v + 1e-5));
        }
        EXPECT_TENSOR_NEAR(out[0], want, 1e-5, 1e-6);
        EXPECT_TENSOR_NEAR(out[1], mean_want, 1e-5, 1e-6);
        EXPECT_TENSOR_NEAR(out[2], inv_want, 1e-5, 1e-6);
    }
}

// ---- reductions
// ----------------------------------------------------------------------------------

TEST(ReduceTest, MeanSumMaxOverAxes) {
    TensorData x = random_tensor({3, 5, 7}, 91);
    auto at = [&](int64_t i, int64_t j, int64_t k) {
        return double(x.data<float>()[(i * 5 + j) * 7 + k]);
    };
    // ReduceMean over axis 1 keeping dims.
    auto mean = run_node(Op::ReduceMean, {in(x)}, {{"axes", Attribute::of_ints({1})}});
    TensorData mean_want(DType::F32, {3, 1, 7});
    for (int64_t i = 0; i < 3; ++i)
        for (int64_t k = 0; k < 7; ++k) {
            double s = 0;
            for (int64_t j = 0; j < 5; ++j)
                s += at(i, j, k);
            mean_want.data<float>()[i * 7 + k] = float(s / 5);
        }
    EXPECT_TENSOR_NEAR(mean[0], mean_want, 1e-6, 1e-7);
    // ReduceSum over axes {0, -1} (an input) without keepdims.
    auto sum = run_node(Op::ReduceSum, {in(x), konst(i64s({0, -1}))},
                        {{"keepdims", Attribute::of_int(0)}});
    TensorData sum_want(DType::F32, {5});
    for (int64_t j = 0; j < 5; ++j) {
        double s = 0;
        for (int64_t i = 0; i < 3; ++i)
            for (int64_t k = 0; k < 7; ++k)
                s += at(i, j, k);
        sum_want.data<float>()[j] = float(s);
    }
    EXPECT_TENSOR_NEAR(sum[0], sum_want, 1e-6, 1e-6);
    // ReduceMax over everything.
    auto mx = run_node(Op::ReduceMax, {in(x)}, {{"keepdims", Attribute::of_int(0)}});
    double best = -INFINITY;
    for (int64_t i = 0; i < x.numel(); ++i)
        best = std::max(best, double(x.data<float>()[i]));
    EXPECT_EQ(mx[0], TensorData::scalar(float(best)));
    // ReduceSum without axes and noop_with_empty_axes is the identity.
    auto noop = run_node(Op::ReduceSum, {in(x)}, {{"noop_with_empty_axes", Attribute::of_int(1)}});
    EXPECT_EQ(noop[0], x);
    // Integer sums are exact.
    TensorData xi = random_ints({4, 3}, 92, -1000, 1000);
    auto si = run_node(Op::ReduceSum, {in(xi), konst(i64s({0}))});
    std::vector<int64_t> v = xi.to_vector<int64_t>(), w(3, 0);
    for (int64_t i = 0; i < 12; ++i)
        w[i % 3] += v[i];
    EXPECT_EQ(si[0], TensorData::from_vector<int64_t>({1, 3}, w));
}

} // namespace
} // namespace tessera::testing
