// unroll_loops and prepare_for_codegen: copies with fresh bindings, numbers through the JIT
// against the interpreter, and a register-tiled micro-kernel whose tile LLVM keeps in registers.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/jit_harness.h"
#include "common/test_util.h"
#include "tessera/ir/functor.h"
#include "tessera/ir/interpreter.h"
#include "tessera/ir/op.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/simplify.h"
#include "tessera/ir/verify.h"
#include "tessera/lower/lower_for_codegen.h"
#include "tessera/lower/unroll_loops.h"

using namespace tessera;
using namespace tessera::ir;
using namespace tessera::testing;

namespace {

Expr ld(const Buffer& b, Expr i) { return Load::make(b, i); }

int count_loops(const Stmt& s) {
    struct Count : IRVisitor {
        using IRVisitor::visit;
        int n = 0;
        void visit(const For* op) override {
            ++n;
            IRVisitor::visit(op);
        }
    } c;
    c.visit(s);
    return c.n;
}

} // namespace

TEST(UnrollLoops, CopiesWithConstantIndices) {
    Buffer O = buf("O", DataType::i64(), 3);
    Stmt s = loop("i", 3, ForKind::Unrolled, [&](Var i) { return Store::make(O, i * 10, i); });
    Stmt u = simplify(lower::unroll_loops(s));
    const Seq* seq = u.as<Seq>();
    ASSERT_NE(seq, nullptr) << u;
    ASSERT_EQ(seq->stmts.size(), 3u);
    for (int64_t k = 0; k < 3; ++k) {
        const Store* st = seq->stmts[k].as<Store>();
        ASSERT_NE(st, nullptr);
        EXPECT_TRUE(is_const_int(st->index, k)) << u;
        EXPECT_TRUE(is_const_int(st->value, k * 10)) << u;
    }
}

TEST(UnrollLoops, InnerBindingsAreFreshInEveryCopy) {
    Buffer A = buf("A", DataType::f32(), 4 * 5), O = buf("O", DataType::f32(), 4 * 5);
    Stmt s = loop("i", 4, ForKind::Unrolled, [&](Var i) {
        Var t("t", DataType::f32());
        Buffer T = buf("T", DataType::f32(), 5);
        Stmt inner = loop("j", 5, ForKind::Serial,
                          [&](Var j) { return Store::make(T, ld(A, i * 5 + j) + t, j); });
        Stmt out = loop("j2", 5, ForKind::Serial,
                        [&](Var j) { return Store::make(O, ld(T, j) * 2.0f, i * 5 + j); });
        return Allocate::make(T, MemoryScope::Stack,
                              LetStmt::make(t, cast(DataType::f32(), i), Seq::make({inner, out})));
    });
    LoweredFunc f{"f", {A, O}, s};
    Stmt u = lower::unroll_loops(s);
    EXPECT_EQ(count_loops(u), 8);        // 4 copies of two serial loops
    verify(LoweredFunc{"f", {A, O}, u}); // every variable and buffer bound once

    LoweredFunc prepared = lower::prepare_for_codegen(f);
    auto jit = backend::JitModule::compile({prepared});
    auto a = random_floats(20, 1);
    std::vector<float> got(20), want(20);
    void* args[] = {a.data(), got.data()};
    jit->get("f")(args);
    interpret(f, {a.data(), want.data()});
    EXPECT_EQ(got, want);
}

TEST(UnrollLoops, NonConstantExtentBecomesSerial) {
    Buffer O = buf("O", DataType::i64(), 8);
    Var n("n"), i("i");
    Stmt s = LetStmt::make(n, Expr(6),
                           For::make(i, Expr(1), n, ForKind::Unrolled, Store::make(O, i, i)));
    Stmt u = lower::unroll_loops(s);
    const For* loop_after = u.as<LetStmt>()->body.as<For>();
    ASSERT_NE(loop_after, nullptr) << u;
    EXPECT_EQ(loop_after->kind, ForKind::Serial);
}

