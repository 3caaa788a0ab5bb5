// The loop-IR interpreter on hand-built IR: arithmetic semantics, vectors, bindings, memory,
// control flow and the checks that make it a safety net.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/reference_ops.h"
#include "common/test_util.h"
#include "tessera/ir/interpreter.h"
#include "tessera/ir/op.h"
#include "tessera/lower/lower_default.h"
#include "tessera/support/error.h"
#include "tessera/te/op_library.h"

namespace tessera::ir {
namespace {

const DataType i64 = DataType::i64();
const DataType i32 = DataType::i32();
const DataType f32 = DataType::f32();
const DataType f64 = DataType::f64();

/// for i in [0, n): body(i)
Stmt loop(const Var& i, int64_t n, Stmt body, ForKind kind = ForKind::Serial) {
    return For::make(i, Expr(0), Expr(n), kind, std::move(body));
}

/// Runs `body` with the given buffers as params.
void run(const std::vector<Buffer>& params, Stmt body, std::vector<void*> args) {
    interpret(LoweredFunc{"test", params, std::move(body)}, args);
}

TEST(Interpreter, FloorDivisionAndModulo) {
    for (DataType t : {i64, i32}) {
        Buffer a = Buffer::make("a", t, {4}), b = Buffer::make("b", t, {4});
        Buffer q = Buffer::make("q", t, {4}), r = Buffer::make("r", t, {4});
        Var i("i");
        Stmt body = loop(i, 4,
                         Seq::make({Store::make(q, Load::make(a, i) / Load::make(b, i), i),
                                    Store::make(r, Load::make(a, i) % Load::make(b, i), i)}));
        std::vector<int64_t> want_q = {-4, 3, 3, -4}, want_r = {1, 1, -1, -1};
        if (t == i64) {
            std::vector<int64_t> av = {-7, 7, -7, 7}, bv = {2, 2, -2, -2}, qv(4), rv(4);
            run({a, b, q, r}, body, {av.data(), bv.data(), qv.data(), rv.data()});
            EXPECT_EQ(qv, want_q);
            EXPECT_EQ(rv, want_r);
        } else {
            std::vector<int32_t> av = {-7, 7, -7, 7}, bv = {2, 2, -2, -2}, qv(4), rv(4);
            run({a, b, q, r}, body, {av.data(), bv.data(), qv.data(), rv.data()});
            EXPECT_EQ(qv, (std::vector<int32_t>(want_q.begin(), want_q.end())));
            EXPECT_EQ(rv, (std::vector<int32_t>(want_r.begin(), want_r.end())));
        }
    }
}

TEST(Interpreter, IntegerDivisionByZeroIsInternalError) {
    Buffer a = Buffer::make("a", i64, {1});
    std::vector<int64_t> av = {0};
    Stmt body = Store::make(a, Expr(7) / Load::make(a, 0), 0);
    EXPECT_THROW(run({a}, body, {av.data()}), InternalError);
    Stmt mod = Store::make(a, Expr(7) % Load::make(a, 0), 0);
    try {
        run({a}, mod, {av.data()});
        FAIL() << "no error";
    } catch (const InternalError& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr("modulo by zero"));
    }
}

TEST(Interpreter, IntegersWrapInTheirWidth) {
    Buffer a = Buffer::make("a", i32, {3}), u = Buffer::make("u", DataType::u8(), {2});
    Buffer w = Buffer::make("w", i64, {1});
    std::vector<int32_t> av = {2147483647, 65536, 0};
    std::vector<uint8_t> uv = {250, 3};
    std::vector<int64_t> wv = {0};
    Stmt body = Seq::make({
        Store::make(a, Load::make(a, 0) + 1, 0),                    // INT32_MAX + 1
        Store::make(a, Load::make(a, 1) * Load::make(a, 1), 1),     // 2^32 wraps to 0
        Store::make(a, cast(i32, Expr(int64_t{0x1'8000'0005})), 2), // truncating cast
        Store::make(u, Load::make(u, 0) + make_const(DataType::u8(), int64_t{10}), 0),
        Store::make(u, Load::make(u, 1) - make_const(DataType::u8(), int64_t{5}), 1),
        Store::make(w, cast(i64, make_const(DataType::u8(), int64_t{200})), 0),
    });
    run({a, u, w}, body, {av.data(), uv.data(), wv.data()});
    EXPECT_EQ(av, (std::vector<int32_t>{INT32_MIN, 0, INT32_MIN + 5}));
    EXPECT_EQ(uv, (std::vector<uint8_t>{4, 254}));
    EXPECT_EQ(wv[0], 200); // unsigned values zero-extend
}

TEST(Interpreter, F32ResultsAreRoundedEachStep) {
    Buffer a = Buffer::make("a", f32, {2}), d = Buffer::make("d", f64, {2});
    std::vector<float> av = {1e8f, 0};
    std::vector<double> dv = {1e8, 0};
    // (a + 1) - a is 0 in f32 (1e8 + 1 rounds back to 1e8) and 1 in f64.
    Stmt body = Seq::make({
        Store::make(a, (Load::make(a, 0) + 1.0f) - Load::make(a, 0), 1),
        Store::make(d, (Load::make(d, 0) + make_const(f64, 1.0)) - Load::make(d, 0), 1),
    });
    run({a, d}, body, {av.data(), dv.data()});
    EXPECT_EQ(av[1], 0.0f);
    EXPECT_EQ(dv[1], 1.0);
}

TEST(Interpreter, FloatModCastsAndComparisons) {
    Buffer f = Buffer::make("f", f32, {4}), i = Buffer::make("i", i64, {6});
    std::vector<float> fv = {-7.5f, 2.0f, -2.7f, std::numeric_limits<float>::quiet_NaN()};
    std::vector<int64_t> iv(6, -99);
    Stmt body = Seq::make({
        Store::make(f, Load::make(f, 0) % Load::make(f, 1), 0), // floor-mod: 0.5
        Store::make(i, cast(i64, Load::make(f, 2)), 0),         // toward zero: -2
        Store::make(i, cast(i64, Load::make(f, 3)), 1),         // NaN: 0
        Store::make(i, cast(i64, cast(DataType::boolean(), Expr(5))), 2),
        Store::make(i, cast(i64, Load::make(f, 3) < Load::make(f, 1)), 3), // NaN compares false
        Store::make(i, cast(i64, ne(Load::make(f, 3), Load::make(f, 3))), 4),
        Store::make(i, cast(i64, logical_and(Expr(1) < Expr(2), logical_not(Expr(3) <= Expr(2)))),
                    5),
    });
    run({f, i}, body, {fv.data(), iv.data()});
    EXPECT_FLOAT_EQ(fv[0], 0.5f);
    EXPECT_EQ(iv, (std::vector<int64_t>{-2, 0, 1, 0, 1, 1}));
}

TEST(Interpreter, DenseVectorLoadStoreRampBroadcast) {
    Buffer in = Buffer::make("in", f32, {16}), out = Buffer::make("out", f32, {16});
    auto x = testing::random_floats(16, 1);
    std::vector<float> y(16, 0);
    Var i("i");
    // for i in 0..2: out[ramp(8i, 1, 8)] = in[ramp(8i, 1, 8)] * 2
    Expr idx = Ramp::make(i * 8, Expr(1), 8);
    Stmt body =
        loop(i, 2, Store::make(out, Load::make(in, idx) * Broadcast::make(Expr(2.0f), 8), idx));
    run({in, out}, body, {x.data(), y.data()});
    for (int k = 0; k < 16; ++k)
        EXPECT_EQ(y[(size_t)k], x[(size_t)k] * 2);
}

TEST(Interpreter, GatherAndScatter) {
    Buffer in = Buffer::make("in", f32, {8}), out = Buffer::make("out", f32, {8});
    auto x = testing::random_floats(8, 2);
    std::vector<float> y(8, -1);
    // Gather reversed, scatter to even slots: out[2k] = in[7 - k] for k < 4.
    Stmt body = Store::make(out, Load::make(in, Ramp::make(Expr(7), Expr(-1), 4)),
                            Ramp::make(Expr(0), Expr(2), 4));
    run({in, out}, body, {x.data(), y.data()});
    for (int k = 0; k < 4; ++k) {
        EXPECT_EQ(y[(size_t)(2 * k)], x[(size_t)(7 - k)]);
        EXPECT_EQ(y[(size_t)(2 * k + 1)], -1.0f);
    }
}

TEST(Interpreter, VectorReduceAndLanewiseSelect) {
    Buffer in = Buffer::make("in", f32, {8}), out = Buffer::make("out", f32, {8});
    std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8}, y(8, 0);
    Expr v = Load::make(in, Ramp::make(Expr(0), Expr(1), 8));
    Stmt body = Seq::make({
        Store::make(out, VectorReduce::make(ReduceOp::Sum, v, 2), Ramp::make(Expr(0), Expr(1), 2)),
        Store::make(out, VectorReduce::make(ReduceOp::Max, v, 1), Expr(2)),
        Store::make(out, VectorReduce::make(ReduceOp::Min, v, 1), Expr(3)),
        // Lanes 4..7: select(index < 6, in, -in), lane-wise.
        Store::make(out,
                    select(Ramp::make(Expr(4), Expr(1), 4) < Broadcast::make(Expr(6), 4),
                           Load::make(in, Ramp::make(Expr(4), Expr(1), 4)),
                           -Load::make(in, Ramp::make(Expr(4), Expr(1), 4))),
                    Ramp::make(Expr(4), Expr(1), 4)),
    });
    run({in, out}, body, {x.data(), y.data()});
    EXPECT_EQ(y, (std::vector<float>{10, 26, 8, 1, 5, 6, -7, -8}));
}

