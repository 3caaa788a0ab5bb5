// Rule-based default schedules: for every registry op and every task of the shared models, the
// default schedule lowers, replays from its JSON to the same program, is not the naive nest
// (a parallel or vectorized loop once the output has more than 64 elements), and computes what
// the naive loop nest computes on random inputs.
#include <cstring>
#include <filesystem>

#include "common/jit_executor.h"
#include "sketch_fuzz_util.h"
#include "tessera/graph/fusion.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/graph/pipeline.h"
#include "tessera/graph/tasks.h"
#include "tessera/ir/interpreter.h"
#include "tessera/ir/op.h"
#include "tessera/ir/printer.h"
#include "tessera/schedule/default_schedule.h"
#include "tessera/support/bfloat16.h"
#include "tessera/support/rng.h"
#include "tessera/te/op_library.h"
#include "tessera/te/op_registry.h"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;
using sched::State;

const std::string kModels = TESSERA_SOURCE_DIR "/../shared/models";

/// An x86 CPU with `lanes`-lane vectors: AVX2 (8 lanes, 16 registers) or AVX-512 (16, 32).
sched::DefaultScheduleOptions options(int64_t lanes = 8) {
    sched::DefaultScheduleOptions o;
    o.num_cores = 4;
    o.vector_lanes = lanes;
    o.vector_registers = lanes >= 16 ? 32 : 16;
    return o;
}

int64_t output_elements(const te::Compute& c) {
    int64_t n = 0;
    for (const ir::Tensor& t : c.outputs) {
        int64_t e = 1;
        for (int64_t d : t.shape())
            e *= d;
        n += e;
    }
    return n;
}

bool has_parallel_or_vector_loop(const State& s) {
    for (const sched::Stage& st : s.stages)
        for (const sched::Iterator& it : st.iters)
            if (it.annotation == sched::IterAnnotation::Parallel ||
                it.annotation == sched::IterAnnotation::Vectorize)
                return true;
    return false;
}

/// The checks that need no execution: lowers, replays to equal IR, deterministic, not naive.
ir::LoweredFunc check_structure(const te::Compute& c, const State& s,
                                const sched::DefaultScheduleOptions& o) {
    ir::LoweredFunc f;
    try {
        f = sched::lower_state(s, "kernel");
    } catch (const ScheduleError& e) {
        ADD_FAILURE() << "lower_state: " << e.what() << "\n" << sched::steps_to_json(s.steps);
        return f;
    }
    expect_round_trip(s, f);
    EXPECT_EQ(sched::steps_to_json(sched::default_schedule(c, o).steps),
              sched::steps_to_json(s.steps));
    if (output_elements(c) > 64) {
        EXPECT_TRUE(has_parallel_or_vector_loop(s)) << sched::to_string(s);
    }
    // A stage with data reuse (conv, matmul) gets the tiled rule, not a fallback.
    const State initial = sched::make_initial_state(c);
    bool wants_tiles = false, tiled = false;
    for (int sid = 0; sid < static_cast<int>(initial.stages.size()); ++sid)
        wants_tiles = wants_tiles || initial.needs_multi_level_tiling(sid);
    for (const sched::Stage& st : s.stages) {
        // Multi-level tiling splits every axis; splitting the rows among the threads, one. A
        // two-pass transform's passes (separable_transform_schedule) are reductions computed
        // slice by slice inside another stage's loops, their vectors split off.
        int splits = 0;
        for (const sched::IterRelation& r : st.relations)
            splits += r.kind == sched::IterRelation::Kind::Split;
        const bool slice = st.location.kind == sched::ComputeLocKind::At && splits >= 1;
        tiled = tiled || (!st.is_input() && (splits >= 2 || slice) && st.has_reduce());
    }
    EXPECT_EQ(tiled, wants_tiles) << sched::to_string(s);
    return f;
}

// ---- Registry ops ----------------------------------------------------------------------------

/// One representative spec per registry op (two for the tiled ones), odd sizes.
const std::vector<std::string>& registry_specs() {
    static const std::vector<std::string> specs = {
        "matmul:m=13,n=7,k=127",
        "matmul:m=1,n=127,k=13",
        "matmul:m=1,n=1,k=1",
        "matmul:m=37,n=41,k=301", // reduction chunks of 256 with a remainder
        "dense:m=7,n=37,k=13",
        "dense:m=1,n=127,k=13,bias=1,relu=1",
        "dense:m=13,n=37,k=257,bias=1",
        "batch_matmul:b=3,m=7,n=13,k=9",
        "conv2d:n=1,c=5,h=7,w=9,k=19,r=3,pad=1",
        "conv2d:n=1,c=8,h=7,w=7,k=13,r=1",
        "conv2d:n=1,c=3,h=15,w=13,k=4,r=7,stride=2,pad=3,bias=1,relu=1",
        "conv2d:n=1,c=4,h=7,w=13,k=6,r=3,pad=1,groups=2",
        "depthwise_conv2d:n=1,c=21,h=7,w=9,r=3,pad=1",
        "depthwise_conv2d:n=1,c=13,h=13,w=7,r=3,stride=2,pad=1,bias=1,relu=1",
        "max_pool2d:n=1,c=3,h=13,w=13,kernel=3,stride=2,pad=1",
        "avg_pool2d:n=1,c=5,h=7,w=7,kernel=2",
        "global_avg_pool2d:n=1,c=7,h=13,w=13",
        "relu:m=7,n=127",
        "relu:m=1,n=1",
        "sigmoid:m=13,n=7",
        "tanh:m=7,n=13",
        "erf:m=1,n=127",
        "gelu:m=7,n=127",
        "exp:m=13,n=13",
        "sqrt:m=7,n=13",
        "add:m=13,n=127",
        "mul:m=7,n=13,broadcast=0",
        "softmax:m=7,n=127",
        "layer_norm:m=13,n=127",
        "reduce_sum:m=7,n=127",
        "reduce_mean:m=13,n=7",
        "reduce_max:m=1,n=127",
        "transpose:m=13,n=127",
        "concat:m=7,n=13,parts=3",
        "pad:m=13,n=7,pad=1",
        "slice:m=7,n=127,start=1,end=120,step=3",
        "winograd_input:c=13,h=11,w=7,block=8,tile=4,pad=1",
        "winograd_output:k=19,h=11,w=7,block=8,tile=2",
        "matmul_f16:m=13,n=37,k=19",
    };
    return specs;
}

/// check_structure, then the schedule's numerics against the reference on seeded inputs.
void expect_lowers_and_matches(const te::Compute& c, const State& s,
                               const sched::DefaultScheduleOptions& o, uint64_t seed) {
    ir::LoweredFunc f = check_structure(c, s, o);
    NumericsOptions nopts;
    nopts.jit_every = 1;
    EXPECT_EQ(check_numerics({s}, {f}, Reference(c, seed), nopts), 1);
}

TEST(DefaultSchedule, EveryRegistryOpIsCovered) {
    for (const std::string& op : te::list_ops()) {
        bool found = false;
        for (const std::string& spec : registry_specs())
            found = found || spec.substr(0, spec.find(':')) == op;
        EXPECT_TRUE(found) << "no default-schedule case for registry op " << op;
    }
}

TEST(DefaultSchedule, RegistryOpsLowerReplayAndMatchTheNaiveNest) {
    std::vector<State> states;
    std::vector<ir::LoweredFunc> funcs;
    for (const std::string& spec : registry_specs()) {
        SCOPED_TRACE(spec);
        const te::OpInstance op = te::make_op(spec);
        sched::DefaultScheduleOptions o = options();
        o.weight_inputs = op.weight_inputs;
        const State s = sched::default_schedule(op.compute, o);
        ir::LoweredFunc f = check_structure(op.compute, s, o);
        if (!f.body.defined())
            continue;
        // One reference per op, so check_numerics runs one schedule at a time.
        NumericsOptions nopts;
        nopts.jit_every = 0;
        check_numerics({s}, {f}, Reference(op.compute, 7), nopts);
        states.push_back(s);
        funcs.push_back(std::move(f));
    }
    // Through the LLVM JIT too (one module for all), against the interpreted naive nest.
    std::vector<ir::LoweredFunc> batch;
    for (size_t i = 0; i < funcs.size(); ++i) {
        batch.push_back(lower::prepare_for_codegen(funcs[i]));
        batch.back().name = "k" + std::to_string(i);
    }
    backend::CompileOptions copts;
    copts.opt_level = 1;
    auto jit = backend::JitModule::compile(batch, copts);
    for (size_t i = 0; i < batch.size(); ++i) {
        SCOPED_TRACE(sched::steps_to_json(states[i].steps));
        const Reference ref(states[i].compute, 7);
        auto kernel = jit->get(batch[i].name);
        Executor exec = [&](const ir::LoweredFunc&, std::vector<void*>& args) {
            kernel(args.data());
        };
        const auto got = run_lowered(batch[i], packed_inputs(states[i], ref.inputs), exec);
        ASSERT_EQ(got.size(), ref.outputs.size());
        for (size_t o = 0; o < got.size(); ++o)
            EXPECT_LE(max_rel_error(got[o], ref.outputs[o]), 1e-4) << "output " << o;
    }
}

