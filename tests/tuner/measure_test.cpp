// The local measurer end to end: real builds, a real worker process (the built tessera
// executable), and candidates that crash, hang, compute wrong results or fail to build.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <future>
#include <limits>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/sanitizers.h"
#include "tessera/backends/llvm.h"
#include "tessera/ir/stmt.h"
#include "tessera/lower/lower_default.h"
#include "tessera/schedule/sampling.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"
#include "tessera/support/error.h"
#include "tessera/te/op_library.h"
#include "tessera/te/workload_key.h"
#include "tessera/tuner/measure.h"
#include "tessera/tuner/runner.h"

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tessera::tune {
namespace {

namespace fs = std::filesystem;
using ir::DataType;
using ir::Expr;
using ir::LoweredFunc;
using ir::Stmt;
using te::Tensor;

te::Compute matmul_compute(int64_t m, int64_t k, int64_t n) {
    Tensor a = te::placeholder({m, k}, DataType::f32(), "A");
    Tensor b = te::placeholder({k, n}, DataType::f32(), "B");
    return te::make_compute({a, b}, {te::matmul(a, b)});
}

/// Small, fast settings: one kernel thread, two timed runs, a 1 s hang limit.
MeasureOptions test_options() {
    MeasureOptions o;
    o.worker_command = {TESSERA_BINARY, "__measure-worker"};
    o.build_threads = 2;
    o.run_timeout_secs = 1;
    o.kernel_threads = 1;
    o.warmup = 1;
    o.min_repeats = 2;
    o.max_repeats = 3;
    o.min_repeat_secs = 0;
    o.slow_factor = 0; // every candidate gets its full repeats (SlowCandidates tests the rule)
    o.seed = 11;
    return o;
}

/// `n` complete schedules of c sampled from its sketches with a fixed seed.
std::vector<sched::State> sample_states(const te::Compute& c, size_t n, uint64_t seed) {
    const std::vector<sched::State> sketches = sched::generate_sketches(c);
    Rng rng(seed);
    std::vector<sched::State> states;
    for (size_t attempt = 0; states.size() < n && attempt < 100 * n; ++attempt) {
        try {
            states.push_back(sched::sample_initial_state(sketches[attempt % sketches.size()], rng));
        } catch (const ScheduleError&) {
        }
    }
    EXPECT_EQ(states.size(), n);
    return states;
}

/// The default loop nest, correct (the reference itself, but built and run as a candidate).
MeasureCandidate default_candidate(const te::Compute& c) {
    return {[c](const std::string& name) { return lower::lower_default(c, name); }, {}};
}

/// The default loop nest followed by `extra`, a statement over the same parameters.
MeasureCandidate with_extra(const te::Compute& c, std::function<Stmt(const LoweredFunc&)> extra) {
    return {[c, extra](const std::string& name) {
                LoweredFunc f = lower::lower_default(c, name);
                f.body = ir::Seq::make({f.body, extra(f)});
                return f;
            },
            {}};
}

Expr i64(int64_t v) { return ir::IntImm::make(DataType::i64(), v); }
Expr f32(double v) { return ir::FloatImm::make(DataType::f32(), v); }

/// Writes 1.0 about 4 TiB past the output: SIGSEGV in the worker.
MeasureCandidate segfaulting_candidate(const te::Compute& c) {
    return with_extra(c, [](const LoweredFunc& f) {
        return ir::Store::make(f.params.back(), f32(1), i64(int64_t(1) << 40));
    });
}

/// A float recurrence over 2^40 iterations (no closed form): runs for far longer than 1 s.
MeasureCandidate hanging_candidate(const te::Compute& c) {
    return with_extra(c, [](const LoweredFunc& f) {
        const ir::Buffer& out = f.params.back();
        ir::Var i("i");
        Stmt body = ir::Store::make(
            out, ir::Add::make(ir::Mul::make(ir::Load::make(out, i64(0)), f32(1.0000001)), f32(1)),
            i64(0));
        return ir::For::make(i, i64(0), i64(int64_t(1) << 40), ir::ForKind::Serial, body);
    });
}

/// Correct everywhere but at flat output index `index`, which is off by 1.
MeasureCandidate off_by_one_at(const te::Compute& c, int64_t index) {
    return with_extra(c, [index](const LoweredFunc& f) {
        const ir::Buffer& out = f.params.back();
        return ir::Store::make(out, ir::Add::make(ir::Load::make(out, i64(index)), f32(1)),
                               i64(index));
    });
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

void expect_ok(const MeasureResult& r, const MeasureOptions& o) {
    EXPECT_EQ(r.error, MeasureError::Ok) << r.error_message;
    EXPECT_GE(r.run_secs.size(), static_cast<size_t>(o.min_repeats));
    EXPECT_LE(r.run_secs.size(), static_cast<size_t>(o.max_repeats));
    for (double t : r.run_secs)
        EXPECT_GT(t, 0);
    EXPECT_LE(r.max_rel_error, 1e-4);
    EXPECT_GT(r.build_secs, 0);
}

TEST(Measure, SampledMatmulSchedulesAreCorrectAndTimed) {
    const te::Compute c = matmul_compute(7, 13, 127);
    MeasureOptions o = test_options();
    o.kernel_threads = 2; // parallel loops run on the worker's thread pool
    LocalMeasurer m(o);
    const std::vector<sched::State> states = sample_states(c, 4, 5);
    const std::vector<MeasureResult> rs = m.measure(c, states);
    ASSERT_EQ(rs.size(), states.size());
    for (const MeasureResult& r : rs)
        expect_ok(r, o);
    EXPECT_EQ(m.workers_started(), 1);

    // A second batch of another task reuses the worker; the first batch's libraries are gone,
    // the latest batch's kept for the next call.
    const te::Compute c2 = matmul_compute(1, 127, 13);
    const std::vector<sched::State> states2 = sample_states(c2, 2, 6);
    for (const MeasureResult& r : m.measure(c2, states2))
        expect_ok(r, o);
    EXPECT_EQ(m.workers_started(), 1);
    auto libraries = [&] {
        int n = 0;
        for (const auto& e : fs::directory_iterator(m.work_dir()))
            n += e.path().extension() == ".so";
        return n;
    };
    EXPECT_EQ(libraries(), 2);
    // A schedule measured again at once runs the library already built, checked and timed as
    // before; then only that one is kept.
    const std::vector<MeasureResult> again = m.measure(c2, {states2[1]});
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].error, MeasureError::Ok) << again[0].error_message;
    EXPECT_GE(again[0].run_secs.size(), static_cast<size_t>(o.min_repeats));
    EXPECT_EQ(again[0].build_secs, 0);
    EXPECT_EQ(libraries(), 1);
    // Another task's call drops it.
    for (const MeasureResult& r : m.measure(c, {states[0]}))
        EXPECT_GT(r.build_secs, 0);
    EXPECT_EQ(libraries(), 1);
}

TEST(Measure, SlowCandidatesAreTimedOnce) {
    const te::Compute c = matmul_compute(7, 13, 127);
    MeasureOptions o = test_options();
    o.min_repeats = 3;
    o.max_repeats = 3;
    o.slow_factor = 4;
    LocalMeasurer m(o);
    const std::vector<sched::State> states = sample_states(c, 2, 5);
    // Nothing known yet: full repeats.
    for (const MeasureResult& r : m.measure(c, {states[0]}))
        expect_ok(r, o);
    // A best far below anything real: every candidate is "slow", one timed run each, and it
    // is still checked (an Ok result with a small error).
    m.note_best_secs(te::workload_key(c), 1e-12);
    for (const MeasureResult& r : m.measure(c, states)) {
        EXPECT_EQ(r.error, MeasureError::Ok) << r.error_message;
        EXPECT_EQ(r.run_secs.size(), 1u);
        EXPECT_LE(r.max_rel_error, 1e-4);
    }
    // Another task is unaffected by this task's best.
    const te::Compute c2 = matmul_compute(13, 7, 1);
    for (const MeasureResult& r : m.measure(c2, sample_states(c2, 1, 6)))
        expect_ok(r, o);
}

TEST(Measure, PackedInputLayoutIsMeasuredOnPackedData) {
    const te::Compute c = matmul_compute(7, 13, 127);
    sched::State s = sched::make_initial_state(c);
    // B[13][127] stored as panels [8][13][16] (127 is not a multiple of 16: padded).
    sched::transform_layout(s, 1, sched::LayoutTransform{{1, 16}, {1, 0, 2}});
    const MeasureOptions o = test_options();
    LocalMeasurer m(o);
    const std::vector<MeasureResult> rs = m.measure(c, {s, sched::make_initial_state(c)});
    ASSERT_EQ(rs.size(), 2u);
    expect_ok(rs[0], o);
    expect_ok(rs[1], o);
}

TEST(Measure, CandidatesAreTimedRunForRunBesideTheBaseline) {
    // The baseline stores B in panels, the candidates densely: each gets its own inputs, the
    // same outputs. Run both ways: files read by path, and streamed to a worker that may read
    // nothing else (the baseline's library and packed input are sent once).
    te::Compute c = matmul_compute(7, 13, 127);
    c.weight_inputs = {1};
    sched::State baseline = sched::make_initial_state(c);
    sched::transform_layout(baseline, 1, sched::LayoutTransform{{1, 16}, {1, 0, 2}});
    for (bool streamed : {false, true}) {
        MeasureOptions o = test_options();
        o.cold_weights = true; // the baseline's weights are evicted as the candidate's are
        if (streamed) {
            o.worker_command = {TESSERA_BINARY, "__measure-worker", "--streamed-only"};
            o.stream_files = true;
        }
        LocalMeasurer m(o);
        const std::vector<sched::State> states = sample_states(c, 3, 7);
        // No baseline yet: timed alone.
        for (const MeasureResult& r : m.measure(c, {states[0]})) {
            expect_ok(r, o);
            EXPECT_TRUE(r.baseline_run_secs.empty());
        }
        m.set_baseline(c, baseline);
        // The baseline is built once, kept for both batches; the libraries of the latest call
        // run again (states[0] of the call above, all of the first batch in the second).
        for (int batch = 0; batch < 2; ++batch) {
            const std::vector<MeasureResult> rs = m.measure(c, states);
            for (size_t i = 0; i < rs.size(); ++i) {
                const MeasureResult& r = rs[i];
                EXPECT_EQ(r.error, MeasureError::Ok) << r.error_message;
                EXPECT_EQ(r.build_secs > 0, batch == 0 && i > 0) << "batch " << batch << " " << i;
                EXPECT_GE(r.run_secs.size(), static_cast<size_t>(o.min_repeats));
                EXPECT_EQ(r.baseline_run_secs.size(), r.run_secs.size());
                for (double secs : r.baseline_run_secs)
                    EXPECT_GT(secs, 0);
            }
        }
        // Another task has no baseline.
        const te::Compute c2 = matmul_compute(13, 7, 1);
        for (const MeasureResult& r : m.measure(c2, sample_states(c2, 1, 6)))
            EXPECT_TRUE(r.baseline_run_secs.empty());
        // A baseline whose kernel does not fit the task (another task's schedule) leaves
        // candidates timed alone.
        m.set_baseline(c, sample_states(c2, 1, 6).at(0));
        for (const MeasureResult& r : m.measure(c, {states[1]})) {
            expect_ok(r, o);
            EXPECT_TRUE(r.baseline_run_secs.empty());
        }
        EXPECT_EQ(m.workers_started(), 1) << (streamed ? "streamed" : "by path");
    }
}

/// The default loop nest run `times` times over: correct, `times` times as slow.
MeasureCandidate repeated_default(const te::Compute& c, int times) {
    return {[c, times](const std::string& name) {
                LoweredFunc f = lower::lower_default(c, name);
                f.body = ir::For::make(ir::Var("repeat"), i64(0), i64(times), ir::ForKind::Serial,
                                       f.body);
                return f;
            },
            {}};
}

/// Options whose timed pairs (min_repeats 3) end at max_repeats or by one of the two early
/// ends, behind_factor and ratio_precision, never by min_repeat_secs.
MeasureOptions early_end_options(int max_repeats, double behind_factor, double ratio_precision) {
    MeasureOptions o = test_options();
    o.min_repeats = 3;
    o.max_repeats = max_repeats;
    o.min_repeat_secs = 1e9;
    o.behind_factor = behind_factor;
    o.ratio_precision = ratio_precision;
    return o;
}

// Beside a baseline, a candidate clearly behind it (here 16 times as slow) stops being timed
// after min_repeats pairs; with the cut off it gets its full repeats.
TEST(Measure, CandidatesClearlyBehindTheBaselineStopAfterTheFirstPairs) {
    const te::Compute c = matmul_compute(7, 13, 127);
    for (double behind : {1.2, 0.0}) {
        LocalMeasurer m(early_end_options(9, behind, 0));
        m.set_baseline(c, sched::make_initial_state(c));
        const std::vector<MeasureResult> rs = m.measure_candidates(c, {repeated_default(c, 16)});
        ASSERT_EQ(rs.size(), 1u);
        EXPECT_EQ(rs[0].error, MeasureError::Ok) << rs[0].error_message;
        EXPECT_EQ(rs[0].run_secs.size(), behind > 0 ? 3u : 9u) << "behind_factor " << behind;
        EXPECT_EQ(rs[0].baseline_run_secs.size(), rs[0].run_secs.size());
        EXPECT_DOUBLE_EQ(nlohmann::json::parse(m.settings_json()).at("behind_factor").get<double>(),
                         behind);
    }
}

// Beside a baseline, the timed pairs end once the median of their ratios is known to
// ratio_precision (after 8 pairs at least): here a loose one, which the baseline's own schedule
// reaches at once; without it the candidate gets max_repeats.
TEST(Measure, TimedPairsEndOnceTheirRatioIsKnownPreciselyEnough) {
    const te::Compute c = matmul_compute(7, 13, 127);
    for (double precision : {0.5, 0.0}) {
        LocalMeasurer m(early_end_options(12, 0, precision));
        m.set_baseline(c, sched::make_initial_state(c));
        const std::vector<MeasureResult> rs = m.measure(c, {sched::make_initial_state(c)});
        ASSERT_EQ(rs.size(), 1u);
        EXPECT_EQ(rs[0].error, MeasureError::Ok) << rs[0].error_message;
        EXPECT_EQ(rs[0].run_secs.size(), precision > 0 ? 8u : 12u) << "precision " << precision;
        EXPECT_DOUBLE_EQ(
            nlohmann::json::parse(m.settings_json()).at("ratio_precision").get<double>(),
            precision);
    }
}

TEST(Measure, ColdWeightsAreEvictedAndStillChecked) {
    // B a weight (packed into panels too): evicted before every timed run, the results stay
    // checked and timed; a weightless task measures as before.
    te::Compute c = matmul_compute(7, 13, 127);
    c.weight_inputs = {1};
    sched::State s = sched::make_initial_state(c);
    sched::transform_layout(s, 1, sched::LayoutTransform{{1, 16}, {1, 0, 2}});
    MeasureOptions o = test_options();
    o.cold_weights = true;
    LocalMeasurer m(o);
    const std::vector<MeasureResult> rs = m.measure(c, {s, sched::make_initial_state(c)});
    ASSERT_EQ(rs.size(), 2u);
    expect_ok(rs[0], o);
    expect_ok(rs[1], o);
    const te::Compute plain = matmul_compute(7, 13, 127);
    expect_ok(m.measure(plain, {sched::make_initial_state(plain)})[0], o);
}

TEST(Measure, LoweringFailuresAreInstantiationErrors) {
    const te::Compute c = matmul_compute(7, 13, 127);
    sched::State wide = sched::make_initial_state(c);
    sched::vectorize(wide, 2, 1); // j has 127 iterations: wider than 64 lanes
    LocalMeasurer m(test_options());
    std::vector<MeasureCandidate> cands = {
        candidate_from_state(wide),
        {[](const std::string&) -> LoweredFunc { throw ScheduleError("no such loop"); }, {}},
        default_candidate(c)};
    const std::vector<MeasureResult> rs = m.measure_candidates(c, cands);
    ASSERT_EQ(rs.size(), 3u);
    EXPECT_EQ(rs[0].error, MeasureError::Instantiation) << rs[0].error_message;
    EXPECT_FALSE(rs[0].error_message.empty());
    EXPECT_EQ(rs[1].error, MeasureError::Instantiation);
    EXPECT_EQ(rs[1].error_message, "no such loop");
    EXPECT_EQ(rs[2].error, MeasureError::Ok) << rs[2].error_message;
}

TEST(Measure, InvalidLoopProgramIsCompileError) {
    const te::Compute c = matmul_compute(7, 13, 127);
    // A free variable: the verifier in prepare_for_codegen rejects it.
    MeasureCandidate bad = with_extra(c, [](const LoweredFunc& f) {
        return ir::Store::make(f.params.back(), f32(2), ir::Var("unbound"));
    });
    LocalMeasurer m(test_options());
    const std::vector<MeasureResult> rs = m.measure_candidates(c, {bad, default_candidate(c)});
    EXPECT_EQ(rs[0].error, MeasureError::CompileHost) << rs[0].error_message;
    EXPECT_FALSE(rs[0].error_message.empty());
    EXPECT_EQ(rs[1].error, MeasureError::Ok) << rs[1].error_message;
}

TEST(Measure, CrashHangAndWrongAnswerDoNotStopTheBatch) {
    const te::Compute c = matmul_compute(7, 13, 127);
    const MeasureOptions o = test_options();
    LocalMeasurer m(o);
    const std::vector<MeasureCandidate> cands = {segfaulting_candidate(c), default_candidate(c),
                                                 hanging_candidate(c),     default_candidate(c),
                                                 off_by_one_at(c, 5),      default_candidate(c)};
    const std::vector<MeasureResult> rs = m.measure_candidates(c, cands);
    ASSERT_EQ(rs.size(), cands.size());

    EXPECT_EQ(rs[0].error, MeasureError::RuntimeDevice) << rs[0].error_message;
    EXPECT_TRUE(contains(rs[0].error_message, tessera::testing::segfault_death()))
        << rs[0].error_message;
    EXPECT_TRUE(rs[0].run_secs.empty());
    expect_ok(rs[1], o);

    EXPECT_EQ(rs[2].error, MeasureError::RunTimeout) << rs[2].error_message;
    EXPECT_TRUE(contains(rs[2].error_message, "time limit")) << rs[2].error_message;
    expect_ok(rs[3], o);

    EXPECT_EQ(rs[4].error, MeasureError::WrongAnswer) << rs[4].error_message;
    EXPECT_GT(rs[4].max_rel_error, o.tolerance);
    EXPECT_TRUE(contains(rs[4].error_message, "element 5")) << rs[4].error_message;
    expect_ok(rs[5], o);

    // One worker at first, one after the crash, one after the hang; a wrong answer keeps it.
    EXPECT_EQ(m.workers_started(), 3);
}

// A worker command runs the candidates elsewhere: here the aarch64 worker under qemu-user gets
// each cross-compiled candidate and its data through the connection, checks it against this
// machine's reference and times it, and a crash or a wrong answer there is the same error
// record as here.
TEST(Measure, AnAarch64WorkerUnderQemuChecksAndTimesCrossBuiltCandidates) {
    const std::string worker = TESSERA_MEASURE_WORKER_AARCH64;
    const bool have_qemu = fs::exists("/usr/bin/qemu-aarch64") &&
                           fs::exists("/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1");
    if (worker.empty() || !have_qemu)
        GTEST_SKIP() << "needs qemu-user and the aarch64 cross libraries (scripts/setup.sh), "
                        "present when tessera was configured";
    const te::Compute c = matmul_compute(7, 13, 127);
    MeasureOptions o = test_options();
    // Only what the tuner sends through the connection: no folder is shared with it.
    o.worker_command = {"/usr/bin/qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", worker,
                        "--streamed-only"};
    o.stream_files = true;
    o.compile = backend::compile_options_for(
        parse_target("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1"));
    o.run_timeout_secs = 20; // emulated
    LocalMeasurer m(o);
    std::vector<MeasureCandidate> cands = {default_candidate(c), off_by_one_at(c, 5),
                                           segfaulting_candidate(c)};
    for (const sched::State& s : sample_states(c, 2, 5))
        cands.push_back(candidate_from_state(s));
    const std::vector<MeasureResult> rs = m.measure_candidates(c, cands);
    ASSERT_EQ(rs.size(), cands.size());
    expect_ok(rs[0], o);
    EXPECT_EQ(rs[1].error, MeasureError::WrongAnswer) << rs[1].error_message;
    EXPECT_TRUE(contains(rs[1].error_message, "element 5")) << rs[1].error_message;
    EXPECT_EQ(rs[2].error, MeasureError::RuntimeDevice) << rs[2].error_message;
    expect_ok(rs[3], o);
    expect_ok(rs[4], o);

    // The same worker without streaming: it may read nothing by path.
    o.stream_files = false;
    LocalMeasurer by_path(o);
    const MeasureResult r = by_path.measure_candidates(c, {default_candidate(c)}).at(0);
    EXPECT_EQ(r.error, MeasureError::Unknown);
    EXPECT_TRUE(contains(r.error_message, "was not sent to this worker")) << r.error_message;
}

TEST(Measure, InputsAreReadOnlyInTheWorker) {
    // A kernel that writes into its input dies there; the next candidate still sees the
    // original data (and is correct).
    const te::Compute c = matmul_compute(7, 13, 127);
    MeasureCandidate writes_input = with_extra(
        c, [](const LoweredFunc& f) { return ir::Store::make(f.params[0], f32(5), i64(3)); });
    LocalMeasurer m(test_options());
    const std::vector<MeasureResult> rs =
        m.measure_candidates(c, {writes_input, default_candidate(c)});
    EXPECT_EQ(rs[0].error, MeasureError::RuntimeDevice) << rs[0].error_message;
    EXPECT_EQ(rs[1].error, MeasureError::Ok) << rs[1].error_message;
}

TEST(Measure, EveryOutputElementIsCompared) {
    // Only the last of 7 * 127 elements is wrong: a sampled check would likely miss it.
    const te::Compute c = matmul_compute(7, 13, 127);
    LocalMeasurer m(test_options());
    const std::vector<MeasureResult> rs =
        m.measure_candidates(c, {off_by_one_at(c, 7 * 127 - 1), off_by_one_at(c, 0)});
    for (const MeasureResult& r : rs) {
        EXPECT_EQ(r.error, MeasureError::WrongAnswer) << r.error_message;
        EXPECT_TRUE(r.run_secs.empty());
    }
    EXPECT_TRUE(contains(rs[0].error_message, "element 888")) << rs[0].error_message;
}

TEST(Measure, SlowBuildTimesOutWithoutBlockingTheBatch) {
    const te::Compute c = matmul_compute(7, 13, 127);
    MeasureOptions o = test_options();
    o.build_threads = 1; // the good candidate can only build once the slow one gave up its slot
    o.build_timeout_secs = 1.5;
    // The slow build waits until the batch is over (at most 30 s, which would mean the batch
    // waited for it).
    auto release = std::make_shared<std::promise<void>>();
    std::shared_future<void> released = release->get_future().share();
    auto waited_out = std::make_shared<std::atomic<bool>>(false);
    MeasureCandidate slow = {[c, released, waited_out](const std::string& name) {
                                 if (released.wait_for(std::chrono::seconds(30)) !=
                                     std::future_status::ready)
                                     *waited_out = true;
                                 return lower::lower_default(c, name);
                             },
                             {}};
    {
        LocalMeasurer m(o);
        const std::vector<MeasureResult> rs = m.measure_candidates(c, {slow, default_candidate(c)});
        release->set_value();
        EXPECT_EQ(rs[0].error, MeasureError::BuildTimeout) << rs[0].error_message;
        EXPECT_GE(rs[0].build_secs, o.build_timeout_secs);
        EXPECT_EQ(rs[1].error, MeasureError::Ok) << rs[1].error_message;
    } // the destructor waits for the late build
    EXPECT_FALSE(*waited_out);
}

TEST(Measure, WorkDirectoryIsRemovedWhenOwned) {
    std::string dir;
    {
        LocalMeasurer m(test_options());
        dir = m.work_dir();
        EXPECT_TRUE(fs::is_directory(dir));
        const te::Compute c = matmul_compute(1, 1, 1);
        EXPECT_EQ(m.measure_candidates(c, {default_candidate(c)})[0].error, MeasureError::Ok);
    }
    EXPECT_FALSE(fs::exists(dir));
}

TEST(Measure, WorkDirectoriesOfKilledTunersAreSweptByTheNext) {
    const fs::path tmp = fs::temp_directory_path() / ("tessera_sweep_" + std::to_string(getpid()));
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    setenv("TMPDIR", tmp.c_str(), 1);
    // A tuner killed with its measurer alive: no destructor runs, its folder stays.
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        LocalMeasurer m(test_options());
        raise(SIGKILL);
    }
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status));
    fs::create_directory(tmp / "tessera_measure_noowner"); // unknown owner: left alone
    auto folders = [&] {
        std::set<std::string> names;
        for (const auto& e : fs::directory_iterator(tmp))
            names.insert(e.path().filename().string());
        return names;
    };
    const std::set<std::string> before = folders();
    ASSERT_EQ(before.size(), 2u);
    {
        LocalMeasurer m(test_options());
        const std::set<std::string> during = folders();
        EXPECT_EQ(during.size(), 2u); // the killed one's went, this one's came
        EXPECT_TRUE(during.count("tessera_measure_noowner"));
        EXPECT_TRUE(during.count(fs::path(m.work_dir()).filename().string()));
        for (const std::string& name : before) {
            if (name != "tessera_measure_noowner") {
                EXPECT_FALSE(during.count(name)) << name << " of a killed tuner is still there";
            }
        }
        LocalMeasurer other(test_options()); // a live owner's folder is not swept
        EXPECT_TRUE(fs::is_directory(m.work_dir()));
    }
    unsetenv("TMPDIR");
    fs::remove_all(tmp);
}

