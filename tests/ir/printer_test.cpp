// The IR printer: exact text per node kind, name disambiguation, determinism.
#include "tessera/ir/printer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "ir/ir_samples.h"
#include "tessera/ir/op.h"

using namespace tessera::ir;
using tessera::ir::testing::every_node_sample;

namespace {

std::string text_of(const tessera::ir::testing::NodeSample& s) {
    return s.expr.defined() ? to_string(s.expr) : to_string(s.stmt);
}

} // namespace

TEST(Printer, SamplesCoverEveryNodeKind) {
    std::set<std::string> kinds;
    for (const auto& s : every_node_sample()) {
        IRNodeType t = s.expr.defined() ? s.expr.node_type() : s.stmt.node_type();
        EXPECT_EQ(s.kind, node_type_name(t));
        kinds.insert(s.kind);
    }
#define TESSERA_EXPR_NODE(X) EXPECT_TRUE(kinds.count(#X)) << "no sample for " #X;
#define TESSERA_STMT_NODE(X) EXPECT_TRUE(kinds.count(#X)) << "no sample for " #X;
#include "tessera/ir/ir_nodes.def"
}

TEST(Printer, ExactTextOfEveryNodeKind) {
    const std::map<std::string, std::string> expected = {
        {"IntImm", "(i32)3"},
        {"FloatImm", "(f64)1.5"},
        {"Variable", "x"},
        {"Cast", "f32(x)"},
        {"Add", "x + y"},
        {"Sub", "x - y"},
        {"Mul", "x*y"},
        {"Div", "x/y"},
        {"Mod", "x % y"},
        {"Min", "min(x, y)"},
        {"Max", "max(x, y)"},
        {"EQ", "x == y"},
        {"NE", "x != y"},
        {"LT", "x < y"},
        {"LE", "x <= y"},
        {"GT", "x > y"},
        {"GE", "x >= y"},
        {"And", "(x < y) && (y < x)"},
        {"Or", "(x < y) || (y < x)"},
        {"Not", "!(x < y)"},
        {"Select", "select(x < y, x, y)"},
        {"Load", "A[x]"},
        {"Ramp", "ramp(x, 2, 8)"},
        {"Broadcast", "x8(y)"},
        {"VectorReduce", "vector_reduce_max(A[ramp(x, 1, 8)], 2)"},
        {"Call", "pow(A[x], A[x])"},
        {"Let", "(let z = x + 1 in z*y)"},
        {"TensorRead", "T[x, y]"},
        {"Reduce", "sum(k: 0..4, T[x, k])"},
        {"LetStmt", "let z = x + 1\nA[y] = A[z]\n"},
        {"For", "for (x, 0, 16) parallel {\n  A[x] = 0.0\n}\n"},
        {"Store", "A[x] = (A[x] + 1.0)\n"},
        {"Allocate", "allocate tmp: f32[4, 2] stack {\n  tmp[x] = A[y]\n}\n"},
        {"IfThenElse", "if (x < y) {\n  A[x] = (A[x] + 1.0)\n} else {\n  A[y] = 2.0\n}\n"},
        {"Seq", "A[x] = (A[x] + 1.0)\nA[y] = 3.0\n"},
        {"Evaluate", "evaluate(prefetch(A[x]))\n"},
    };
    for (const auto& s : every_node_sample()) {
        auto it = expected.find(s.kind);
        ASSERT_NE(it, expected.end()) << s.kind;
        EXPECT_EQ(text_of(s), it->second) << s.kind;
    }
}

TEST(Printer, EveryNodePrintsNonEmptyAndDeterministically) {
    auto first = every_node_sample();
    auto second = every_node_sample(); // fresh objects at other addresses
    ASSERT_EQ(first.size(), second.size());
    for (size_t i = 0; i < first.size(); ++i) {
        std::string a = text_of(first[i]);
        EXPECT_FALSE(a.empty()) << first[i].kind;
        EXPECT_EQ(a, text_of(first[i])) << first[i].kind;
        EXPECT_EQ(a, text_of(second[i])) << first[i].kind;
        EXPECT_EQ(a.find("0x"), std::string::npos) << "pointer in " << a;
    }
}

TEST(Printer, MatmulFunction) {
    const DataType f32 = DataType::f32();
    Buffer a = Buffer::make("A", f32, {16, 16});
    Buffer b = Buffer::make("B", f32, {16, 16});
    Buffer c = Buffer::make("C", f32, {16, 16});
    Var i("i"), j("j"), k("k");
    Stmt update = Store::make(
        c, Load::make(c, i * 16 + j) + Load::make(a, i * 16 + k) * Load::make(b, k * 16 + j),
        i * 16 + j);
    Stmt body = For::make(i, 0, 16, ForKind::Parallel,
                          For::make(j, 0, 16, ForKind::Serial,
                                    For::make(k, 0, 16, ForKind::Serial, update)));
    LoweredFunc f{"matmul", {a, b, c}, body};
    EXPECT_EQ(to_string(f),
              "func matmul(A: f32[16, 16], B: f32[16, 16], C: f32[16, 16]) {\n"
              "  for (i, 0, 16) parallel {\n"
              "    for (j, 0, 16) {\n"
              "      for (k, 0, 16) {\n"
              "        C[(i*16) + j] = (C[(i*16) + j] + (A[(i*16) + k]*B[(k*16) + j]))\n"
              "      }\n"
              "    }\n"
              "  }\n"
              "}\n");
    std::ostringstream os;
    os << f;
    EXPECT_EQ(os.str(), to_string(f));
}