TEST(DefaultSchedule, TiledOpsGetARegisterTileOfVectors) {
    // conv2d and dense: the weight blocked along the output channels, a vector loop of the
    // full width; matmul: a vector loop along n.
    for (const std::string spec :
         {"conv2d:n=1,c=5,h=7,w=9,k=19,r=3,pad=1", "dense:m=7,n=37,k=13", "matmul:m=13,n=37,k=9"}) {
        SCOPED_TRACE(spec);
        const te::OpInstance op = te::make_op(spec);
        sched::DefaultScheduleOptions o = options(8);
        o.weight_inputs = op.weight_inputs;
        const State s = sched::default_schedule(op.compute, o);
        if (!op.weight_inputs.empty()) {
            const int w =
                s.stage_id_of(op.compute.inputs[static_cast<size_t>(op.weight_inputs[0])]);
            EXPECT_FALSE(s.stages[w].layout.is_identity()) << sched::to_string(s);
        }
        bool full_vector = false, tiled = false;
        for (const sched::Stage& st : s.stages) {
            tiled = tiled || (st.has_reduce() && sched::is_tiled(st));
            for (const sched::Iterator& it : st.iters)
                full_vector = full_vector ||
                              (it.annotation == sched::IterAnnotation::Vectorize && it.extent == 8);
        }
        EXPECT_TRUE(tiled) << sched::to_string(s);
        EXPECT_TRUE(full_vector) << sched::to_string(s);
    }
}

TEST(DefaultSchedule, BlockedMaxPoolVectorizesTheChannelBlockWithItsPaddingInlined) {
    // A max pool over NCHW[8]c: the padding is read through the window (no padded copy) and
    // the window loops run outside the channel block, which is the vector loop.
    const te::Tensor x = te::placeholder({1, 3, 13, 13, 8}, ir::DataType::f32(), "x");
    te::Pool2dParams p = te::Pool2dParams::make(3, 2, 1);
    p.ceil_mode = true;
    const te::Compute c = te::make_compute({x}, {te::max_pool2d_nchwc(x, p)});
    const sched::DefaultScheduleOptions o = options(8);
    const State s = sched::default_schedule(c, o);
    ir::LoweredFunc f = check_structure(c, s, o);
    ASSERT_TRUE(f.body.defined());
    int roots = 0;
    for (const sched::Stage& st : s.stages)
        roots += !st.is_input() && st.location.kind == sched::ComputeLocKind::Root;
    EXPECT_EQ(roots, 1) << sched::to_string(s);
    const sched::Stage& pool = s.stages.back();
    ASSERT_TRUE(pool.has_reduce());
    EXPECT_EQ(pool.iters.back().annotation, sched::IterAnnotation::Vectorize)
        << sched::to_string(s);
    EXPECT_EQ(pool.iters.back().extent, 8);
    NumericsOptions nopts;
    nopts.jit_every = 1;
    EXPECT_EQ(check_numerics({s}, {f}, Reference(c, 5), nopts), 1);
}

TEST(DefaultSchedule, ShortInnerLoopsTakeAVectorsWorthOfTheLoopOutside) {
    // An image of 3 channels into blocks of 4 (the quantized input of an int8 conv): 4 lanes
    // per pixel would waste most of a vector; 4 pixels x 4 channels fill one, stored densely.
    const te::Tensor x = te::placeholder({1, 3, 7, 12}, ir::DataType::f32(), "x");
    const te::Compute c = te::make_compute({x}, {te::layout_to_nchwc(x, 4)});
    const sched::DefaultScheduleOptions o = options(16);
    const State s = sched::default_schedule(c, o);
    ir::LoweredFunc f = check_structure(c, s, o);
    ASSERT_TRUE(f.body.defined());
    const sched::Stage& out = s.stages.back();
    EXPECT_EQ(out.iters.back().annotation, sched::IterAnnotation::Vectorize) << sched::to_string(s);
    EXPECT_EQ(out.iters.back().extent, 16) << sched::to_string(s);
    NumericsOptions nopts;
    nopts.jit_every = 1;
    EXPECT_EQ(check_numerics({s}, {f}, Reference(c, 6), nopts), 1);
}

TEST(DefaultSchedule, AShortInnerLoopThatDoesNotDivideAVectorIsUnrolled) {
    // An RGB image blocked into NCHW[3]c (the bf16 stem's pack reads it): 3 lanes of a vector
    // would gather across the planes; the channel loop is unrolled and no loop vectorized by
    // the schedule (the code generator's loop vectorizer interleaves the pixels' stores).
    const te::Tensor x = te::placeholder({1, 3, 37, 45}, ir::DataType::f32(), "x");
    const te::Compute c = te::make_compute({x}, {te::layout_to_nchwc(x, 3)});
    const sched::DefaultScheduleOptions o = options(16);
    const State s = sched::default_schedule(c, o);
    ir::LoweredFunc f = check_structure(c, s, o);
    ASSERT_TRUE(f.body.defined());
    const sched::Stage& out = s.stages.back();
    EXPECT_EQ(out.iters.back().annotation, sched::IterAnnotation::Unroll) << sched::to_string(s);
    EXPECT_EQ(out.iters.back().extent, 3) << sched::to_string(s);
    for (const sched::Iterator& it : out.iters)
        EXPECT_NE(it.annotation, sched::IterAnnotation::Vectorize) << sched::to_string(s);
    NumericsOptions nopts;
    nopts.jit_every = 1;
    EXPECT_EQ(check_numerics({s}, {f}, Reference(c, 7), nopts), 1);
}

TEST(DefaultSchedule, AHeadsReshapeInlinesIntoItsCastButNotIntoAReduction) {
    // Attention's heads: a row of 4 x 64 columns reshaped to [s, 4, 64] and transposed to
    // [4, s, 64], then converted (a bf16 build's cast). The reshape divides its index by 64;
    // it still inlines into the cast (one pass over the data, not a copy and a second pass),
    // and the vectorized row reads 16 consecutive elements (no lane-wise division). Read by
    // a reduction (each element many times), such a copy stays a stage of its own.
    const te::Tensor x = te::placeholder({37, 256}, ir::DataType::f32(), "x");
    const te::Tensor heads = te::compute(
        {37, 4, 64},
        [&](const std::vector<te::Var>& i) { return x(i[0], i[1] * te::Expr(64) + i[2]); },
        "reshape");
    const te::Tensor moved = te::compute(
        {4, 37, 64}, [&](const std::vector<te::Var>& i) { return heads(i[1], i[0], i[2]); },
        "transpose");
    const te::Tensor rows = te::compute(
        {4, 37 * 64},
        [&](const std::vector<te::Var>& i) {
            return moved(i[0], i[1] / te::Expr(64), i[1] % te::Expr(64));
        },
        "flat");
    const te::Compute c = te::make_compute({x}, {te::relu(rows)});
    const sched::DefaultScheduleOptions o = options(16);
    const State s = sched::default_schedule(c, o);
    ir::LoweredFunc f = check_structure(c, s, o);
    ASSERT_TRUE(f.body.defined());
    for (const char* name : {"reshape", "transpose", "flat"})
        EXPECT_EQ(s.stages[s.stage_id_of(name)].location.kind, sched::ComputeLocKind::Inlined)
            << name << "\n"
            << sched::to_string(s);
    const std::string code = ir::to_string(lower::prepare_for_codegen(f).body);
    EXPECT_EQ(code.find("/x16(64)"), std::string::npos) << code;
    EXPECT_EQ(code.find("% x16(64)"), std::string::npos) << code;
    NumericsOptions nopts;
    nopts.jit_every = 1;
    EXPECT_EQ(check_numerics({s}, {f}, Reference(c, 7), nopts), 1);

    const te::Compute summed = te::make_compute({x}, {te::reduce_sum(rows, {1})});
    const State r = sched::default_schedule(summed, o);
    EXPECT_NE(r.stages[r.stage_id_of("flat")].location.kind, sched::ComputeLocKind::Inlined)
        << sched::to_string(r);
}

TEST(DefaultSchedule, ACopyReadAsWordsStaysAStage) {
    // A transpose of bytes read 4 at a time as words (bytes_as_word reads the 3 elements after
    // the one indexed, in memory): inlined, the word would take the transpose's input's
    // neighbours instead, so the copy stays a stage of its own. The words through the JIT
    // equal the naive nest's.
    const te::Tensor x = te::placeholder({8, 12}, ir::DataType::u8(), "x");
    const te::Tensor moved = te::compute(
        {12, 8}, [&](const std::vector<te::Var>& i) { return x(i[1], i[0]); }, "moved");
    const te::Tensor words = te::compute(
        {12, 2},
        [&](const std::vector<te::Var>& i) {
            return ir::bytes_as_word(moved(i[0], i[1] * te::Expr(4)));
        },
        "words");
    const te::Compute c = te::make_compute({x}, {words});
    const sched::DefaultScheduleOptions o = options(16);
    const State s = sched::default_schedule(c, o);
    EXPECT_NE(s.stages[s.stage_id_of("moved")].location.kind, sched::ComputeLocKind::Inlined)
        << sched::to_string(s);
    State inlined = sched::make_initial_state(c);
    EXPECT_THROW(sched::compute_inline(inlined, inlined.stage_id_of("moved")), ScheduleError);
    const ir::LoweredFunc f = sched::lower_state(s, "kernel");
    std::vector<uint8_t> bytes(8 * 12);
    for (size_t i = 0; i < bytes.size(); ++i)
        bytes[i] = static_cast<uint8_t>(i * 7 + 3);
    std::vector<int32_t> want(12 * 2, -1), got(12 * 2, -2);
    std::vector<void*> naive_args = {bytes.data(), want.data()};
    ir::interpret(lower::lower_default(c, "naive"), naive_args);
    std::vector<void*> args = {bytes.data(), got.data()};
    jit_executor()(f, args);
    EXPECT_EQ(got, want);
}

