// The simplifier: folding, canonical index arithmetic, bounds-driven rules, statements, vectors.
#include "tessera/ir/simplify.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tessera/ir/equality.h"
#include "tessera/ir/op.h"
#include "tessera/ir/printer.h"

using namespace tessera::ir;

namespace {

const DataType i32 = DataType::i32();
const DataType f32 = DataType::f32();

Expr imm(DataType t, int64_t v) { return IntImm::make(t, v); }
Expr fimm(DataType t, double v) { return FloatImm::make(t, v); }

/// simplify(e) must print as `want` (and be idempotent).
void expect_simplifies(const Expr& e, const std::string& want, const BoundsMap& b = {}) {
    Expr s = simplify(e, b);
    EXPECT_EQ(to_string(s), want) << "from " << to_string(e);
    EXPECT_EQ(to_string(simplify(s, b)), to_string(s)) << "not idempotent on " << to_string(e);
}

BoundsMap range(const Var& v, int64_t lo, int64_t hi, BoundsMap m = {}) {
    m[v.get()] = Interval::range(lo, hi);
    return m;
}

} // namespace

TEST(Simplify, FoldsIntegerConstantsWithFloorSemantics) {
    expect_simplifies(Expr(-7) / 2, "-4");
    expect_simplifies(Expr(-7) % 2, "1");
    expect_simplifies(Expr(7) / -2, "-4");
    expect_simplifies(Expr(7) % -2, "-1");
    expect_simplifies(Expr(-8) / 4, "-2");
    expect_simplifies(Expr(-8) % 4, "0");
    expect_simplifies(Expr(3) * 4 + 5 - 20, "-3");
    expect_simplifies(min(Expr(3), Expr(-2)), "-2");
    expect_simplifies(max(Expr(3), Expr(-2)), "3");
    // Division by a zero constant stays for run time.
    expect_simplifies(Div::make(Expr(5), Expr(0)), "5/0");
    // INT64_MIN / -1 wraps rather than trapping.
    expect_simplifies(Div::make(Expr(INT64_MIN), Expr(-1)), std::to_string(INT64_MIN));
}

TEST(Simplify, FoldsInTheTypesWidth) {
    expect_simplifies(imm(i32, 2147483647) + imm(i32, 1), "(i32)-2147483648");
    expect_simplifies(imm(i32, -2147483647 - 1) / imm(i32, -1), "(i32)-2147483648");
    expect_simplifies(imm(DataType::u8(), 250) + imm(DataType::u8(), 10), "(u8)4");
    expect_simplifies(imm(DataType::u8(), 3) - imm(DataType::u8(), 5), "(u8)254");
    expect_simplifies(imm(DataType::u8(), 200) < imm(DataType::u8(), 100), "false");
    DataType u64{DataType::Code::UInt, 64};
    expect_simplifies(LT::make(imm(u64, 1), imm(u64, -1)), "true"); // unsigned order
    expect_simplifies(Div::make(imm(u64, -2), imm(u64, 2)), "(u64)9223372036854775807");
}

TEST(Simplify, FoldsComparisonsLogicSelectAndCasts) {
    expect_simplifies(Expr(3) < 4, "true");
    expect_simplifies(Expr(3) >= 4, "false");
    expect_simplifies(eq(Expr(3), Expr(3)), "true");
    expect_simplifies(ne(Expr(3), Expr(3)), "false");
    expect_simplifies(logical_and(Expr(1) < 2, Expr(2) < 1), "false");
    expect_simplifies(logical_or(Expr(1) < 2, Expr(2) < 1), "true");
    expect_simplifies(logical_not(Expr(1) < 2), "false");
    Var x("x"), y("y");
    expect_simplifies(select(Expr(1) < 2, x, y), "x");
    expect_simplifies(select(Expr(2) < 1, x, y), "y");
    expect_simplifies(cast(i32, Expr(5000000000)), "(i32)705032704");
    expect_simplifies(cast(f32, Expr(3)), "3.0");
    expect_simplifies(cast(i32, Expr(2.7f)), "(i32)2");
    expect_simplifies(cast(i32, Expr(-2.7f)), "(i32)-2");
    expect_simplifies(cast(DataType::boolean(), Expr(7)), "true");
    expect_simplifies(cast(DataType::f64(), Expr(0.1f)), "(f64)0.10000000149011612");
    // Out-of-range float to int is left to the backend.
    expect_simplifies(cast(i32, Expr(1e10f)), "i32(1e+10)");
}

