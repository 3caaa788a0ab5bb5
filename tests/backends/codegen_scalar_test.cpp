// LLVM code generation of scalar IR through the JIT: arithmetic, floor division, casts,
// comparisons, selects, min/max, math calls, lets, allocations and branches.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "backends/jit_harness.h"
#include "common/test_util.h"
#include "tessera/ir/op.h"
#include "tessera/support/rng.h"

using namespace tessera;
using namespace tessera::ir;
using namespace tessera::testing;

namespace {

const int64_t kSizes[] = {1, 7, 13, 127};

int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

std::vector<int64_t> random_ints(size_t n, uint64_t seed, int64_t lo, int64_t hi,
                                 bool nonzero = false) {
    Rng rng(seed);
    std::vector<int64_t> v(n);
    for (auto& x : v) {
        do
            x = rng.uniform_int(lo, hi);
        while (nonzero && x == 0);
    }
    return v;
}

Expr ld(const Buffer& b, Expr i) { return Load::make(b, i); }

} // namespace

TEST(CodegenScalar, FloatArithmeticWithContraction) {
    for (int64_t n : kSizes) {
        Buffer A = buf("A", DataType::f32(), n), B = buf("B", DataType::f32(), n),
               C = buf("C", DataType::f32(), n), O = buf("O", DataType::f32(), n),
               P = buf("P", DataType::f32(), n);
        Stmt body = loop("i", n, ForKind::Serial, [&](Var i) {
            return Seq::make(
                {Store::make(O, ld(A, i) * ld(B, i) + ld(C, i) - ld(A, i) / ld(B, i), i),
                 Store::make(P, ld(C, i) - ld(A, i) * ld(B, i), i)});
        });
        JitKernel k = jit_compile({A, B, C, O, P}, body);
        auto a = random_floats(n, 1), b = random_floats(n, 2, 0.5f, 2.0f), c = random_floats(n, 3);
        std::vector<float> o(n), p(n), want_o(n), want_p(n);
        k(a, b, c, o, p);
        for (int64_t i = 0; i < n; ++i) {
            want_o[i] = a[i] * b[i] + c[i] - a[i] / b[i];
            want_p[i] = c[i] - a[i] * b[i];
        }
        EXPECT_LT(max_rel_error(o, want_o), 1e-5) << "n=" << n;
        EXPECT_LT(max_rel_error(p, want_p), 1e-5) << "n=" << n;
    }
}

TEST(CodegenScalar, DoubleArithmetic) {
    const int64_t n = 13;
    Buffer A = buf("A", DataType::f64(), n), O = buf("O", DataType::f64(), n);
    Stmt body = loop("i", n, ForKind::Serial, [&](Var i) {
        Expr a = ld(A, i);
        return Store::make(
            O, a * a - make_const(DataType::f64(), 0.25) / (a + make_const(DataType::f64(), 3.0)),
            i);
    });
    JitKernel k = jit_compile({A, O}, body);
    std::vector<double> a(n), o(n);
    Rng rng(7);
    for (auto& x : a)
        x = rng.uniform01() * 2 - 1;
    k(a, o);
    for (int64_t i = 0; i < n; ++i)
        EXPECT_NEAR(o[i], a[i] * a[i] - 0.25 / (a[i] + 3.0), 1e-12);
}

TEST(CodegenScalar, IntegerFloorDivisionAndModulo) {
    const int64_t n = 127;
    const std::vector<int64_t> consts = {4, 3, -4, -3, 1, 16, 7};
    const int64_t nc = static_cast<int64_t>(consts.size());
    Buffer A = buf("A", DataType::i64(), n), B = buf("B", DataType::i64(), n),
           D = buf("D", DataType::i64(), n), M = buf("M", DataType::i64(), n),
           DC = buf("DC", DataType::i64(), n * nc), MC = buf("MC", DataType::i64(), n * nc);
    Stmt body = loop("i", n, ForKind::Serial, [&](Var i) {
        std::vector<Stmt> s = {Store::make(D, ld(A, i) / ld(B, i), i),
                               Store::make(M, ld(A, i) % ld(B, i), i)};
        for (int64_t c = 0; c < nc; ++c) {
            s.push_back(Store::make(DC, ld(A, i) / Expr(consts[c]), i * nc + c));
            s.push_back(Store::make(MC, ld(A, i) % Expr(consts[c]), i * nc + c));
        }
        return Seq::make(s);
    });
    JitKernel k = jit_compile({A, B, D, M, DC, MC}, body);
    auto a = random_ints(n, 11, -50, 50), b = random_ints(n, 12, -7, 7, true);
    std::vector<int64_t> d(n), m(n), dc(n * nc), mc(n * nc);
    k(a, b, d, m, dc, mc);
    for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(d[i], floor_div(a[i], b[i])) << a[i] << " / " << b[i];
        EXPECT_EQ(m[i], floor_mod(a[i], b[i])) << a[i] << " % " << b[i];
        for (int64_t c = 0; c < nc; ++c) {
            EXPECT_EQ(dc[i * nc + c], floor_div(a[i], consts[c])) << a[i] << " / " << consts[c];
            EXPECT_EQ(mc[i * nc + c], floor_mod(a[i], consts[c])) << a[i] << " % " << consts[c];
        }
    }
}

