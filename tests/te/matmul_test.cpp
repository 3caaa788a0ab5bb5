// matmul (numpy semantics), dense and batch_matmul against the naive references.
#include "op_test_util.h"

#include <gmock/gmock.h>

namespace tessera::testing {
namespace {

using te::placeholder;
const ir::DataType f32 = ir::DataType::f32();

struct MatmulCase {
    int64_t m, n, k;
};
void PrintTo(const MatmulCase& c, std::ostream* os) {
    *os << "m=" << c.m << " n=" << c.n << " k=" << c.k;
}

class MatmulSizes : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(MatmulSizes, MatchesReference) {
    auto [m, n, k] = GetParam();
    te::Tensor a = placeholder({m, k}, f32, "a"), b = placeholder({k, n}, f32, "b");
    te::Compute c = te::make_compute({a, b}, {te::matmul(a, b)});
    auto in = random_inputs(c, 11);
    auto r = as_refs(c, in);
    expect_output(c, in, ref::matmul(r[0], r[1]));
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatmulSizes,
                         ::testing::Values(MatmulCase{1, 1, 1}, MatmulCase{7, 13, 5},
                                           MatmulCase{13, 7, 127}, MatmulCase{127, 3, 2},
                                           MatmulCase{1, 13, 7}));

/// numpy matmul reference for batched operands via explicit index mapping.
RefTensor numpy_matmul(const RefTensor& a, const RefTensor& b,
                       const std::vector<int64_t>& out_shape, bool a_vec, bool b_vec) {
    RefTensor y(out_shape);
    std::vector<int64_t> as = a.shape, bs = b.shape;
    if (a_vec)
        as.insert(as.begin(), 1);
    if (b_vec)
        bs.push_back(1);
    RefTensor A(as, a.data), B(bs, b.data);
    int64_t k = as.back();
    size_t nb = out_shape.size() - (a_vec ? 0 : 1) - (b_vec ? 0 : 1);
    for (int64_t f = 0; f < y.size(); ++f) {
        std::vector<int64_t> idx = unravel(f, out_shape);
        int64_t i = a_vec ? 0 : idx[nb], j = b_vec ? 0 : idx[idx.size() - 1];
        std::vector<int64_t> ai(as.size()), bi(bs.size());
        for (size_t d = 0; d + 2 < as.size(); ++d) {
            size_t od = nb - (as.size() - 2) + d;
            ai[d] = as[d] == 1 ? 0 : idx[od];
        }
        for (size_t d = 0; d + 2 < bs.size(); ++d) {
            size_t od = nb - (bs.size() - 2) + d;
            bi[d] = bs[d] == 1 ? 0 : idx[od];
        }
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) {
            ai[as.size() - 2] = i, ai[as.size() - 1] = p;
            bi[bs.size() - 2] = p, bi[bs.size() - 1] = j;
            acc += (double)A.at(ai) * B.at(bi);
        }
        y.data[(size_t)f] = (float)acc;
    }
    return y;
}

struct BroadcastCase {
    std::vector<int64_t> a, b, out;
};
void PrintTo(const BroadcastCase& c, std::ostream* os) {
    *os << te::shape_to_string(c.a) << " x " << te::shape_to_string(c.b);
}

class MatmulBroadcast : public ::testing::TestWithParam<BroadcastCase> {};

TEST_P(MatmulBroadcast, MatchesReference) {
    const auto& p = GetParam();
    te::Tensor a = placeholder(p.a, f32, "a"), b = placeholder(p.b, f32, "b");
    te::Tensor y = te::matmul(a, b);
    EXPECT_EQ(y.shape(), p.out);
    te::Compute c = te::make_compute({a, b}, {y});
    auto in = random_inputs(c, 5);
    auto r = as_refs(c, in);
    expect_output(c, in, numpy_matmul(r[0], r[1], p.out, p.a.size() == 1, p.b.size() == 1));
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatmulBroadcast,
                         ::testing::Values(BroadcastCase{{2, 1, 3, 4}, {5, 4, 7}, {2, 5, 3, 7}},
                                           BroadcastCase{{3, 7, 13}, {13, 2}, {3, 7, 2}},
                                           BroadcastCase{{13}, {13, 7}, {7}},
                                           BroadcastCase{{7, 13}, {13}, {7}},
                                           BroadcastCase{{13}, {13}, {}},
                                           BroadcastCase{{13}, {2, 13, 3}, {2, 3}}));

TEST(Matmul, InnerDimMismatchIsUserError) {
    te::Tensor a = placeholder({2, 3}, f32, "a"), b = placeholder({4, 5}, f32, "b");
    try {
        te::matmul(a, b);
        FAIL() << "no error";
    } catch (const tessera::UserError& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr("matmul: inner dims differ"));
        EXPECT_THAT(e.what(), ::testing::HasSubstr("k=3"));
        EXPECT_THAT(e.what(), ::testing::HasSubstr("k=4"));
    }
}

