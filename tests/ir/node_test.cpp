// Construction, type rules and the generic visitor/mutator of IR nodes.
#include <gtest/gtest.h>

#include "tessera/ir/functor.h"
#include "tessera/ir/op.h"
#include "tessera/support/error.h"

using namespace tessera;
using namespace tessera::ir;

TEST(IRNode, ImmediatesAdaptToOtherOperand) {
    Var x("x", DataType::f32());
    Expr e = x + 1.0f;
    EXPECT_EQ(e.type(), DataType::f32());
    Var i("i");
    Expr idx = i * 4 + 1;
    EXPECT_EQ(idx.type(), DataType::i64());
    const Add* add = idx.as<Add>();
    ASSERT_NE(add, nullptr);
    EXPECT_TRUE(is_const_int(add->b, 1));
    EXPECT_EQ((x < 0.0f).type(), DataType::boolean());
}

TEST(IRNode, MismatchedTypesAreInternalErrors) {
    Var x("x", DataType::f32());
    Var i("i");
    EXPECT_THROW(Add::make(x, i), InternalError);
}

TEST(IRNode, MutatorRebuildsOnlyChangedPaths) {
    Var i("i");
    Buffer b = Buffer::make("b", DataType::f32(), {16});
    Stmt s = For::make(i, 0, 16, ForKind::Serial,
                       Store::make(b, Load::make(b, i), i));
    struct Identity : IRMutator {} id;
    EXPECT_TRUE(id(s).same_as(s));
    struct Vectorize : IRMutator {
        using IRMutator::visit;
        Var v;
        Expr visit(const Variable* op) override {
            return op == v.get() ? Ramp::make(Expr(0), Expr(1), 16) : Expr(op);
        }
    } vec;
    vec.v = i;
    const For* loop = s.as<For>();
    Stmt body = vec(loop->body);
    const Store* st = body.as<Store>();
    ASSERT_NE(st, nullptr);
    EXPECT_EQ(st->value.type(), DataType::f32(16));
}
