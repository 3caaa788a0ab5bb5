// Matrix tiles for 8-bit products: a hand-built tile_matmul nest lowered to one TileMatmul
// (fields, and interpretation before and after), run through the LLVM JIT with the host's
// features (tdpbusd where the host has AMX-INT8) and with AMX turned off by the feature string
// (the expanded loops); nests that do not fit are schedule errors; and the default schedule
// of an 8-bit NCHW[x]c convolution, an 8-bit and a bf16 matmul on tiles (forced, so any host
// checks it by interpretation) against the naive nest (tdpbf16ps where the host has AMX-BF16).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "backends/jit_harness.h"
#include "common/test_util.h"
#include "tessera/backends/host.h"
#include "tessera/ir/functor.h"
#include "tessera/ir/interpreter.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/tile_matmul.h"
#include "tessera/lower/lower_default.h"
#include "tessera/lower/tile_matmul.h"
#include "tessera/schedule/default_schedule.h"
#include "tessera/schedule/layout.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/support/bfloat16.h"
#include "tessera/support/error.h"
#include "tessera/te/op_library.h"

using namespace tessera;
using namespace tessera::ir;
using namespace tessera::testing;

namespace {

// Odd sizes and padded strides: 3 reduce steps of 2 row tiles of 7 rows by 2 column tiles of
// 5 columns, 3 words deep; A rows 4 words apart (one unused), B rows 6 apart.
constexpr int64_t kSteps = 3, kRowTiles = 2, kRows = 7, kColTiles = 2, kCols = 5, kWords = 3;
constexpr int64_t kLda = 4, kLdb = 6;
constexpr int64_t kAStep = kRowTiles * kRows * kLda + 1, kBStep = kColTiles * kWords * kLdb + 2;
constexpr int64_t kCSize = kRowTiles * kColTiles * kRows * kCols;
constexpr int64_t kASize = kSteps * kAStep, kBSize = kSteps * kBStep;

struct Nest {
    Buffer c = buf("c", DataType::i32(), kCSize), a = buf("a", DataType::i32(), kASize),
           b = buf("b", DataType::i32(), kBSize);
    Stmt body;
};

/// for r (root, `root_kind`): for mt: for i: for nt: for j: for w:
///   C[mt][nt][i][j] += dot4(A[r][mt][i][w], B[r][nt][w][j]); `rows` replaces the row count.
Nest tile_nest(ForKind root_kind = ForKind::TileMatmul, int64_t rows = kRows,
               bool b_reads_rows = false) {
    Nest n;
    n.body = loop("r", kSteps, root_kind, [&](Var r) {
        return loop("mt", kRowTiles, ForKind::Serial, [&](Var mt) {
            return loop("i", rows, ForKind::Serial, [&](Var i) {
                return loop("nt", kColTiles, ForKind::Serial, [&](Var nt) {
                    return loop("j", kCols, ForKind::Serial, [&](Var j) {
                        return loop("w", kWords, ForKind::Serial, [&](Var w) {
                            Expr ci = ((mt * kColTiles + nt) * kRows + i) * kCols + j;
                            Expr ai = r * kAStep + (mt * kRows + i) * kLda + w;
                            Expr bi = r * kBStep + (nt * kWords + w) * kLdb + j;
                            if (b_reads_rows)
                                bi = bi + i;
                            return Store::make(n.c,
                                               Load::make(n.c, ci) + dot4_u8s8(Load::make(n.a, ai),
                                                                               Load::make(n.b, bi)),
                                               ci);
                        });
                    });
                });
            });
        });
    });
    return n;
}

struct Data {
    std::vector<int32_t> c = random_words(kCSize, 5), a = random_words(kASize, 6),
                         b = random_words(kBSize, 7);
};

std::vector<int32_t> interpret_nest(const Nest& n, const Stmt& body) {
    Data d;
    interpret(LoweredFunc{"f", {n.c, n.a, n.b}, body}, {d.c.data(), d.a.data(), d.b.data()});
    return d.c;
}

bool host_has_amx() {
    return backend::host_info().has_feature("amx-int8") &&
           backend::host_info().has_feature("amx-tile");
}

int count_of(const std::string& text, const std::string& what) {
    int n = 0;
    for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1))
        ++n;
    return n;
}

