// The verifier: a correct function passes, each class of broken IR is reported with its node.
#include "tessera/ir/verify.h"

#include <gtest/gtest.h>

#include "tessera/ir/op.h"
#include "tessera/support/error.h"

using namespace tessera;
using namespace tessera::ir;

namespace {

const DataType f32 = DataType::f32();

/// verify(f) must throw InternalError whose message contains every piece of `want`.
void expect_rejected(const LoweredFunc& f, std::initializer_list<std::string> want) {
    try {
        verify(f);
        ADD_FAILURE() << "verify accepted a broken function";
    } catch (const InternalError& err) {
        std::string msg = err.what();
        for (const std::string& w : want) EXPECT_NE(msg.find(w), std::string::npos) << msg;
    }
}

/// Builds a node bypassing make() (which would reject it), to test the verifier's own checks.
template <typename T> Expr raw_expr(T node) { return Expr(new T(std::move(node))); }
template <typename T> Stmt raw_stmt(T node) { return Stmt(new T(std::move(node))); }

struct Fixture {
    Buffer in = Buffer::make("in", f32, {8, 16});
    Buffer out = Buffer::make("out", f32, {8, 16});
    Var i{"i"}, j{"j"};

    /// out[i*16 + j] = f(in[i*16 + j]) over an 8x16 nest, with a stack temporary.
    LoweredFunc good() const {
        Buffer tmp = Buffer::make("tmp", f32, {16});
        Var t("t");
        Stmt inner = For::make(
            j, 0, 16, ForKind::Vectorized,
            LetStmt::make(t, i * 16 + j,
                          Seq::make({Store::make(tmp, exp(Load::make(in, t)), j),
                                     Evaluate::make(Call::make(CallOp::Prefetch,
                                                               {Load::make(in, t + 16)})),
                                     IfThenElse::make(j < 8,
                                                      Store::make(out, Load::make(tmp, j), t),
                                                      Store::make(out, 0.0f, t))})));
        Stmt body = For::make(i, 0, 8, ForKind::Parallel,
                              Allocate::make(tmp, MemoryScope::Stack, inner));
        return {"good", {in, out}, body};
    }
    LoweredFunc wrap(Stmt body) const { return {"bad", {in, out}, body}; }
};

} // namespace

TEST(Verify, CorrectFunctionPasses) {
    Fixture fx;
    EXPECT_NO_THROW(verify(fx.good()));
    EXPECT_NO_THROW(verify(fx.good().body, {fx.in, fx.out}));
}

TEST(Verify, VariableOutsideItsScope) {
    Fixture fx;
    Var free("free_var");
    expect_rejected(fx.wrap(Store::make(fx.out, 1.0f, free)),
                    {"outside its binding scope", "free_var", "out[free_var] = 1.0"});
    // Used after its loop ended.
    Stmt after = Seq::make({For::make(fx.i, 0, 4, ForKind::Serial, Store::make(fx.out, 1.0f, fx.i)),
                            Store::make(fx.out, 2.0f, fx.i + 1)});
    expect_rejected(fx.wrap(after), {"outside its binding scope", "i + 1"});
    // A loop's own variable in its bounds.
    Stmt self_bound = For::make(fx.i, 0, fx.i, ForKind::Serial, Store::make(fx.out, 1.0f, fx.i));
    expect_rejected(fx.wrap(self_bound), {"outside its binding scope"});
    // Let variable outside the Let expression.
    Var t("t");
    Expr let = Let::make(t, fx.i, t + 1);
    expect_rejected(fx.wrap(For::make(fx.i, 0, 4, ForKind::Serial,
                                      Store::make(fx.out, 1.0f, let + t))),
                    {"outside its binding scope", "t"});
}

TEST(Verify, VariableBoundTwice) {
    Fixture fx;
    Stmt loop = For::make(fx.i, 0, 4, ForKind::Serial, Store::make(fx.out, 1.0f, fx.i));
    expect_rejected(fx.wrap(Seq::make({loop, loop})), {"bound twice", "i"});
    Stmt nested = For::make(fx.i, 0, 4, ForKind::Serial, loop);
    expect_rejected(fx.wrap(nested), {"bound twice"});
    Stmt let = LetStmt::make(fx.j, Expr(3),
                             LetStmt::make(fx.j, Expr(4), Store::make(fx.out, 1.0f, fx.j)));
    expect_rejected(fx.wrap(let), {"bound twice", "j"});
}