TEST(DefaultSchedule, RowsReadAsWordsAreReadInPlaceButTransposedWordsStayAStage) {
    // Q K^T in bf16: Q's rows as words are Q's own bytes in order, so the matmul loads them
    // from Q (no copy of Q per call); K's rows as words transposed to the columns a vector
    // of outputs reads side by side stay a stage (inlined, each vector would gather). The
    // sums through the JIT equal the naive nest's (up to the order of f32 additions).
    const te::Tensor q = te::placeholder({3, 13, 10}, ir::DataType::bf16(), "q");
    const te::Tensor k = te::placeholder({3, 21, 10}, ir::DataType::bf16(), "k");
    const te::Compute c = te::make_compute({q, k}, {te::bf16_matmul_nt(q, k)});
    const sched::DefaultScheduleOptions o = options(16);
    const State s = sched::default_schedule(c, o);
    EXPECT_EQ(s.stages[s.stage_id_of("bf16_matmul_nt_words")].location.kind,
              sched::ComputeLocKind::Inlined)
        << sched::to_string(s);
    EXPECT_NE(s.stages[s.stage_id_of("bf16_matmul_nt_columns")].location.kind,
              sched::ComputeLocKind::Inlined)
        << sched::to_string(s);
    const ir::LoweredFunc f = check_structure(c, s, o);
    ASSERT_TRUE(f.body.defined());
    std::vector<uint16_t> qb, kb;
    for (float v : random_floats(3 * 13 * 10, 81))
        qb.push_back(f32_to_bf16_bits(v));
    for (float v : random_floats(3 * 21 * 10, 82))
        kb.push_back(f32_to_bf16_bits(v));
    std::vector<float> want(3 * 13 * 21, -1.0f), got(3 * 13 * 21, -2.0f);
    std::vector<void*> naive_args = {qb.data(), kb.data(), want.data()};
    ir::interpret(lower::lower_default(c, "naive"), naive_args);
    std::vector<void*> args = {qb.data(), kb.data(), got.data()};
    jit_executor()(f, args);
    for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-5f) << "element " << i;
}

// The spatial loops of the conv's tile between its outermost reduce loop and its register
// tile: a cache tile of rows shows up as a loop of extent > 1 there.
int64_t rows_inside_reduction(const State& s) {
    int64_t rows = 1;
    for (const sched::Stage& st : s.stages) {
        if (!st.has_reduce())
            continue; // the conv, or its local cache stage
        bool in_reduction = false;
        for (const sched::Iterator& it : st.iters) {
            in_reduction = in_reduction || it.kind == sched::IterKind::Reduce;
            if (in_reduction && it.kind == sched::IterKind::Spatial && it.name.rfind("oh.", 0) == 0)
                rows *= it.extent;
        }
    }
    return rows;
}

// The extent of the loops named `level` (oh.1: the cache tile's rows around the register
// tile's local buffer; ow.1: its column tiles there).
int64_t tile_loops_outside(const State& s, const std::string& level) {
    int64_t rows = 1;
    for (const sched::Stage& st : s.stages)
        for (const sched::Iterator& it : st.iters)
            if (it.kind == sched::IterKind::Spatial && it.name == level)
                rows *= it.extent;
    return rows;
}

TEST(DefaultSchedule, BlockedOneByOneConvKeepsItsTileOverTheWholeChannelLoop) {
    // A 1x1 conv on 2 channel blocks reduces over rcb (2) and rc (8), neither a window: its
    // register tile accumulates over both, with no rows of a cache tile inside the channel
    // loop (which reload the accumulators at every channel step). A 3x3 conv of the same sizes
    // slides a window and keeps a cache tile of rows, outside its local buffer: the register
    // tile accumulates over the channels and the window whole there too.
    const te::Tensor x = te::placeholder({1, 2, 29, 28, 8}, ir::DataType::f32(), "x");
    const te::Tensor w1 = te::placeholder({6, 2, 1, 1, 8, 8}, ir::DataType::f32(), "w");
    const te::Tensor w3 = te::placeholder({6, 2, 3, 3, 8, 8}, ir::DataType::f32(), "w");
    const sched::DefaultScheduleOptions o = options(8);
    const te::Compute one =
        te::make_compute({x, w1}, {te::conv2d_nchwc(x, w1, te::Conv2dParams::make(1, 0, 1, 1))});
    const State s1 = sched::default_schedule(one, o);
    EXPECT_EQ(rows_inside_reduction(s1), 1) << sched::to_string(s1);
    expect_lowers_and_matches(one, s1, o, 5);
    const te::Compute three =
        te::make_compute({x, w3}, {te::conv2d_nchwc(x, w3, te::Conv2dParams::make(1, 1, 1, 1))});
    const State s3 = sched::default_schedule(three, o);
    EXPECT_EQ(rows_inside_reduction(s3), 1) << sched::to_string(s3);
    EXPECT_GT(tile_loops_outside(s3, "oh.1"), 1) << sched::to_string(s3);
    expect_lowers_and_matches(three, s3, o, 6);
}

TEST(DefaultSchedule, LanesThatReadDifferentBlocksAreVectorsOfOneBlock) {
    // 8-bit words in blocks of 64 channels packed from 4 blocks of 16: a pixel's 16 words
    // come 4 from each input block. As one 16-lane vector each lane would gather; as 4 vectors
    // of 4 lanes (the loop around them unrolled) each is one dense 16-byte load (int8
    // resnet18's packs on a Zen 4 core: 0.019 -> 0.0039 ms).
    const te::Tensor x = te::placeholder({1, 4, 9, 11, 16}, ir::DataType::u8(), "x");
    const te::Compute c =
        te::make_compute({x}, {te::pack_u8_words(x, te::Conv2dParams::make(1, 1, 1, 1), 7, 64)});
    const sched::DefaultScheduleOptions o = options(16);
    const State s = sched::default_schedule(c, o);
    ir::LoweredFunc f = check_structure(c, s, o);
    ASSERT_TRUE(f.body.defined());
    const sched::Stage& out = s.stages.back();
    ASSERT_GE(out.iters.size(), 2u);
    EXPECT_EQ(out.iters.back().annotation, sched::IterAnnotation::Vectorize) << sched::to_string(s);
    EXPECT_EQ(out.iters.back().extent, 4) << sched::to_string(s);
    EXPECT_EQ(out.iters[out.iters.size() - 2].annotation, sched::IterAnnotation::Unroll)
        << sched::to_string(s);
    const std::string code = ir::to_string(lower::prepare_for_codegen(f).body);
    EXPECT_NE(code.find(", 4, 4)])"), std::string::npos) << code; // 4 bytes apart: dense words
    EXPECT_EQ(code.find("/x4(4)"), std::string::npos) << code;
    // The words through the JIT against the naive nest (interpreted), padding included.
    std::vector<uint8_t> bytes(1 * 4 * 9 * 11 * 16);
    for (size_t i = 0; i < bytes.size(); ++i)
        bytes[i] = static_cast<uint8_t>((i * 37 + 11) % 251);
    const size_t words = 1 * 1 * 11 * 13 * 16;
    std::vector<int32_t> want(words, -1), got(words, -2);
    std::vector<void*> naive_args = {bytes.data(), want.data()};
    ir::interpret(lower::lower_default(c, "naive"), naive_args);
    std::vector<void*> args = {bytes.data(), got.data()};
    jit_executor()(f, args);
    EXPECT_EQ(got, want);
}

// How much of output axis `axis` (oh: rows, ow: columns) the conv's local buffer (its
// register tile's accumulators) holds: the product of the extents of its loops over it.
int64_t local_buffer_extent(const State& s, const std::string& axis) {
    int64_t e = 1;
    for (const sched::Stage& st : s.stages)
        if (st.origin == sched::StageOrigin::CacheWrite)
            for (const sched::Iterator& it : st.iters)
                if (it.kind == sched::IterKind::Spatial && it.name.rfind(axis + ".", 0) == 0)
                    e *= it.extent;
    return e;
}
int64_t rows_in_local_buffer(const State& s) { return local_buffer_extent(s, "oh"); }

TEST(DefaultSchedule, ALongWindowKeepsItsAccumulatorsOverTheWholeWindow) {
    // A stem's 7x7 window over 3 channels (147 steps, no reduction outside the window) and a
    // 5x5 depthwise window (25) hold one row in their local buffer: the register tile
    // accumulates in registers over its whole window, instead of reloading and storing its
    // accumulators at each window row for every row of a cache tile (resnet18's 8-bit stem
    // on a Zen 4 core: 0.83 -> 0.77 ms, its f32 one 2.49 -> 2.38). A 3x3 depthwise window
    // (9 steps) keeps several rows there.
    const sched::DefaultScheduleOptions o = options(16);
    const te::Tensor image = te::placeholder({1, 1, 37, 41, 3}, ir::DataType::f32(), "x");
    const te::Tensor w7 = te::placeholder({2, 1, 7, 7, 3, 16}, ir::DataType::f32(), "w");
    const te::Compute stem = te::make_compute(
        {image, w7}, {te::conv2d_nchwc(image, w7, te::Conv2dParams::make(2, 3, 1, 1))});
    const State s = sched::default_schedule(stem, o);
    EXPECT_EQ(rows_in_local_buffer(s), 1) << sched::to_string(s);
    EXPECT_GT(tile_loops_outside(s, "ow.1"), 1) << sched::to_string(s); // columns, not rows
    expect_lowers_and_matches(stem, s, o, 23);
    const te::Tensor x = te::placeholder({1, 2, 23, 29, 16}, ir::DataType::f32(), "x");
    for (const int64_t r : {5, 3}) {
        const te::Tensor wd = te::placeholder({2, 1, r, r, 1, 16}, ir::DataType::f32(), "w");
        const te::Compute dw = te::make_compute(
            {x, wd},
            {te::conv2d_nchwc(x, wd, te::Conv2dParams::make(1, r / 2, 1, 1), te::Tensor(), true)});
        const State sd = sched::default_schedule(dw, o);
        if (r == 5) {
            EXPECT_EQ(rows_in_local_buffer(sd), 1) << sched::to_string(sd);
        } else {
            EXPECT_GT(rows_in_local_buffer(sd), 1) << sched::to_string(sd);
        }
        expect_lowers_and_matches(dw, sd, o, 24 + r);
    }
}