/// Runs the nest through the JIT with opts; returns the assembly, checks C.
std::string expect_jit_matches(const Nest& n, backend::CompileOptions opts,
                               const std::vector<int32_t>& want, const std::string& what) {
    opts.keep_assembly = true;
    JitKernel k = jit_compile({n.c, n.a, n.b}, n.body, opts, true);
    Data d;
    k(d.c, d.a, d.b);
    EXPECT_EQ(d.c, want) << what;
    return k.module->assembly();
}

} // namespace

TEST(TileMatmulLowering, ANestBecomesOneTileMatmulWithItsStridesAndTheSameSums) {
    const Nest n = tile_nest();
    const Stmt lowered = lower::lower_tile_matmuls(n.body);
    const Evaluate* e = lowered.as<Evaluate>();
    ASSERT_NE(e, nullptr) << lowered;
    const Call* call = e->value.as<Call>();
    ASSERT_NE(call, nullptr);
    const TileMatmul t = TileMatmul::from_call(*call);
    EXPECT_EQ(t.m, kRows);
    EXPECT_EQ(t.n, kCols);
    EXPECT_EQ(t.k, kWords);
    EXPECT_EQ(t.m_tiles, kRowTiles);
    EXPECT_EQ(t.n_tiles, kColTiles);
    EXPECT_EQ(t.ldc, kCols);
    EXPECT_EQ(t.lda, kLda);
    EXPECT_EQ(t.ldb, kLdb);
    EXPECT_EQ(t.c_m_tile, kColTiles * kRows * kCols);
    EXPECT_EQ(t.c_n_tile, kRows * kCols);
    EXPECT_EQ(t.a_m_tile, kRows * kLda);
    EXPECT_EQ(t.b_n_tile, kWords * kLdb);
    ASSERT_EQ(t.loops.size(), 1u);
    EXPECT_EQ(t.loops[0].extent, kSteps);
    EXPECT_EQ(t.loops[0].a_stride, kAStep);
    EXPECT_EQ(t.loops[0].b_stride, kBStep);
    EXPECT_EQ(t.tile_registers(), 8);
    // The call means what the loops meant (and the interpreter runs it).
    const std::vector<int32_t> want = interpret_nest(n, n.body);
    EXPECT_EQ(interpret_nest(n, lowered), want);
    EXPECT_NE(want, Data().c); // the products changed C
}

TEST(TileMatmulLowering, NestsThatDoNotFitTheTilesAreScheduleErrors) {
    // 17 rows do not fit a tile.
    EXPECT_THROW(lower::lower_tile_matmuls(tile_nest(ForKind::TileMatmul, 17).body), ScheduleError);
    // B read along the rows: the row loop is neither a row nor a column loop.
    EXPECT_THROW(lower::lower_tile_matmuls(tile_nest(ForKind::TileMatmul, kRows, true).body),
                 ScheduleError);
    // A product of another form: acc * dot4.
    Buffer c = buf("c", DataType::i32(), 16), a = buf("a", DataType::i32(), 16);
    Stmt scaled = loop("i", 16, ForKind::TileMatmul, [&](Var i) {
        return Store::make(c, Load::make(c, i) * dot4_u8s8(Load::make(a, i), Load::make(a, i)), i);
    });
    EXPECT_THROW(lower::lower_tile_matmuls(scaled), ScheduleError);
    // A nest without products (the accumulators' zeroing under the same root): plain loops.
    Stmt zero = loop("i", 16, ForKind::TileMatmul,
                     [&](Var i) { return Store::make(c, make_zero(DataType::i32()), i); });
    const Stmt lowered = lower::lower_tile_matmuls(zero); // holds the node `plain` points to
    const For* plain = lowered.as<For>();
    ASSERT_NE(plain, nullptr);
    EXPECT_EQ(plain->kind, ForKind::Serial);
    // Without the annotation nothing changes.
    const Nest serial = tile_nest(ForKind::Serial);
    EXPECT_TRUE(lower::lower_tile_matmuls(serial.body).same_as(serial.body));
}