TEST(Interpreter, ScalarConditionSelectOnVectors) {
    Buffer out = Buffer::make("out", i64, {4});
    std::vector<int64_t> y(4, 0);
    Stmt body = Store::make(out,
                            Select::make(Expr(1) < Expr(2), Ramp::make(Expr(10), Expr(1), 4),
                                         Broadcast::make(Expr(0), 4)),
                            Ramp::make(Expr(0), Expr(1), 4));
    run({out}, body, {y.data()});
    EXPECT_EQ(y, (std::vector<int64_t>{10, 11, 12, 13}));
}

TEST(Interpreter, LetAndLetStmtWithShadowing) {
    Buffer out = Buffer::make("out", i64, {3});
    std::vector<int64_t> y(3, 0);
    Var x("x");
    // let x = 3 in (let x = 10 in x) + x  ==  13: the inner binding does not leak.
    Expr e = Let::make(x, Expr(3), Let::make(x, Expr(10), x) + x);
    Stmt body = Seq::make({
        Store::make(out, e, 0),
        LetStmt::make(x, Expr(5),
                      Seq::make({Store::make(out, x * x, 1),
                                 LetStmt::make(x, Expr(2), Store::make(out, x, 2))})),
    });
    run({out}, body, {y.data()});
    EXPECT_EQ(y, (std::vector<int64_t>{13, 25, 2}));
}

