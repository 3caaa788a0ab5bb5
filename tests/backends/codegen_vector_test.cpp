// LLVM code generation of vector IR through the JIT: dense accesses, gathers and scatters,
// lane-constant offsets as dense windows, broadcasts, vector arithmetic, casts, selects,
// reductions and math calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "backends/jit_harness.h"
#include "common/test_util.h"
#include "tessera/backends/host.h"
#include "tessera/ir/op.h"

using namespace tessera;
using namespace tessera::ir;
using namespace tessera::testing;

namespace {

Expr ld(const Buffer& b, Expr i) { return Load::make(b, i); }
Expr ramp(Expr base, int64_t stride, int lanes) { return Ramp::make(base, Expr(stride), lanes); }
Expr bc(Expr v, int lanes) { return Broadcast::make(v, lanes); }

int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

} // namespace

TEST(CodegenVector, DenseLoadStoreWithBroadcast) {
    for (int lanes : {4, 8, 16}) {
        for (int64_t blocks : {1, 7, 13}) {
            const int64_t n = blocks * lanes;
            Buffer A = buf("A", DataType::f32(), n), B = buf("B", DataType::f32(), n),
                   S = buf("S", DataType::f32(), 1), O = buf("O", DataType::f32(), n);
            Stmt body = loop("i", blocks, ForKind::Serial, [&](Var i) {
                Expr idx = ramp(i * lanes, 1, lanes);
                return Store::make(O, ld(A, idx) * bc(ld(S, Expr(0)), lanes) + ld(B, idx), idx);
            });
            JitKernel k = jit_compile({A, B, S, O}, body);
            auto a = random_floats(n, 1), b = random_floats(n, 2), s = random_floats(1, 3);
            std::vector<float> o(n), want(n);
            k(a, b, s, o);
            for (int64_t x = 0; x < n; ++x)
                want[x] = a[x] * s[0] + b[x];
            EXPECT_LT(max_rel_error(o, want), 1e-6) << lanes << " lanes, " << n;
        }
    }
}

TEST(CodegenVector, DenseIndexAsBroadcastPlusRamp) {
    const int lanes = 8;
    const int64_t n = 13 * lanes;
    Buffer A = buf("A", DataType::f32(), n), O = buf("O", DataType::f32(), n);
    Stmt body = loop("i", 13, ForKind::Serial, [&](Var i) {
        Expr idx = Add::make(bc(i * lanes, lanes), ramp(Expr(0), 1, lanes));
        return Store::make(O, ld(A, idx) + bc(Expr(1.0f), lanes), idx);
    });
    JitKernel k = jit_compile({A, O}, body);
    auto a = random_floats(n, 4);
    std::vector<float> o(n);
    k(a, o);
    for (int64_t x = 0; x < n; ++x)
        EXPECT_EQ(o[x], a[x] + 1.0f);
}

TEST(CodegenVector, GathersAndScatters) {
    const int lanes = 8;
    for (int64_t blocks : {1, 7, 13}) {
        const int64_t n = blocks * lanes;
        Buffer A = buf("A", DataType::f32(), 3 * n), G = buf("G", DataType::f32(), n),
               R = buf("R", DataType::f32(), n), S2 = buf("S2", DataType::f32(), 2 * n),
               U = buf("U", DataType::f32(), n);
        Stmt body = loop("i", blocks, ForKind::Serial, [&](Var i) {
            Expr dense = ramp(i * lanes, 1, lanes);
            return Seq::make({
                // Gather with stride 3.
                Store::make(G, ld(A, ramp(i * (3 * lanes), 3, lanes)), dense),
                // Scatter in reverse order within the block.
                Store::make(R, ld(A, dense), ramp(i * lanes + (lanes - 1), -1, lanes)),
                // Scatter with stride 2.
                Store::make(S2, ld(A, dense), ramp(i * (2 * lanes), 2, lanes)),
                // Every lane reads the same element (uniform index).
                Store::make(U, ld(A, bc(i, lanes)), dense),
            });
        });
        JitKernel k = jit_compile({A, G, R, S2, U}, body);
        auto a = random_floats(3 * n, 5);
        std::vector<float> g(n), r(n), s2(2 * n, -7.0f), u(n);
        k(a, g, r, s2, u);
        for (int64_t b = 0; b < blocks; ++b) {
            for (int l = 0; l < lanes; ++l) {
                int64_t x = b * lanes + l;
                EXPECT_EQ(g[x], a[b * 3 * lanes + 3 * l]);
                EXPECT_EQ(r[b * lanes + (lanes - 1 - l)], a[x]);
                EXPECT_EQ(s2[b * 2 * lanes + 2 * l], a[x]);
                EXPECT_EQ(s2[b * 2 * lanes + 2 * l + 1], -7.0f);
                EXPECT_EQ(u[x], a[b]);
            }
        }
    }
}