TEST(Simplify, FloatsFoldConstantsOnly) {
    expect_simplifies(Expr(1.5f) + Expr(2.0f), "3.5");
    expect_simplifies(Expr(0.1f) + Expr(0.2f), "0.3"); // rounded to f32: 0.1f+0.2f == 0.3f
    expect_simplifies(fimm(DataType::f64(), 0.1) + fimm(DataType::f64(), 0.2),
                      "(f64)0.30000000000000004");
    expect_simplifies(Expr(1.0f) / Expr(0.0f), "inf");
    expect_simplifies(min(Expr(1.0f), Expr(-1.0f)), "-1.0");
    expect_simplifies(Expr(1.0f) < Expr(2.0f), "true");
    Var f("f", f32);
    // No reassociation, no identities that are wrong for -0.0 or NaN.
    expect_simplifies((f + 1.0f) + 2.0f, "(f + 1.0) + 2.0");
    expect_simplifies(f + 0.0f, "f + 0.0");
    expect_simplifies(f - f, "f - f");
    expect_simplifies(f * 0.0f, "f*0.0");
    expect_simplifies(logical_not(f < 1.0f), "!(f < 1.0)");
    // f16 arithmetic is left alone (no half-precision rounding here).
    expect_simplifies(fimm(DataType::f16(), 1.0) + fimm(DataType::f16(), 2.0),
                      "(f16)1.0 + (f16)2.0");
}

TEST(Simplify, CanonicalLinearForm) {
    Var i("i"), j("j"), x("x"), y("y");
    expect_simplifies((i * 4 + j) - (j + i * 4), "0");
    expect_simplifies((x + 3) + (x * 2 - 1), "(x*3) + 2");
    expect_simplifies(y + x, "x + y");
    expect_simplifies(x - y, "x - y");
    expect_simplifies(y - x, "y - x");
    expect_simplifies(Expr(0) - x, "x*-1");
    expect_simplifies(Expr(5) - x, "5 - x");
    expect_simplifies(x * 2 * 3, "x*6");
    expect_simplifies((x + 1) * 4 - 4, "x*4");
    expect_simplifies(x * y - y * x, "0");
    expect_simplifies((x + 1) * (y + 1) - (y + 1) * (x + 1), "0");
    expect_simplifies((i * 16 + j) * 4, "(i*64) + (j*4)");
    EXPECT_TRUE(structural_equal(simplify((x + 3) + (x * 2 - 1)), x * 3 + 2));
    // Equal names, different variables: kept apart, ordered by first appearance.
    Var a("v"), b("v");
    expect_simplifies(b + a - b, "v");
    Expr s = simplify(a + b + a);
    EXPECT_EQ(to_string(s), "(v*2) + v_1");
    // i32 is canonicalized too (ring identities hold under wrap-around).
    Var p("p", i32);
    expect_simplifies((p + imm(i32, 2)) - p, "(i32)2");
}