TEST(TileMatmulCodegen, MatchesTheLoopsWithHostFeaturesAndWithAmxOff) {
    const Nest n = tile_nest();
    const std::vector<int32_t> want = interpret_nest(n, n.body);
    const std::string host = expect_jit_matches(n, host_options_with(""), want, "host features");
    if (host_has_amx()) {
        EXPECT_GT(count_of(host, "tdpbusd"), 0) << host;
        EXPECT_GT(count_of(host, "tileloadd"), 0) << host;
        EXPECT_GT(count_of(host, "ldtilecfg"), 0) << host;
    }
    const std::string off =
        expect_jit_matches(n, host_options_with("-amx-int8,-amx-tile"), want, "AMX off");
    EXPECT_EQ(count_of(off, "tdpbusd"), 0) << off;
    EXPECT_EQ(count_of(off, "tileloadd"), 0) << off;
}

template <typename T> std::vector<uint8_t> raw(const std::vector<T>& v) {
    std::vector<uint8_t> out(v.size() * sizeof(T));
    std::memcpy(out.data(), v.data(), out.size());
    return out;
}

/// The TileMatmul calls of a lowered body, after lower_tile_matmuls.
std::vector<TileMatmul> tile_matmul_calls(const Stmt& body) {
    struct Collector : IRVisitor {
        std::vector<TileMatmul> calls;
        using IRVisitor::visit;
        void visit(const Call* op) override {
            if (is_tile_matmul(op->op))
                calls.push_back(TileMatmul::from_call(*op));
            IRVisitor::visit(op);
        }
    } collect;
    collect.visit(lower::lower_tile_matmuls(body));
    return collect.calls;
}

/// The default schedule of c with cpu_tiles (or, `bf16`, cpu_tiles_bf16) forced (a tile_matmul
/// annotation expected) and without, each against the naive nest: interpreted, and through the
/// JIT with the host's features and with AMX off. `inputs` hold the raw bytes of each input;
/// `out_size` f32s out. Input 1 is a weight (stored in the tiles' read order, as model builds
/// mark it). 8-bit sums must be equal; bf16 ones (f32 sums in other orders) within `bf16_tol`.
/// Each tile call must accumulate the whole reduction, `reduce_elements` products per output
/// (the accumulators stay in tile registers from the first product to the last).
void expect_tiles_match(const te::Compute& c, std::vector<std::vector<uint8_t>> inputs,
                        int64_t out_size, int64_t reduce_elements, bool bf16 = false,
                        float bf16_tol = 0) {
    sched::DefaultScheduleOptions o;
    o.num_cores = 2;
    o.vector_lanes = 16; // AVX-512 (with AMX): 16 lanes, 32 registers
    o.vector_registers = 32;
    o.weight_inputs = {1};
    (bf16 ? o.cpu_tiles_bf16 : o.cpu_tiles) = true;
    const sched::State s = sched::default_schedule(c, o);
    bool tiled = false;
    for (const sched::Stage& st : s.stages)
        for (const sched::Iterator& it : st.iters)
            tiled = tiled || it.annotation == sched::IterAnnotation::TileMatmul;
    ASSERT_TRUE(tiled) << sched::to_string(s);
    const std::vector<TileMatmul> calls =
        tile_matmul_calls(sched::lower_state(s, "scheduled").body);
    ASSERT_FALSE(calls.empty());
    for (const TileMatmul& t : calls) {
        int64_t steps = 1;
        for (const TileMatmul::ReduceLoop& l : t.loops)
            steps *= l.extent;
        EXPECT_EQ(steps * t.k * t.word_elements(), reduce_elements) << sched::to_string(s);
    }
    o.cpu_tiles = o.cpu_tiles_bf16 = false;
    const sched::State vectors = sched::default_schedule(c, o);
    auto run = [&](const LoweredFunc& f, bool jit, const backend::CompileOptions& opts,
                   const sched::State* st = nullptr) {
        std::vector<std::vector<uint8_t>> in = inputs;
        // The weight packed into its layout as a build stores it.
        const sched::Stage* ws = st ? &st->stages[st->stage_id_of(c.inputs[1])] : nullptr;
        if (ws && !ws->layout.is_identity()) {
            int64_t n = 1;
            for (int64_t d : sched::packed_shape(ws->layout, ws->tensor.shape()))
                n *= d;
            std::vector<uint8_t> packed(size_t(n) * 4);
            sched::pack_layout(ws->layout, ws->tensor.shape(), 4, inputs[1].data(), packed.data());
            in[1] = packed;
        }
        std::vector<float> out(out_size, -1.0f);
        std::vector<void*> args;
        for (auto& v : in)
            args.push_back(v.data());
        args.push_back(out.data());
        if (jit) {
            auto m = backend::JitModule::compile({lower::prepare_for_codegen(f)}, opts);
            m->get(f.name)(args.data());
        } else {
            interpret(f, args);
        }
        return out;
    };
    const std::vector<float> want = run(lower::lower_default(c, "naive"), false, {});
    const std::string amx_off = bf16 ? "-amx-bf16,-amx-tile" : "-amx-int8,-amx-tile";
    auto expect_near = [&](const std::vector<float>& got, const std::string& what) {
        if (!bf16) {
            EXPECT_EQ(got, want) << what;
            return;
        }
        int wrong = 0;
        for (size_t i = 0; i < want.size(); ++i)
            if (!(std::fabs(got[i] - want[i]) <= bf16_tol) && ++wrong <= 5)
                ADD_FAILURE() << what << ": out[" << i << "] = " << got[i] << ", want " << want[i];
    };
    for (const sched::State* st : {&s, &vectors}) {
        const LoweredFunc f = sched::lower_state(*st, "scheduled");
        expect_near(run(f, false, {}, st), "interpreter\n" + sched::to_string(*st));
        expect_near(run(f, true, host_options_with(""), st), "JIT, host features");
        expect_near(run(f, true, host_options_with(amx_off), st), "JIT, AMX off");
    }
}

