// vectorize_loops: the shape of its output, and the numbers of JIT-compiled vectorized code
// against the interpreter running the original (scalar) loops.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backends/jit_harness.h"
#include "common/test_util.h"
#include "tessera/ir/functor.h"
#include "tessera/ir/interpreter.h"
#include "tessera/ir/op.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/verify.h"
#include "tessera/lower/lower_for_codegen.h"
#include "tessera/lower/vectorize_loops.h"

using namespace tessera;
using namespace tessera::ir;
using namespace tessera::testing;

namespace {

Expr ld(const Buffer& b, Expr i) { return Load::make(b, i); }

/// Counts For nodes by kind and vector-typed expressions.
struct Census : IRVisitor {
    using IRVisitor::visit;
    int loops[4] = {0, 0, 0, 0};
    int vector_exprs = 0;
    void visit(const Expr& e) override {
        if (e.defined() && e.type().lanes > 1)
            ++vector_exprs;
        IRVisitor::visit(e);
    }
    void visit(const For* op) override {
        ++loops[static_cast<int>(op->kind)];
        IRVisitor::visit(op);
    }
    int count(ForKind k) const { return loops[static_cast<int>(k)]; }
};

Census census(const Stmt& s) {
    Census c;
    c.visit(s);
    return c;
}

/// Float buffers with random contents (one seed per buffer), for params of f32 dtype; other
/// dtypes are filled with small integers.
struct Args {
    std::vector<std::vector<float>> f32;
    std::vector<std::vector<int32_t>> i32;
    std::vector<void*> ptrs;
};

Args make_args(const LoweredFunc& f, uint64_t seed) {
    Args a;
    a.f32.reserve(f.params.size());
    a.i32.reserve(f.params.size());
    for (size_t p = 0; p < f.params.size(); ++p) {
        const Buffer& b = f.params[p];
        size_t n = static_cast<size_t>(b->num_elements());
        if (b.dtype() == DataType::f32()) {
            a.f32.push_back(random_floats(n, seed + p));
            a.ptrs.push_back(a.f32.back().data());
        } else {
            EXPECT_EQ(b.dtype(), DataType::i32());
            std::vector<int32_t> v(n);
            for (size_t i = 0; i < n; ++i)
                v[i] = static_cast<int32_t>((i * 37 + p * 11) % 29) - 14;
            a.i32.push_back(v);
            a.ptrs.push_back(a.i32.back().data());
        }
    }
    return a;
}

/// Runs f through prepare_for_codegen and the JIT, and the original f through the interpreter,
/// on the same random inputs; expects equal outputs (within float contraction error).
void expect_jit_matches_interpreter(const LoweredFunc& f) {
    LoweredFunc prepared = lower::prepare_for_codegen(f);
    auto jit = backend::JitModule::compile({prepared});
    Args got = make_args(f, 100), want = make_args(f, 100);
    jit->get(f.name)(got.ptrs.data());
    interpret(f, want.ptrs);
    for (size_t i = 0; i < got.f32.size(); ++i)
        EXPECT_LT(max_rel_error(got.f32[i], want.f32[i]), 1e-5) << "f32 buffer " << i << "\n"
                                                                << prepared;
    for (size_t i = 0; i < got.i32.size(); ++i)
        EXPECT_EQ(got.i32[i], want.i32[i]) << "i32 buffer " << i << "\n" << prepared;
}

} // namespace

TEST(VectorizeLoops, ElementwiseBecomesDenseVectorAccess) {
    Buffer A = buf("A", DataType::f32(), 8), O = buf("O", DataType::f32(), 8);
    Stmt s = loop("j", 8, ForKind::Vectorized,
                  [&](Var j) { return Store::make(O, ld(A, j) * 2.0f, j); });
    Stmt v = lower::vectorize_loops(s);
    const Store* st = v.as<Store>();
    ASSERT_NE(st, nullptr) << v;
    const Ramp* r = st->index.as<Ramp>();
    ASSERT_NE(r, nullptr) << v;
    EXPECT_EQ(r->lanes, 8);
    EXPECT_TRUE(is_const_int(r->stride, 1));
    EXPECT_EQ(st->value.type(), DataType::f32(8));
    const Mul* m = st->value.as<Mul>();
    ASSERT_NE(m, nullptr);
    EXPECT_NE(m->b.as<Broadcast>(), nullptr) << "the scalar constant is broadcast";
    verify(LoweredFunc{"f", {A, O}, v});
}

