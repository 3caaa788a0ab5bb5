// Structural equality and hashing: alpha-equivalence, one changed field per node kind, tensors.
#include "tessera/ir/equality.h"

#include <gtest/gtest.h>

#include <set>
#include <type_traits>

#include "ir/ir_samples.h"
#include "tessera/ir/op.h"
#include "tessera/ir/printer.h"

using namespace tessera::ir;
using tessera::ir::testing::every_node_sample;
using tessera::ir::testing::make_compute;
using tessera::ir::testing::make_placeholder;
using tessera::ir::testing::NodeSample;

namespace {

bool equal(const NodeSample& a, const NodeSample& b) {
    return a.expr.defined() ? structural_equal(a.expr, b.expr) : structural_equal(a.stmt, b.stmt);
}
uint64_t hash(const NodeSample& s) {
    return s.expr.defined() ? structural_hash(s.expr) : structural_hash(s.stmt);
}
std::string text(const NodeSample& s) {
    return s.expr.defined() ? to_string(s.expr) : to_string(s.stmt);
}

/// Replaces field number `target` of a node (in reflect() order) by a different value of the
/// same C++ type. Names are hints, so changing one is recorded as "still equal".
struct ChangeField {
    int target;
    int index = 0;
    bool changed = false;
    bool name_only = false;

    template <typename U> void operator()(const char*, U& field) {
        if (index++ != target) return;
        change(field);
        changed = true;
    }
    void change(Expr& e) { e = IntImm::make(DataType::i64(), 12345); }
    void change(Var& v) { v = Var(v.name(), v.type()); } // a fresh variable, same name
    void change(Stmt& s) { s = Evaluate::make(Expr(12345)); }
    void change(Buffer& b) { b = Buffer::make(b.name(), b.dtype(), {7}); }
    void change(Tensor& t) { t = make_placeholder(t.name(), t.dtype(), {7, 7}); }
    void change(int& v) { v += 1; }
    void change(int64_t& v) { v += 1; }
    void change(double& v) { v += 0.5; }
    void change(std::string& s) {
        s += "_renamed";
        name_only = true;
    }
    void change(std::vector<Expr>& v) { v.push_back(Expr(12345)); }
    void change(std::vector<Stmt>& v) { v.push_back(Evaluate::make(Expr(12345))); }
    void change(std::vector<IterVar>& v) { v[0].extent += 1; }
    template <typename E> std::enable_if_t<std::is_enum_v<E>> change(E& e) {
        e = static_cast<E>(static_cast<int>(e) == 0 ? 1 : 0);
    }
};

/// Every single-field variant of a node: a copy of the node with that field changed (types are
/// not re-inferred: equality must notice the field, whatever its type rule says).
template <typename T, typename H> std::vector<std::pair<H, bool>> variants_of(const T* op) {
    std::vector<std::pair<H, bool>> out;
    for (int target = 0;; ++target) {
        T copy(*op);
        ChangeField c{target};
        T::reflect(copy, c);
        if (!c.changed) break;
        out.push_back({H(new T(std::move(copy))), c.name_only});
    }
    return out;
}

/// (variant, expected-equal) pairs for a sample.
std::vector<std::pair<NodeSample, bool>> field_variants(const NodeSample& s) {
    std::vector<std::pair<NodeSample, bool>> out;
    if (s.expr.defined()) {
        switch (s.expr.node_type()) {
#define TESSERA_EXPR_NODE(X)                                                                   \
    case IRNodeType::X:                                                                        \
        for (auto& [v, eq] : variants_of<X, Expr>(s.expr.as<X>()))                           \
            out.push_back({NodeSample{s.kind, v, Stmt()}, eq});                                \
        break;
#define TESSERA_STMT_NODE(X) case IRNodeType::X:
#include "tessera/ir/ir_nodes.def"
            break;
        }
    } else {
        switch (s.stmt.node_type()) {
#define TESSERA_STMT_NODE(X)                                                                   \
    case IRNodeType::X:                                                                        \
        for (auto& [v, eq] : variants_of<X, Stmt>(s.stmt.as<X>()))                           \
            out.push_back({NodeSample{s.kind, Expr(), v}, eq});                                \
        break;
#define TESSERA_EXPR_NODE(X) case IRNodeType::X:
#include "tessera/ir/ir_nodes.def"
            break;
        }
    }
    return out;
}

} // namespace