TEST(UnrollLoops, NestedUnrolledLoopsWithOffsets) {
    for (int64_t base : {0, 3}) {
        Buffer O = buf("O", DataType::i32(), 64);
        Var i("i"), j("j");
        Stmt s = For::make(i, Expr(base), Expr(3), ForKind::Unrolled,
                           For::make(j, Expr(1), Expr(4), ForKind::Unrolled,
                                     Store::make(O, cast(DataType::i32(), i * 7 + j), i * 8 + j)));
        Stmt u = simplify(lower::unroll_loops(s));
        EXPECT_EQ(count_loops(u), 0) << u;
        LoweredFunc f{"f", {O}, s};
        auto jit = backend::JitModule::compile({lower::prepare_for_codegen(f)});
        std::vector<int32_t> got(64, -1), want(64, -1);
        void* args[] = {got.data()};
        jit->get("f")(args);
        interpret(f, {want.data()});
        EXPECT_EQ(got, want);
    }
}

TEST(UnrollLoops, PrepareIsIdempotent) {
    Buffer A = buf("A", DataType::f32(), 64), O = buf("O", DataType::f32(), 64);
    Stmt s = loop("i", 8, ForKind::Unrolled, [&](Var i) {
        return loop("j", 8, ForKind::Vectorized,
                    [&](Var j) { return Store::make(O, ld(A, i * 8 + j) + 1.0f, i * 8 + j); });
    });
    LoweredFunc once = lower::prepare_for_codegen(LoweredFunc{"f", {A, O}, s});
    LoweredFunc twice = lower::prepare_for_codegen(once);
    EXPECT_EQ(to_string(once), to_string(twice));
}

// The register-blocked kernel the sgemm benchmark is built from: a 4 x 16 tile of C
// accumulated in a Stack buffer with unrolled rows and vectorized columns. After
// prepare_for_codegen every tile index is a constant, so LLVM must promote the tile to vector
// registers: the optimized IR keeps no alloca.
TEST(UnrollLoops, RegisterTileLivesInRegisters) {
    const int64_t M = 8, N = 32, K = 13, MR = 4, NR = 16;
    Buffer A = buf("A", DataType::f32(), M * K), B = buf("B", DataType::f32(), K * N),
           C = buf("C", DataType::f32(), M * N);
    Stmt s = loop("io", M / MR, ForKind::Parallel, [&](Var io) {
        return loop("jo", N / NR, ForKind::Serial, [&](Var jo) {
            Buffer acc = buf("acc", DataType::f32(), MR * NR);
            auto tile = [&](auto body) {
                return loop("ii", MR, ForKind::Unrolled, [&](Var ii) {
                    return loop("ji", NR, ForKind::Vectorized,
                                [&](Var ji) { return body(ii, ji); });
                });
            };
            Stmt init = tile([&](Var ii, Var ji) { return Store::make(acc, 0.0f, ii * NR + ji); });
            Stmt update = loop("k", K, ForKind::Serial, [&](Var k) {
                return tile([&](Var ii, Var ji) {
                    Expr a = ld(A, (io * MR + ii) * K + k), b = ld(B, k * N + jo * NR + ji);
                    return Store::make(acc, ld(acc, ii * NR + ji) + a * b, ii * NR + ji);
                });
            });
            Stmt store = tile([&](Var ii, Var ji) {
                return Store::make(C, ld(acc, ii * NR + ji), (io * MR + ii) * N + jo * NR + ji);
            });
            return Allocate::make(acc, MemoryScope::Stack, Seq::make({init, update, store}));
        });
    });
    LoweredFunc f{"tile", {A, B, C}, s};
    LoweredFunc prepared = lower::prepare_for_codegen(f);
    backend::CompileOptions opts;
    opts.keep_llvm_ir = true;
    auto jit = backend::JitModule::compile({prepared}, opts);
    EXPECT_EQ(jit->llvm_ir().find("alloca float"), std::string::npos) << jit->llvm_ir();
    EXPECT_EQ(jit->llvm_ir().find("alloca [64 x float]"), std::string::npos);
    EXPECT_NE(jit->llvm_ir().find("@llvm.fmuladd.v"), std::string::npos);

    auto a = random_floats(M * K, 1), b = random_floats(K * N, 2);
    std::vector<float> got(M * N), want(M * N);
    void* args[] = {a.data(), b.data(), got.data()};
    jit->get("tile")(args);
    interpret(f, {a.data(), b.data(), want.data()});
    EXPECT_LT(max_rel_error(got, want), 1e-5);
}