TEST(VectorizeLoops, IndexArithmeticStaysARamp) {
    // O[i*16 + j + 3] for vectorized j: one Ramp with stride 1, base i*16 + 3.
    Buffer A = buf("A", DataType::f32(), 7 * 16 + 3), O = buf("O", DataType::f32(), 7 * 16 + 3);
    Stmt s = loop("i", 7, ForKind::Serial, [&](Var i) {
        return loop("j", 16, ForKind::Vectorized, [&](Var j) {
            Expr idx = i * 16 + j + 3;
            return Store::make(O, ld(A, idx) + 1.0f, idx);
        });
    });
    Stmt v = lower::vectorize_loops(s);
    const For* outer = v.as<For>();
    ASSERT_NE(outer, nullptr);
    const Store* st = outer->body.as<Store>();
    ASSERT_NE(st, nullptr) << v;
    const Ramp* r = st->index.as<Ramp>();
    ASSERT_NE(r, nullptr) << v;
    EXPECT_TRUE(is_const_int(r->stride, 1)) << v;
    const Load* l = st->value.as<Add>()->a.as<Load>();
    ASSERT_NE(l, nullptr) << v;
    EXPECT_NE(l->index.as<Ramp>(), nullptr) << v;
}

TEST(VectorizeLoops, TwoDimensionalElementwiseMatches) {
    for (int64_t rows : {1, 7, 13}) {
        Buffer A = buf("A", DataType::f32(), rows * 16), B = buf("B", DataType::f32(), 16),
               C = buf("C", DataType::f32(), rows), O = buf("O", DataType::f32(), rows * 16);
        Stmt s = loop("i", rows, ForKind::Serial, [&](Var i) {
            return loop("j", 16, ForKind::Vectorized, [&](Var j) {
                return Store::make(O, ld(A, i * 16 + j) * ld(B, j) + ld(C, i), i * 16 + j);
            });
        });
        expect_jit_matches_interpreter(LoweredFunc{"f", {A, B, C, O}, s});
    }
}

// The backend prepares what it is given: a function with a Vectorized loop compiles as
// sched::lower_state leaves it, and a prepared one is marked and not prepared twice.
TEST(VectorizeLoops, TheBackendPreparesWhatItIsGiven) {
    Buffer A = buf("A", DataType::f32(), 7 * 16), O = buf("O", DataType::f32(), 7 * 16);
    Stmt s = loop("i", 7, ForKind::Serial, [&](Var i) {
        return loop("j", 16, ForKind::Vectorized, [&](Var j) {
            return Store::make(O, ld(A, i * 16 + j) * ld(A, i * 16 + j), i * 16 + j);
        });
    });
    const LoweredFunc f{"f", {A, O}, s};
    EXPECT_FALSE(f.ready_for_codegen);
    auto jit = backend::JitModule::compile({f});
    Args got = make_args(f, 100), want = make_args(f, 100);
    jit->get(f.name)(got.ptrs.data());
    interpret(f, want.ptrs);
    EXPECT_LT(max_rel_error(got.f32[1], want.f32[1]), 1e-6);
    const LoweredFunc prepared = lower::prepare_for_codegen(f);
    EXPECT_TRUE(prepared.ready_for_codegen);
    EXPECT_EQ(census(prepared.body).count(ForKind::Vectorized), 0);
    EXPECT_TRUE(lower::prepare_for_codegen(prepared).body.same_as(prepared.body));
}