TEST(CodegenScalar, NarrowIntegersWrapAndDivide) {
    const int64_t n = 13;
    Buffer A = buf("A", DataType::i32(), n), O = buf("O", DataType::i32(), n),
           Q = buf("Q", DataType::i32(), n), U = buf("U", DataType::u8(), n);
    Stmt body = loop("i", n, ForKind::Serial, [&](Var i) {
        Expr a = ld(A, i);
        return Seq::make(
            {Store::make(O,
                         a * make_const(DataType::i32(), int64_t{65536}) *
                                 make_const(DataType::i32(), int64_t{65536}) +
                             a,
                         i),
             Store::make(Q,
                         a / make_const(DataType::i32(), int64_t{8}) +
                             a % make_const(DataType::i32(), int64_t{5}),
                         i),
             Store::make(U, cast(DataType::u8(), a) + make_const(DataType::u8(), int64_t{200}),
                         i)});
    });
    JitKernel k = jit_compile({A, O, Q, U}, body);
    std::vector<int32_t> a(n), o(n), q(n);
    std::vector<uint8_t> u(n);
    auto src = random_ints(n, 5, -1000, 1000);
    for (int64_t i = 0; i < n; ++i)
        a[i] = static_cast<int32_t>(src[i]);
    k(a, o, q, u);
    for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(o[i], a[i]); // a * 2^32 wraps to 0 in 32 bits
        EXPECT_EQ(q[i], floor_div(a[i], 8) + floor_mod(a[i], 5));
        EXPECT_EQ(u[i], static_cast<uint8_t>(static_cast<uint8_t>(a[i]) + 200));
    }
}

TEST(CodegenScalar, Casts) {
    const int64_t n = 127;
    Buffer F = buf("F", DataType::f32(), n);
    Buffer I32 = buf("I32", DataType::i32(), n), F64 = buf("F64", DataType::f64(), n),
           U8 = buf("U8", DataType::u8(), n), BACK = buf("BACK", DataType::f32(), n),
           BOOL = buf("BOOL", DataType::boolean(), n), I64 = buf("I64", DataType::i64(), n),
           HALF = buf("HALF", DataType::f32(), n);
    DataType i8(DataType::Code::Int, 8);
    Stmt body = loop("i", n, ForKind::Serial, [&](Var i) {
        Expr f = ld(F, i);
        Expr as_i32 = cast(DataType::i32(), f);
        return Seq::make({
            Store::make(I32, as_i32, i),
            Store::make(F64, cast(DataType::f64(), f), i),
            Store::make(U8, cast(DataType::u8(), as_i32), i),
            Store::make(BACK, cast(DataType::f32(), cast(i8, as_i32)), i),
            Store::make(BOOL, cast(DataType::boolean(), as_i32), i),
            Store::make(I64,
                        cast(DataType::i64(), cast(DataType::u8(), as_i32)) +
                            cast(DataType::i64(), cast(DataType::boolean(), f)),
                        i),
            Store::make(HALF, cast(DataType::f32(), cast(DataType::f16(), f)), i),
        });
    });
    JitKernel k = jit_compile({F, I32, F64, U8, BACK, BOOL, I64, HALF}, body);
    auto f = random_floats(n, 21, -300.0f, 300.0f);
    f[0] = 0.0f;
    f[1] = -0.75f;
    f[2] = 0.5f;
    std::vector<int32_t> i32(n);
    std::vector<double> f64(n);
    std::vector<uint8_t> u8(n), bl(n);
    std::vector<float> back(n), half(n);
    std::vector<int64_t> i64(n);
    k(f, i32, f64, u8, back, bl, i64, half);
    for (int64_t i = 0; i < n; ++i) {
        int32_t t = static_cast<int32_t>(std::trunc(f[i]));
        EXPECT_EQ(i32[i], t) << f[i];
        EXPECT_EQ(f64[i], static_cast<double>(f[i]));
        EXPECT_EQ(u8[i], static_cast<uint8_t>(t));
        EXPECT_EQ(back[i], static_cast<float>(static_cast<int8_t>(t)));
        EXPECT_EQ(bl[i], t != 0 ? 1 : 0);
        EXPECT_EQ(i64[i], static_cast<int64_t>(static_cast<uint8_t>(t)) + (f[i] != 0.0f ? 1 : 0));
        EXPECT_NEAR(half[i], f[i], std::fabs(f[i]) * 1e-3 + 1e-4);
    }
}