TEST(StructuralEqual, FreshCopiesOfEveryNodeAreEqualWithEqualHashes) {
    auto a = every_node_sample();
    auto b = every_node_sample();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_TRUE(equal(a[i], b[i])) << a[i].kind;
        EXPECT_TRUE(equal(a[i], a[i])) << a[i].kind;
        EXPECT_EQ(hash(a[i]), hash(b[i])) << a[i].kind;
    }
}

TEST(StructuralEqual, EveryFieldOfEveryNodeMatters) {
    std::set<uint64_t> all_hashes;
    int variants = 0;
    for (const NodeSample& s : every_node_sample()) {
        auto vs = field_variants(s);
        EXPECT_GE(vs.size(), 1u) << s.kind;
        for (const auto& [v, expect_equal] : vs) {
            ++variants;
            EXPECT_EQ(equal(s, v), expect_equal) << s.kind << ": " << text(s) << " vs " << text(v);
            EXPECT_EQ(equal(v, s), expect_equal) << s.kind;
            if (expect_equal) {
                EXPECT_EQ(hash(s), hash(v)) << s.kind;
            } else {
                EXPECT_NE(hash(s), hash(v)) << s.kind << ": " << text(v);
            }
        }
        all_hashes.insert(hash(s));
    }
    EXPECT_GE(variants, 60);
    // Different samples hash differently too.
    EXPECT_EQ(all_hashes.size(), every_node_sample().size());
}

TEST(StructuralEqual, TypesMatter) {
    Var x("x"), xi("x", DataType::i32());
    EXPECT_FALSE(structural_equal(x, xi));
    EXPECT_FALSE(structural_equal(Cast::make(DataType::f32(), x), Cast::make(DataType::f64(), x)));
    EXPECT_FALSE(structural_equal(Expr(1), IntImm::make(DataType::i32(), 1)));
    EXPECT_NE(structural_hash(Expr(1)), structural_hash(IntImm::make(DataType::i32(), 1)));
    EXPECT_FALSE(structural_equal(FloatImm::make(DataType::f32(), 0.0),
                                  FloatImm::make(DataType::f32(), -0.0)));
}

TEST(StructuralEqual, AlphaEquivalence) {
    Var x("x"), y("y"), a("a"), b("b");
    EXPECT_TRUE(structural_equal(x + y, a + b));
    EXPECT_EQ(structural_hash(x + y), structural_hash(a + b));
    EXPECT_FALSE(structural_equal(x + y, a + a));
    EXPECT_FALSE(structural_equal(x + x, a + b));
    EXPECT_NE(structural_hash(x + y), structural_hash(a + a));
    EXPECT_TRUE(structural_equal(x * (y + x), b * (a + b)));
    EXPECT_FALSE(structural_equal(x * (y + x), b * (a + a)));
    // Names never matter, identity does.
    EXPECT_TRUE(structural_equal(x + y, y + x));
    EXPECT_FALSE(structural_equal(x + y + x, y + x + x));

    // Loops over fresh variables.
    Buffer buf = Buffer::make("B", DataType::f32(), {64});
    Buffer buf2 = Buffer::make("C", DataType::f32(), {64});
    auto loop = [](const Buffer& bb) {
        Var i("i"), j("j");
        return For::make(i, 0, 8, ForKind::Serial,
                         For::make(j, 0, 8, ForKind::Serial,
                                   Store::make(bb, Load::make(bb, i * 8 + j) * 2.0f, i * 8 + j)));
    };
    EXPECT_TRUE(structural_equal(loop(buf), loop(buf2)));
    EXPECT_EQ(structural_hash(loop(buf)), structural_hash(loop(buf2)));
    // Swapping which loop variable is used where breaks equality.
    Var i("i"), j("j");
    Stmt swapped = For::make(i, 0, 8, ForKind::Serial,
                             For::make(j, 0, 8, ForKind::Serial,
                                       Store::make(buf, Load::make(buf, j * 8 + i) * 2.0f,
                                                   i * 8 + j)));
    EXPECT_FALSE(structural_equal(loop(buf), swapped));
    EXPECT_NE(structural_hash(loop(buf)), structural_hash(swapped));
}