TEST(CodegenVector, ConstantStrideAccessesWithBroadcastOffset) {
    // Constant-stride indices (a scalar base plus 32-bit lane offsets in the generated code):
    // a 16-lane transpose through stride 37, the Broadcast + Ramp form, and a negative stride.
    const int lanes = 16;
    const int64_t rows = 37, n = rows * lanes;
    Buffer A = buf("A", DataType::f32(), n), T = buf("T", DataType::f32(), n),
           B = buf("B", DataType::f32(), n), N = buf("N", DataType::f32(), n);
    Stmt body = loop("i", rows, ForKind::Serial, [&](Var i) {
        Expr dense = ramp(i * lanes, 1, lanes);
        return Seq::make({
            // T[l*37 + i] = A[i*16 + l]: a scatter with stride 37.
            Store::make(T, ld(A, dense), ramp(i, rows, lanes)),
            // B[i*16 + l] = A[l*37 + i] through Broadcast(i) + Ramp(0, 37): a gather.
            Store::make(B, ld(A, Add::make(bc(i, lanes), ramp(Expr(0), rows, lanes))), dense),
            // N[(36 - i) + (15 - l)*37] = A[i*16 + l]: stride -37.
            Store::make(N, ld(A, dense),
                        ramp(Expr(rows - 1) - i + (lanes - 1) * rows, -rows, lanes)),
        });
    });
    JitKernel k = jit_compile({A, T, B, N}, body);
    auto a = random_floats(n, 7);
    std::vector<float> t(n), b(n), neg(n);
    k(a, t, b, neg);
    for (int64_t i = 0; i < rows; ++i) {
        for (int64_t l = 0; l < lanes; ++l) {
            EXPECT_EQ(t[l * rows + i], a[i * lanes + l]);
            EXPECT_EQ(b[i * lanes + l], a[l * rows + i]);
            EXPECT_EQ(neg[(rows - 1 - i) + (lanes - 1 - l) * rows], a[i * lanes + l]);
        }
    }
}

TEST(CodegenVector, GeneralGatherIndex) {
    // Index computed per lane: (i*8 + lane) / 2, a gather of a non-Ramp vector.
    const int lanes = 8;
    const int64_t n = 7 * lanes;
    Buffer A = buf("A", DataType::f32(), n), O = buf("O", DataType::f32(), n);
    Stmt body = loop("i", 7, ForKind::Serial, [&](Var i) {
        Expr dense = ramp(i * lanes, 1, lanes);
        return Store::make(O, ld(A, dense / bc(Expr(2), lanes)), dense);
    });
    JitKernel k = jit_compile({A, O}, body);
    auto a = random_floats(n, 6);
    std::vector<float> o(n);
    k(a, o);
    for (int64_t x = 0; x < n; ++x)
        EXPECT_EQ(o[x], a[x / 2]);
}

