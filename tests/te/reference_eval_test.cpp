// The direct tensor-expression evaluator against naive C++ on random inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "common/reference_ops.h"
#include "common/test_util.h"
#include "tessera/ir/interpreter.h"
#include "tessera/ir/op.h"
#include "tessera/lower/lower_default.h"
#include "tessera/support/error.h"
#include "tessera/te/op_library.h"
#include "tessera/te/reference_eval.h"
#include "tessera/te/tensor.h"

using namespace tessera;
using namespace tessera::ir;

TEST(ReferenceEval, MatmulMatchesNaiveLoops) {
    const int64_t M = 7, N = 13, K = 127;
    Tensor a = te::placeholder({M, K}, DataType::f32(), "a");
    Tensor b = te::placeholder({K, N}, DataType::f32(), "b");
    Tensor c = te::matmul(a, b);
    auto av = tessera::testing::random_floats(M * K, 1),
         bv = tessera::testing::random_floats(K * N, 2);
    te::ReferenceEvaluator ref;
    ref.bind(a, av.data());
    ref.bind(b, bv.data());
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            double want = 0;
            for (int64_t k = 0; k < K; ++k)
                want += (double)av[i * K + k] * bv[k * N + j];
            EXPECT_NEAR(ref.at(c, {i, j}), want, 1e-9);
        }
}

TEST(ReferenceEval, MultiStageSoftmaxRowsSumToOne) {
    const int64_t M = 3, N = 13;
    Tensor x = te::placeholder({M, N}, DataType::f32(), "x");
    Tensor y = te::softmax(x);
    auto xv = tessera::testing::random_floats(M * N, 3, -4, 4);
    te::ReferenceEvaluator ref;
    ref.bind(x, xv.data());
    for (int64_t i = 0; i < M; ++i) {
        double total = 0, denom = 0;
        for (int64_t j = 0; j < N; ++j)
            denom += std::exp((double)xv[i * N + j]);
        for (int64_t j = 0; j < N; ++j) {
            double v = ref.at(y, {i, j});
            EXPECT_NEAR(v, std::exp((double)xv[i * N + j]) / denom, 1e-12);
            total += v;
        }
        EXPECT_NEAR(total, 1.0, 1e-12);
    }
}

TEST(ReferenceEval, PaddedConvolutionBranchIsNotEvaluated) {
    // The padding Select must not read outside the input.
    Tensor x = te::placeholder({1, 1, 7, 7}, DataType::f32(), "x");
    Tensor w = te::placeholder({1, 1, 3, 3}, DataType::f32(), "w");
    te::Conv2dParams p = te::Conv2dParams::make(1, 1);
    Tensor y = te::conv2d(x, w, p);
    auto xv = tessera::testing::random_floats(49, 4), wv = tessera::testing::random_floats(9, 5);
    te::ReferenceEvaluator ref;
    ref.bind(x, xv.data());
    ref.bind(w, wv.data());
    double want = 0;
    for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s) {
            int h = r - 1, ww = s - 1;
            if (h >= 0 && ww >= 0)
                want += (double)xv[h * 7 + ww] * wv[r * 3 + s];
        }
    EXPECT_NEAR(ref.at(y, {0, 0, 0, 0}), want, 1e-9);
}

TEST(ReferenceEval, UnboundInputAndBadIndexAreInternalErrors) {
    Tensor x = te::placeholder({4}, DataType::f32(), "x");
    Tensor y = te::relu(x);
    te::ReferenceEvaluator ref;
    EXPECT_THROW(ref.at(y, {0}), InternalError);
    std::vector<float> xv = tessera::testing::random_floats(4, 6);
    ref.bind(x, xv.data());
    EXPECT_THROW(ref.at(y, {4}), InternalError);
    EXPECT_FLOAT_EQ((float)ref.at(y, {1}), std::max(0.0f, xv[1]));
}

TEST(ReferenceEval, Dot4U8S8ReductionMatchesBytewiseReference) {
    // The int8 convolution's inner product: out[m] = acc[m] + sum_k dot4_u8s8(x[m, k], w[k]) on
    // random words (x's bytes above 127 and w's negative bytes are common), evaluated directly
    // and through the default lowering and the interpreter.
    const int64_t M = 9, K = 13;
    const DataType i32 = DataType::i32();
    Tensor x = te::placeholder({M, K}, i32, "x");
    Tensor w = te::placeholder({K}, i32, "w");
    Tensor acc = te::placeholder({M}, i32, "acc");
    IterVar k = te::reduce_axis(K, "k");
    Tensor dots = te::compute(
        {M},
        [&](const std::vector<Var>& i) {
            return te::sum(dot4_u8s8(x(i[0], k.var), w(k.var)), {k});
        },
        "dots");
    Tensor out = te::compute(
        {M}, [&](const std::vector<Var>& i) { return acc(i[0]) + dots(i[0]); }, "out");
    auto xv = tessera::testing::random_words(M * K, 1), wv = tessera::testing::random_words(K, 2),
         av = tessera::testing::random_words(M, 3);
    for (auto& v : av)
        v /= 2; // the sum stays inside i32, where the evaluator does not wrap
    std::vector<int32_t> want(M);
    for (int64_t m = 0; m < M; ++m) {
        int64_t s = av[m];
        for (int64_t kk = 0; kk < K; ++kk)
            s += tessera::testing::ref::dot4_u8s8(xv[m * K + kk], wv[kk]);
        want[m] = static_cast<int32_t>(s);
    }
    te::ReferenceEvaluator ref;
    ref.bind(x, xv.data());
    ref.bind(w, wv.data());
    ref.bind(acc, av.data());
    for (int64_t m = 0; m < M; ++m)
        EXPECT_EQ(ref.at(out, {m}), want[m]) << m;

    const LoweredFunc f = lower::lower_default(te::make_compute({x, w, acc}, {out}), "dot4");
    std::vector<int32_t> got(M, 0x5a5a5a5a);
    interpret(f, {xv.data(), wv.data(), av.data(), got.data()});
    EXPECT_EQ(got, want);
}

TEST(ReferenceEval, BytesAsWordReadsFourBytesOfTheLastAxis) {
    // Words of 4 channels packed from a [3, 12] u8 image (odd rows, bytes above 127), directly
    // and through the default lowering and the interpreter.
    Tensor x = te::placeholder({3, 12}, DataType::u8(), "x");
    Tensor words = te::compute(
        {3, 3}, [&](const std::vector<Var>& i) { return bytes_as_word(x(i[0], i[1] * Expr(4))); },
        "words");
    const std::vector<int32_t> random = tessera::testing::random_words(9, 4);
    std::vector<uint8_t> xv(36);
    std::memcpy(xv.data(), random.data(), xv.size());
    te::ReferenceEvaluator ref;
    ref.bind(x, xv.data());
    for (int64_t r = 0; r < 3; ++r)
        for (int64_t c = 0; c < 3; ++c)
            EXPECT_EQ(ref.at(words, {r, c}), random[r * 3 + c]) << r << ", " << c;
    const LoweredFunc f = lower::lower_default(te::make_compute({x}, {words}), "words");
    std::vector<int32_t> got(9, 0);
    interpret(f, {xv.data(), got.data()});
    EXPECT_EQ(got, random);
}