/// Random offsets (small, so that sums stay in i32) and positive scales for n outputs.
std::vector<std::vector<uint8_t>> dequantization(int64_t n, uint64_t seed) {
    std::vector<int32_t> offs = random_words(n, seed);
    for (auto& v : offs)
        v /= 1024;
    return {raw(offs), raw(random_floats(n, seed + 1, 0.001f, 0.01f))};
}

TEST(TileMatmulSchedule, BlockedConvOnTilesMatchesTheNaiveNest) {
    // An 8-bit NCHW[16]c 3x3 conv on words: 2 input blocks of 4 words, 4 output blocks, a 7x9
    // image padded to 9x11 (odd rows: one row tile), stride 1.
    const te::Tensor x = te::placeholder({1, 2, 9, 11, 4}, DataType::i32(), "x");
    const te::Tensor w = te::placeholder({4, 2, 3, 3, 4, 16}, DataType::i32(), "w");
    const te::Tensor offset = te::placeholder({4, 16}, DataType::i32(), "offset");
    const te::Tensor scale = te::placeholder({4, 16}, DataType::f32(), "scale");
    const te::Compute c =
        te::make_compute({x, w, offset, scale},
                         {te::qconv2d_nchwc(x, w, offset, scale, te::Conv2dParams::make(1, 0))});
    std::vector<std::vector<uint8_t>> in = {raw(random_words(1 * 2 * 9 * 11 * 4, 31)),
                                            raw(random_words(4 * 2 * 3 * 3 * 4 * 16, 32))};
    for (auto& d : dequantization(64, 33))
        in.push_back(d);
    expect_tiles_match(c, in, 1 * 4 * 7 * 9 * 16, 2 * 3 * 3 * 16);
}