TEST(VectorizeLoops, GuardedTailIsScalarizedPerLane) {
    // 13 elements in blocks of 8: the guard's condition is a vector, so each lane gets its own
    // scalar copy; the loop must not write past 13.
    const int64_t n = 13;
    Buffer A = buf("A", DataType::f32(), n), O = buf("O", DataType::f32(), n);
    Stmt s = loop("jo", 2, ForKind::Serial, [&](Var jo) {
        return loop("ji", 8, ForKind::Vectorized, [&](Var ji) {
            Expr idx = jo * 8 + ji;
            Var t("t", DataType::f32());
            return LetStmt::make(
                t, cast(DataType::f32(), idx),
                IfThenElse::make(idx < Expr(n), Store::make(O, ld(A, idx) + t, idx)));
        });
    });
    LoweredFunc f{"f", {A, O}, s};
    Stmt v = lower::vectorize_loops(s);
    EXPECT_EQ(census(v).count(ForKind::Vectorized), 0) << v;
    verify(LoweredFunc{"f", {A, O}, v});
    expect_jit_matches_interpreter(f);
}

TEST(VectorizeLoops, LetSelectAndMathAreWidened) {
    Buffer A = buf("A", DataType::f32(), 32), O = buf("O", DataType::f32(), 32),
           I = buf("I", DataType::i32(), 32);
    Stmt s = loop("j", 32, ForKind::Vectorized, [&](Var j) {
        Var t("t", DataType::f32());
        Expr tv = t;
        return LetStmt::make(
            t, ld(A, j) * 2.0f,
            Seq::make(
                {Store::make(O, select(tv > 0.0f, exp(tv), tv * tv) + max(tv, 0.5f), j),
                 Store::make(
                     I, cast(DataType::i32(), tv * 10.0f) / make_const(DataType::i32(), int64_t{4}),
                     j)}));
    });
    Stmt v = lower::vectorize_loops(s);
    EXPECT_EQ(census(v).count(ForKind::Vectorized), 0);
    EXPECT_GT(census(v).vector_exprs, 0);
    expect_jit_matches_interpreter(LoweredFunc{"f", {A, O, I}, s});
}

TEST(VectorizeLoops, InnerSerialLoopAndAllocateInside) {
    Buffer A = buf("A", DataType::f32(), 5 * 8), B = buf("B", DataType::f32(), 5),
           O = buf("O", DataType::f32(), 8);
    Stmt s = loop("j", 8, ForKind::Vectorized, [&](Var j) {
        Buffer T = buf("T", DataType::f32(), 8);
        Stmt init = Store::make(T, 0.0f, j);
        Stmt acc = loop("k", 5, ForKind::Serial, [&](Var k) {
            return Store::make(T, ld(T, j) + ld(A, k * 8 + j) * ld(B, k), j);
        });
        return Allocate::make(T, MemoryScope::Stack,
                              Seq::make({init, acc, Store::make(O, ld(T, j), j)}));
    });
    Stmt v = lower::vectorize_loops(s);
    EXPECT_EQ(census(v).count(ForKind::Vectorized), 0);
    EXPECT_EQ(census(v).count(ForKind::Serial), 1);
    expect_jit_matches_interpreter(LoweredFunc{"f", {A, B, O}, s});
}

TEST(VectorizeLoops, GathersAndIntegerLanes) {
    Buffer A = buf("A", DataType::f32(), 3 * 16), O = buf("O", DataType::f32(), 16),
           P = buf("P", DataType::f32(), 16), I = buf("I", DataType::i32(), 16);
    Stmt s = loop("j", 16, ForKind::Vectorized, [&](Var j) {
        return Seq::make(
            {Store::make(O, ld(A, j * 3), j), Store::make(P, ld(A, j / 2), j),
             Store::make(I,
                         cast(DataType::i32(), j) % make_const(DataType::i32(), int64_t{3}) -
                             cast(DataType::i32(), j / 5),
                         j)});
    });
    expect_jit_matches_interpreter(LoweredFunc{"f", {A, O, P, I}, s});
}