TEST(Interpreter, VectorLet) {
    Buffer out = Buffer::make("out", i64, {4});
    std::vector<int64_t> y(4, 0);
    Var v("v", DataType::i64(4));
    Stmt body = LetStmt::make(v, Ramp::make(Expr(1), Expr(1), 4),
                              Store::make(out, v * v, Ramp::make(Expr(0), Expr(1), 4)));
    run({out}, body, {y.data()});
    EXPECT_EQ(y, (std::vector<int64_t>{1, 4, 9, 16}));
}

TEST(Interpreter, AllocateHeapAndStack) {
    Buffer in = Buffer::make("in", f32, {6}), out = Buffer::make("out", f32, {6});
    Buffer tmp = Buffer::make("tmp", f32, {6}), acc = Buffer::make("acc", f32, {1});
    auto x = testing::random_floats(6, 3);
    std::vector<float> y(6, 0);
    Var i("i"), j("j");
    // tmp = in * 3 (heap); out[i] = sum_{j <= i} tmp[j] with a stack accumulator per i.
    Stmt body = Allocate::make(
        tmp, MemoryScope::Heap,
        Seq::make(
            {loop(i, 6, Store::make(tmp, Load::make(in, i) * 3.0f, i)),
             loop(i, 6,
                  Allocate::make(
                      acc, MemoryScope::Stack,
                      Seq::make(
                          {Store::make(acc, Expr(0.0f), 0),
                           For::make(j, Expr(0), i + 1, ForKind::Serial,
                                     Store::make(acc, Load::make(acc, 0) + Load::make(tmp, j), 0)),
                           Store::make(out, Load::make(acc, 0), i)})))}));
    run({in, out}, body, {x.data(), y.data()});
    float run_sum = 0;
    for (int k = 0; k < 6; ++k) {
        run_sum += x[(size_t)k] * 3.0f;
        EXPECT_FLOAT_EQ(y[(size_t)k], run_sum);
    }
}

