// placeholder / compute / reductions, make_compute's stage order and closure checks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tessera/ir/op.h"
#include "tessera/support/error.h"
#include "tessera/te/compute.h"
#include "tessera/te/op_library.h"
#include "tessera/te/tensor.h"

namespace tessera::te {
namespace {

const DataType f32 = DataType::f32();

std::vector<std::string> names(const std::vector<Tensor>& ts) {
    std::vector<std::string> n;
    for (const auto& t : ts)
        n.push_back(t.name());
    return n;
}

TEST(Placeholder, HoldsShapeAndType) {
    Tensor a = placeholder({7, 13}, f32, "a");
    EXPECT_TRUE(a->is_placeholder());
    EXPECT_EQ(a.shape(), (std::vector<int64_t>{7, 13}));
    EXPECT_EQ(a.dtype(), f32);
    EXPECT_EQ(a.name(), "a");
    EXPECT_EQ(placeholder({}, f32, "s").ndim(), 0u);
}

TEST(Placeholder, RejectsBadShapesAndVectorTypes) {
    try {
        placeholder({3, 0}, f32, "a");
        FAIL() << "no error";
    } catch (const UserError& e) {
        EXPECT_STREQ(e.what(), "tensor 'a' of shape [3, 0] has a non-positive extent 0");
    }
    EXPECT_THROW(placeholder({3}, DataType::f32(8), "v"), UserError);
}

TEST(Compute, NamesAxesAndInfersType) {
    Tensor a = placeholder({7, 13}, f32, "a");
    Tensor b = compute(
        {13, 7}, [&](const std::vector<Var>& i) { return a(i[1], i[0]) * 2.0f; }, "b");
    EXPECT_FALSE(b->is_placeholder());
    ASSERT_EQ(b->axes.size(), 2u);
    EXPECT_EQ(b->axes[0].name(), "i0");
    EXPECT_EQ(b->axes[1].name(), "i1");
    EXPECT_EQ(b.dtype(), f32);
    Tensor c = compute(
        {7}, [&](const std::vector<Var>& i) { return ir::cast(DataType::i32(), a(i[0], 0)); }, "c",
        {"row"});
    EXPECT_EQ(c.dtype(), DataType::i32());
    EXPECT_EQ(c->axes[0].name(), "row");
    EXPECT_EQ(names(b->inputs()), (std::vector<std::string>{"a"}));
}

TEST(Compute, ReductionIsTheWholeBody) {
    Tensor a = placeholder({7, 13}, f32, "a");
    IterVar k = reduce_axis(13, "k");
    Tensor s = compute(
        {7}, [&](const std::vector<Var>& i) { return sum(a(i[0], k.var), {k}); }, "s");
    const auto* r = s->body.as<ir::Reduce>();
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->op, ir::ReduceOp::Sum);
    EXPECT_EQ(r->axes.size(), 1u);
    EXPECT_EQ(reduce_max(a(0, k.var), {k}).as<ir::Reduce>()->op, ir::ReduceOp::Max);
    EXPECT_EQ(reduce_min(a(0, k.var), {k}).as<ir::Reduce>()->op, ir::ReduceOp::Min);
}

TEST(Compute, MalformedBodiesAreInternalErrors) {
    Tensor a = placeholder({7, 13}, f32, "a");
    IterVar k = reduce_axis(13, "k");
    // A Reduce nested inside arithmetic.
    EXPECT_THROW(
        compute(
            {7}, [&](const std::vector<Var>& i) { return sum(a(i[0], k.var), {k}) + 1.0f; }, "x"),
        InternalError);
    // A variable from somewhere else.
    Var stray("stray");
    EXPECT_THROW(compute(
                     {7}, [&](const std::vector<Var>& i) { return a(i[0], stray); }, "y"),
                 InternalError);
    // A reduce axis used outside a Reduce.
    EXPECT_THROW(compute(
                     {7}, [&](const std::vector<Var>& i) { return a(i[0], k.var); }, "z"),
                 InternalError);
    // Wrong rank.
    EXPECT_THROW(compute(
                     {7}, [&](const std::vector<Var>& i) { return a(i[0]); }, "w"),
                 InternalError);
    // Let-bound variables are fine.
    Var t("t", f32);
    EXPECT_NO_THROW(compute(
        {7},
        [&](const std::vector<Var>& i) { return ir::Let::make(t, a(i[0], 0), Expr(t) * Expr(t)); },
        "let"));
    EXPECT_THROW(compute(
                     {0}, [&](const std::vector<Var>& i) { return a(i[0], 0); }, "e"),
                 UserError);
}

TEST(MakeCompute, StagesAreTopologicalAndDeterministic) {
    // A diamond: x -> (p, q) -> r, plus s reading r and x.
    Tensor x = placeholder({5}, f32, "x");
    auto ew = [](Tensor in, const char* name) {
        return compute(
            in.shape(), [&](const std::vector<Var>& i) { return in(i[0]) + 1.0f; }, name);
    };
    Tensor p = ew(x, "p"), q = ew(x, "q");
    Tensor r = compute(
        {5}, [&](const std::vector<Var>& i) { return q(i[0]) * p(i[0]); }, "r");
    Tensor s = compute(
        {5}, [&](const std::vector<Var>& i) { return r(i[0]) - x(i[0]); }, "s");
    Compute c = make_compute({x}, {s});
    EXPECT_EQ(names(c.stages), (std::vector<std::string>{"q", "p", "r", "s"}));
    // Several outputs: shared producers appear once, before their first consumer.
    Compute c2 = make_compute({x}, {p, s});
    EXPECT_EQ(names(c2.stages), (std::vector<std::string>{"p", "q", "r", "s"}));
    EXPECT_TRUE(is_output(c2, p));
    EXPECT_FALSE(is_output(c2, q));
    for (int rep = 0; rep < 3; ++rep)
        EXPECT_EQ(names(make_compute({x}, {s}).stages), names(c.stages));
}

TEST(MakeCompute, ChecksClosureAndRoles) {
    Tensor a = placeholder({4}, f32, "a"), b = placeholder({4}, f32, "b");
    Tensor y = add(a, b);
    try {
        make_compute({a}, {y});
        FAIL() << "no error";
    } catch (const UserError& e) {
        EXPECT_STREQ(e.what(), "compute reads placeholder 'b' that is not among its inputs");
    }
    EXPECT_THROW(make_compute({a, b, a}, {y}), UserError);
    EXPECT_THROW(make_compute({a, b}, {y, y}), UserError);
    EXPECT_THROW(make_compute({a, b}, {a}), UserError);
    EXPECT_THROW(make_compute({y}, {y}), UserError);
    EXPECT_THROW(make_compute({a, b}, {}), UserError);
    // Unused inputs stay.
    Tensor unused = placeholder({2}, f32, "unused");
    Compute c = make_compute({a, b, unused}, {y});
    EXPECT_EQ(c.inputs.size(), 3u);
    EXPECT_EQ(names(c.stages), (std::vector<std::string>{"add"}));
}

TEST(Shapes, Helpers) {
    EXPECT_EQ(num_elements({}), 1);
    EXPECT_EQ(num_elements({3, 5, 7}), 105);
    EXPECT_EQ(shape_to_string({3, 5}), "[3, 5]");
    EXPECT_EQ(shape_to_string({}), "[]");
    EXPECT_EQ(broadcast_shapes({7, 1, 3}, {5, 1}, "op"), (std::vector<int64_t>{7, 5, 3}));
}

} // namespace
} // namespace tessera::te