// The position of the first loop named `name` in the output stage's nest; -1 when absent.
int loop_position(const State& s, const std::string& name) {
    const sched::Stage& out = s.stages.back();
    for (size_t k = 0; k < out.iters.size(); ++k)
        if (out.iters[k].name == name)
            return static_cast<int>(k);
    return -1;
}

TEST(DefaultSchedule, AStemWritesItsOutputRowByRow) {
    // A 3x3 stride-2 conv over 3 channels (27 steps per output) writes more than it computes:
    // its cache tile repeats the register tile along the output row (level 1 over column
    // tiles, no rows there) and the parallel loop hands out whole rows, so its stores and its
    // input's loads stream in memory order (MobileNetV2's stem in the model on a Zen 3 core:
    // 1.00 -> 0.53 ms; SqueezeNet's on a Zen 4 core, rows walked before columns: 0.77-0.98 ->
    // 0.48-0.51). A conv over 64 channels (576 steps) keeps a cache tile of rows, walked
    // before its column tiles when they are serial (order_rows_before_columns).
    for (const int cores : {1, 2}) {
        for (const int64_t lanes : {8, 16}) {
            // On 2 cores a 224 x 224 image, as in the model (its rows split in two chunks).
            const int64_t h = cores == 1 ? 131 : 225, w = cores == 1 ? 99 : 223;
            const te::Tensor image = te::placeholder({1, 1, h, w, 3}, ir::DataType::f32(), "x");
            const te::Tensor w3 =
                te::placeholder({32 / lanes, 1, 3, 3, 3, lanes}, ir::DataType::f32(), "w");
            const te::Compute stem = te::make_compute(
                {image, w3}, {te::conv2d_nchwc(image, w3, te::Conv2dParams::make(2, 1, 1, 1))});
            sched::DefaultScheduleOptions o = options(lanes);
            o.num_cores = cores;
            const State s = sched::default_schedule(stem, o);
            EXPECT_GT(tile_loops_outside(s, "ow.1"), 1) << sched::to_string(s);
            EXPECT_EQ(tile_loops_outside(s, "oh.1"), 1) << sched::to_string(s);
            for (const sched::Iterator& it : s.stages.back().iters) {
                if (it.annotation == sched::IterAnnotation::Parallel) {
                    EXPECT_EQ(it.name.find("ow"), std::string::npos) << sched::to_string(s);
                }
            }
            if (cores == 1)
                expect_lowers_and_matches(stem, s, o, 31 + lanes);
        }
    }
    const te::Tensor x = te::placeholder({1, 4, 57, 43, 16}, ir::DataType::f32(), "x");
    const te::Tensor w64 = te::placeholder({2, 4, 3, 3, 16, 16}, ir::DataType::f32(), "w");
    const te::Compute deep =
        te::make_compute({x, w64}, {te::conv2d_nchwc(x, w64, te::Conv2dParams::make(1, 1, 1, 1))});
    sched::DefaultScheduleOptions o = options(16);
    o.num_cores = 1;
    const State d = sched::default_schedule(deep, o);
    const int rows = loop_position(d, "oh.1"), columns = loop_position(d, "ow.0");
    ASSERT_GE(rows, 0) << sched::to_string(d);
    ASSERT_GE(columns, 0) << sched::to_string(d);
    EXPECT_GT(rows, columns) << sched::to_string(d); // the rule leaves it: nothing to check
}

TEST(DefaultSchedule, ADepthwiseConvTilesWholeRows) {
    // A 3x3 depthwise conv over channel blocks keeps its rows in the local buffer, and its
    // cache tile covers whole output rows (every column tile, level 2), at least two of them:
    // each parallel iteration writes rows in memory order, where a column 8 outputs wide
    // down 28 rows ran 1.2-1.4x slower in MobileNetV2 on a Zen 3 core.
    const te::Tensor x = te::placeholder({1, 3, 29, 37, 8}, ir::DataType::f32(), "x");
    const te::Tensor w = te::placeholder({3, 1, 3, 3, 1, 8}, ir::DataType::f32(), "w");
    const te::Compute dw = te::make_compute(
        {x, w}, {te::conv2d_nchwc(x, w, te::Conv2dParams::make(1, 1, 1, 1), te::Tensor(), true)});
    sched::DefaultScheduleOptions o = options(8);
    o.num_cores = 2;
    const State s = sched::default_schedule(dw, o);
    EXPECT_GE(local_buffer_extent(s, "ow"), 37) << sched::to_string(s);
    EXPECT_GE(local_buffer_extent(s, "oh"), 2) << sched::to_string(s);
    expect_lowers_and_matches(dw, s, o, 41);
    // Rows too wide for two of them on the stack (16 KiB): columns as before.
    const te::Tensor wide = te::placeholder({1, 1, 9, 301, 16}, ir::DataType::f32(), "x");
    const te::Tensor w16 = te::placeholder({1, 1, 3, 3, 1, 16}, ir::DataType::f32(), "w");
    const te::Compute dw_wide = te::make_compute(
        {wide, w16},
        {te::conv2d_nchwc(wide, w16, te::Conv2dParams::make(1, 1, 1, 1), te::Tensor(), true)});
    const State sw = sched::default_schedule(dw_wide, options(16));
    EXPECT_LT(local_buffer_extent(sw, "ow"), 301) << sched::to_string(sw);
}

TEST(DefaultSchedule, ARegisterTileBroadcastsOutsideItsVectorLoads) {
    // A 1x1 conv over 27 columns in tiles of 2 channel blocks by 6 columns (no divisor of 27
    // fits): the tile loops over its columns (one broadcast input each) outside its blocks (one
    // loaded weight vector each), so that 12 accumulators, 2 weight vectors and one broadcast
    // fit AVX2's 16 registers; with the blocks outside, all 6 broadcasts stayed live across them
    // and LLVM spilled (SqueezeNet's 27x27 1x1 convs at 45% of the FMA peak on a Zen 3 core).
    const te::Tensor x = te::placeholder({1, 3, 5, 27, 8}, ir::DataType::f32(), "x");
    const te::Tensor w = te::placeholder({4, 3, 1, 1, 8, 8}, ir::DataType::f32(), "w");
    const te::Compute c = te::make_compute(
        {x, w}, {te::relu(te::conv2d_nchwc(x, w, te::Conv2dParams::make(1, 0, 1, 1)))});
    sched::DefaultScheduleOptions o = options(8);
    o.num_cores = 2;
    const State s = sched::default_schedule(c, o);
    bool found = false;
    for (const sched::Stage& st : s.stages) {
        int ow = -1, kb = -1;
        for (size_t i = 0; i < st.iters.size(); ++i) {
            if (st.iters[i].name == "ow.3")
                ow = static_cast<int>(i);
            if (st.iters[i].name == "kb.3")
                kb = static_cast<int>(i);
        }
        if (ow < 0 || kb < 0)
            continue;
        found = true;
        EXPECT_GT(st.iters[static_cast<size_t>(ow)].extent,
                  st.iters[static_cast<size_t>(kb)].extent)
            << sched::to_string(s);
        EXPECT_LT(ow, kb) << sched::to_string(s);
    }
    EXPECT_TRUE(found) << sched::to_string(s);
    expect_lowers_and_matches(c, s, o, 43);
}

TEST(DefaultSchedule, AConvFusesIntoItsSiLU) {
    // y * sigmoid(y) after a conv: the sigmoid (expensive math, read once by the product)
    // inlines into the product, and the conv's tile is computed inside the product's loops,
    // reading its accumulators twice, instead of writing y and sigmoid(y) as root stages.
    const te::Tensor x = te::placeholder({1, 2, 11, 13, 8}, ir::DataType::f32(), "x");
    const te::Tensor w = te::placeholder({3, 2, 1, 1, 8, 8}, ir::DataType::f32(), "w");
    const te::Tensor y = te::conv2d_nchwc(x, w, te::Conv2dParams::make(1, 0, 1, 1));
    const te::Compute c = te::make_compute({x, w}, {te::multiply(y, te::sigmoid(y))});
    const sched::DefaultScheduleOptions o = options(8);
    const State s = sched::default_schedule(c, o);
    int roots = 0;
    for (const sched::Stage& st : s.stages)
        roots += !st.is_input() && st.location.kind == sched::ComputeLocKind::Root;
    EXPECT_EQ(roots, 1) << sched::to_string(s);
    expect_lowers_and_matches(c, s, o, 51);
}

/// The auto_unroll_max_step of the stage that reduces (the register tile).
int64_t register_tile_extent(const State& s, const std::string& axis);

int64_t tile_unroll_steps(const State& s) {
    for (const sched::Stage& st : s.stages)
        if (!st.is_input() && st.has_reduce() && st.location.kind != sched::ComputeLocKind::Inlined)
            return st.auto_unroll_max_step;
    return -1;
}