TEST(Verify, BufferOutsideItsAllocate) {
    Fixture fx;
    Buffer stray = Buffer::make("stray", f32, {4});
    expect_rejected(fx.wrap(Store::make(stray, 1.0f, Expr(0))),
                    {"buffer 'stray' used outside its Allocate", "stray[0] = 1.0"});
    expect_rejected(fx.wrap(Store::make(fx.out, Load::make(stray, Expr(1)), Expr(0))),
                    {"stray", "stray[1]"});
    Stmt alloc = Allocate::make(stray, MemoryScope::Heap, Store::make(stray, 1.0f, Expr(0)));
    Stmt read_after = Store::make(fx.out, Load::make(stray, Expr(0)), Expr(0));
    expect_rejected(fx.wrap(Seq::make({alloc, read_after})), {"stray"});
    EXPECT_NO_THROW(verify(fx.wrap(alloc)));
    Stmt write = Store::make(fx.out, 1.0f, Expr(0));
    expect_rejected(fx.wrap(Allocate::make(fx.in, MemoryScope::Heap, write)),
                    {"allocated while live"});
    expect_rejected(fx.wrap(Allocate::make(stray, MemoryScope::Heap, alloc)),
                    {"allocated while live"});
}

TEST(Verify, TensorExpressionNodesLeft) {
    Fixture fx;
    auto* node = new TensorNode;
    node->name = "T";
    node->dtype = f32;
    node->shape = {16};
    Tensor t(node);
    Var k("k");
    expect_rejected(fx.wrap(Store::make(fx.out, t(Expr(2)), Expr(0))), {"TensorRead", "T[2]"});
    Expr red = Reduce::make(ReduceOp::Sum, Load::make(fx.in, k), {IterVar{k, 4}});
    expect_rejected(fx.wrap(Store::make(fx.out, red, Expr(0))), {"Reduce", "sum(k: 0..4, in[k])"});
}

TEST(Verify, InconsistentTypes) {
    Fixture fx;
    Var x("x"), y("y", DataType::i32());
    // An Add whose operands disagree, built without make().
    Add add;
    add.a = x;
    add.b = y;
    add.type = DataType::i64();
    Expr bad_add = raw_expr(add);
    expect_rejected(fx.wrap(LetStmt::make(x, Expr(1), Store::make(fx.out, 1.0f, bad_add))),
                    {"type rule broken", "mismatched types"});
    // A node whose recorded type is not what its rule gives.
    LT lt;
    lt.a = Expr(1);
    lt.b = Expr(2);
    lt.type = DataType::i64();
    Expr bad_lt = raw_expr(lt);
    expect_rejected(fx.wrap(Store::make(fx.out, 1.0f, bad_lt)),
                    {"where its rule gives bool", "1 < 2"});
    // A store of the wrong element type.
    Store st;
    st.buffer = fx.out;
    st.value = Expr(1);
    st.index = Expr(0);
    expect_rejected(fx.wrap(raw_stmt(st)), {"store of i64 into a buffer of f32"});
    // An immediate of a vector type.
    IntImm imm;
    imm.type = DataType::i64(4);
    imm.value = 1;
    Store vst;
    vst.buffer = fx.out;
    vst.value = Broadcast::make(Expr(1.0f), 4);
    vst.index = raw_expr(imm);
    expect_rejected(fx.wrap(raw_stmt(vst)), {"bad IntImm type"});
}

TEST(Verify, LoopRules) {
    Fixture fx;
    Var n("n");
    expect_rejected(fx.wrap(LetStmt::make(n, Expr(4),
                                          For::make(fx.i, 0, n, ForKind::Unrolled,
                                                    Store::make(fx.out, 1.0f, fx.i)))),
                    {"unrolled for with non-constant extent", "n"});
    expect_rejected(fx.wrap(LetStmt::make(n, Expr(4),
                                          For::make(fx.i, 0, n, ForKind::Vectorized,
                                                    Store::make(fx.out, 1.0f, fx.i)))),
                    {"vectorized for with non-constant extent"});
    For loop;
    loop.loop_var = Var("w", DataType::i32());
    loop.min = IntImm::make(DataType::i32(), 0);
    loop.extent = IntImm::make(DataType::i32(), 4);
    loop.body = Store::make(fx.out, 1.0f, Expr(0));
    expect_rejected(fx.wrap(raw_stmt(loop)), {"non-i64 bounds", "w"});
}

TEST(Verify, IfConditionMustBeScalarBool) {
    Fixture fx;
    IfThenElse ite;
    ite.condition = Expr(1);
    ite.then_case = Store::make(fx.out, 1.0f, Expr(0));
    expect_rejected(fx.wrap(raw_stmt(ite)), {"if condition of type i64"});
    IfThenElse vec;
    vec.condition = Broadcast::make(Expr(1) < 2, 4);
    vec.then_case = Store::make(fx.out, 1.0f, Expr(0));
    expect_rejected(fx.wrap(raw_stmt(vec)), {"if condition of type boolx4"});
}

TEST(Verify, PrefetchOnlyAsEvaluate) {
    Fixture fx;
    Expr pf = Call::make(CallOp::Prefetch, {Load::make(fx.in, Expr(0))});
    expect_rejected(fx.wrap(Store::make(fx.out, cast(f32, pf), Expr(0))),
                    {"prefetch outside an Evaluate", "prefetch(in[0])"});
    EXPECT_NO_THROW(verify(fx.wrap(Evaluate::make(pf))));
}