TEST(Interpreter, AllocatedMemoryStartsPoisoned) {
    Buffer out = Buffer::make("out", f32, {1}), tmp = Buffer::make("tmp", f32, {4});
    std::vector<float> y = {0};
    run({out}, Allocate::make(tmp, MemoryScope::Stack, Store::make(out, Load::make(tmp, 2), 0)),
        {y.data()});
    EXPECT_TRUE(std::isnan(y[0]));
}

TEST(Interpreter, IfThenElse) {
    Buffer out = Buffer::make("out", i64, {5});
    std::vector<int64_t> y(5, 0);
    Var i("i");
    Stmt body = loop(i, 5,
                     Seq::make({IfThenElse::make(eq(i % 2, 0), Store::make(out, i * 10, i),
                                                 Store::make(out, -i, i)),
                                IfThenElse::make(eq(i, 4), Store::make(out, Expr(99), i))}));
    run({out}, body, {y.data()});
    EXPECT_EQ(y, (std::vector<int64_t>{0, -1, 20, -3, 99}));
}

TEST(Interpreter, MathCalls) {
    Buffer in = Buffer::make("in", f32, {2}), out = Buffer::make("out", f32, {10});
    Buffer io = Buffer::make("io", i32, {1});
    std::vector<float> x = {0.7f, -2.5f}, y(10, 0);
    std::vector<int32_t> iv = {-6};
    Expr a = Load::make(in, 0), b = Load::make(in, 1);
    Stmt body = Seq::make({
        Store::make(out, exp(a), 0),
        Store::make(out, log(a), 1),
        Store::make(out, sqrt(a), 2),
        Store::make(out, tanh(b), 3),
        Store::make(out, erf(b), 4),
        Store::make(out, abs(b), 5),
        Store::make(out, floor(b), 6),
        Store::make(out, ceil(b), 7),
        Store::make(out, pow(a, b), 8),
        Store::make(out, VectorReduce::make(ReduceOp::Sum, exp(Broadcast::make(a, 4)), 1), 9),
        Store::make(io, abs(Load::make(io, 0)), 0),
    });
    run({in, out, io}, body, {x.data(), y.data(), iv.data()});
    EXPECT_FLOAT_EQ(y[0], std::exp(0.7f));
    EXPECT_FLOAT_EQ(y[1], std::log(0.7f));
    EXPECT_FLOAT_EQ(y[2], std::sqrt(0.7f));
    EXPECT_FLOAT_EQ(y[3], std::tanh(-2.5f));
    EXPECT_FLOAT_EQ(y[4], std::erf(-2.5f));
    EXPECT_EQ(y[5], 2.5f);
    EXPECT_EQ(y[6], -3.0f);
    EXPECT_EQ(y[7], -2.0f);
    EXPECT_FLOAT_EQ(y[8], std::pow(0.7f, -2.5f));
    EXPECT_FLOAT_EQ(y[9], 4 * std::exp(0.7f)); // lane-wise call on a vector
    EXPECT_EQ(iv[0], 6);
}