TEST(Matmul, BatchMismatchIsUserError) {
    te::Tensor a = placeholder({2, 3, 4}, f32, "a"), b = placeholder({3, 4, 5}, f32, "b");
    EXPECT_THROW(te::matmul(a, b), tessera::UserError);
    EXPECT_THROW(te::matmul(a, placeholder({4}, ir::DataType::i32(), "c")), tessera::UserError);
}

TEST(BatchMatmul, MatchesReference) {
    for (auto [ba, bb] : {std::pair<int64_t, int64_t>{3, 3}, {1, 4}, {4, 1}}) {
        te::Tensor a = placeholder({ba, 7, 13}, f32, "a"), b = placeholder({bb, 13, 5}, f32, "b");
        te::Compute c = te::make_compute({a, b}, {te::batch_matmul(a, b)});
        auto in = random_inputs(c, 17);
        auto r = as_refs(c, in);
        expect_output(c, in, ref::batch_matmul(r[0], r[1]));
    }
}

TEST(BatchMatmul, RequiresRank3) {
    te::Tensor a = placeholder({7, 13}, f32, "a"), b = placeholder({13, 5}, f32, "b");
    EXPECT_THROW(te::batch_matmul(a, b), tessera::UserError);
}

TEST(Dense, MatchesReferenceWithAndWithoutBias) {
    for (bool with_bias : {false, true}) {
        for (auto [m, n, k] : {MatmulCase{1, 1, 1}, MatmulCase{7, 13, 127}}) {
            te::Tensor x = placeholder({m, k}, f32, "x"), w = placeholder({n, k}, f32, "w");
            te::Tensor bias = with_bias ? placeholder({n}, f32, "bias") : te::Tensor();
            std::vector<te::Tensor> ins = {x, w};
            if (with_bias)
                ins.push_back(bias);
            te::Compute c = te::make_compute(ins, {te::relu(te::dense(x, w, bias))});
            auto in = random_inputs(c, 23);
            auto r = as_refs(c, in);
            expect_output(c, in, ref::dense(r[0], r[1], with_bias ? &r[2] : nullptr, true));
            if (with_bias) {
                EXPECT_EQ(stage_names(c),
                          (std::vector<std::string>{"dense", "dense_bias", "relu"}));
            }
        }
    }
}

TEST(Dense, LeadingDimsArePreserved) {
    te::Tensor x = placeholder({2, 3, 7}, f32, "x"), w = placeholder({5, 7}, f32, "w");
    te::Compute c = te::make_compute({x, w}, {te::dense(x, w)});
    EXPECT_EQ(c.outputs[0].shape(), (std::vector<int64_t>{2, 3, 5}));
    auto in = random_inputs(c, 3);
    auto r = as_refs(c, in);
    RefTensor x2({6, 7}, r[0].data);
    RefTensor want = ref::dense(x2, r[1], nullptr, false);
    expect_output(c, in, RefTensor({2, 3, 5}, want.data));
}

TEST(Dense, ShapeErrorsNameTheOp) {
    te::Tensor x = placeholder({3, 7}, f32, "x");
    try {
        te::dense(x, placeholder({5, 6}, f32, "w"));
        FAIL() << "no error";
    } catch (const tessera::UserError& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr("dense: weight 'w' [5, 6] must be [n, 7]"));
    }
    EXPECT_THROW(te::dense(x, placeholder({5, 7}, f32, "w"), placeholder({4}, f32, "b")),
                 tessera::UserError);
}

} // namespace
} // namespace tessera::testing

namespace tessera::te {

TEST(Matmul, ProductPrecisionNamesWhatTheProductsRunOn) {
    using ir::DataType;
    const Tensor a = placeholder({5, 6}, DataType::f32(), "a");
    const Tensor b = placeholder({6, 3}, DataType::f32(), "b");
    EXPECT_EQ(product_precision(make_compute({a, b}, {matmul(a, b)})), "f32");
    const Tensor xb = placeholder({5, 6}, DataType::bf16(), "xb");
    const Tensor wb = placeholder({3, 3}, DataType::i32(), "wb");
    EXPECT_EQ(product_precision(make_compute({xb, wb}, {bf16_matmul(xb, wb)})), "bf16");
    const Tensor xq = placeholder({5, 8}, DataType::u8(), "xq");
    const Tensor wq = placeholder({2, 3}, DataType::i32(), "wq");
    const Tensor off = placeholder({3}, DataType::i32(), "off");
    const Tensor sc = placeholder({3}, DataType::f32(), "sc");
    EXPECT_EQ(product_precision(make_compute({xq, wq, off, sc}, {qmatmul(xq, wq, off, sc)})),
              "int8");
}

} // namespace tessera::te