TEST(DefaultSchedule, WindowTilesUnrollTheirWholeWindowAtEveryVectorWidth) {
    // The unroll pragma counts vector lanes, so a 3x3 conv's 7 x 2-vector tile (7 x 7 image)
    // needs 2 x 9 x 7 x 16 = 2016 steps at 16 lanes for its window to unroll whole (its
    // accumulators then stay in registers over 9 FMA steps), an 8-column tile (32 x 32) 2304:
    // the window tile's steps scale with the lanes. A tile with a partial last tile (27 x 27
    // in tiles of 7 columns) keeps 512, as a GEMM-like one does.
    const sched::DefaultScheduleOptions o16 = options(16), o8 = options(8);
    const auto conv = [](int64_t width, int64_t block, int64_t blocks) {
        const te::Tensor x = te::placeholder({1, 3, width, width, block}, ir::DataType::f32(), "x");
        const te::Tensor w =
            te::placeholder({blocks, 3, 3, 3, block, block}, ir::DataType::f32(), "w");
        return te::make_compute({x, w},
                                {te::conv2d_nchwc(x, w, te::Conv2dParams::make(1, 1, 1, 1))});
    };
    const te::Compute c16 = conv(7, 16, 4);
    const State s16 = sched::default_schedule(c16, o16);
    EXPECT_GE(tile_unroll_steps(s16), 2016) << sched::to_string(s16);
    expect_lowers_and_matches(c16, s16, o16, 7);
    EXPECT_GE(tile_unroll_steps(sched::default_schedule(conv(32, 16, 4), o16)), 2304);
    EXPECT_GE(tile_unroll_steps(sched::default_schedule(conv(8, 8, 4), o8)), 1024); // 4-row tiles
    EXPECT_EQ(tile_unroll_steps(sched::default_schedule(conv(27, 16, 4), o16)), 512);
    // A GEMM-like stage (a long reduction, no window) keeps 512.
    const te::OpInstance mm = te::make_op("matmul:m=13,n=64,k=256");
    EXPECT_EQ(tile_unroll_steps(sched::default_schedule(mm.compute, o16)), 512);
    // A window tile takes as many vectors per row as divide its vector axis, so it has no
    // partial tile and its window unrolls: 48 columns (3 vectors of 16) in tiles of one
    // vector, not two (by 8 of the 16 rows).
    const te::OpInstance dw = te::make_op("depthwise_conv2d:n=1,c=3,h=16,w=48,r=3,pad=1");
    const State sd = sched::default_schedule(dw.compute, o16);
    EXPECT_EQ(register_tile_extent(sd, "ow"), 16) << sched::to_string(sd);
    EXPECT_EQ(tile_unroll_steps(sd), 2304) << sched::to_string(sd);
    expect_lowers_and_matches(dw.compute, sd, o16, 19);
}

TEST(DefaultSchedule, OneByOneConvsTakeTheirChannelBlockWholeAndUnrolledWith16Registers) {
    // A 1x1 NCHW[x]c conv that is not GEMM-like (fewer than 128 channel blocks) reduces over
    // channel blocks and the channels of a block. With AVX2's 16 vector registers the block
    // lies whole in the register tile's reduce level and the unroll pragma reaches it, so that
    // one loop (over the blocks) runs around straight-line FMAs on accumulators in registers.
    // With the block's loop nested in the blocks' loop they went through memory at every step
    // (SqueezeNet's classifier conv 1.49x ONNX Runtime's time on a Zen 3 core, 0.98x so; a
    // GEMM-like 1024 -> 256 one, whose blocks' loop was also cut in chunks of 4, 1.32x, 1.10x
    // so). Also a GEMM-like one (130 blocks of 8 channels): no chunk of its blocks' loop either.
    // With AVX-512's 32 registers the block's loop stays rolled outside the blocks' loop, its
    // extent one reduce level above the register tile's: whole and unrolled, a 16-accumulator
    // tile spilled (a 96 -> 24 channel 1x1 conv 1.17x slower on a Zen 4 core).
    for (const auto& [lanes, blocks] :
         {std::pair<int64_t, int64_t>{8, 5}, {16, 5}, {8, 130}, {16, 130}}) {
        const sched::DefaultScheduleOptions o = options(lanes);
        const te::Tensor x = te::placeholder({1, blocks, 13, 11, lanes}, ir::DataType::f32(), "x");
        const te::Tensor w =
            te::placeholder({7, blocks, 1, 1, lanes, lanes}, ir::DataType::f32(), "w");
        const te::Compute c =
            te::make_compute({x, w}, {te::conv2d_nchwc(x, w, te::Conv2dParams{})});
        const State s = sched::default_schedule(c, o);
        const sched::Stage* conv = nullptr;
        for (const sched::Stage& st : s.stages)
            if (!st.is_input() && st.has_reduce())
                conv = &st;
        ASSERT_NE(conv, nullptr) << sched::to_string(s);
        // From the innermost loop out: the register tile, then the first reduce loop.
        int64_t inner = 1;
        bool block_whole = false;
        for (auto it = conv->iters.rbegin(); it != conv->iters.rend(); ++it) {
            inner *= it->extent;
            if (it->kind == sched::IterKind::Reduce && it->extent > 1) {
                block_whole = it->name.rfind("rc.", 0) == 0 && it->extent == lanes;
                break;
            }
        }
        const bool sixteen_registers = lanes == 8;
        EXPECT_EQ(block_whole, sixteen_registers) << sched::to_string(s);
        if (sixteen_registers) {
            EXPECT_GE(conv->auto_unroll_max_step, inner) << sched::to_string(s);
            int reduce_loops = 0;
            for (const sched::Iterator& it : conv->iters)
                reduce_loops += it.kind == sched::IterKind::Reduce && it.extent > 1;
            EXPECT_EQ(reduce_loops, 2) << sched::to_string(s); // the blocks, the unrolled block
        } else {
            // The block's loop (rc) whole in an outer reduce level, rolled: the unroll pragma
            // stops short of it (a GEMM-like one: in chunks of 4, as its blocks' loop).
            if (blocks < 128) {
                int64_t through_block = 1;
                bool found = false;
                for (auto it = conv->iters.rbegin(); it != conv->iters.rend() && !found; ++it) {
                    through_block *= it->extent;
                    found = it->kind == sched::IterKind::Reduce && it->name.rfind("rc.", 0) == 0 &&
                            it->extent == lanes;
                }
                EXPECT_TRUE(found) << sched::to_string(s);
                EXPECT_LT(conv->auto_unroll_max_step, through_block) << sched::to_string(s);
            }
        }
        expect_lowers_and_matches(c, s, o, 37);
    }
    // A 3x3 conv keeps its block in the outer reduce level (its window is unrolled instead).
    const te::Tensor x = te::placeholder({1, 5, 13, 11, 8}, ir::DataType::f32(), "x");
    const te::Tensor w = te::placeholder({7, 5, 3, 3, 8, 8}, ir::DataType::f32(), "w");
    const te::Compute c3 =
        te::make_compute({x, w}, {te::conv2d_nchwc(x, w, te::Conv2dParams::make(1, 1, 1, 1))});
    const State s3 = sched::default_schedule(c3, options(8));
    for (const sched::Stage& st : s3.stages)
        for (const sched::Iterator& it : st.iters)
            EXPECT_FALSE(it.name == "rc.1" && it.extent == 8) << sched::to_string(s3);
}

TEST(DefaultSchedule, DepthwisePaddingIsReadInPlace) {
    // A depthwise conv reads its padded input at the output channel, each tile only the rows
    // and channels it needs: the padding is inlined (the conv reads the image, zero outside
    // it) instead of a whole padded copy before the nest. A regular conv with several
    // output-channel tiles reads every input channel in each: its padded input stays one
    // whole buffer.
    const sched::DefaultScheduleOptions o = options(16);
    const te::Tensor x = te::placeholder({1, 3, 29, 23, 16}, ir::DataType::f32(), "x");
    const te::Tensor wd = te::placeholder({3, 1, 3, 3, 1, 16}, ir::DataType::f32(), "w");
    const te::Compute dw = te::make_compute(
        {x, wd}, {te::conv2d_nchwc(x, wd, te::Conv2dParams::make(2, 1), te::Tensor(), true)});
    const State sd = sched::default_schedule(dw, o);
    const int pad = sd.stage_id_of("conv2d_nchwc_pad");
    ASSERT_GE(pad, 0) << sched::to_string(sd);
    EXPECT_EQ(sd.stages[pad].location.kind, sched::ComputeLocKind::Inlined) << sched::to_string(sd);
    expect_lowers_and_matches(dw, sd, o, 11);

    const te::Tensor w = te::placeholder({8, 3, 3, 3, 16, 16}, ir::DataType::f32(), "w");
    const te::Compute conv =
        te::make_compute({x, w}, {te::conv2d_nchwc(x, w, te::Conv2dParams::make(1, 1, 1, 1))});
    const State sc = sched::default_schedule(conv, o);
    const int cpad = sc.stage_id_of("conv2d_nchwc_pad");
    ASSERT_GE(cpad, 0) << sched::to_string(sc);
    EXPECT_EQ(sc.stages[cpad].location.kind, sched::ComputeLocKind::Root) << sched::to_string(sc);

    // An NCHW depthwise conv vectorizes along the image width: inlined, its padding would
    // split the vectors of its edge tiles lane by lane, so it is padded into a buffer of a
    // band of whole rows inside the parallel loop.
    const te::OpInstance nchw = te::make_op("depthwise_conv2d:n=1,c=3,h=17,w=48,r=3,pad=1");
    const State sn = sched::default_schedule(nchw.compute, o);
    const int npad = sn.stage_id_of("depthwise_conv2d_pad");
    ASSERT_GE(npad, 0) << sched::to_string(sn);
    EXPECT_EQ(sn.stages[npad].location.kind, sched::ComputeLocKind::At) << sched::to_string(sn);
    expect_lowers_and_matches(nchw.compute, sn, o, 17);
}