TEST(Simplify, DivAndModByOneConstantRecombine) {
    // (x / c) * c + x % c is x, for any integer x (floor division and modulo); scaled by k too,
    // and with other terms around; the parts of a fused loop index become the fused variable.
    Var x("x"), y("y"), f("f");
    expect_simplifies((x / 4) * 4 + x % 4, "x");
    expect_simplifies(x % 4 + (x / 4) * 4 + y, "x + y");
    expect_simplifies((x / 4) * 12 + (x % 4) * 3, "x*3");
    expect_simplifies(((f / 4) * 4 + f % 4) + y * 64 + 7, "(f + (y*64)) + 7");
    // Other multiples, other divisors or other dividends stay.
    expect_simplifies((x / 4) * 8 + x % 4, "((x/4)*8) + (x % 4)");
    expect_simplifies((x / 4) * 4 + x % 8, "((x/4)*4) + (x % 8)");
    expect_simplifies((x / 4) * 4 + y % 4, "((x/4)*4) + (y % 4)");
    // The modulo's operand congruent to the quotient's: a vectorized row of 3-channel pixels,
    // (16a + b) / 3 * 3 + (a + b) % 3 (16 = 1 modulo 3) is 16a + b again; not when they differ
    // by other than multiples of 3.
    Var a("a"), b("b");
    expect_simplifies(((a * 16 + b) / 3) * 3 + (a + b) % 3, "(a*16) + b");
    expect_simplifies(((a * 16 + b + 7) / 3) * 3 + (a + b + 1) % 3, "((a*16) + b) + 7");
    expect_simplifies(((a * 16 + b) / 3) * 3 + (a * 2 + b) % 3,
                      "((((a*16) + b)/3)*3) + (((a*2) + b) % 3)");
}

TEST(Simplify, Identities) {
    Var x("x"), y("y");
    Var c("c", DataType::boolean());
    expect_simplifies(x + 0, "x");
    expect_simplifies(x * 1, "x");
    expect_simplifies(x * 0, "0");
    expect_simplifies(x - x, "0");
    expect_simplifies(min(x, x), "x");
    expect_simplifies(max(x, x), "x");
    expect_simplifies(select(c, x, x), "x");
    expect_simplifies(x / 1, "x");
    expect_simplifies(x % 1, "0");
    expect_simplifies(logical_and(c, c), "c");
    expect_simplifies(logical_and(c, Expr(1) < 2), "c");
    expect_simplifies(logical_or(c, Expr(1) < 2), "true");
    expect_simplifies(logical_not(logical_not(c)), "c");
    expect_simplifies(logical_not(x < y), "y <= x");
    expect_simplifies(eq(x, x), "true");
    expect_simplifies(x < x + 1, "true");
    expect_simplifies(min(x + 1, x), "x");
    expect_simplifies(max(x - 2, x + 3), "x + 3");
    expect_simplifies(min(Expr(5), x), "min(x, 5)");
    expect_simplifies(min(min(x, 5), 3), "min(x, 3)");
    // Unsigned: identities and folding only.
    Var u("u", DataType::u8());
    expect_simplifies(u + imm(DataType::u8(), 0), "u");
    expect_simplifies(u - u, "(u8)0");
}

TEST(Simplify, BoundsRemoveMinMaxDivMod) {
    Var i("i"), j("j");
    BoundsMap b = range(j, 0, 15, range(i, 0, 15));
    expect_simplifies(min(i, 20), "i", b);
    expect_simplifies(max(i, 20), "20", b);
    expect_simplifies(max(i, -1), "i", b);
    expect_simplifies(i / 16, "0", b);
    expect_simplifies(i % 16, "i", b);
    expect_simplifies((i * 16 + j) / 16, "i", b);
    expect_simplifies((i * 16 + j) % 16, "j", b);
    expect_simplifies((i * 16 + j + 32) / 16, "i + 2", b);
    expect_simplifies((j + 16) % 16, "j", b);
    expect_simplifies((i * 16 + j) / 4, "(i*4) + (j/4)", b);
    expect_simplifies((i * 8 + j) % 4, "j % 4", b);
    expect_simplifies(i / 4 / 2, "i/8");
    expect_simplifies(i % 8 % 4, "i % 4");
    expect_simplifies(i < 16, "true", b);
    expect_simplifies(i >= 16, "false", b);
    expect_simplifies(i * 4 + 3 < 64, "true", b);
    expect_simplifies(i * 4 + 4 < 64, "((i*4) + 4) < 64", b);
    // Without bounds nothing is known.
    expect_simplifies(min(i, 20), "min(i, 20)");
    expect_simplifies(i % 16, "i % 16");
    // Narrow types use bounds of each side, with overflow accounted for.
    Var p("p", i32);
    BoundsMap bp = range(p, 0, 99);
    expect_simplifies(Div::make(p, imm(i32, 100)), "(i32)0", bp);
    expect_simplifies(Mod::make(p, imm(i32, 100)), "p", bp);
    expect_simplifies(LT::make(p, imm(i32, 100)), "true", bp);
    // p*2^30 may wrap, so its sign is unknown.
    expect_simplifies(LT::make(p * imm(i32, 1 << 30), imm(i32, 0)),
                      "(p*(i32)1073741824) < (i32)0", bp);
}