TEST(Measure, SettingsNameWhatAffectsTimes) {
    MeasureOptions o = test_options();
    o.kernel_threads = 0;
    o.flush_cache = true;
    o.cold_weights = true;
    LocalMeasurer m(o);
    nlohmann::json j = nlohmann::json::parse(m.settings_json());
    EXPECT_EQ(j.at("cold_weights").get<bool>(), true);
    EXPECT_GE(j.at("kernel_threads").get<int>(), 1);
    EXPECT_EQ(j.at("min_repeats").get<int>(), o.min_repeats);
    EXPECT_EQ(j.at("max_repeats").get<int>(), o.max_repeats);
    EXPECT_EQ(j.at("flush_cache").get<bool>(), true);
    EXPECT_DOUBLE_EQ(j.at("tolerance").get<double>(), o.tolerance);
}

// A real-time runner starts its worker under SCHED_FIFO where the system permits it (root or
// CAP_SYS_NICE, as in CI), and otherwise says it was denied and still measures; the records'
// settings say which happened.
TEST(Measure, RealtimeWorkerRunsUnderFifoOrSaysWhyNot) {
    const fs::path log = fs::temp_directory_path() / ("tessera_rt_" + std::to_string(getpid()));
    {
        Runner r({TESSERA_BINARY, "__measure-worker"}, 5.0, log.string(), 10);
        RunRequest req;
        req.library = "/nonexistent/library.so"; // answered with an error, the worker stays
        req.symbol = "k";
        const RunReply reply = r.run(req);
        EXPECT_NE(reply.error, MeasureError::Ok);
        ASSERT_GT(r.worker_pid(), 0);
        const int policy = sched_getscheduler(r.worker_pid());
        if (r.realtime_denied())
            EXPECT_EQ(policy, SCHED_OTHER);
        else
            EXPECT_EQ(policy, SCHED_FIFO);
    }
    fs::remove(log);

    MeasureOptions o = test_options();
    o.realtime = true;
    LocalMeasurer m(o);
    const te::Compute c = matmul_compute(7, 13, 127);
    for (const MeasureResult& res : m.measure(c, sample_states(c, 2, 8)))
        expect_ok(res, o);
    const nlohmann::json j = nlohmann::json::parse(m.settings_json());
    EXPECT_TRUE(j.at("realtime").is_boolean());
    MeasureOptions normal = test_options();
    EXPECT_FALSE(nlohmann::json::parse(LocalMeasurer(normal).settings_json()).contains("realtime"));
}