TEST(Interpreter, Dot4U8S8MatchesBytewiseReference) {
    // Scalar, 4-lane and 16-lane calls on random words (a's bytes above 127 and b's negative
    // bytes are common) and the byte extremes, plus an accumulating add in the vector forms.
    const int64_t n = 64;
    Buffer a = Buffer::make("a", i32, {n}), b = Buffer::make("b", i32, {n});
    Buffer acc = Buffer::make("acc", i32, {n}), s1 = Buffer::make("s1", i32, {n});
    Buffer v4 = Buffer::make("v4", i32, {n}), v16 = Buffer::make("v16", i32, {n});
    auto av = testing::random_words(n, 7), bv = testing::random_words(n, 8),
         cv = testing::random_words(n, 9);
    // The largest products of either sign: 255 * -128 and 255 * 127 in every byte.
    av[5] = av[6] = -1;
    bv[5] = static_cast<int32_t>(0x80808080u);
    bv[6] = 0x7f7f7f7f;
    std::vector<int32_t> s1v(n), v4v(n), v16v(n);
    Var i("i"), j("j"), k("k");
    auto lanes_at = [&](const Var& v, int lanes) { return Ramp::make(v * lanes, Expr(1), lanes); };
    Expr r4 = lanes_at(j, 4), r16 = lanes_at(k, 16);
    Stmt body = Seq::make({
        loop(i, n, Store::make(s1, dot4_u8s8(Load::make(a, i), Load::make(b, i)), i)),
        loop(j, n / 4,
             Store::make(v4, Load::make(acc, r4) + dot4_u8s8(Load::make(a, r4), Load::make(b, r4)),
                         r4)),
        loop(k, n / 16,
             Store::make(v16,
                         dot4_u8s8(Load::make(a, r16), Load::make(b, r16)) + Load::make(acc, r16),
                         r16)),
    });
    run({a, b, acc, s1, v4, v16}, body,
        {av.data(), bv.data(), cv.data(), s1v.data(), v4v.data(), v16v.data()});
    for (int64_t x = 0; x < n; ++x) {
        const int32_t dot = testing::ref::dot4_u8s8(av[x], bv[x]);
        // The accumulating add wraps in i32 like the hardware's.
        const auto sum = static_cast<int32_t>(static_cast<uint32_t>(cv[x]) + uint32_t(dot));
        EXPECT_EQ(s1v[x], dot) << x;
        EXPECT_EQ(v4v[x], sum) << x;
        EXPECT_EQ(v16v[x], sum) << x;
    }
    // The extremes by hand: 4 * 255 * -1, 4 * 128 * -128, 4 * 127 * 127, 0, then the range's
    // ends 4 * 255 * -128 and 4 * 255 * 127.
    EXPECT_EQ(s1v[0], -1020);
    EXPECT_EQ(s1v[1], -65536);
    EXPECT_EQ(s1v[2], 64516);
    EXPECT_EQ(s1v[3], 0);
    EXPECT_EQ(s1v[5], -130560);
    EXPECT_EQ(s1v[6], 129540);
}

TEST(Interpreter, Dot4U8S8TakesI32Words) {
    Buffer f = Buffer::make("f", f32, {1}), w = Buffer::make("w", i64, {1});
    EXPECT_THROW(dot4_u8s8(Load::make(f, 0), Load::make(f, 0)), InternalError);
    EXPECT_THROW(dot4_u8s8(Load::make(w, 0), Load::make(w, 0)), InternalError);
}