TEST(CodegenVector, LaneConstantOffsetsLoadWindows) {
    // A scalar base plus constant per-lane offsets: loaded as a few dense windows and shuffled
    // (two windows for a channel shuffle's lane / 2 + (lane % 2) * K and for a stride of 2,
    // three for stride 3, four for stride 5; LoadWindows.* has the rule). The buffers end at the
    // last element read (the shuffle's last row, the stride-3 run), so a window reading past its
    // lanes' elements would fault or read other data.
    const int lanes = 16;
    // B ends at the stride-3 run's last element: 5 * 48 + 15 + 3 * 15 = 300.
    const int64_t rows = 7, half = 59, n = 2 * half, m = 5 * 48 + 15 + 3 * (lanes - 1) + 1;
    Buffer A = buf("A", DataType::f32(), n), B = buf("B", DataType::f32(), m),
           S = buf("S", DataType::f32(), rows * lanes), T = buf("T", DataType::f32(), rows * lanes),
           R = buf("R", DataType::f32(), 6 * lanes), F = buf("F", DataType::f32(), 6 * lanes);
    Expr lane = ramp(Expr(0), 1, lanes);
    Expr two = bc(Expr(2), lanes);
    Stmt shuffles = loop("i", rows, ForKind::Serial, [&](Var i) {
        Expr dense = ramp(i * lanes, 1, lanes);
        // Lane 2k + s reads A[s * half + i * 8 + k + 3].
        Expr shuffle = bc(i * 8 + 3, lanes) + lane / two + (lane % two) * bc(Expr(half), lanes);
        return Seq::make({
            Store::make(S, ld(A, shuffle), dense),
            Store::make(T, ld(B, ramp(i * 32 + 1, 2, lanes)), dense),
        });
    });
    Stmt strided = loop("j", 6, ForKind::Serial, [&](Var j) {
        Expr dense = ramp(j * lanes, 1, lanes);
        return Seq::make({
            Store::make(R, ld(B, ramp(j * 48 + 15, 3, lanes)), dense),
            Store::make(F, ld(B, ramp(j * 7, 5, lanes)), dense),
        });
    });
    JitKernel k = jit_compile({A, B, S, T, R, F}, Seq::make({shuffles, strided}));
    auto a = random_floats(n, 8), b = random_floats(m, 9);
    std::vector<float> s(rows * lanes), t(rows * lanes), r(6 * lanes), f(6 * lanes);
    k(a, b, s, t, r, f);
    for (int64_t i = 0; i < rows; ++i) {
        for (int64_t l = 0; l < lanes; ++l) {
            EXPECT_EQ(s[i * lanes + l], a[(l % 2) * half + i * 8 + l / 2 + 3]) << i << " " << l;
            EXPECT_EQ(t[i * lanes + l], b[i * 32 + 1 + 2 * l]) << i << " " << l;
        }
    }
    for (int64_t j = 0; j < 6; ++j) {
        for (int64_t l = 0; l < lanes; ++l) {
            EXPECT_EQ(r[j * lanes + l], b[j * 48 + 15 + 3 * l]) << j << " " << l;
            EXPECT_EQ(f[j * lanes + l], b[j * 7 + 5 * l]) << j << " " << l;
        }
    }
}

TEST(CodegenVector, LaneOffsetsThroughFloorDivisionAndModulo) {
    // A reshape's index, (x / c) * c + x % c with x = i * 8 + lane / 2 (a multiple of 8 plus
    // lanes in [0, 8)), plus (lane % 2) * K: for c a multiple of 8 no lane crosses a multiple
    // of c, the index splits into a scalar base and lane offsets, and the kernel loads windows
    // (no gather in its code); for c = 12 lanes may cross, and it gathers. Both read A[i * 8 +
    // lane / 2 + (lane % 2) * K].
    const int lanes = 16;
    const int64_t rows = 9, half = 75, n = 2 * half;
    Expr lane = ramp(Expr(0), 1, lanes);
    Expr two = bc(Expr(2), lanes);
    for (int64_t c : {24, 12}) {
        Buffer A = buf("A", DataType::f32(), n), O = buf("O", DataType::f32(), rows * lanes);
        Stmt body = loop("i", rows, ForKind::Serial, [&](Var i) {
            Expr x = bc(i * 8, lanes) + lane / two;
            Expr cc = bc(Expr(c), lanes);
            Expr index = (x / cc) * cc + x % cc + (lane % two) * bc(Expr(half), lanes);
            return Store::make(O, ld(A, index), ramp(i * lanes, 1, lanes));
        });
        backend::CompileOptions opts;
        opts.keep_assembly = true;
        JitKernel k = jit_compile({A, O}, body, opts);
        auto a = random_floats(n, 10);
        std::vector<float> o(rows * lanes);
        k(a, o);
        for (int64_t i = 0; i < rows; ++i)
            for (int64_t l = 0; l < lanes; ++l)
                EXPECT_EQ(o[i * lanes + l], a[i * 8 + l / 2 + (l % 2) * half])
                    << "c " << c << ", row " << i << ", lane " << l;
        if (backend::host_info().triple.rfind("x86_64", 0) == 0) {
            // Lanes gathered: by a gather instruction, or (where LLVM deems gathers slow, as
            // on a Zen 3) element by element.
            const std::string& s = k.module->assembly();
            const bool gathers = s.find("gather") != std::string::npos ||
                                 s.find("vinsertps") != std::string::npos;
            EXPECT_EQ(gathers, c == 12) << "c " << c << "\n" << s;
        }
    }
}