TEST(TileMatmulSchedule, MatMulOnTilesMatchesTheNaiveNest) {
    // u8 [48, 96] x words [24, 64]: rows in 3 tiles of 16, columns in 2 pairs of 2 tiles of
    // 16, 12 words per tile step, twice inside one tile nest.
    const te::Tensor x = te::placeholder({48, 96}, DataType::u8(), "x");
    const te::Tensor w = te::placeholder({24, 64}, DataType::i32(), "w");
    const te::Tensor offset = te::placeholder({64}, DataType::i32(), "offset");
    const te::Tensor scale = te::placeholder({64}, DataType::f32(), "scale");
    const te::Compute c =
        te::make_compute({x, w, offset, scale}, {te::qmatmul(x, w, offset, scale)});
    std::vector<std::vector<uint8_t>> in = {raw(random_words(48 * 96 / 4, 41)),
                                            raw(random_words(24 * 64, 42))};
    for (auto& d : dequantization(64, 43))
        in.push_back(d);
    expect_tiles_match(c, in, 48 * 64, 96);
}

/// n random bf16 values in [-1, 1) as raw bytes.
std::vector<uint8_t> random_bf16(int64_t n, uint64_t seed) {
    std::vector<uint16_t> h;
    for (float f : random_floats(n, seed))
        h.push_back(f32_to_bf16_bits(f));
    return raw(h);
}

TEST(TileMatmulSchedule, Bf16MatMulOnTilesMatchesTheNaiveNest) {
    // bf16 [40, 96] x words [48, 64]: rows in 3 tiles (16, 16, 8), columns in 2 pairs of 2
    // tiles of 16, 16 words (32 bf16) per tile step, three times inside one tile nest.
    const te::Tensor x = te::placeholder({40, 96}, DataType::bf16(), "x");
    const te::Tensor w = te::placeholder({48, 64}, DataType::i32(), "w");
    const te::Compute c = te::make_compute({x, w}, {te::bf16_matmul(x, w)});
    // Words of two bf16 values in [-1, 1): sums of 96 products stay below 96; f32 sums in other
    // orders differ by a few units of 2^-24 * 96.
    expect_tiles_match(c, {random_bf16(40 * 96, 51), random_bf16(48 * 64 * 2, 52)}, 40 * 64,
                       96, true, 1e-4f);
}

TEST(TileMatmulSchedule, Bf16FoldedOddPixelConvOnTilesMatchesTheNaiveNest) {
    // An image's stem in bf16 with its 3 channels side by side: a 7x7 window of stride 2 over
    // rows of 19 padded pixels (58 elements, whole words), each window row one run of 11 words
    // (21 values and a zero-weighted half) from an even element; 2 output blocks of 16.
    const int64_t row = te::bf16_merged_row_elements(19, 3);
    const te::Tensor x = te::placeholder({1, 1, 13, row}, DataType::bf16(), "x");
    const te::Tensor w = te::placeholder({2, 1, 7, 11, 16}, DataType::i32(), "w");
    const te::Compute c = te::make_compute(
        {x, w}, {te::bf16_conv2d_nchwc(x, w, te::Conv2dParams::make(2, 0), te::Tensor(), 3)});
    // Outputs 4 x 7; sums of 154 products of values in [-1, 1).
    expect_tiles_match(c, {random_bf16(13 * row, 71), random_bf16(2 * 7 * 11 * 16 * 2, 72)},
                       2 * 4 * 7 * 16, 7 * 11 * 2, true, 2e-4f);
}

TEST(TileMatmulSchedule, Bf16MatMulWithBiasOnWeightsPackedWiderThanANest) {
    // bf16 [1, 48, 64] x words [32, 256] + bias: the register tile packs the weight in blocks
    // of 64 columns, a tile nest covers 32: the blocks shrink so that B stays linear in it.
    const te::Tensor x = te::placeholder({1, 48, 64}, DataType::bf16(), "x");
    const te::Tensor w = te::placeholder({32, 256}, DataType::i32(), "w");
    const te::Tensor b = te::placeholder({256}, DataType::f32(), "b");
    const te::Tensor y = te::bf16_matmul(x, w);
    const te::Tensor z = te::compute(
        {1, 48, 256},
        [&](const std::vector<ir::Var>& i) { return y(i[0], i[1], i[2]) + b(i[2]); }, "add");
    const te::Compute c = te::make_compute({x, w, b}, {z});
    expect_tiles_match(c,
                       {random_bf16(48 * 64, 61), random_bf16(32 * 256 * 2, 62),
                        raw(random_floats(256, 63))},
                       48 * 256, 64, true, 1e-4f);
}