TEST(CodegenScalar, FloatToIntSaturates) {
    const int64_t n = 4;
    Buffer F = buf("F", DataType::f32(), n), I = buf("I", DataType::i32(), n);
    Stmt body = loop("i", n, ForKind::Serial,
                     [&](Var i) { return Store::make(I, cast(DataType::i32(), ld(F, i)), i); });
    JitKernel k = jit_compile({F, I}, body);
    std::vector<float> f = {1e20f, -1e20f, std::numeric_limits<float>::quiet_NaN(), -2.5f};
    std::vector<int32_t> out(n);
    k(f, out);
    EXPECT_EQ(out[0], std::numeric_limits<int32_t>::max());
    EXPECT_EQ(out[1], std::numeric_limits<int32_t>::min());
    EXPECT_EQ(out[2], 0);
    EXPECT_EQ(out[3], -2);
}

TEST(CodegenScalar, ComparisonsSelectAndLogic) {
    for (int64_t n : kSizes) {
        Buffer A = buf("A", DataType::f32(), n), B = buf("B", DataType::f32(), n),
               O = buf("O", DataType::f32(), n), U = buf("U", DataType::u8(), n),
               C = buf("C", DataType::boolean(), n);
        Stmt body = loop("i", n, ForKind::Serial, [&](Var i) {
            Expr a = ld(A, i), b = ld(B, i);
            Expr cond = logical_or(logical_and(a < b, logical_not(eq(a, b))), a >= 0.5f);
            Expr ucmp = cast(DataType::u8(), a * 100.0f + 128.0f) >
                        make_const(DataType::u8(), int64_t{150});
            return Seq::make({Store::make(O, select(cond, a, b), i),
                              Store::make(U,
                                          select(ucmp, make_const(DataType::u8(), int64_t{1}),
                                                 make_const(DataType::u8(), int64_t{2})),
                                          i),
                              Store::make(C, logical_or(ne(a, b), a <= b), i)});
        });
        JitKernel k = jit_compile({A, B, O, U, C}, body);
        auto a = random_floats(n, 31), b = random_floats(n, 32);
        if (n > 1)
            b[1] = a[1];
        std::vector<float> o(n);
        std::vector<uint8_t> u(n), c(n);
        k(a, b, o, u, c);
        for (int64_t i = 0; i < n; ++i) {
            bool cond = (a[i] < b[i] && !(a[i] == b[i])) || a[i] >= 0.5f;
            EXPECT_EQ(o[i], cond ? a[i] : b[i]);
            uint8_t ua = static_cast<uint8_t>(static_cast<int>(a[i] * 100.0f + 128.0f));
            EXPECT_EQ(u[i], ua > 150 ? 1 : 2);
            EXPECT_EQ(c[i], (a[i] != b[i] || a[i] <= b[i]) ? 1 : 0);
        }
    }
}

TEST(CodegenScalar, MinMaxFollowFminFmax) {
    const int64_t n = 7;
    Buffer A = buf("A", DataType::f32(), n), B = buf("B", DataType::f32(), n),
           MN = buf("MN", DataType::f32(), n), MX = buf("MX", DataType::f32(), n),
           IA = buf("IA", DataType::i64(), n), IM = buf("IM", DataType::i64(), n);
    Stmt body = loop("i", n, ForKind::Serial, [&](Var i) {
        return Seq::make({Store::make(MN, min(ld(A, i), ld(B, i)), i),
                          Store::make(MX, max(ld(A, i), ld(B, i)), i),
                          Store::make(IM, max(min(ld(IA, i), Expr(3)), Expr(-2)), i)});
    });
    JitKernel k = jit_compile({A, B, MN, MX, IA, IM}, body);
    auto a = random_floats(n, 41), b = random_floats(n, 42);
    a[0] = std::numeric_limits<float>::quiet_NaN();
    b[1] = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> mn(n), mx(n);
    auto ia = random_ints(n, 43, -9, 9);
    std::vector<int64_t> im(n);
    k(a, b, mn, mx, ia, im);
    for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(mn[i], std::fmin(a[i], b[i])) << i;
        EXPECT_EQ(mx[i], std::fmax(a[i], b[i])) << i;
        EXPECT_EQ(im[i], std::max<int64_t>(std::min<int64_t>(ia[i], 3), -2));
    }
}