TEST(Simplify, CanProve) {
    Var i("i"), n("n");
    BoundsMap b = range(i, 0, 15);
    EXPECT_TRUE(can_prove(i * 4 + 3 < 64, b));
    EXPECT_FALSE(can_prove(i * 4 + 4 < 64, b));
    EXPECT_TRUE(can_prove(i >= 0, b));
    EXPECT_FALSE(can_prove(i >= 0));
    EXPECT_TRUE(can_prove(logical_and(i >= 0, i < 16), b));
    EXPECT_TRUE(can_prove(n + 1 > n));
    EXPECT_FALSE(can_prove(n > 0));
    EXPECT_TRUE(can_prove(i % 4 < 4));
    EXPECT_FALSE(can_prove(i + n < 3, b));
    EXPECT_FALSE(can_prove(Expr()));
}

TEST(Simplify, BoundsOf) {
    Var i("i"), j("j");
    BoundsMap b = range(j, -3, 5, range(i, 0, 15));
    EXPECT_EQ(bounds_of(i * 4 + j, b), Interval::range(-3, 65));
    EXPECT_EQ(bounds_of(i * j, b), Interval::range(-45, 75));
    EXPECT_EQ(bounds_of(j / 2, b), Interval::range(-2, 2));
    EXPECT_EQ(bounds_of(j % 4, b), Interval::range(0, 3));
    EXPECT_EQ(bounds_of(i % 4, b), Interval::range(0, 3));
    EXPECT_EQ(bounds_of(min(i, j), b), Interval::range(-3, 5));
    EXPECT_EQ(bounds_of(Ramp::make(i, Expr(2), 4), b), Interval::range(0, 21));
    EXPECT_EQ(bounds_of(select(i < j, i, j), b), Interval::range(-3, 15));
    EXPECT_FALSE(bounds_of(i + Var("free")).bounded());
    EXPECT_EQ(bounds_of(Var("q", i32)), Interval::range(INT32_MIN, INT32_MAX));
    Var k("k");
    Interval half = bounds_of(k % 8);
    EXPECT_EQ(half, Interval::range(0, 7));
    Interval pos = bounds_of(max(k, 0));
    EXPECT_TRUE(pos.has_min && !pos.has_max);
    EXPECT_EQ(pos.min, 0);
    // i32 overflow gives the whole type range.
    Var p("p", i32);
    EXPECT_EQ(bounds_of(p * imm(i32, 1 << 20), range(p, 0, 10000)),
              Interval::range(INT32_MIN, INT32_MAX));
}

