// Program features (cost_model/features.h): the layout and its documentation, structural
// expectations on hand-built and lowered programs, finiteness and determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/cost_model/features.h"
#include "tessera/ir/functor.h"
#include "tessera/ir/op.h"
#include "tessera/lower/lower_default.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/sampling.h"
#include "tessera/schedule/sketch.h"
#include "tessera/support/error.h"
#include "tessera/support/rng.h"
#include "tessera/te/op_registry.h"

namespace tessera::cost {
namespace {

using ir::Buffer;
using ir::DataType;
using ir::Expr;
using ir::For;
using ir::ForKind;
using ir::Load;
using ir::Stmt;
using ir::Store;
using ir::Var;

/// Index of a feature name in the row.
int index_of(const std::string& name) {
    const auto& names = feature_names();
    for (size_t i = 0; i < names.size(); ++i)
        if (names[i] == name)
            return static_cast<int>(i);
    ADD_FAILURE() << "no feature " << name;
    return 0;
}

/// The value of a feature with the log2(1 + x) scaling undone (one-hots are the same).
double count(const std::vector<float>& row, const std::string& name) {
    return std::exp2(double(row[index_of(name)])) - 1.0;
}
/// Expects the unscaled feature `name` of `row` to be `value` (within float rounding).
#define EXPECT_COUNT(row, name, value)                                                             \
    EXPECT_NEAR(count(row, name), double(value), 1e-5 * std::max(1.0, double(value))) << (name)

float raw(const std::vector<float>& row, const std::string& name) { return row[index_of(name)]; }

/// The buffer slot B0..B4 whose unscaled `name` equals value, or -1.
int buffer_with(const std::vector<float>& row, const std::string& name, double value) {
    for (int b = 0; b < 5; ++b)
        if (std::fabs(count(row, "B" + std::to_string(b) + "." + name) - value) <=
            1e-3 * std::max(1.0, value))
            return b;
    return -1;
}
std::string slot_name(int b, const std::string& name) {
    return "B" + std::to_string(b) + "." + name;
}

ir::LoweredFunc lowered_op(const std::string& spec) {
    return lower::lower_default(te::make_op(spec).compute, "kernel");
}

bool has_loop_kind(const Stmt& s, ForKind kind) {
    struct Finder : ir::IRVisitor {
        using ir::IRVisitor::visit;
        ForKind kind;
        bool found = false;
        void visit(const For* op) override {
            found = found || op->kind == kind;
            visit_children(op);
        }
    } f;
    f.kind = kind;
    f.visit(s);
    return f.found;
}

/// Up to `n` sampled, lowered schedules of the op (fixed seed); `keep` filters them.
std::vector<ir::LoweredFunc>
sampled_programs(const std::string& spec, int n, uint64_t seed,
                 const std::function<bool(const ir::LoweredFunc&)>& keep = nullptr,
                 const sched::SampleOptions& opts = {}) {
    const te::OpInstance inst = te::make_op(spec);
    const std::vector<sched::State> sketches = sched::generate_sketches(inst.compute);
    Rng rng(seed);
    std::vector<ir::LoweredFunc> out;
    for (int attempt = 0; attempt < 50 * n + 100 && int(out.size()) < n; ++attempt) {
        const sched::State& sketch = sketches[rng.uniform_int(0, int64_t(sketches.size()) - 1)];
        try {
            ir::LoweredFunc f =
                sched::lower_state(sched::sample_initial_state(sketch, rng, opts), "k");
            if (!keep || keep(f))
                out.push_back(std::move(f));
        } catch (const ScheduleError&) {
        }
    }
    return out;
}

// ---- the layout ------------------------------------------------------------------------------

TEST(FeatureLayout, NamesAreUniqueAndOneRowLong) {
    const auto& names = feature_names();
    ASSERT_EQ(int(names.size()), num_features());
    EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
    EXPECT_EQ(names.front(), "float_mad");
    ASSERT_EQ(int(feature_info().size()), num_features());
    for (int i = 0; i < num_features(); ++i) {
        EXPECT_EQ(feature_info()[i].name, names[i]);
        EXPECT_FALSE(feature_info()[i].meaning.empty()) << names[i];
    }
    EXPECT_TRUE(feature_info()[index_of("float_mad")].log_scaled);
    EXPECT_FALSE(feature_info()[index_of("vec_pos_none")].log_scaled);
    EXPECT_FALSE(feature_info()[index_of("ai_curve_3")].log_scaled);
    EXPECT_EQ(kFeatureLayoutVersion, 1);
    // Five buffer blocks of the same fields.
    EXPECT_NE(std::find(names.begin(), names.end(), "B0.bytes"), names.end());
    EXPECT_NE(std::find(names.begin(), names.end(), "B4.stride"), names.end());
    EXPECT_EQ(std::find(names.begin(), names.end(), "B5.bytes"), names.end());
}

TEST(FeatureLayout, FeaturesMdMatchesTheFeatureList) {
    const std::string path = std::string(TESSERA_SOURCE_DIR) + "/cost_model/FEATURES.md";
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    // Table rows: "| <index> | `<name>` | <group> | <scaling> | <meaning> |".
    auto trim = [](std::string t) {
        const size_t a = t.find_first_not_of(' '), b = t.find_last_not_of(' ');
        return a == std::string::npos ? std::string() : t.substr(a, b - a + 1);
    };
    std::vector<std::string> listed;
    std::string line;
    while (std::getline(in, line)) {
        if (line.size() < 3 || line[0] != '|' || !std::isdigit(static_cast<unsigned char>(line[2])))
            continue;
        std::vector<std::string> cells;
        std::istringstream text(line.substr(1));
        for (std::string cell; std::getline(text, cell, '|');)
            cells.push_back(trim(cell));
        ASSERT_EQ(cells.size(), 5u) << line;
        const int i = int(listed.size());
        EXPECT_EQ(cells[0], std::to_string(i)) << line;
        listed.push_back(cells[1].size() > 2 ? cells[1].substr(1, cells[1].size() - 2) : "");
        if (i >= num_features())
            continue;
        const FeatureInfo& f = feature_info()[i];
        EXPECT_EQ(cells[2], f.group) << line;
        EXPECT_EQ(cells[3], f.log_scaled ? "log2(1+x)" : "raw") << line;
        EXPECT_EQ(cells[4], f.meaning) << line;
    }
    EXPECT_EQ(listed, feature_names());
}

// ---- a hand-built loop nest --------------------------------------------------------------------

// for i in 0..16 (parallel): for j in 0..8 (vectorized): out[i*8 + j] = in[j*16 + i] * 2 + 1
TEST(ExtractFeatures, HandBuiltNestStridesLinesAndAnnotations) {
    Buffer in = Buffer::make("in", DataType::f32(), {128});
    Buffer out = Buffer::make("out", DataType::f32(), {16, 8});
    Var i("i"), j("j");
    Expr value = Load::make(in, j * 16 + i) * 2.0f + 1.0f;
    Stmt body = Store::make(out, value, i * 8 + j);
    Stmt s = For::make(i, 0, 16, ForKind::Parallel, For::make(j, 0, 8, ForKind::Vectorized, body));
    ProgramFeatures pf = extract_features({"nest", {in, out}, s});
    ASSERT_EQ(pf.rows.size(), 1u);
    const auto& r = pf.rows[0];

    EXPECT_COUNT(r, "float_mad", 128);
    EXPECT_COUNT(r, "float_mul", 0);
    EXPECT_COUNT(r, "float_addsub", 0);
    EXPECT_COUNT(r, "int_mad", 2 * 128); // both indices are a mad
    EXPECT_COUNT(r, "outer_prod", 128);
    EXPECT_COUNT(r, "num_loops", 2);

    EXPECT_COUNT(r, "vec_num", 1);
    EXPECT_COUNT(r, "vec_len", 8);
    EXPECT_EQ(raw(r, "vec_pos_inner_spatial"), 1);
    EXPECT_EQ(raw(r, "vec_pos_none"), 0);
    EXPECT_COUNT(r, "parallel_prod", 16);
    EXPECT_EQ(raw(r, "parallel_pos_outer_spatial"), 1);
    EXPECT_EQ(raw(r, "unroll_pos_none"), 1);

    // `in` moves by 16 elements (one 64-byte line) per j: every access a new line; its
    // 128 elements are 8 distinct lines. `out` is contiguous along j: one line per i.
    const int bin = buffer_with(r, "stride", 16), bout = buffer_with(r, "stride", 1);
    ASSERT_GE(bin, 0);
    ASSERT_GE(bout, 0);
    EXPECT_EQ(bin, 0) << "buffers are sorted by lines";
    EXPECT_EQ(raw(r, slot_name(bin, "acc_read")), 1);
    EXPECT_EQ(raw(r, slot_name(bout, "acc_write")), 1);
    EXPECT_COUNT(r, slot_name(bin, "bytes"), 128 * 4);
    EXPECT_COUNT(r, slot_name(bin, "unique_bytes"), 128 * 4);
    EXPECT_COUNT(r, slot_name(bin, "lines"), 128);
    EXPECT_COUNT(r, slot_name(bin, "unique_lines"), 8);
    EXPECT_COUNT(r, slot_name(bout, "lines"), 16);
    EXPECT_EQ(raw(r, slot_name(bin, "reuse_none")), 1);
    EXPECT_EQ(raw(r, slot_name(2, "acc_read")) + raw(r, slot_name(2, "acc_write")), 0)
        << "a missing buffer is zeros";
}

// for i in 0..16: out[i] = acc[i] + dot4_u8s8(a[i], b[i]); diff[i] = dot4_u8s8(a[i], b[i]) - acc[i]
TEST(ExtractFeatures, Dot4U8S8IsFourIntegerMadsThatTakeInAnAdd) {
    const DataType i32 = DataType::i32();
    Buffer acc = Buffer::make("acc", i32, {16}), a = Buffer::make("a", i32, {16}),
           b = Buffer::make("b", i32, {16}), out = Buffer::make("out", i32, {16}),
           diff = Buffer::make("diff", i32, {16});
    Var i("i");
    Expr dot = ir::dot4_u8s8(Load::make(a, i), Load::make(b, i));
    Stmt s = For::make(i, 0, 16, ForKind::Serial,
                       ir::Seq::make({Store::make(out, Load::make(acc, i) + dot, i),
                                      Store::make(diff, dot - Load::make(acc, i), i)}));
    ProgramFeatures pf = extract_features({"dot4", {acc, a, b, out, diff}, s});
    ASSERT_EQ(pf.rows.size(), 2u);
    // The accumulating add is one of the four multiply-adds (one vpdpbusd per vector).
    EXPECT_COUNT(pf.rows[0], "int_mad", 4 * 16);
    EXPECT_COUNT(pf.rows[0], "int_addsub", 0);
    EXPECT_COUNT(pf.rows[0], "int_mul", 0);
    // A subtraction is not fused: it counts on its own.
    EXPECT_COUNT(pf.rows[1], "int_mad", 4 * 16);
    EXPECT_COUNT(pf.rows[1], "int_addsub", 16);
    EXPECT_COUNT(pf.rows[1], "float_math_func", 0);
}

// for i in 0..4 (parallel): allocate t[8] { for j: t[j] = in[i*8 + j]; for j: out[i*8 + j] = t[j] }
TEST(ExtractFeatures, AllocationFeaturesOfAllocatedBuffersOnly) {
    Buffer in = Buffer::make("in", DataType::f32(), {32});
    Buffer out = Buffer::make("out", DataType::f32(), {32});
    Buffer t = Buffer::make("t", DataType::f32(), {8});
    Var i("i"), j("j"), j2("j");
    Stmt fill = For::make(j, 0, 8, ForKind::Serial, Store::make(t, Load::make(in, i * 8 + j), j));
    Stmt copy =
        For::make(j2, 0, 8, ForKind::Unrolled, Store::make(out, Load::make(t, j2), i * 8 + j2));
    Stmt s = For::make(i, 0, 4, ForKind::Parallel,
                       ir::Allocate::make(t, ir::MemoryScope::Stack, ir::Seq::make({fill, copy})));
    ProgramFeatures pf = extract_features({"alloc", {in, out}, s});
    ASSERT_EQ(pf.rows.size(), 2u);
    EXPECT_COUNT(pf.rows[0], "alloc_size", 32);
    EXPECT_COUNT(pf.rows[0], "alloc_outer_prod", 4);
    EXPECT_COUNT(pf.rows[0], "alloc_inner_prod", 8);
    EXPECT_COUNT(pf.rows[0], "alloc_prod", 32);
    EXPECT_COUNT(pf.rows[1], "alloc_size", 0);
    EXPECT_COUNT(pf.rows[1], "unroll_len", 8);
    EXPECT_EQ(raw(pf.rows[1], "unroll_pos_inner_spatial"), 1);
    EXPECT_EQ(raw(pf.rows[0], "unroll_pos_none"), 1);
    // i is not in t's index, but t is private to each i: i is a spatial loop of t's store.
    EXPECT_EQ(raw(pf.rows[0], "parallel_pos_outer_spatial"), 1);
    EXPECT_EQ(raw(pf.rows[1], "parallel_pos_outer_spatial"), 1);
    // t is read at 8 distinct elements under i: its footprint is 8 elements, 32 bytes.
    const int bt = buffer_with(pf.rows[1], "unique_bytes", 32);
    ASSERT_GE(bt, 0);
    EXPECT_EQ(raw(pf.rows[1], slot_name(bt, "acc_read")), 1);
    EXPECT_EQ(raw(pf.rows[1], slot_name(bt, "reuse_loop")), 1) << "i does not move t's index";
    EXPECT_COUNT(pf.rows[1], slot_name(bt, "reuse_ct"), 4);
    EXPECT_COUNT(pf.rows[1], slot_name(bt, "reuse_dis_iter"), 8);
}

// An imperfect tile's guard: each branch counts in its share of the iterations.
// for i in 0..4: for j in 0..4: if (i*4 + j < 13) out[i*4 + j] = in[i*4 + j] * 2 + 1
//                                else out[i*4 + j] = 0
TEST(ExtractFeatures, GuardedStoresCountTheirShareOfIterations) {
    Buffer in = Buffer::make("in", DataType::f32(), {16});
    Buffer out = Buffer::make("out", DataType::f32(), {16});
    Var i("i"), j("j");
    Expr idx = i * 4 + j;
    Stmt body =
        ir::IfThenElse::make(idx < 13, Store::make(out, Load::make(in, idx) * 2.0f + 1.0f, idx),
                             Store::make(out, Expr(0.0f), idx));
    Stmt s = For::make(i, 0, 4, ForKind::Serial, For::make(j, 0, 4, ForKind::Serial, body));
    ProgramFeatures pf = extract_features({"guarded", {in, out}, s});
    ASSERT_EQ(pf.rows.size(), 2u);
    EXPECT_COUNT(pf.rows[0], "float_mad", 13);
    EXPECT_COUNT(pf.rows[0], "num_guards", 1);
    EXPECT_COUNT(pf.rows[0], "outer_prod", 16) << "the loops, not the share";
    const int bout = buffer_with(pf.rows[0], "bytes", 13 * 4);
    ASSERT_GE(bout, 0);
    EXPECT_EQ(raw(pf.rows[0], slot_name(bout, "acc_write")), 1);
    EXPECT_COUNT(pf.rows[1], "float_mad", 0);
    EXPECT_COUNT(pf.rows[1], "B0.bytes", 3 * 4);
}

// A fused loop's index decomposed by div/mod: the strides are measured, not guessed.
// for f in 0..91: out[(f/13)*13 + f%13] = in[(f%13)*7 + f/13]
TEST(ExtractFeatures, DivModIndexOfAFusedLoopIsMeasured) {
    Buffer in = Buffer::make("in", DataType::f32(), {13, 7});
    Buffer out = Buffer::make("out", DataType::f32(), {7, 13});
    Var f("f");
    Stmt s =
        For::make(f, 0, 91, ForKind::Parallel,
                  Store::make(out, Load::make(in, (f % 13) * 7 + f / 13), (f / 13) * 13 + f % 13));
    ProgramFeatures pf = extract_features({"fused", {in, out}, s});
    ASSERT_EQ(pf.rows.size(), 1u);
    const auto& r = pf.rows[0];
    const int bout = buffer_with(r, "stride", 1), bin = buffer_with(r, "stride", 7);
    ASSERT_GE(bout, 0);
    ASSERT_GE(bin, 0);
    EXPECT_EQ(raw(r, slot_name(bout, "acc_write")), 1);
    EXPECT_COUNT(r, slot_name(bout, "unique_bytes"), 91 * 4);
    EXPECT_COUNT(r, slot_name(bout, "lines"), 6); // 364 contiguous bytes
    EXPECT_COUNT(r, slot_name(bin, "unique_bytes"), 91 * 4);
    // Consecutive accesses 28 bytes apart: the run spans 90 * 28 + 4 bytes, 40 lines (this
    // wrapping walk really changes line 42 times: an estimate, as lines are).
    EXPECT_COUNT(r, slot_name(bin, "lines"), 40);
    EXPECT_COUNT(r, "int_divmod", 4 * 91);
}

TEST(ExtractFeatures, ProgramWithoutStoresHasNoRows) {
    Var i("i");
    Stmt s = For::make(i, 0, 7, ForKind::Serial, ir::Evaluate::make(Expr(0)));
    EXPECT_TRUE(extract_features({"empty", {}, s}).rows.empty());
}

// ---- lowered operators -------------------------------------------------------------------------

constexpr int64_t kM = 13, kN = 7, kK = 127;
const char* const kMatmul = "matmul:m=13,n=7,k=127";

TEST(ExtractFeatures, DefaultMatmulCountsBytesAndStrides) {
    ProgramFeatures pf = extract_features(lowered_op(kMatmul));
    ASSERT_EQ(pf.rows.size(), 2u) << "the init store and the update store";
    const auto& init = pf.rows[0];
    const auto& upd = pf.rows[1];
    EXPECT_COUNT(init, "float_mad", 0);
    EXPECT_COUNT(upd, "float_mad", kM * kN * kK);
    EXPECT_COUNT(upd, "float_mul", 0);
    EXPECT_COUNT(upd, "float_addsub", 0);
    EXPECT_EQ(raw(upd, "vec_pos_none"), 1);
    EXPECT_EQ(raw(upd, "parallel_pos_none"), 1);
    EXPECT_EQ(raw(upd, "unroll_pos_none"), 1);
    EXPECT_COUNT(upd, "num_loops", 3);

    // Each buffer's footprint is the whole tensor; A and B are read once per iteration.
    const int ba = buffer_with(upd, "unique_bytes", kM * kK * 4);
    const int bb = buffer_with(upd, "unique_bytes", kK * kN * 4);
    const int bc = buffer_with(upd, "unique_bytes", kM * kN * 4);
    ASSERT_TRUE(ba >= 0 && bb >= 0 && bc >= 0);
    EXPECT_EQ(std::set<int>({ba, bb, bc}).size(), 3u);
    EXPECT_COUNT(upd, slot_name(ba, "bytes"), kM * kN * kK * 4);
    EXPECT_EQ(raw(upd, slot_name(ba, "acc_read")), 1);
    EXPECT_EQ(raw(upd, slot_name(bb, "acc_read")), 1);
    EXPECT_EQ(raw(upd, slot_name(bc, "acc_rw")), 1);
    // The innermost loop is k: A[i, k] moves by 1, B[k, j] by n; C does not move with k (it
    // is reused across the k loop) and moves by 1 with j.
    EXPECT_COUNT(upd, slot_name(ba, "stride"), 1);
    EXPECT_COUNT(upd, slot_name(bb, "stride"), kN);
    EXPECT_COUNT(upd, slot_name(bc, "stride"), 1);
    EXPECT_EQ(raw(upd, slot_name(bc, "reuse_loop")), 1);
    EXPECT_COUNT(upd, slot_name(bc, "reuse_ct"), kK);
    EXPECT_EQ(raw(upd, slot_name(ba, "reuse_loop")), 1) << "A is reused across j";
    EXPECT_COUNT(upd, slot_name(ba, "reuse_ct"), kN);
}

TEST(ExtractFeatures, SampledMatmulVectorizedAndParallel) {
    auto annotated = [](const ir::LoweredFunc& f) {
        return has_loop_kind(f.body, ForKind::Vectorized) &&
               has_loop_kind(f.body, ForKind::Parallel);
    };
    const std::vector<ir::LoweredFunc> programs = sampled_programs(kMatmul, 6, 11, annotated);
    ASSERT_GE(programs.size(), 3u);
    const auto default_rows = extract_features(lowered_op(kMatmul)).rows;
    for (const ir::LoweredFunc& f : programs) {
        const ProgramFeatures pf = extract_features(f);
        ASSERT_FALSE(pf.rows.empty());
        double mads = 0, guards = 0, vec = 0, par = 0;
        for (const auto& r : pf.rows) {
            mads += count(r, "float_mad");
            guards += raw(r, "num_guards");
            vec += raw(r, "vec_num");
            par += raw(r, "parallel_num");
            if (raw(r, "vec_num") > 0) {
                EXPECT_EQ(raw(r, "vec_pos_none"), 0);
                EXPECT_GE(count(r, "vec_len"), 1);
            }
        }
        EXPECT_GT(vec, 0);
        EXPECT_GT(par, 0);
        // Imperfect tiles of the prime extents are guarded; the guards' shares make every
        // multiply-add of the product count once (within the sampling of large guard spaces).
        if (guards == 0)
            EXPECT_NEAR(mads, kM * kN * kK, 1e-3 * kM * kN * kK);
        else
            EXPECT_NEAR(mads, kM * kN * kK, 0.02 * kM * kN * kK);
        EXPECT_NE(pf.rows, default_rows);
    }
}

// Perfect tiles: the lowering still branches a parallel loop's body (its first iteration is
// specialized); each branch counts in its share of the iterations, so every multiply-add of
// the product is counted once over all the stores (tiled, cached, rfactored alike).
TEST(ExtractFeatures, SampledPerfectTilesCountEveryMadOnce) {
    sched::SampleOptions perfect;
    perfect.divisor_probability = 1.0;
    const std::vector<ir::LoweredFunc> programs =
        sampled_programs("matmul:m=16,n=8,k=32", 12, 5, nullptr, perfect);
    ASSERT_GE(programs.size(), 10u);
    for (const ir::LoweredFunc& f : programs) {
        double mads = 0;
        for (const auto& r : extract_features(f).rows)
            mads += count(r, "float_mad");
        EXPECT_NEAR(mads, 16 * 8 * 32, 1e-3 * 16 * 8 * 32);
    }
}

TEST(ExtractFeatures, RowsAreFiniteForManyOpsAndSchedules) {
    const char* const specs[] = {kMatmul,
                                 "conv2d:n=1,c=3,h=13,w=7,k=5,r=3,pad=1",
                                 "softmax:m=7,n=13",
                                 "layer_norm:m=7,n=13",
                                 "relu:m=13,n=7",
                                 "max_pool2d:c=3,h=13,w=7",
                                 "dense:m=7,n=13,k=1,bias=1,relu=1"};
    for (const char* spec : specs) {
        SCOPED_TRACE(spec);
        std::vector<ir::LoweredFunc> programs = sampled_programs(spec, 8, 3);
        programs.push_back(lowered_op(spec));
        ASSERT_GE(programs.size(), 2u);
        for (const ir::LoweredFunc& f : programs) {
            const ProgramFeatures pf = extract_features(f);
            ASSERT_FALSE(pf.rows.empty());
            for (const auto& r : pf.rows) {
                ASSERT_EQ(int(r.size()), num_features());
                for (int k = 0; k < num_features(); ++k)
                    ASSERT_TRUE(std::isfinite(r[k]) && r[k] >= 0) << feature_names()[k];
            }
        }
    }
}

TEST(ExtractFeatures, DeterministicAcrossExtractionsAndLowerings) {
    // The same schedule lowered twice has fresh variables and buffers: identical rows anyway.
    const std::vector<ir::LoweredFunc> a = sampled_programs("conv2d:n=1,c=3,h=13,w=7,k=5", 5, 9);
    const std::vector<ir::LoweredFunc> b = sampled_programs("conv2d:n=1,c=3,h=13,w=7,k=5", 5, 9);
    ASSERT_EQ(a.size(), b.size());
    ASSERT_FALSE(a.empty());
    for (size_t i = 0; i < a.size(); ++i) {
        const auto ra = extract_features(a[i]).rows;
        EXPECT_EQ(ra, extract_features(a[i]).rows);
        EXPECT_EQ(ra, extract_features(b[i]).rows);
    }
}

} // namespace
} // namespace tessera::cost