TEST(CodegenVector, IntegerVectorArithmeticAndCasts) {
    const int lanes = 8;
    const int64_t n = 13 * lanes;
    Buffer A = buf("A", DataType::i64(), n), D = buf("D", DataType::i64(), n),
           M = buf("M", DataType::i64(), n), F = buf("F", DataType::f32(), n),
           I = buf("I", DataType::i32(), n);
    Stmt body = loop("i", 13, ForKind::Serial, [&](Var i) {
        Expr idx = ramp(i * lanes, 1, lanes);
        Expr a = ld(A, idx);
        return Seq::make({
            Store::make(D, a / bc(Expr(4), lanes) + a / bc(Expr(-3), lanes), idx),
            Store::make(M, a % bc(Expr(8), lanes) + a % bc(Expr(5), lanes), idx),
            Store::make(F, cast(DataType::f32(lanes), a) * bc(Expr(0.5f), lanes), idx),
            Store::make(
                I,
                cast(DataType::i32(lanes), cast(DataType::f32(lanes), a) * bc(Expr(1.5f), lanes)),
                idx),
        });
    });
    JitKernel k = jit_compile({A, D, M, F, I}, body);
    std::vector<int64_t> a(n), d(n), m(n);
    std::vector<float> f(n);
    std::vector<int32_t> iv(n);
    for (int64_t x = 0; x < n; ++x)
        a[x] = (x * 37) % 101 - 50;
    k(a, d, m, f, iv);
    for (int64_t x = 0; x < n; ++x) {
        EXPECT_EQ(d[x], floor_div(a[x], 4) + floor_div(a[x], -3)) << a[x];
        EXPECT_EQ(m[x], (a[x] - floor_div(a[x], 8) * 8) + (a[x] - floor_div(a[x], 5) * 5));
        EXPECT_EQ(f[x], static_cast<float>(a[x]) * 0.5f);
        EXPECT_EQ(iv[x], static_cast<int32_t>(std::trunc(static_cast<float>(a[x]) * 1.5f)));
    }
}

TEST(CodegenVector, SelectWithVectorAndScalarConditions) {
    const int lanes = 8;
    const int64_t n = 7 * lanes;
    Buffer A = buf("A", DataType::f32(), n), B = buf("B", DataType::f32(), n),
           O = buf("O", DataType::f32(), n), P = buf("P", DataType::f32(), n);
    Stmt body = loop("i", 7, ForKind::Serial, [&](Var i) {
        Expr idx = ramp(i * lanes, 1, lanes);
        Expr a = ld(A, idx), b = ld(B, idx);
        return Seq::make({Store::make(O, select(a > b, a - b, b * bc(Expr(2.0f), lanes)), idx),
                          Store::make(P, Select::make(eq(i % 2, Expr(0)), a, b), idx)});
    });
    JitKernel k = jit_compile({A, B, O, P}, body);
    auto a = random_floats(n, 7), b = random_floats(n, 8);
    std::vector<float> o(n), p(n);
    k(a, b, o, p);
    for (int64_t x = 0; x < n; ++x) {
        EXPECT_EQ(o[x], a[x] > b[x] ? a[x] - b[x] : b[x] * 2.0f);
        EXPECT_EQ(p[x], (x / lanes) % 2 == 0 ? a[x] : b[x]);
    }
}

TEST(CodegenVector, RampValuesAndMinMax) {
    const int lanes = 8;
    const int64_t n = 13 * lanes;
    Buffer O = buf("O", DataType::i64(), n), F = buf("F", DataType::f32(), n);
    Stmt body = loop("i", 13, ForKind::Serial, [&](Var i) {
        Expr idx = ramp(i * lanes, 1, lanes);
        Expr v = ramp(i * 100, 3, lanes);
        Expr fv = Ramp::make(cast(DataType::f32(), i), Expr(0.25f), lanes);
        return Seq::make(
            {Store::make(O, min(max(v, bc(Expr(50), lanes)), bc(Expr(1000), lanes)), idx),
             Store::make(F, fv, idx)});
    });
    JitKernel k = jit_compile({O, F}, body);
    std::vector<int64_t> o(n);
    std::vector<float> f(n);
    k(o, f);
    for (int64_t x = 0; x < n; ++x) {
        int64_t b = x / lanes, l = x % lanes;
        EXPECT_EQ(o[x], std::min<int64_t>(std::max<int64_t>(b * 100 + 3 * l, 50), 1000));
        EXPECT_EQ(f[x], static_cast<float>(b) + 0.25f * l);
    }
}