TEST(Simplify, Statements) {
    Buffer buf = Buffer::make("B", f32, {256});
    Var i("i"), j("j");
    // Inside a loop the loop variable's range is known.
    Stmt s = For::make(i, 0, 16, ForKind::Serial,
                       For::make(j, 0, 16, ForKind::Serial,
                                 Store::make(buf, 1.0f, (i * 16 + j) % 16 + min(i, 20) * 16)));
    EXPECT_EQ(to_string(simplify(s)), "for (i, 0, 16) {\n"
                                      "  for (j, 0, 16) {\n"
                                      "    B[(i*16) + j] = 1.0\n"
                                      "  }\n"
                                      "}\n");
    // Extent 0 disappears, extent 1 becomes its body with loop_var := min.
    Var k("k");
    Stmt empty = For::make(k, 0, 0, ForKind::Serial, Store::make(buf, 1.0f, k));
    EXPECT_EQ(to_string(simplify(empty)), "evaluate(0)\n");
    Stmt once = For::make(k, 5, 1, ForKind::Parallel, Store::make(buf, 1.0f, k * 2));
    EXPECT_EQ(to_string(simplify(once)), "B[10] = 1.0\n");
    Stmt seq = Seq::make({empty, Store::make(buf, 2.0f, Expr(3))});
    EXPECT_EQ(to_string(simplify(seq)), "B[3] = 2.0\n");
    // Provable conditions choose a branch; conditions on loop variables learn bounds.
    Stmt guard = For::make(
        i, 0, 16, ForKind::Serial,
        IfThenElse::make(i < 16, Store::make(buf, 1.0f, i), Store::make(buf, 2.0f, i)));
    EXPECT_EQ(to_string(simplify(guard)), "for (i, 0, 16) {\n  B[i] = 1.0\n}\n");
    Var n("n");
    Stmt learned = For::make(
        i, 0, n, ForKind::Serial,
        IfThenElse::make(i < 10, Store::make(buf, 1.0f, min(i, 9)),
                         Store::make(buf, 2.0f, max(i, 10))));
    EXPECT_EQ(to_string(simplify(learned)), "for (i, 0, n) {\n"
                                            "  if (i < 10) {\n"
                                            "    B[i] = 1.0\n"
                                            "  } else {\n"
                                            "    B[i] = 2.0\n"
                                            "  }\n"
                                            "}\n");
    Stmt dead = IfThenElse::make(Expr(2) < 1, Store::make(buf, 1.0f, Expr(0)));
    EXPECT_EQ(to_string(simplify(dead)), "evaluate(0)\n");
    // Evaluate without side effect is a no-op; a prefetch stays.
    Stmt pf = Evaluate::make(Call::make(CallOp::Prefetch, {Load::make(buf, i + 0)}));
    EXPECT_EQ(to_string(simplify(pf)), "evaluate(prefetch(B[i]))\n");
}

TEST(Simplify, LetsOfConstantsAndVariablesAreSubstituted) {
    Buffer buf = Buffer::make("B", f32, {64});
    Var x("x"), y("y"), t("t"), u("u");
    expect_simplifies(Let::make(t, Expr(3), t * x + t), "(x*3) + 3");
    expect_simplifies(Let::make(t, y, t - y), "0");
    expect_simplifies(Let::make(t, x * y, Expr(5)), "5"); // unused
    expect_simplifies(Let::make(t, x * y, t + t), "(let t = x*y in t*2)");
    Stmt s = LetStmt::make(u, Expr(4), Store::make(buf, 1.0f, u * x));
    EXPECT_EQ(to_string(simplify(s)), "B[x*4] = 1.0\n");
    Stmt keep = LetStmt::make(u, x * y, Store::make(buf, 1.0f, u));
    EXPECT_EQ(to_string(simplify(keep)), "let u = x*y\nB[u] = 1.0\n");
    // A let value's bounds are known in its body.
    Var i("i");
    Stmt bounded = For::make(i, 0, 8, ForKind::Serial,
                             LetStmt::make(u, i * 2, Store::make(buf, 1.0f, min(u, 14))));
    EXPECT_EQ(to_string(simplify(bounded)), "for (i, 0, 8) {\n  let u = i*2\n  B[u] = 1.0\n}\n");
}