TEST(Interpreter, PrefetchIsANoOpEvenPastTheEnd) {
    Buffer in = Buffer::make("in", f32, {4}), out = Buffer::make("out", f32, {1});
    std::vector<float> x(4, 1), y = {0};
    Stmt body =
        Seq::make({Evaluate::make(Call::make(CallOp::Prefetch, {Load::make(in, Expr(1000))})),
                   Store::make(out, Load::make(in, 3), 0)});
    EXPECT_NO_THROW(run({in, out}, body, {x.data(), y.data()}));
    EXPECT_EQ(y[0], 1.0f);
}

TEST(Interpreter, EveryLoopKindRunsSeriallyInOrder) {
    for (ForKind kind :
         {ForKind::Serial, ForKind::Parallel, ForKind::Vectorized, ForKind::Unrolled}) {
        Buffer out = Buffer::make("out", i64, {1});
        std::vector<int64_t> y = {0};
        Var i("i");
        // out = out * 10 + i over i in [1, 4): 123 only in order.
        Stmt body =
            For::make(i, Expr(1), Expr(3), kind, Store::make(out, Load::make(out, 0) * 10 + i, 0));
        run({out}, body, {y.data()});
        EXPECT_EQ(y[0], 123) << to_string(kind);
    }
    Buffer out = Buffer::make("out", i64, {1});
    std::vector<int64_t> y = {7};
    Var i("i");
    run({out}, For::make(i, Expr(0), Expr(-3), ForKind::Serial, Store::make(out, Expr(0), 0)),
        {y.data()});
    EXPECT_EQ(y[0], 7); // a non-positive extent runs nothing
}

TEST(Interpreter, OutOfBoundsAccessNamesBufferAndIndex) {
    Buffer a = Buffer::make("weights", f32, {4});
    std::vector<float> x(4, 0);
    try {
        run({a}, Store::make(a, Load::make(a, Expr(4)), 0), {x.data()});
        FAIL() << "no error";
    } catch (const InternalError& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr(
                                  "out-of-bounds load of buffer 'weights' at index 4 (size 4)"));
    }
    try {
        run({a}, Store::make(a, Expr(1.0f), Expr(-1)), {x.data()});
        FAIL() << "no error";
    } catch (const InternalError& e) {
        EXPECT_THAT(e.what(),
                    ::testing::HasSubstr("out-of-bounds store to buffer 'weights' at index -1"));
    }
    // One bad lane of a vector access is enough.
    EXPECT_THROW(
        run({a}, Store::make(a, Broadcast::make(Expr(1.0f), 4), Ramp::make(Expr(1), Expr(1), 4)),
            {x.data()}),
        InternalError);
    EXPECT_THROW(run({a},
                     Store::make(a, Load::make(a, Ramp::make(Expr(1), Expr(3), 2)),
                                 Ramp::make(Expr(0), Expr(1), 2)),
                     {x.data()}),
                 InternalError);
}

TEST(Interpreter, MalformedFunctionsAreInternalErrors) {
    Buffer a = Buffer::make("a", f32, {4}), tmp = Buffer::make("tmp", f32, {4});
    std::vector<float> x(4, 0);
    Var free_var("n");
    EXPECT_THROW(run({a}, Store::make(a, Expr(1.0f), free_var), {x.data()}), InternalError);
    EXPECT_THROW(run({a}, Store::make(tmp, Expr(1.0f), 0), {x.data()}), InternalError);
    Var i("i");
    // A loop variable used after its loop.
    EXPECT_THROW(
        run({a},
            Seq::make({loop(i, 2, Store::make(a, Expr(1.0f), i)), Store::make(a, Expr(2.0f), i)}),
            {x.data()}),
        InternalError);
    Tensor t = te::placeholder({4}, f32, "t");
    EXPECT_THROW(run({a}, Store::make(a, t(0), 0), {x.data()}), InternalError);
    EXPECT_THROW(run({a}, Store::make(a, Expr(1.0f), 0), {}), InternalError);
    EXPECT_THROW(run({a}, Store::make(a, Expr(1.0f), 0), {nullptr}), InternalError);
    EXPECT_THROW(
        run({a}, Allocate::make(a, MemoryScope::Heap, Store::make(a, Expr(1.0f), 0)), {x.data()}),
        InternalError);
}