TEST(CodegenVector, VectorReduce) {
    const int64_t n = 16 + 16 + 16 + 12 + 16;
    Buffer A = buf("A", DataType::f32(), n), O = buf("O", DataType::f32(), 11);
    Buffer IA = buf("IA", DataType::i32(), 16), IO = buf("IO", DataType::i32(), 2);
    Stmt body = Seq::make({
        Store::make(O, VectorReduce::make(ReduceOp::Sum, ld(A, ramp(Expr(0), 1, 16)), 1), Expr(0)),
        Store::make(O, VectorReduce::make(ReduceOp::Sum, ld(A, ramp(Expr(16), 1, 16)), 2),
                    ramp(Expr(1), 1, 2)),
        Store::make(O, VectorReduce::make(ReduceOp::Max, ld(A, ramp(Expr(32), 1, 16)), 4),
                    ramp(Expr(3), 1, 4)),
        Store::make(O, VectorReduce::make(ReduceOp::Min, ld(A, ramp(Expr(48), 1, 12)), 4),
                    ramp(Expr(7), 1, 4)),
        Store::make(IO, VectorReduce::make(ReduceOp::Sum, ld(IA, ramp(Expr(0), 1, 16)), 2),
                    ramp(Expr(0), 1, 2)),
    });
    JitKernel k = jit_compile({A, O, IA, IO}, body);
    auto a = random_floats(n, 9);
    std::vector<float> o(11);
    std::vector<int32_t> ia(16), io(2);
    for (int x = 0; x < 16; ++x)
        ia[x] = x * x - 40;
    k(a, o, ia, io);
    auto group = [&](int base, int count, int g, int j, auto op, float init) {
        float r = init;
        for (int x = 0; x < g; ++x)
            r = op(r, a[base + j * g + x]);
        (void)count;
        return r;
    };
    auto sum = [](float x, float y) { return x + y; };
    auto mx = [](float x, float y) { return std::max(x, y); };
    auto mn = [](float x, float y) { return std::min(x, y); };
    EXPECT_NEAR(o[0], group(0, 16, 16, 0, sum, 0.0f), 1e-5);
    for (int j = 0; j < 2; ++j)
        EXPECT_NEAR(o[1 + j], group(16, 16, 8, j, sum, 0.0f), 1e-5);
    for (int j = 0; j < 4; ++j)
        EXPECT_EQ(o[3 + j], group(32, 16, 4, j, mx, -1e30f));
    for (int j = 0; j < 4; ++j)
        EXPECT_EQ(o[7 + j], group(48, 12, 3, j, mn, 1e30f));
    int32_t s0 = 0, s1 = 0;
    for (int x = 0; x < 8; ++x)
        s0 += ia[x], s1 += ia[8 + x];
    EXPECT_EQ(io[0], s0);
    EXPECT_EQ(io[1], s1);
}

TEST(CodegenVector, MathCallsOnVectors) {
    const int lanes = 8;
    const int64_t n = 7 * lanes;
    Buffer A = buf("A", DataType::f32(), n), O = buf("O", DataType::f32(), n * 5);
    Stmt body = loop("i", 7, ForKind::Serial, [&](Var i) {
        Expr idx = ramp(i * lanes, 1, lanes);
        Expr a = ld(A, idx);
        std::vector<Expr> calls = {exp(a), tanh(a), erf(a), sqrt(abs(a)),
                                   floor(a * bc(Expr(4.0f), lanes))};
        std::vector<Stmt> s;
        for (int64_t c = 0; c < 5; ++c)
            s.push_back(Store::make(O, calls[c], ramp(i * lanes + c * n, 1, lanes)));
        return Seq::make(s);
    });
    JitKernel k = jit_compile({A, O}, body);
    auto a = random_floats(n, 10, -2.0f, 2.0f);
    std::vector<float> o(n * 5);
    k(a, o);
    for (int64_t x = 0; x < n; ++x) {
        float want[] = {std::exp(a[x]), std::tanh(a[x]), std::erf(a[x]), std::sqrt(std::fabs(a[x])),
                        std::floor(a[x] * 4.0f)};
        for (int c = 0; c < 5; ++c)
            EXPECT_NEAR(o[x + c * n], want[c], 2e-6 * std::max(1.0f, std::fabs(want[c])));
    }
}

TEST(CodegenVector, BoolVectors) {
    const int lanes = 8;
    const int64_t n = 7 * lanes;
    Buffer A = buf("A", DataType::f32(), n), O = buf("O", DataType::boolean(), n),
           P = buf("P", DataType::f32(), n);
    Stmt body = loop("i", 7, ForKind::Serial, [&](Var i) {
        Expr idx = ramp(i * lanes, 1, lanes);
        return Seq::make(
            {Store::make(O, ld(A, idx) > bc(Expr(0.0f), lanes), idx),
             Store::make(P, select(ld(O, idx), ld(A, idx), bc(Expr(0.0f), lanes)), idx)});
    });
    JitKernel k = jit_compile({A, O, P}, body);
    auto a = random_floats(n, 11);
    std::vector<uint8_t> o(n, 5);
    std::vector<float> p(n);
    k(a, o, p);
    for (int64_t x = 0; x < n; ++x) {
        EXPECT_EQ(o[x], a[x] > 0 ? 1 : 0);
        EXPECT_EQ(p[x], a[x] > 0 ? a[x] : 0.0f);
    }
}