TEST(CodegenScalar, MathCallsMatchStd) {
    const int64_t n = 13;
    Buffer A = buf("A", DataType::f32(), n), O = buf("O", DataType::f32(), n * 9);
    Buffer D = buf("D", DataType::f64(), n), OD = buf("OD", DataType::f64(), n * 3);
    Stmt body = loop("i", n, ForKind::Serial, [&](Var i) {
        Expr a = ld(A, i);
        Expr pos = abs(a) + 0.5f;
        std::vector<Expr> calls = {exp(a), log(pos),        sqrt(pos),      tanh(a),    erf(a),
                                   abs(a), floor(a * 3.0f), ceil(a * 3.0f), pow(pos, a)};
        std::vector<Stmt> s;
        for (size_t c = 0; c < calls.size(); ++c)
            s.push_back(Store::make(O, calls[c], i * 9 + static_cast<int64_t>(c)));
        Expr d = ld(D, i);
        s.push_back(Store::make(OD, exp(d), i * 3));
        s.push_back(Store::make(OD, tanh(d), i * 3 + 1));
        s.push_back(Store::make(OD, erf(d), i * 3 + 2));
        return Seq::make(s);
    });
    JitKernel k = jit_compile({A, O, D, OD}, body);
    auto a = random_floats(n, 51, -2.0f, 2.0f);
    std::vector<float> o(n * 9);
    std::vector<double> d(n), od(n * 3);
    for (int64_t i = 0; i < n; ++i)
        d[i] = a[i] * 1.5;
    k(a, o, d, od);
    for (int64_t i = 0; i < n; ++i) {
        float x = a[i], pos = std::fabs(x) + 0.5f;
        std::vector<float> want = {std::exp(x),          std::log(pos),       std::sqrt(pos),
                                   std::tanh(x),         std::erf(x),         std::fabs(x),
                                   std::floor(x * 3.0f), std::ceil(x * 3.0f), std::pow(pos, x)};
        for (size_t c = 0; c < want.size(); ++c)
            EXPECT_NEAR(o[i * 9 + c], want[c], 2e-6 * std::max(1.0f, std::fabs(want[c])))
                << "call " << c << " of " << x;
        EXPECT_NEAR(od[i * 3], std::exp(d[i]), 1e-13 * std::exp(d[i]));
        EXPECT_NEAR(od[i * 3 + 1], std::tanh(d[i]), 1e-15);
        EXPECT_NEAR(od[i * 3 + 2], std::erf(d[i]), 1e-15);
    }
}

TEST(CodegenScalar, IntegerAbs) {
    const int64_t n = 7;
    Buffer A = buf("A", DataType::i32(), n), O = buf("O", DataType::i32(), n);
    Stmt body =
        loop("i", n, ForKind::Serial, [&](Var i) { return Store::make(O, abs(ld(A, i)), i); });
    JitKernel k = jit_compile({A, O}, body);
    std::vector<int32_t> a = {-3, 0, 5, -100, 7, -1, 2}, o(n);
    k(a, o);
    for (int64_t i = 0; i < n; ++i)
        EXPECT_EQ(o[i], std::abs(a[i]));
}

TEST(CodegenScalar, LetAndLetStmt) {
    const int64_t n = 13;
    Buffer A = buf("A", DataType::f32(), n), O = buf("O", DataType::f32(), n);
    Stmt body = loop("i", n, ForKind::Serial, [&](Var i) {
        Var t("t", DataType::f32()), u("u", DataType::f32());
        return LetStmt::make(t, ld(A, i) * 2.0f,
                             Store::make(O, Let::make(u, t + 1.0f, u * u - t), i));
    });
    JitKernel k = jit_compile({A, O}, body);
    auto a = random_floats(n, 61);
    std::vector<float> o(n);
    k(a, o);
    for (int64_t i = 0; i < n; ++i) {
        float t = a[i] * 2.0f, u = t + 1.0f;
        EXPECT_NEAR(o[i], u * u - t, 1e-5);
    }
}

