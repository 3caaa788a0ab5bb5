// Random expressions (fixed seeds) compiled by the JIT, serially and through vectorization,
// against the interpreter: catches any node whose code disagrees with the IR's semantics.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backends/jit_harness.h"
#include "common/test_util.h"
#include "tessera/ir/functor.h"
#include "tessera/ir/interpreter.h"
#include "tessera/ir/op.h"
#include "tessera/ir/printer.h"
#include "tessera/support/rng.h"

using namespace tessera;
using namespace tessera::ir;
using namespace tessera::testing;

namespace {

/// Builds random well-defined expressions of i32, i64, f32 and bool over loads at index i.
struct ExprGen {
    Rng& rng;
    Var i;
    Buffer in_i32, in_i64, in_f32;

    bool coin(int one_in) { return rng.uniform_int(1, one_in) == 1; }

    Expr leaf(DataType t) {
        if (t.is_bool())
            return gen(DataType::i32(), 1) < gen(DataType::i32(), 1);
        switch (rng.uniform_int(0, 2)) {
        case 0:
            if (t == DataType::f32())
                return Load::make(in_f32, i);
            return t == DataType::i32() ? Load::make(in_i32, i) : Load::make(in_i64, i);
        case 1:
            if (t.is_float())
                return make_const(t, rng.uniform_float(-2, 2));
            return make_const(t, rng.uniform_int(-9, 9));
        default:
            return cast(t, i);
        }
    }

    /// A divisor that is never zero.
    Expr nonzero(Expr e) { return select(eq(e, make_zero(e.type())), make_one(e.type()), e); }

    Expr gen(DataType t, int depth) {
        if (depth == 0 || coin(4))
            return leaf(t);
        Expr a = gen(t, depth - 1), b = gen(t, depth - 1);
        if (t.is_bool()) {
            switch (rng.uniform_int(0, 3)) {
            case 0:
                return logical_and(a, b);
            case 1:
                return logical_or(a, b);
            case 2:
                return logical_not(a);
            default:
                return gen(DataType::f32(), depth - 1) >= gen(DataType::f32(), depth - 1);
            }
        }
        // dot4_u8s8 on i32 words, alone or accumulated (vpdpbusd where the host has VNNI).
        if (t == DataType::i32() && coin(6))
            return coin(2) ? gen(t, depth - 1) + dot4_u8s8(a, b) : dot4_u8s8(a, b);
        switch (rng.uniform_int(0, 8)) {
        case 0:
            return a + b;
        case 1:
            return a - b;
        case 2:
            return a * b;
        case 3:
            return t.is_float() ? a / (abs(b) + 0.5f) : a / nonzero(b);
        case 4:
            return t.is_float() ? a - b * 0.5f : a % nonzero(b);
        case 5:
            return min(a, b);
        case 6:
            return max(a, b);
        case 7:
            return select(gen(DataType::boolean(), depth - 1), a, b);
        default: {
            // A cast from another type, kept in a range every target type holds.
            if (t.is_float())
                return cast(t, gen(DataType::i32(), depth - 1));
            return cast(t, min(max(gen(DataType::f32(), depth - 1), -1000.0f), 1000.0f));
        }
        }
    }
};

void run_case(uint64_t seed, bool vectorize) {
    const int64_t n = 16;
    Rng rng(seed);
    Buffer ai = buf("ai", DataType::i32(), n), al = buf("al", DataType::i64(), n),
           af = buf("af", DataType::f32(), n);
    Buffer oi = buf("oi", DataType::i32(), n), ol = buf("ol", DataType::i64(), n),
           of = buf("of", DataType::f32(), n), ob = buf("ob", DataType::boolean(), n);
    Var i("i");
    ExprGen g{rng, i, ai, al, af};
    // Depth 3 keeps i64 products far from overflow (inputs are small).
    Stmt body = Seq::make({Store::make(oi, g.gen(DataType::i32(), 4), i),
                           Store::make(ol, g.gen(DataType::i64(), 3), i),
                           Store::make(of, g.gen(DataType::f32(), 4), i),
                           Store::make(ob, g.gen(DataType::boolean(), 3), i)});
    LoweredFunc f{
        "f",
        {ai, al, af, oi, ol, of, ob},
        For::make(i, Expr(0), Expr(n), vectorize ? ForKind::Vectorized : ForKind::Serial, body)};

    std::vector<int32_t> vi(n);
    std::vector<int64_t> vl(n);
    std::vector<float> vf = random_floats(n, seed + 1000, -2, 2);
    for (int64_t k = 0; k < n; ++k) {
        vi[k] = static_cast<int32_t>(rng.uniform_int(-100, 100));
        vl[k] = rng.uniform_int(-100, 100);
    }
    std::vector<int32_t> got_i(n), want_i(n);
    std::vector<int64_t> got_l(n), want_l(n);
    std::vector<float> got_f(n), want_f(n);
    std::vector<uint8_t> got_b(n), want_b(n);

    LoweredFunc prepared = lower::prepare_for_codegen(f);
    if (vectorize) {
        // The loop really became vector code (no fallback to a serial loop).
        struct HasFor : IRVisitor {
            using IRVisitor::visit;
            bool found = false;
            void visit(const For*) override { found = true; }
        } has_for;
        has_for.visit(prepared.body);
        EXPECT_FALSE(has_for.found) << prepared;
    }
    auto jit = backend::JitModule::compile({prepared});
    void* args[] = {vi.data(),    vl.data(),    vf.data(),   got_i.data(),
                    got_l.data(), got_f.data(), got_b.data()};
    jit->get("f")(args);
    interpret(f, {vi.data(), vl.data(), vf.data(), want_i.data(), want_l.data(), want_f.data(),
                  want_b.data()});
    EXPECT_EQ(got_i, want_i) << f;
    EXPECT_EQ(got_l, want_l) << f;
    EXPECT_LT(max_rel_error(got_f, want_f), 1e-4) << f;
    EXPECT_EQ(got_b, want_b) << f;
}

} // namespace

TEST(CodegenFuzz, RandomScalarExpressionsMatchInterpreter) {
    for (uint64_t seed = 1; seed <= 40; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        run_case(seed, false);
    }
}

TEST(CodegenFuzz, RandomVectorizedExpressionsMatchInterpreter) {
    for (uint64_t seed = 1; seed <= 40; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        run_case(seed, true);
    }
}