TEST(Interpreter, BoolAndF64Buffers) {
    Buffer flags = Buffer::make("flags", DataType::boolean(), {3}), d = Buffer::make("d", f64, {3});
    std::vector<uint8_t> fv = {1, 0, 1};
    std::vector<double> dv = {0.1, 0.2, 0.3};
    Var i("i");
    Stmt body = loop(i, 3,
                     Seq::make({Store::make(d,
                                            select(Load::make(flags, i),
                                                   Load::make(d, i) * make_const(f64, 10.0),
                                                   make_const(f64, -1.0)),
                                            i),
                                Store::make(flags, logical_not(Load::make(flags, i)), i)}));
    run({flags, d}, body, {fv.data(), dv.data()});
    EXPECT_EQ(fv, (std::vector<uint8_t>{0, 1, 0}));
    EXPECT_DOUBLE_EQ(dv[0], 1.0);
    EXPECT_DOUBLE_EQ(dv[1], -1.0);
    EXPECT_DOUBLE_EQ(dv[2], 3.0);
}

TEST(Interpreter, HalfPrecisionRoundsToNearestEven) {
    Buffer in = Buffer::make("in", f32, {6}), h = Buffer::make("h", DataType::f16(), {6});
    Buffer out = Buffer::make("out", f32, {6});
    std::vector<float> x = {1.0f + 0x1p-11f, 1.0f + 0x1p-10f + 0x1p-11f, 65520.0f, 1e-8f, 6e-8f,
                            -3.140625f};
    std::vector<uint16_t> hv(6, 0);
    std::vector<float> y(6, 0);
    Var i("i");
    Stmt body = loop(i, 6,
                     Seq::make({Store::make(h, cast(DataType::f16(), Load::make(in, i)), i),
                                Store::make(out, cast(f32, Load::make(h, i)), i)}));
    run({in, h, out}, body, {x.data(), hv.data(), y.data()});
    EXPECT_EQ(y[0], 1.0f);           // tie rounds to the even neighbour
    EXPECT_EQ(y[1], 1.0f + 0x1p-9f); // tie rounds up to even
    EXPECT_TRUE(std::isinf(y[2]));   // beyond the largest half
    EXPECT_EQ(y[3], 0.0f);           // below half the smallest subnormal
    EXPECT_EQ(y[4], 0x1p-24f);       // the smallest subnormal
    EXPECT_EQ(y[5], -3.140625f);     // exact
    EXPECT_EQ(hv[0], 0x3c00);        // memory holds IEEE half bits
}

TEST(Interpreter, ReusableAndMatchesMatmulReference) {
    const int64_t n = 64;
    Tensor a = te::placeholder({n, n}, f32, "a"), b = te::placeholder({n, n}, f32, "b");
    te::Compute c = te::make_compute({a, b}, {te::matmul(a, b)});
    LoweredFunc f = lower::lower_default(c, "mm64");
    Interpreter interp(f);
    for (uint64_t seed : {1, 2}) {
        auto x = testing::random_floats(n * n, seed), y = testing::random_floats(n * n, seed + 10);
        std::vector<float> out(n * n, 0);
        interp.run({x.data(), y.data(), out.data()});
        auto want =
            testing::ref::matmul(testing::RefTensor({n, n}, x), testing::RefTensor({n, n}, y));
        EXPECT_LE(testing::max_rel_error(out, want.data), 1e-5);
    }
}

} // namespace
} // namespace tessera::ir