TEST(Measure, BadOptionsAndWorkersAreUserErrors) {
    MeasureOptions o = test_options();
    o.min_repeats = 0;
    EXPECT_THROW(LocalMeasurer{o}, UserError);
    o = test_options();
    o.run_timeout_secs = 0;
    EXPECT_THROW(LocalMeasurer{o}, UserError);
    o = test_options();
    o.behind_factor = 0.9; // a candidate as fast as the baseline would be cut
    EXPECT_THROW(LocalMeasurer{o}, UserError);
    o = test_options();
    o.ratio_precision = 1;
    EXPECT_THROW(LocalMeasurer{o}, UserError);
    o = test_options();
    o.slow_factor = std::numeric_limits<double>::infinity(); // the rule the CLI's flags share
    EXPECT_THROW(LocalMeasurer{o}, UserError);
    EXPECT_TRUE(valid_cut_factor(0));
    EXPECT_TRUE(valid_cut_factor(1));
    EXPECT_FALSE(valid_cut_factor(0.5));
    EXPECT_FALSE(valid_cut_factor(std::nan("")));
    EXPECT_TRUE(valid_ratio_precision(0));
    EXPECT_FALSE(valid_ratio_precision(-0.1));

    const te::Compute c = matmul_compute(1, 7, 1);
    for (std::vector<std::string> cmd : {std::vector<std::string>{"/nonexistent/tessera"},
                                         std::vector<std::string>{"/bin/true"}}) {
        o = test_options();
        o.worker_command = cmd;
        LocalMeasurer m(o);
        EXPECT_THROW(m.measure_candidates(c, {default_candidate(c)}), UserError) << cmd[0];
    }
}

} // namespace
} // namespace tessera::tune
