// lower_default: parameter order, loop structure, intermediates, no tensor nodes left.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/op_runner.h"
#include "common/test_util.h"
#include "tessera/ir/functor.h"
#include "tessera/ir/interpreter.h"
#include "tessera/ir/op.h"
#include "tessera/ir/verify.h"
#include "tessera/lower/lower_default.h"
#include "tessera/te/op_library.h"

namespace tessera::lower {
namespace {

using namespace ir;
const DataType f32 = DataType::f32();

/// Counts node kinds in a lowered body.
struct Census : IRVisitor {
    using IRVisitor::visit;
    int fors = 0, stores = 0, loads = 0, allocates = 0, tensor_nodes = 0;
    std::vector<std::string> allocated;
    void visit(const For* op) override {
        ++fors;
        EXPECT_EQ(op->kind, ForKind::Serial);
        IRVisitor::visit(op);
    }
    void visit(const Store* op) override {
        ++stores;
        IRVisitor::visit(op);
    }
    void visit(const Load* op) override {
        ++loads;
        IRVisitor::visit(op);
    }
    void visit(const Allocate* op) override {
        ++allocates;
        allocated.push_back(op->buffer.name());
        EXPECT_EQ(op->scope, MemoryScope::Heap);
        IRVisitor::visit(op);
    }
    void visit(const TensorRead* op) override { ++tensor_nodes; }
    void visit(const Reduce* op) override { ++tensor_nodes; }
};

TEST(LowerDefault, ParamsAreInputsThenOutputs) {
    Tensor a = te::placeholder({3, 4}, f32, "a"), b = te::placeholder({4}, f32, "b");
    Tensor y = te::add(a, b);
    Tensor z = te::relu(y);
    te::Compute c = te::make_compute({b, a}, {z, y});
    LoweredFunc f = lower_default(c, "fused");
    EXPECT_EQ(f.name, "fused");
    ASSERT_EQ(f.params.size(), 4u);
    std::vector<std::string> names;
    for (const auto& p : f.params)
        names.push_back(p.name());
    EXPECT_EQ(names, (std::vector<std::string>{"b", "a", "relu", "add"}));
    EXPECT_EQ(f.params[1].shape(), (std::vector<int64_t>{3, 4}));
    EXPECT_EQ(f.params[0].dtype(), f32);
    Census census;
    census.visit(f.body);
    EXPECT_EQ(census.allocates, 0); // both stages are outputs
    EXPECT_EQ(census.tensor_nodes, 0);
}

TEST(LowerDefault, MatmulIsInitPlusReductionLoop) {
    Tensor a = te::placeholder({7, 13}, f32, "a"), b = te::placeholder({13, 5}, f32, "b");
    te::Compute c = te::make_compute({a, b}, {te::matmul(a, b)});
    LoweredFunc f = lower_default(c, "mm");
    Census census;
    census.visit(f.body);
    EXPECT_EQ(census.fors, 3);
    EXPECT_EQ(census.stores, 2); // identity, then accumulate
    EXPECT_EQ(census.loads, 3);  // acc, a, b
    EXPECT_EQ(census.tensor_nodes, 0);
    // Structure: for i0 { for i1 { C = 0; for k { C = C + a * b } } }
    const For* outer = f.body.as<For>();
    ASSERT_NE(outer, nullptr);
    EXPECT_TRUE(is_const_int(outer->extent, 7));
    const For* inner = outer->body.as<For>();
    ASSERT_NE(inner, nullptr);
    EXPECT_TRUE(is_const_int(inner->extent, 5));
    const Seq* seq = inner->body.as<Seq>();
    ASSERT_NE(seq, nullptr);
    ASSERT_EQ(seq->stmts.size(), 2u);
    const Store* init = seq->stmts[0].as<Store>();
    ASSERT_NE(init, nullptr);
    EXPECT_NE(as_const_float(init->value), nullptr);
    EXPECT_EQ(*as_const_float(init->value), 0.0);
    const For* red = seq->stmts[1].as<For>();
    ASSERT_NE(red, nullptr);
    EXPECT_TRUE(is_const_int(red->extent, 13));
}

TEST(LowerDefault, IntermediatesAreHeapAllocated) {
    Tensor x = te::placeholder({3, 7}, f32, "x");
    te::Compute c = te::make_compute({x}, {te::softmax(x)});
    LoweredFunc f = lower_default(c, "softmax");
    EXPECT_EQ(f.params.size(), 2u);
    Census census;
    census.visit(f.body);
    EXPECT_EQ(census.allocated,
              (std::vector<std::string>{"softmax_max", "softmax_exp", "softmax_sum"}));
    const Allocate* first = f.body.as<Allocate>();
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(first->buffer.name(), "softmax_max");
    EXPECT_EQ(first->buffer.shape(), (std::vector<int64_t>{3}));
}

TEST(LowerDefault, SharedIterVarsAreBoundOncePerLoop) {
    // Two stages reducing over the same IterVar: each loop gets its own fresh variable.
    Tensor x = te::placeholder({3, 5}, f32, "x");
    IterVar k = te::reduce_axis(5, "k");
    Tensor s = te::compute(
        {3}, [&](const std::vector<Var>& i) { return te::sum(x(i[0], k.var), {k}); }, "s");
    Tensor m = te::compute(
        {3},
        [&](const std::vector<Var>& i) { return te::reduce_max(x(i[0], k.var) - s(i[0]), {k}); },
        "m");
    te::Compute c = te::make_compute({x}, {m});
    LoweredFunc f = lower_default(c, "shared");
    EXPECT_NO_THROW(verify(f));
    LoweredFunc g = lower_default(c, "again");
    const For* f_loop = f.body.as<Allocate>()->body.as<Seq>()->stmts[0].as<For>();
    const For* g_loop = g.body.as<Allocate>()->body.as<Seq>()->stmts[0].as<For>();
    ASSERT_NE(f_loop, nullptr);
    ASSERT_NE(g_loop, nullptr);
    EXPECT_FALSE(f_loop->loop_var.same_as(g_loop->loop_var));
    EXPECT_EQ(f_loop->loop_var.name(), "i0");
    auto in = testing::random_floats(15, 9);
    auto out = testing::run_lowered(f, {in});
    for (int r = 0; r < 3; ++r) {
        float total = 0, best = -INFINITY;
        for (int j = 0; j < 5; ++j)
            total += in[(size_t)(r * 5 + j)];
        for (int j = 0; j < 5; ++j)
            best = std::max(best, in[(size_t)(r * 5 + j)] - total);
        EXPECT_FLOAT_EQ(out[0][(size_t)r], best);
    }
}

TEST(LowerDefault, RankZeroOutputUsesIndexZero) {
    Tensor x = te::placeholder({13}, f32, "x");
    te::Compute c = te::make_compute({x}, {te::reduce_sum(x, {0})});
    LoweredFunc f = lower_default(c, "total");
    EXPECT_TRUE(f.params[1].shape().empty());
    auto in = testing::random_floats(13, 5);
    auto out = testing::run_lowered(f, {in});
    double want = 0;
    for (float v : in)
        want += v;
    EXPECT_NEAR(out[0][0], want, 1e-5);
}

TEST(LowerDefault, IntegerReductionIdentity) {
    // Max over i32 starts from the lowest i32, not from 0.
    Tensor x = te::placeholder({2, 3}, DataType::i32(), "x");
    te::Compute c = te::make_compute({x}, {te::reduce_max(x, {1})});
    LoweredFunc f = lower_default(c, "m");
    std::vector<int32_t> in = {-5, -9, -7, 4, -1, 2}, out(2, 0);
    interpret(f, {in.data(), out.data()});
    EXPECT_EQ(out, (std::vector<int32_t>{-5, 4}));
}

TEST(LowerDefault, FlattenIndexIsRowMajor) {
    Var i("i"), j("j"), k("k");
    Expr flat = flatten_index({2, 3, 4}, {i, j, k});
    // i * 12 + (j * 4 + k), checked by evaluating through a tiny function.
    Buffer out = Buffer::make("out", DataType::i64(), {24});
    Stmt body =
        For::make(i, 0, 2, ForKind::Serial,
                  For::make(j, 0, 3, ForKind::Serial,
                            For::make(k, 0, 4, ForKind::Serial, Store::make(out, flat, flat))));
    LoweredFunc f{"flat", {out}, body};
    std::vector<int64_t> data(24, -1);
    interpret(f, {data.data()});
    for (int64_t p = 0; p < 24; ++p)
        EXPECT_EQ(data[(size_t)p], p);
    EXPECT_TRUE(is_const_int(flatten_index({}, {}), 0));
}

} // namespace
} // namespace tessera::lower