TEST(VectorizeLoops, ScalarStoreOfVectorValueFallsBackToSerial) {
    // S[0] += A[j] is a reduction across lanes: it must stay a serial loop.
    Buffer A = buf("A", DataType::f32(), 8), S = buf("S", DataType::f32(), 1);
    Stmt s = loop("j", 8, ForKind::Vectorized,
                  [&](Var j) { return Store::make(S, ld(S, Expr(0)) + ld(A, j), Expr(0)); });
    Stmt v = lower::vectorize_loops(s);
    EXPECT_EQ(census(v).count(ForKind::Serial), 1) << v;
    EXPECT_EQ(census(v).vector_exprs, 0) << v;
    expect_jit_matches_interpreter(LoweredFunc{"f", {A, S}, s});
}

TEST(VectorizeLoops, NestedVectorizedLoopsVectorizeTheInnerOne) {
    Buffer A = buf("A", DataType::f32(), 4 * 8), O = buf("O", DataType::f32(), 4 * 8);
    Stmt s = loop("i", 4, ForKind::Vectorized, [&](Var i) {
        return loop("j", 8, ForKind::Vectorized,
                    [&](Var j) { return Store::make(O, ld(A, i * 8 + j) * 3.0f, i * 8 + j); });
    });
    Stmt v = lower::vectorize_loops(s);
    Census c = census(v);
    EXPECT_EQ(c.count(ForKind::Vectorized), 0);
    EXPECT_EQ(c.count(ForKind::Serial), 1);
    EXPECT_GT(c.vector_exprs, 0);
    expect_jit_matches_interpreter(LoweredFunc{"f", {A, O}, s});
}

TEST(VectorizeLoops, ExtentOneAndNonConstantExtent) {
    Buffer A = buf("A", DataType::f32(), 8), O = buf("O", DataType::f32(), 8);
    Var j("j"), n("n");
    Stmt one = For::make(j, Expr(3), Expr(1), ForKind::Vectorized, Store::make(O, ld(A, j), j));
    Stmt v = lower::vectorize_loops(one);
    ASSERT_NE(v.as<Store>(), nullptr) << v;
    Var k("k");
    Stmt dyn = LetStmt::make(
        n, Expr(5), For::make(k, Expr(0), n, ForKind::Vectorized, Store::make(O, ld(A, k), k)));
    Stmt dv = lower::vectorize_loops(dyn);
    EXPECT_EQ(census(dv).count(ForKind::Serial), 1) << dv;
    expect_jit_matches_interpreter(LoweredFunc{"f", {A, O}, Seq::make({one, dyn})});
}

TEST(VectorizeLoops, PrefetchInsideVectorLoop) {
    Buffer A = buf("A", DataType::f32(), 64), O = buf("O", DataType::f32(), 16);
    Stmt s = loop("j", 16, ForKind::Vectorized, [&](Var j) {
        return Seq::make({Evaluate::make(Call::make(CallOp::Prefetch, {Load::make(A, j + 32)})),
                          Store::make(O, ld(A, j), j)});
    });
    Stmt v = lower::vectorize_loops(s);
    verify(LoweredFunc{"f", {A, O}, v});
    expect_jit_matches_interpreter(LoweredFunc{"f", {A, O}, s});
}

TEST(VectorizeLoops, VectorLoopInsideParallelLoop) {
    for (int64_t rows : {1, 7, 13}) {
        Buffer A = buf("A", DataType::f32(), rows * 8), O = buf("O", DataType::f32(), rows * 8);
        Stmt s = loop("i", rows, ForKind::Parallel, [&](Var i) {
            return loop("j", 8, ForKind::Vectorized, [&](Var j) {
                return Store::make(O, max(ld(A, i * 8 + j), 0.0f), i * 8 + j);
            });
        });
        expect_jit_matches_interpreter(LoweredFunc{"f", {A, O}, s});
    }
}