TEST(Simplify, VectorNodes) {
    Var x("x"), y("y");
    expect_simplifies(Broadcast::make(Expr(2) + 3, 8), "x8(5)");
    expect_simplifies(Broadcast::make(Expr(2), 8) + Broadcast::make(Expr(3), 8), "x8(5)");
    expect_simplifies(Broadcast::make(x, 8) * Broadcast::make(Expr(2), 8), "x8(x*2)");
    expect_simplifies(Ramp::make(x, Expr(1), 8) + Ramp::make(y, Expr(2), 8),
                      "ramp(x + y, 3, 8)");
    expect_simplifies(Ramp::make(x, Expr(1), 8) + Broadcast::make(y * 4, 8),
                      "ramp(x + (y*4), 1, 8)");
    expect_simplifies(Broadcast::make(Expr(3), 4) - Ramp::make(x, Expr(1), 4),
                      "ramp(3 - x, -1, 4)");
    expect_simplifies(Ramp::make(x, Expr(1), 4) * Broadcast::make(Expr(4), 4), "ramp(x*4, 4, 4)");
    expect_simplifies(Ramp::make(x, Expr(1), 4) - Ramp::make(x, Expr(1), 4), "x4(0)");
    expect_simplifies(Ramp::make(x + 1, Expr(2) - 2, 4), "x4(x + 1)");
    expect_simplifies(Broadcast::make(Expr(1.5f), 4) + Broadcast::make(Expr(2.0f), 4), "x4(3.5)");
    // Vector index arithmetic after vectorizing `for (v, 0, 8)` into a ramp.
    Var i("i");
    BoundsMap b = range(i, 0, 3);
    Expr idx = Ramp::make(i * 8, Expr(1), 8);
    expect_simplifies(idx / Broadcast::make(Expr(8), 8), "x8(i)", b);
    expect_simplifies(idx % Broadcast::make(Expr(8), 8), "ramp(0, 1, 8)", b);
    expect_simplifies(Ramp::make(i * 16, Expr(8), 4) / Broadcast::make(Expr(8), 4),
                      "ramp(i*2, 1, 4)", b);
    expect_simplifies(Ramp::make(i * 16, Expr(8), 4) % Broadcast::make(Expr(8), 4), "x4(0)", b);
    expect_simplifies(Ramp::make(Expr(0), Expr(1), 8) < Broadcast::make(Expr(8), 8), "x8(true)");
    expect_simplifies(VectorReduce::make(ReduceOp::Max, Broadcast::make(x, 8), 1), "x");
}

// A vector of 16 lanes at a multiple of 16 stays inside one period of 64, whatever the bounds
// of its base: (16j + l) / 64 is one value and (16j + l) % 64 a contiguous ramp (a row of an
// attention head's reshape, vectorized). A base off the alignment, or lanes that cross a
// period, keep the lane-wise division.
TEST(Simplify, AlignedVectorDividesAsOneValue) {
    Var j("j"), r("r");
    const Expr by64 = Broadcast::make(Expr(64), 16);
    expect_simplifies(Ramp::make(j * 16, Expr(1), 16) / by64, "x16((j*16)/64)");
    expect_simplifies(Ramp::make(j * 16, Expr(1), 16) % by64, "ramp((j*16) % 64, 1, 16)");
    expect_simplifies(Ramp::make(r * 256 + j * 32 + 16, Expr(1), 16) / by64,
                      "x16((r*4) + (((j*32) + 16)/64))");
    expect_simplifies(Ramp::make(j * 16 + 1, Expr(1), 16) / by64,
                      "ramp((j*16) + 1, 1, 16)/x16(64)");
    expect_simplifies(Ramp::make(j * 8, Expr(1), 16) % by64, "ramp(j*8, 1, 16) % x16(64)");
    expect_simplifies(Ramp::make(j * 32, Expr(2), 16) / by64, "x16((j*32)/64)");
    expect_simplifies(Ramp::make(j * 32, Expr(4), 16) / by64, "ramp(j*32, 4, 16)/x16(64)");
}

TEST(Simplify, TensorExpressionNodes) {
    auto* node = new TensorNode;
    node->name = "T";
    node->dtype = f32;
    node->shape = {16};
    Tensor t(node);
    Var k("k"), i("i");
    Expr r = Reduce::make(ReduceOp::Sum, t(min(k, 20) + i - i), {IterVar{k, 16}});
    expect_simplifies(r, "sum(k: 0..16, T[k])");
}