TEST(DefaultSchedule, NchwDepthwisePaddingIsInlinedAlongLongRows) {
    // Rows of at least 7 vectors read at stride 1: the padding is inlined and the threads split
    // the channels alone, so that the rows stay a serial loop whose first and last iterations
    // the partitioner peels (the rows between run without tests; only the edge columns'
    // vectors split). On a Zen 3 core 32 channels of 112x112: 0.78x the time of a band.
    const sched::DefaultScheduleOptions o = options(8);
    const te::OpInstance dw = te::make_op("depthwise_conv2d:n=1,c=19,h=11,w=61,r=3,pad=1");
    const State s = sched::default_schedule(dw.compute, o);
    EXPECT_EQ(s.stages[s.stage_id_of("depthwise_conv2d_pad")].location.kind,
              sched::ComputeLocKind::Inlined)
        << sched::to_string(s);
    const sched::Stage& out = s.stages[s.stage_id_of("depthwise_conv2d")];
    bool parallel = false, serial_rows = false;
    for (const sched::Iterator& it : out.iters) {
        if (it.annotation == sched::IterAnnotation::Parallel) {
            parallel = true;
            EXPECT_EQ(it.name.find("oh"), std::string::npos) << sched::to_string(s);
        }
        serial_rows = serial_rows || (parallel && it.name.rfind("oh.", 0) == 0 &&
                                      it.annotation == sched::IterAnnotation::None);
    }
    EXPECT_TRUE(parallel && serial_rows) << sched::to_string(s);
    expect_lowers_and_matches(dw.compute, s, o, 29);

    // Short rows (3 vectors), rows read at stride 2, or too few channels for the threads: a
    // band of padded rows per chunk, as before.
    for (const char* spec : {"depthwise_conv2d:n=1,c=19,h=11,w=27,r=3,pad=1",
                             "depthwise_conv2d:n=1,c=19,h=11,w=125,r=3,stride=2,pad=1",
                             "depthwise_conv2d:n=1,c=5,h=11,w=61,r=3,pad=1"}) {
        const te::OpInstance op = te::make_op(spec);
        const State b = sched::default_schedule(op.compute, o);
        EXPECT_EQ(b.stages[b.stage_id_of("depthwise_conv2d_pad")].location.kind,
                  sched::ComputeLocKind::At)
            << spec << "\n"
            << sched::to_string(b);
        expect_lowers_and_matches(op.compute, b, o, 31);
    }
}

TEST(DefaultSchedule, UnpaddedNchwDepthwiseVectorizesAlongTheWidth) {
    // Without padding too: the innermost loop of its tile runs along the image width, not
    // along the channels (gathered an image apart; 26x slower over 32 channels of 114x114 on
    // a Zen 3 core), and no input is re-laid out.
    for (const sched::DefaultScheduleOptions& o : {options(8), options(16)}) {
        const te::OpInstance dw = te::make_op("depthwise_conv2d:n=1,c=5,h=19,w=50,r=3");
        const State s = sched::default_schedule(dw.compute, o);
        const sched::Stage& out = s.stages[s.stage_id_of("depthwise_conv2d")];
        ASSERT_FALSE(out.iters.empty());
        EXPECT_EQ(out.iters.back().name.substr(0, 3), "ow.") << sched::to_string(s);
        EXPECT_EQ(out.iters.back().annotation, sched::IterAnnotation::Vectorize)
            << sched::to_string(s);
        for (const sched::Stage& st : s.stages)
            EXPECT_TRUE(!st.is_input() || st.layout.is_identity()) << st.tensor.name();
        expect_lowers_and_matches(dw.compute, s, o, 23);
    }
}

/// The stages of s that rfactor made, each attached per row with its factored axis a vector.
int vector_partial_stages(const State& s) {
    int n = 0;
    for (const sched::Stage& st : s.stages)
        n += st.origin == sched::StageOrigin::Rfactor &&
             st.location.kind == sched::ComputeLocKind::At && !st.iters.empty() &&
             st.iters.back().annotation == sched::IterAnnotation::Vectorize;
    return n;
}

TEST(DefaultSchedule, RowReductionsAccumulateVectorsOfPartials) {
    // Softmax's max and sum and layer norm's mean and variance reduce rows of contiguous
    // floats: each is factored by the vector width into a vector of partials per row (the
    // variance reads the per-row mean besides its row); a global pool's rows of h x w, with
    // w split into vectors. A row of at least four vectors and a partial one (ViT's 197 keys)
    // too, its partial vector guarded; a shorter row that is not a whole number of vectors
    // stays a scalar chain.
    const sched::DefaultScheduleOptions o = options(16);
    for (const auto& [spec, partials] :
         {std::make_pair("softmax:m=37,n=128", 2), std::make_pair("layer_norm:m=37,n=96", 2),
          std::make_pair("reduce_sum:m=37,n=64", 1),
          std::make_pair("global_avg_pool2d:n=1,c=5,h=3,w=32", 1),
          std::make_pair("global_avg_pool2d:n=1,c=5,h=7,w=7", 0),
          std::make_pair("softmax:m=37,n=100", 2), std::make_pair("softmax:m=5,n=197", 2),
          std::make_pair("softmax:m=37,n=50", 0)}) {
        SCOPED_TRACE(spec);
        const te::OpInstance op = te::make_op(spec);
        const State s = sched::default_schedule(op.compute, o);
        EXPECT_EQ(vector_partial_stages(s), partials) << sched::to_string(s);
        expect_lowers_and_matches(op.compute, s, o, 13);
    }
}

/// The extent of the loop of axis `axis` (iterators named "axis" or "axis.") in the register
/// tile of s:
/// inside the innermost reduce loop of a stage that reduces; 1 when it has none there.
int64_t register_tile_extent(const State& s, const std::string& axis) {
    int64_t extent = 1;
    for (const sched::Stage& st : s.stages) {
        bool inside = false;
        for (const sched::Iterator& it : st.iters) {
            inside = inside || (it.kind == sched::IterKind::Reduce && it.extent > 1);
            if (inside && (it.name == axis || it.name.rfind(axis + ".", 0) == 0) && it.extent > 1)
                extent = it.extent;
        }
    }
    return extent;
}

TEST(DefaultSchedule, WinogradTransformTilesReuseTheirLoads) {
    // The input transform's row stage computes alpha transformed rows a from the same image
    // rows: its register tile covers several of them (each loaded input vector feeds them all)
    // instead of re-reading the input once per row. The output transform's column stage
    // computes m output columns s from the same products: its tile covers several.
    for (const int64_t lanes : {8, 16}) {
        SCOPED_TRACE(lanes);
        const sched::DefaultScheduleOptions o = options(lanes);
        const te::OpInstance in =
            te::make_op("winograd_input:n=1,c=64,h=13,w=11,block=16,tile=4,pad=1");
        const State si = sched::default_schedule(in.compute, o);
        EXPECT_GE(register_tile_extent(si, "a"), 2) << sched::to_string(si);
        expect_lowers_and_matches(in.compute, si, o, 17);
        const te::OpInstance out = te::make_op(
            "winograd_output:n=1,k=64,h=13,w=11,block=" + std::to_string(lanes) + ",tile=4");
        const State so = sched::default_schedule(out.compute, o);
        EXPECT_GE(register_tile_extent(so, "s"), 2) << sched::to_string(so);
        expect_lowers_and_matches(out.compute, so, o, 19);
    }
}