TEST(CodegenScalar, AllocateStackHeapAndLargeStack) {
    for (auto scope_n :
         {std::pair{MemoryScope::Stack, int64_t{13}}, std::pair{MemoryScope::Heap, int64_t{127}},
          std::pair{MemoryScope::Stack, int64_t{100003}}}) {
        // Plain variables: C++17 lambdas cannot capture structured bindings.
        const MemoryScope scope = scope_n.first;
        const int64_t n = scope_n.second;
        Buffer A = buf("A", DataType::f32(), n), O = buf("O", DataType::f32(), n);
        Buffer T = buf("T", DataType::f32(), n);
        Stmt fill = loop("i", n, ForKind::Serial,
                         [&](Var i) { return Store::make(T, ld(A, i) * 3.0f, i); });
        Stmt use = loop("j", n, ForKind::Serial,
                        [&](Var j) { return Store::make(O, ld(T, Expr(n - 1) - j) + 1.0f, j); });
        JitKernel k = jit_compile({A, O}, Allocate::make(T, scope, Seq::make({fill, use})));
        auto a = random_floats(n, 71);
        std::vector<float> o(n);
        k(a, o);
        for (int64_t j = 0; j < n; ++j)
            ASSERT_FLOAT_EQ(o[j], a[n - 1 - j] * 3.0f + 1.0f);
    }
}

TEST(CodegenScalar, IfThenElse) {
    for (int64_t n : kSizes) {
        Buffer A = buf("A", DataType::f32(), n), O = buf("O", DataType::f32(), n),
               P = buf("P", DataType::i32(), n);
        Stmt body = loop("i", n, ForKind::Serial, [&](Var i) {
            Stmt both = IfThenElse::make(eq(i % 3, Expr(0)), Store::make(O, ld(A, i), i),
                                         Store::make(O, 0.0f - ld(A, i), i));
            Stmt then_only = IfThenElse::make(
                ld(A, i) > 0.0f, Store::make(P, make_const(DataType::i32(), int64_t{1}), i));
            return Seq::make({both, then_only});
        });
        JitKernel k = jit_compile({A, O, P}, body);
        auto a = random_floats(n, 81);
        std::vector<float> o(n);
        std::vector<int32_t> p(n, 7);
        k(a, o, p);
        for (int64_t i = 0; i < n; ++i) {
            EXPECT_EQ(o[i], i % 3 == 0 ? a[i] : -a[i]);
            EXPECT_EQ(p[i], a[i] > 0 ? 1 : 7);
        }
    }
}

TEST(CodegenScalar, LoopWithOffsetMinAndEmptyLoop) {
    const int64_t n = 13;
    Buffer O = buf("O", DataType::i64(), n);
    Var i("i"), j("j"), j2("j2");
    Stmt body = Seq::make({
        For::make(i, Expr(3), Expr(n - 3), ForKind::Serial, Store::make(O, i * i, i)),
        For::make(j, Expr(0), Expr(0), ForKind::Serial, Store::make(O, Expr(-1), j)),
        For::make(j2, Expr(0), Expr(-4), ForKind::Serial, Store::make(O, Expr(-1), j2)),
    });
    JitKernel k = jit_compile({O}, body);
    std::vector<int64_t> o(n, 5);
    k(o);
    for (int64_t x = 0; x < n; ++x)
        EXPECT_EQ(o[x], x >= 3 ? x * x : 5);
}

TEST(CodegenScalar, BoolBuffersRoundTrip) {
    const int64_t n = 13;
    Buffer A = buf("A", DataType::boolean(), n), O = buf("O", DataType::boolean(), n);
    Stmt body = loop("i", n, ForKind::Serial,
                     [&](Var i) { return Store::make(O, logical_not(ld(A, i)), i); });
    JitKernel k = jit_compile({A, O}, body);
    std::vector<uint8_t> a(n), o(n, 9);
    for (int64_t i = 0; i < n; ++i)
        a[i] = (i * 7) % 3 == 0;
    k(a, o);
    for (int64_t i = 0; i < n; ++i)
        EXPECT_EQ(o[i], a[i] ? 0 : 1);
}

TEST(CodegenScalar, PrefetchPastTheEndIsHarmless) {
    const int64_t n = 7;
    Buffer A = buf("A", DataType::f32(), n), O = buf("O", DataType::f32(), n);
    Stmt body = loop("i", n, ForKind::Serial, [&](Var i) {
        Stmt pf = Evaluate::make(Call::make(CallOp::Prefetch, {Load::make(A, i + 1000000)}));
        return Seq::make({pf, Store::make(O, ld(A, i) + 1.0f, i)});
    });
    JitKernel k = jit_compile({A, O}, body);
    auto a = random_floats(n, 91);
    std::vector<float> o(n);
    k(a, o);
    for (int64_t i = 0; i < n; ++i)
        EXPECT_EQ(o[i], a[i] + 1.0f);
}
