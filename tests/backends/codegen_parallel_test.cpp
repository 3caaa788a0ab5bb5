// Parallel loops in generated code: every index written once, captured scalars and buffers,
// nesting, allocations inside the parallel body.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backends/jit_harness.h"
#include "common/test_util.h"
#include "tessera/ir/op.h"
#include "tessera/runtime/thread_pool.h"

using namespace tessera;
using namespace tessera::ir;
using namespace tessera::testing;

namespace {

Expr ld(const Buffer& b, Expr i) { return Load::make(b, i); }

struct ThreadCountGuard {
    int saved = runtime::num_threads();
    explicit ThreadCountGuard(int n) { runtime::set_num_threads(n); }
    ~ThreadCountGuard() { runtime::set_num_threads(saved); }
};

} // namespace

TEST(CodegenParallel, EveryIndexOnceWithCapturedValues) {
    ThreadCountGuard threads(3);
    for (int64_t n : {1, 7, 13, 127, 1000}) {
        Buffer A = buf("A", DataType::f32(), n), S = buf("S", DataType::f32(), 1),
               O = buf("O", DataType::f32(), n), C = buf("C", DataType::i32(), n);
        Var scale("scale", DataType::f32()), offset("offset");
        Stmt par = loop("i", n, ForKind::Parallel, [&](Var i) {
            return Seq::make({Store::make(O, ld(A, i) * scale, i),
                              Store::make(C, ld(C, i) + cast(DataType::i32(), i + offset), i)});
        });
        Stmt body =
            LetStmt::make(scale, ld(S, Expr(0)) * 2.0f, LetStmt::make(offset, Expr(5), par));
        JitKernel k = jit_compile({A, S, O, C}, body);
        auto a = random_floats(n, 1), s = random_floats(1, 2);
        std::vector<float> o(n);
        std::vector<int32_t> c(n, 0);
        k(a, s, o, c);
        for (int64_t i = 0; i < n; ++i) {
            ASSERT_EQ(o[i], a[i] * (s[0] * 2.0f)) << i;
            ASSERT_EQ(c[i], i + 5) << "index " << i << " of " << n << " written once";
        }
    }
}

TEST(CodegenParallel, NonZeroMinAndInnerSerialLoop) {
    ThreadCountGuard threads(2);
    const int64_t rows = 13, cols = 7;
    Buffer O = buf("O", DataType::i64(), rows * cols);
    Var i("i"), j("j");
    Stmt inner = For::make(j, Expr(0), Expr(cols), ForKind::Serial,
                           Store::make(O, i * 100 + j, i * cols + j));
    Stmt body = For::make(i, Expr(2), Expr(rows - 2), ForKind::Parallel, inner);
    JitKernel k = jit_compile({O}, body);
    std::vector<int64_t> o(rows * cols, -1);
    k(o);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
            EXPECT_EQ(o[r * cols + c], r >= 2 ? r * 100 + c : -1);
}

TEST(CodegenParallel, NestedParallelLoops) {
    ThreadCountGuard threads(3);
    const int64_t outer = 7, inner = 13;
    Buffer O = buf("O", DataType::i32(), outer * inner);
    Stmt body = loop("i", outer, ForKind::Parallel, [&](Var i) {
        return loop("j", inner, ForKind::Parallel, [&](Var j) {
            return Store::make(O, ld(O, i * inner + j) + cast(DataType::i32(), i * 100 + j),
                               i * inner + j);
        });
    });
    JitKernel k = jit_compile({O}, body);
    std::vector<int32_t> o(outer * inner, 0);
    k(o);
    for (int64_t i = 0; i < outer; ++i)
        for (int64_t j = 0; j < inner; ++j)
            EXPECT_EQ(o[i * inner + j], i * 100 + j);
}

TEST(CodegenParallel, ParallelInsideSerialAndAllocationsInBody) {
    ThreadCountGuard threads(2);
    const int64_t reps = 5, n = 127, tile = 8;
    Buffer A = buf("A", DataType::f32(), n * tile), O = buf("O", DataType::f32(), n);
    Stmt body = loop("r", reps, ForKind::Serial, [&](Var r) {
        return loop("i", n, ForKind::Parallel, [&](Var i) {
            Buffer T = buf("T", DataType::f32(), tile);
            Buffer H = buf("H", DataType::f32(), tile);
            Stmt fill = loop("t", tile, ForKind::Serial, [&](Var t) {
                return Seq::make(
                    {Store::make(T, ld(A, i * tile + t), t), Store::make(H, ld(T, t) * 2.0f, t)});
            });
            Var acc("acc", DataType::f32());
            Expr sum = ld(H, Expr(0));
            for (int64_t t = 1; t < tile; ++t)
                sum = sum + ld(H, Expr(t));
            Stmt write = Store::make(O, ld(O, i) + sum, i);
            return Allocate::make(T, MemoryScope::Stack,
                                  Allocate::make(H, MemoryScope::Heap, Seq::make({fill, write})));
        });
    });
    JitKernel k = jit_compile({A, O}, body);
    auto a = random_floats(n * tile, 3);
    std::vector<float> o(n, 0.0f), want(n, 0.0f);
    k(a, o);
    for (int64_t i = 0; i < n; ++i) {
        float s = a[i * tile] * 2.0f;
        for (int64_t t = 1; t < tile; ++t)
            s = s + a[i * tile + t] * 2.0f;
        for (int64_t r = 0; r < reps; ++r)
            want[i] += s;
    }
    EXPECT_LT(max_rel_error(o, want), 1e-5);
}

TEST(CodegenParallel, RepeatedCallsStayCorrect) {
    ThreadCountGuard threads(2);
    const int64_t n = 13;
    Buffer O = buf("O", DataType::i64(), n);
    Stmt body =
        loop("i", n, ForKind::Parallel, [&](Var i) { return Store::make(O, ld(O, i) + i, i); });
    JitKernel k = jit_compile({O}, body);
    std::vector<int64_t> o(n, 0);
    for (int rep = 0; rep < 2000; ++rep)
        k(o);
    for (int64_t i = 0; i < n; ++i)
        EXPECT_EQ(o[i], 2000 * i);
}