TEST(DefaultSchedule, WinogradTransformsComputeTheirFirstPassPerTileRow) {
    // A transform in two passes computes its first pass one tile row at a time inside the
    // second pass's parallel loop (loop 0), not whole at the root (where it went to memory and
    // back): the input transform, also with an elementwise stage after it (as bf16 builds
    // cast it), and the output transform, also with an epilogue after it, on sizes whose tiles
    // do not divide the image. An input transform whose tile row's first pass exceeds 128 KB
    // (128 channels, 66 columns: 198 KB) computes it per transformed row instead (loop 1).
    for (const int64_t lanes : {8, 16}) {
        SCOPED_TRACE(lanes);
        const sched::DefaultScheduleOptions o = options(lanes);
        te::WinogradTile tile;
        tile.m = 4;
        tile.out_h = 13;
        tile.out_w = 11;
        tile.pad_top = tile.pad_left = 1;
        const int64_t tiles = tile.tiles_h() * tile.tiles_w();
        const te::Tensor x = te::placeholder({1, 5, 13, 11, 16}, ir::DataType::f32(), "x");
        const te::Tensor bt = te::placeholder({6, 6}, ir::DataType::f32(), "bt");
        const te::Tensor v = te::winograd_input_nchwc(x, bt, tile);
        const te::Tensor half = te::unary(
            v, [](te::Expr e) { return std::move(e) * te::Expr(0.5f); }, "half");
        te::WinogradTile wide = tile;
        wide.out_h = 5;
        wide.out_w = 61;
        const te::Tensor xw = te::placeholder({1, 8, 5, 61, 16}, ir::DataType::f32(), "x");
        const te::Tensor m = te::placeholder({36, tiles, 80}, ir::DataType::f32(), "m");
        const te::Tensor at = te::placeholder({4, 6}, ir::DataType::f32(), "at");
        const te::Tensor bias = te::placeholder({5, 16}, ir::DataType::f32(), "bias");
        const te::Tensor y = te::winograd_output_nchwc(m, at, bias, tile, 16);
        const te::Tensor relu = te::unary(
            y, [](te::Expr e) { return ir::max(std::move(e), te::Expr(0.0f)); }, "relu");
        const struct {
            te::Compute c;
            const char* first;
            int loop;
        } cases[] = {
            {te::make_compute({x, bt}, {v}), "winograd_input_rows", 0},
            {te::make_compute({x, bt}, {half}), "winograd_input_rows", 0},
            {te::make_compute({xw, bt}, {te::winograd_input_nchwc(xw, bt, wide)}),
             "winograd_input_rows", 1},
            {te::make_compute({m, at}, {te::winograd_output_nchwc(m, at, te::Tensor(), tile, 16)}),
             "winograd_output_cols", 0},
            {te::make_compute({m, at, bias}, {relu}), "winograd_output_cols", 0}};
        for (const auto& [c, first, loop] : cases) {
            SCOPED_TRACE(first);
            const State s = sched::default_schedule(c, o);
            const sched::Stage& p = s.stages[s.stage_id_of(first)];
            const int out_id = s.stage_id_of(c.outputs[0]);
            EXPECT_EQ(p.location.kind, sched::ComputeLocKind::At) << sched::to_string(s);
            EXPECT_EQ(p.location.stage, out_id) << sched::to_string(s);
            EXPECT_EQ(p.location.iter, loop) << sched::to_string(s);
            EXPECT_EQ(s.stages[out_id].iters[0].annotation, sched::IterAnnotation::Parallel)
                << sched::to_string(s);
            NumericsOptions nopts;
            nopts.jit_every = 1;
            EXPECT_EQ(
                check_numerics({s}, {sched::lower_state(s, "kernel")}, Reference(c, 29), nopts), 1);
        }
    }
}

TEST(DefaultSchedule, BlockedConvWeightsAreStoredInTheTilesReadOrder) {
    // The register tile of an NCHW16c 3x3 conv covers 2 output-channel blocks and reads its
    // filters [KB][CB][R][S][c][k] channel by channel, the window innermost: they are stored
    // [KB/2] then the channel dimensions (CB, c) in the tile's loop order, then [R][S][2][k],
    // one sequential stream per tile (resnet18's 7x7 convs: [KB/2][CB][c][R][S][2][k]).
    const sched::DefaultScheduleOptions o = options(16);
    const te::Tensor x = te::placeholder({1, 3, 7, 7, 16}, ir::DataType::f32(), "x");
    const te::Tensor w = te::placeholder({4, 3, 3, 3, 16, 16}, ir::DataType::f32(), "w");
    const te::Compute c =
        te::make_compute({x, w}, {te::conv2d_nchwc(x, w, te::Conv2dParams::make(1, 1, 1, 1))});
    sched::DefaultScheduleOptions ow = o;
    ow.weight_inputs = {1};
    const State s = sched::default_schedule(c, ow);
    const sched::Stage& ws = s.stages[s.stage_id_of("w")];
    ASSERT_EQ(ws.layout.order.size(), 7u) << sched::to_string(s);
    const std::vector<int> channels(ws.layout.order.begin() + 1, ws.layout.order.begin() + 3);
    EXPECT_TRUE(channels == (std::vector<int>{2, 5}) || channels == (std::vector<int>{5, 2}));
    EXPECT_EQ(ws.layout.order[0], 0);
    EXPECT_EQ(std::vector<int>(ws.layout.order.begin() + 3, ws.layout.order.end()),
              (std::vector<int>{3, 4, 1, 6}))
        << sched::to_string(s);
    EXPECT_EQ(ws.layout.factors, (std::vector<int64_t>{2, 1, 1, 1, 1, 1}));
    expect_lowers_and_matches(c, s, ow, 23);
    // Not a weight: the graph's layout stays.
    const State plain = sched::default_schedule(c, o);
    EXPECT_TRUE(plain.stages[plain.stage_id_of("w")].layout.is_identity());

    // The same filters stored in f16 and widened as read (an fp16 build): the rules look
    // through the widening stage (State::read_view), so the f16 weights get the same layout
    // and the tile the same shape.
    const te::Tensor h = te::placeholder({4, 3, 3, 3, 16, 16}, ir::DataType::f16(), "w");
    const te::Tensor widened = te::unary(
        h, [](te::Expr e) { return ir::cast(ir::DataType::f32(), std::move(e)); }, "widen");
    const te::Compute c16 = te::make_compute(
        {x, h}, {te::conv2d_nchwc(x, widened, te::Conv2dParams::make(1, 1, 1, 1))});
    const State s16 = sched::default_schedule(c16, ow);
    const int h_id = s16.stage_id_of(h);
    EXPECT_EQ(s16.read_view(h_id), s16.stage_id_of("widen"));
    EXPECT_EQ(s16.read_view(s16.stage_id_of(x)), s16.stage_id_of(x)) << "not widened";
    EXPECT_EQ(s16.stages[h_id].layout.order, ws.layout.order) << sched::to_string(s16);
    EXPECT_EQ(s16.stages[h_id].layout.factors, ws.layout.factors);
    EXPECT_EQ(register_tile_extent(s16, "k"), register_tile_extent(s, "k"));
    expect_lowers_and_matches(c16, s16, ow, 29);
}

/// The name of the parallel loop of the root stage that reduces or holds the stage that
/// does ("" when none): its fused loops, outermost first.
std::string parallel_loop(const State& s) {
    for (const sched::Stage& st : s.stages)
        if (st.location.kind == sched::ComputeLocKind::Root && !st.is_input())
            for (const sched::Iterator& it : st.iters)
                if (it.annotation == sched::IterAnnotation::Parallel &&
                    (st.has_reduce() || !s.attached_stages(s.stage_id_of(st.tensor)).empty()))
                    return it.name;
    return "";
}

TEST(DefaultSchedule, ThreadsSplitTheRowsWhenActivationsOutweighTheWeights) {
    // Each thread runs one contiguous chunk of the parallel loop. A 1x1 conv on a large image
    // with small filters splits its rows (oh: axis i2 of the epilogue) among the cores,
    // outermost, so that each thread reads the rows the previous task's thread wrote; the
    // channel blocks stay inside each chunk. One core, or filters bigger than the image:
    // the channel blocks (i1) stay outermost.
    sched::DefaultScheduleOptions o = options(8);
    o.num_cores = 2;
    o.weight_inputs = {1};
    const te::Tensor x = te::placeholder({1, 4, 30, 29, 8}, ir::DataType::f32(), "x");
    const te::Tensor w = te::placeholder({4, 4, 1, 1, 8, 8}, ir::DataType::f32(), "w");
    const te::Compute conv = te::make_compute(
        {x, w}, {te::relu(te::conv2d_nchwc(x, w, te::Conv2dParams::make(1, 0, 1, 1)))});
    const State rows = sched::default_schedule(conv, o);
    EXPECT_EQ(parallel_loop(rows).rfind("i2.0.0.", 0), 0u) << sched::to_string(rows);
    expect_lowers_and_matches(conv, rows, o, 29);
    sched::DefaultScheduleOptions one = o;
    one.num_cores = 1;
    EXPECT_EQ(sched::default_schedule(conv, one).steps.size() + 2, rows.steps.size());

    const te::Tensor small = te::placeholder({1, 4, 6, 6, 8}, ir::DataType::f32(), "x");
    const te::Tensor big = te::placeholder({8, 4, 3, 3, 8, 8}, ir::DataType::f32(), "w");
    const te::Compute heavy = te::make_compute(
        {small, big}, {te::conv2d_nchwc(small, big, te::Conv2dParams::make(1, 1, 1, 1))});
    const State blocks = sched::default_schedule(heavy, o);
    EXPECT_EQ(parallel_loop(blocks).rfind("i2.0.0.", 0), std::string::npos)
        << sched::to_string(blocks);

    // A max pool over 16 rows splits them; over 15 (no even split) and without weights, its
    // channel blocks stay outside the rows (each block's window rows stay in L1 from one
    // pixel to the next).
    for (int64_t rows_in : {16, 15}) {
        const te::Tensor px = te::placeholder({1, 3, rows_in, 15, 8}, ir::DataType::f32(), "x");
        const te::Compute pool =
            te::make_compute({px}, {te::max_pool2d_nchwc(px, te::Pool2dParams::make(3, 1, 1))});
        const State ps = sched::default_schedule(pool, o);
        EXPECT_EQ(parallel_loop(ps).rfind(rows_in == 16 ? "i2." : "i0.i1.i2", 0), 0u)
            << sched::to_string(ps);
        expect_lowers_and_matches(pool, ps, o, 31);
    }
}