TEST(Printer, TypedImmediates) {
    EXPECT_EQ(to_string(Expr(7)), "7");
    EXPECT_EQ(to_string(Expr(-7)), "-7");
    EXPECT_EQ(to_string(Expr(1.0f)), "1.0");
    EXPECT_EQ(to_string(Expr(0.1f)), "0.1");
    EXPECT_EQ(to_string(Expr(-2.5f)), "-2.5");
    EXPECT_EQ(to_string(FloatImm::make(DataType::f32(), 1e20)), "1e+20");
    EXPECT_EQ(to_string(FloatImm::make(DataType::f64(), 0.1)), "(f64)0.1");
    EXPECT_EQ(to_string(FloatImm::make(DataType::f32(), INFINITY)), "inf");
    EXPECT_EQ(to_string(FloatImm::make(DataType::f32(), -INFINITY)), "-inf");
    EXPECT_EQ(to_string(IntImm::make(DataType::i32(), -3)), "(i32)-3");
    EXPECT_EQ(to_string(IntImm::make(DataType::u8(), 255)), "(u8)255");
    EXPECT_EQ(to_string(IntImm::make({DataType::Code::UInt, 64}, -1)), "(u64)18446744073709551615");
    EXPECT_EQ(to_string(IntImm::make(DataType::boolean(), 1)), "true");
    EXPECT_EQ(to_string(IntImm::make(DataType::boolean(), 0)), "false");
    Var v("v", DataType::f32(8));
    EXPECT_EQ(to_string(Cast::make(DataType::i32(8), v)), "i32x8(v)");
}

TEST(Printer, Dot4U8S8PrintsAsACallAndBroadcastsAScalar) {
    // The IR has no parser: the text is the call's name and its arguments, as for pow.
    Buffer a = Buffer::make("a", DataType::i32(), {16}),
           b = Buffer::make("b", DataType::i32(), {16});
    Var i("i");
    EXPECT_EQ(to_string(dot4_u8s8(Load::make(a, i), Load::make(b, i))), "dot4_u8s8(a[i], b[i])");
    // A scalar argument is broadcast to the other's lanes (ir::dot4_u8s8 matches the types).
    Expr v = dot4_u8s8(Load::make(a, Ramp::make(i, Expr(1), 8)), Load::make(b, Expr(0)));
    EXPECT_EQ(v.type(), DataType::i32(8));
    EXPECT_EQ(to_string(v), "dot4_u8s8(a[ramp(i, 1, 8)], x8(b[0]))");
}

TEST(Printer, SameNamesAreDisambiguatedInOrderOfAppearance) {
    Var i1("i"), i2("i"), renamed("i_1");
    EXPECT_EQ(to_string(i1 + i2), "i + i_1");
    EXPECT_EQ(to_string(i2 + i1), "i + i_1"); // first seen gets the plain name
    EXPECT_EQ(to_string(i1 + i1), "i + i");
    EXPECT_EQ(to_string((i1 + i2) + renamed), "(i + i_1) + i_1_1");
    Var unnamed("");
    EXPECT_EQ(to_string(unnamed * 2), "v*2");

    Buffer a1 = Buffer::make("A", DataType::f32(), {4});
    Buffer a2 = Buffer::make("A", DataType::f32(), {4});
    EXPECT_EQ(to_string(Load::make(a1, i1) + Load::make(a2, i2)), "A[i] + A_1[i_1]");

    auto t1 = tessera::ir::testing::make_placeholder("T", DataType::f32(), {4});
    auto t2 = tessera::ir::testing::make_placeholder("T", DataType::f32(), {4});
    EXPECT_EQ(to_string(t1(i1) * t2(i1)), "T[i]*T_1[i]");

    // A loop variable reused by name in a nested loop.
    Buffer b = Buffer::make("B", DataType::f32(), {16});
    Stmt s = For::make(i1, 0, 4, ForKind::Serial,
                       For::make(i2, 0, 4, ForKind::Vectorized,
                                 Store::make(b, 1.0f, i1 * 4 + i2)));
    EXPECT_EQ(to_string(s), "for (i, 0, 4) {\n"
                            "  for (i_1, 0, 4) vectorized {\n"
                            "    B[(i*4) + i_1] = 1.0\n"
                            "  }\n"
                            "}\n");
}

TEST(Printer, UndefinedHandles) {
    EXPECT_EQ(to_string(Expr()), "<undef>");
    EXPECT_EQ(to_string(Stmt()), "<undef>\n");
    std::ostringstream os;
    os << Var("q") + 1;
    EXPECT_EQ(os.str(), "q + 1");
}