TEST(StructuralEqual, BuffersPairOneToOneAndCompareShape) {
    Var i("i");
    Buffer a = Buffer::make("A", DataType::f32(), {8});
    Buffer b = Buffer::make("B", DataType::f32(), {8});
    Buffer c = Buffer::make("A", DataType::f32(), {9});
    Buffer d = Buffer::make("A", DataType::f64(), {8});
    EXPECT_TRUE(structural_equal(Load::make(a, i) + Load::make(b, i),
                                 Load::make(b, i) + Load::make(a, i)));
    EXPECT_FALSE(structural_equal(Load::make(a, i) + Load::make(b, i),
                                  Load::make(a, i) + Load::make(a, i)));
    EXPECT_FALSE(structural_equal(Load::make(a, i), Load::make(c, i)));
    EXPECT_FALSE(structural_equal(Load::make(a, i), Load::make(d, i)));
}

TEST(StructuralEqual, LoweredFunctions) {
    auto make = [](const std::string& name, bool swap_params) {
        Buffer in = Buffer::make("in", DataType::f32(), {16});
        Buffer out = Buffer::make("out", DataType::f32(), {16});
        Var i("i");
        Stmt body = For::make(i, 0, 16, ForKind::Serial,
                              Store::make(out, Load::make(in, i) + 1.0f, i));
        LoweredFunc f{name, swap_params ? std::vector<Buffer>{out, in}
                                        : std::vector<Buffer>{in, out}, body};
        return f;
    };
    EXPECT_TRUE(structural_equal(make("f", false), make("f", false)));
    EXPECT_EQ(structural_hash(make("f", false)), structural_hash(make("f", false)));
    EXPECT_FALSE(structural_equal(make("f", false), make("g", false)));
    EXPECT_NE(structural_hash(make("f", false)), structural_hash(make("g", false)));
    // Param order is part of the calling convention.
    EXPECT_FALSE(structural_equal(make("f", false), make("f", true)));
    EXPECT_NE(structural_hash(make("f", false)), structural_hash(make("f", true)));
}

TEST(StructuralEqual, TensorDagsCompareDefinitions) {
    auto dag = [](float scale, int64_t reduce_extent) {
        Tensor a = make_placeholder("A", DataType::f32(), {4, 8});
        Var i("i"), j("j"), k("k");
        Tensor b = make_compute("B", {4, 8}, {i, j}, a(i, j) * scale);
        Var p("p");
        Tensor c = make_compute("C", {4}, {p},
                                Reduce::make(ReduceOp::Sum, b(p, k), {IterVar{k, reduce_extent}}));
        return c;
    };
    EXPECT_TRUE(structural_equal(dag(2.0f, 8), dag(2.0f, 8)));
    EXPECT_EQ(structural_hash(dag(2.0f, 8)), structural_hash(dag(2.0f, 8)));
    EXPECT_FALSE(structural_equal(dag(2.0f, 8), dag(3.0f, 8))); // differs in the producer
    EXPECT_NE(structural_hash(dag(2.0f, 8)), structural_hash(dag(3.0f, 8)));
    EXPECT_FALSE(structural_equal(dag(2.0f, 8), dag(2.0f, 7)));
    Var x("x");
    EXPECT_TRUE(structural_equal(dag(2.0f, 8)(x), dag(2.0f, 8)(x)));
    EXPECT_FALSE(structural_equal(dag(2.0f, 8)(x), dag(3.0f, 8)(x)));

    // A DAG reading one tensor twice differs from one reading two equal-looking tensors.
    Tensor a = make_placeholder("A", DataType::f32(), {4});
    Tensor a2 = make_placeholder("A", DataType::f32(), {4});
    EXPECT_FALSE(structural_equal(a(x) + a(x), a(x) + a2(x)));
    EXPECT_TRUE(structural_equal(a(x) + a2(x), a2(x) + a(x)));
}

TEST(StructuralHash, IsAFixedFunctionOfStructure) {
    // Fixed values guard against dependence on addresses, run order or the platform's
    // std::hash; they are what this version computes (update them when the hash deliberately
    // changes).
    Var x("x"), y("y");
    uint64_t h = structural_hash(x * 4 + y);
    EXPECT_EQ(h, 13881966882594336706ULL);
    Buffer b = Buffer::make("B", DataType::f32(), {8});
    Var i("i");
    Stmt loop = For::make(i, 0, 8, ForKind::Parallel, Store::make(b, Load::make(b, i) * 2.0f, i));
    EXPECT_EQ(structural_hash(loop), 12241332716574293431ULL);
    Var p("p"), q("q");
    EXPECT_EQ(h, structural_hash(p * 4 + q));
    EXPECT_NE(h, structural_hash(p * 4 + p));
    EXPECT_NE(h, structural_hash(p * 5 + q));
    EXPECT_NE(structural_hash(Expr()), structural_hash(Expr(0)));
}