TEST(DefaultSchedule, IntegerConvsSplitTheirRowsWhateverTheirWeights) {
    // An 8-bit conv's output goes to a pack that gathers 4 channel blocks into each word: split
    // by channel blocks, each pack would read half its bytes from the other core's cache. Its
    // rows go outermost even where none of its row loops divides among the cores and its
    // weights (9216 words) outgrow L1; the f32 conv of the same shape keeps its channel
    // blocks (kb) outermost there.
    sched::DefaultScheduleOptions o = options(16);
    o.num_cores = 2;
    o.weight_inputs = {1};
    for (const ir::DataType dtype : {ir::DataType::i32(), ir::DataType::f32()}) {
        SCOPED_TRACE(ir::to_string(dtype));
        const te::Tensor x = te::placeholder({1, 1, 23, 23, 16}, dtype, "x");
        const te::Tensor w = te::placeholder({4, 1, 3, 3, 16, 16}, dtype, "w");
        te::Tensor y;
        if (dtype.is_int()) {
            const te::Tensor offset = te::placeholder({4, 16}, ir::DataType::i32(), "offset");
            const te::Tensor scale = te::placeholder({4, 16}, ir::DataType::f32(), "scale");
            y = te::qconv2d_nchwc(x, w, offset, scale, te::Conv2dParams::make(1, 0));
            const te::Compute c = te::make_compute({x, w, offset, scale}, {y});
            const State s = sched::default_schedule(c, o);
            EXPECT_EQ(parallel_loop(s).rfind("oh.", 0), 0u) << sched::to_string(s);
            check_structure(c, s, o);
        } else {
            const te::Compute c =
                te::make_compute({x, w}, {te::conv2d_nchwc(x, w, te::Conv2dParams::make(1, 0))});
            const State s = sched::default_schedule(c, o);
            EXPECT_EQ(parallel_loop(s).rfind("n.0.kb.0.", 0), 0u) << sched::to_string(s);
        }
    }
}

TEST(DefaultSchedule, WideVectorsLowerAndMatch) {
    // AVX-512 widths: a two-vector tile of 32 along k.
    const te::OpInstance op = te::make_op("conv2d:n=1,c=3,h=13,w=7,k=37,r=3,pad=1,bias=1,relu=1");
    sched::DefaultScheduleOptions o = options(16);
    o.weight_inputs = op.weight_inputs;
    const State s = sched::default_schedule(op.compute, o);
    ir::LoweredFunc f = check_structure(op.compute, s, o);
    ASSERT_TRUE(f.body.defined());
    NumericsOptions nopts;
    nopts.jit_every = 1;
    EXPECT_EQ(check_numerics({s}, {f}, Reference(op.compute, 3), nopts), 1);
}

TEST(DefaultSchedule, OtherWidthsAndCoreCountsLowerAndReplay) {
    // Narrow vectors (4), AVX-512 (16), one core and many cores: every registry case still
    // lowers, replays and is deterministic (numerics are covered above at 8 and 16 lanes).
    for (const auto& [lanes, cores] : {std::make_pair(4, 1), std::make_pair(16, 64)}) {
        for (const std::string& spec : registry_specs()) {
            SCOPED_TRACE(spec + " lanes " + std::to_string(lanes) + " cores " +
                         std::to_string(cores));
            const te::OpInstance op = te::make_op(spec);
            sched::DefaultScheduleOptions o = options(lanes);
            o.num_cores = cores;
            o.weight_inputs = op.weight_inputs;
            check_structure(op.compute, sched::default_schedule(op.compute, o), o);
        }
    }
}

// ---- Model tasks -----------------------------------------------------------------------------

/// Host data of one lowered parameter (any dtype), 64-byte aligned.
struct ParamData {
    std::vector<uint8_t> bytes;
    ir::DataType dtype;
    int64_t count = 0;
};

ParamData random_param(const ir::Tensor& t, Rng& rng) {
    ParamData p;
    p.dtype = t.dtype();
    p.count = 1;
    for (int64_t d : t.shape())
        p.count *= d;
    p.bytes.assign(static_cast<size_t>(p.count * p.dtype.bytes()), 0);
    for (int64_t i = 0; i < p.count; ++i) {
        uint8_t* at = p.bytes.data() + i * p.dtype.bytes();
        if (p.dtype == ir::DataType::f32()) {
            const float v = rng.uniform_float(-1, 1);
            std::memcpy(at, &v, 4);
        } else if (p.dtype == ir::DataType::i64()) {
            const int64_t v = rng.uniform_int(0, 1); // valid as an index into any axis
            std::memcpy(at, &v, 8);
        } else if (p.dtype == ir::DataType::i32()) {
            const int32_t v = static_cast<int32_t>(rng.uniform_int(0, 1));
            std::memcpy(at, &v, 4);
        } else {
            *at = static_cast<uint8_t>(rng.uniform_int(0, 1));
        }
    }
    return p;
}

double value_at(const std::vector<uint8_t>& bytes, ir::DataType t, int64_t i) {
    const uint8_t* at = bytes.data() + i * t.bytes();
    if (t == ir::DataType::f32()) {
        float v;
        std::memcpy(&v, at, 4);
        return v;
    }
    if (t == ir::DataType::i64()) {
        int64_t v;
        std::memcpy(&v, at, 8);
        return static_cast<double>(v);
    }
    if (t == ir::DataType::i32()) {
        int32_t v;
        std::memcpy(&v, at, 4);
        return v;
    }
    return *at;
}

/// Runs kernel `k` of `jit` on the inputs (packed as `s` stores them when given) and returns
/// the output buffers.
std::vector<std::vector<uint8_t>> run_jit(backend::JitModule& jit, const std::string& name,
                                          const ir::LoweredFunc& f, const te::Compute& c,
                                          const std::vector<ParamData>& inputs, const State* s) {
    std::vector<std::vector<uint8_t>> bufs;
    for (size_t i = 0; i < f.params.size(); ++i) {
        const ir::Buffer& b = f.params[i];
        const size_t bytes = static_cast<size_t>(b->num_elements() * b.dtype().bytes());
        if (i < c.inputs.size()) {
            const sched::LayoutTransform layout =
                s ? s->stages[s->stage_id_of(c.inputs[i])].layout : sched::LayoutTransform{};
            std::vector<uint8_t> data(bytes + 64, 0);
            if (layout.is_identity())
                std::memcpy(data.data(), inputs[i].bytes.data(), inputs[i].bytes.size());
            else
                sched::pack_layout(layout, c.inputs[i].shape(), inputs[i].dtype.bytes(),
                                   inputs[i].bytes.data(), data.data());
            bufs.push_back(std::move(data));
        } else {
            bufs.emplace_back(bytes + 64, uint8_t{0x5a});
        }
    }
    std::vector<void*> args;
    for (auto& b : bufs)
        args.push_back(b.data());
    jit.get(name)(args.data());
    return std::vector<std::vector<uint8_t>>(bufs.begin() + static_cast<long>(c.inputs.size()),
                                             bufs.end());
}

class DefaultScheduleModelTest : public ::testing::TestWithParam<const char*> {};

TEST_P(DefaultScheduleModelTest, EveryTaskLowersReplaysAndMatchesTheNaiveNest) {
    const std::string name = GetParam();
    const std::string path = kModels + "/" + name + "/model.onnx";
    if (!fs::exists(path))
        GTEST_SKIP() << "model missing: " << path;
    graph::Graph g = graph::import_onnx(path);
    graph::PipelineOptions po;
    po.level = 3;
    graph::optimize(g, po);
    const std::vector<graph::Task> tasks = graph::extract_tasks(g, graph::fuse_ops(g));
    ASSERT_FALSE(tasks.empty());

    std::vector<State> states;
    std::vector<ir::LoweredFunc> batch;
    for (const graph::Task& task : tasks) {
        SCOPED_TRACE(task.pattern);
        const te::Compute& c = task.compute.compute;
        const sched::DefaultScheduleOptions o = options();
        const State s = sched::default_schedule(c, o);
        const ir::LoweredFunc f = check_structure(c, s, o);
        if (!f.body.defined())
            continue;
        const size_t i = states.size();
        states.push_back(s);
        batch.push_back(lower::prepare_for_codegen(f));
        batch.back().name = "s" + std::to_string(i);
        batch.push_back(lower::prepare_for_codegen(lower::lower_default(c, "naive")));
        batch.back().name = "n" + std::to_string(i);
    }
    backend::CompileOptions copts;
    copts.opt_level = 1;
    auto jit = backend::JitModule::compile(batch, copts);
    for (size_t i = 0; i < states.size(); ++i) {
        const te::Compute& c = states[i].compute;
        SCOPED_TRACE(sched::steps_to_json(states[i].steps));
        Rng rng(100 + i);
        std::vector<ParamData> inputs;
        for (const ir::Tensor& t : c.inputs)
            inputs.push_back(random_param(t, rng));
        const auto got =
            run_jit(*jit, "s" + std::to_string(i), batch[2 * i], c, inputs, &states[i]);
        const auto want =
            run_jit(*jit, "n" + std::to_string(i), batch[2 * i + 1], c, inputs, nullptr);
        ASSERT_EQ(got.size(), c.outputs.size());
        for (size_t o = 0; o < c.outputs.size(); ++o) {
            const ir::DataType t = c.outputs[o].dtype();
            int64_t n = 1;
            for (int64_t d : c.outputs[o].shape())
                n *= d;
            int bad = 0;
            for (int64_t k = 0; k < n && bad < 3; ++k) {
                const double a = value_at(got[o], t, k), b = value_at(want[o], t, k);
                const bool same = (std::isnan(a) && std::isnan(b)) ||
                                  std::fabs(a - b) <= 1e-4 * std::max(1.0, std::fabs(b));
                if (!same && ++bad)
                    ADD_FAILURE() << "output " << o << " element " << k << ": default " << a
                                  << ", naive " << b;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(SharedModels, DefaultScheduleModelTest,
                         ::testing::Values("conv_bn_relu", "small_cnn", "mlp", "resnet18",
                                           "bert_emb_op13"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                             return std::string(info.param);
                         });

} // namespace
} // namespace tessera::testing
