// tessera_bench_ops: single operators measured side by side in one run on this machine.
//
// For each workload it times tessera's code (the hand-built sgemm IR, or the default lowering of
// a te operator, and, where schedules/ has one, the hand-written schedule replayed from its JSON
// file), OpenBLAS and oneDNN with the same thread count, all in the same interleaved rounds,
// checks each tessera result against a peer (every element) and all results against a
// double-precision reference (sampled), and prints one table of GFLOP/s, ratios and the share of
// the machine's peak FMA rate (measured here with register-only FMA loops, AVX2 and, where
// present, AVX-512, on the same number of threads; the peak is the faster of the two).
//
// Usage: tessera_bench_ops [--threads N] [--quick] [--json] [--schedules DIR]
// Exit status: 0 when every check passed, 1 on a numeric mismatch, 2 on bad options or errors.
#include <cblas.h>
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "sgemm_ir.h"
#include "tessera/backends/host.h"
#include "tessera/backends/llvm.h"
#include "tessera/lower/lower_default.h"
#include "tessera/lower/lower_for_codegen.h"
#include "tessera/runtime/thread_pool.h"
#include "tessera/schedule/layout.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/schedule.h"
#include "tessera/support/error.h"
#include "tessera/support/rng.h"
#include "tessera/te/op_library.h"
#include "tessera/te/op_registry.h"
#include "tessera/te/workload_key.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/fingerprint.h"

namespace {

using Clock = std::chrono::steady_clock;

/// Allocates on 64-byte boundaries (a cache line, one AVX-512 vector), as tessera's runtime
/// allocates tensors, so that no library's timing depends on where malloc happened to put a
/// buffer. Every library in a row reads and writes the same kind of buffer.
template <class T>
struct CacheLineAllocator {
    using value_type = T;
    CacheLineAllocator() = default;
    template <class U>
    CacheLineAllocator(const CacheLineAllocator<U>&) {}
    T* allocate(size_t n) {
        const size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
        void* p = std::aligned_alloc(64, bytes == 0 ? 64 : bytes);
        if (!p) throw std::bad_alloc();
        return static_cast<T*>(p);
    }
    void deallocate(T* p, size_t) { std::free(p); }
    template <class U>
    bool operator==(const CacheLineAllocator<U>&) const { return true; }
    template <class U>
    bool operator!=(const CacheLineAllocator<U>&) const { return false; }
};
using Buf = std::vector<float, CacheLineAllocator<float>>;

struct Options {
    int threads = 2;
    bool quick = false;
    bool json = false;
    std::string schedules = "schedules"; ///< The folder of the hand-written schedule files.
    /// A tuning database: the best record of each workload measured on this machine runs as a
    /// "tuned" row. Empty: no tuned rows.
    std::string db;
    /// Only the workloads the tuning benchmark covers (scripts/bench_tune.sh), with their tuned
    /// rows and peers; no hand IR, default or hand-written schedule rows.
    bool tuned_only = false;
};

// ---------------------------------------------------------------------------------------------
// Timing.

/// Median seconds per call of each of `fns`, timed in interleaved rounds: in each of 3 rounds
/// every function runs one block (a warm-up call, then at least 4 calls and 0.1 s), so each
/// gets >= 12 timed calls and >= 0.3 s in all. Spreading the blocks over time keeps the ratios
/// fair when something else runs on the machine for a while. Between blocks, settle().
std::vector<double> time_interleaved(const std::vector<std::function<void()>>& fns);

/// Lets the previous library's worker threads go idle (OpenBLAS workers spin for a while after a
/// call) so they do not steal cycles from the next one.
void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(200)); }

std::vector<double> time_interleaved(const std::vector<std::function<void()>>& fns) {
    const int rounds = 3, min_reps = 4;
    const double min_seconds = 0.1;
    std::vector<std::vector<double>> samples(fns.size());
    for (int round = 0; round < rounds; ++round)
        for (size_t i = 0; i < fns.size(); ++i) {
            settle();
            fns[i]();
            const auto start = Clock::now();
            for (int n = 0;; ++n) {
                const double total = std::chrono::duration<double>(Clock::now() - start).count();
                if (n >= min_reps && total >= min_seconds) break;
                const auto t0 = Clock::now();
                fns[i]();
                samples[i].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
            }
        }
    std::vector<double> medians;
    for (auto& s : samples) {
        std::sort(s.begin(), s.end());
        medians.push_back(s[s.size() / 2]);
    }
    return medians;
}

// ---------------------------------------------------------------------------------------------
// Peak FMA rate: 12 independent FMA chains per thread in registers only. Written in assembly so
// the compiler can neither spill the accumulators nor drop the loop.

void fma_loop_ymm(int64_t iters) {
    __asm__ volatile(
        "vxorps %%ymm0,%%ymm0,%%ymm0\n\t vxorps %%ymm1,%%ymm1,%%ymm1\n\t"
        "vxorps %%ymm2,%%ymm2,%%ymm2\n\t vxorps %%ymm3,%%ymm3,%%ymm3\n\t"
        "vxorps %%ymm4,%%ymm4,%%ymm4\n\t vxorps %%ymm5,%%ymm5,%%ymm5\n\t"
        "vxorps %%ymm6,%%ymm6,%%ymm6\n\t vxorps %%ymm7,%%ymm7,%%ymm7\n\t"
        "vxorps %%ymm8,%%ymm8,%%ymm8\n\t vxorps %%ymm9,%%ymm9,%%ymm9\n\t"
        "vxorps %%ymm10,%%ymm10,%%ymm10\n\t vxorps %%ymm11,%%ymm11,%%ymm11\n\t"
        "vxorps %%ymm12,%%ymm12,%%ymm12\n\t vxorps %%ymm13,%%ymm13,%%ymm13\n\t"
        "1:\n\t"
        "vfmadd231ps %%ymm12,%%ymm13,%%ymm0\n\t vfmadd231ps %%ymm12,%%ymm13,%%ymm1\n\t"
        "vfmadd231ps %%ymm12,%%ymm13,%%ymm2\n\t vfmadd231ps %%ymm12,%%ymm13,%%ymm3\n\t"
        "vfmadd231ps %%ymm12,%%ymm13,%%ymm4\n\t vfmadd231ps %%ymm12,%%ymm13,%%ymm5\n\t"
        "vfmadd231ps %%ymm12,%%ymm13,%%ymm6\n\t vfmadd231ps %%ymm12,%%ymm13,%%ymm7\n\t"
        "vfmadd231ps %%ymm12,%%ymm13,%%ymm8\n\t vfmadd231ps %%ymm12,%%ymm13,%%ymm9\n\t"
        "vfmadd231ps %%ymm12,%%ymm13,%%ymm10\n\t vfmadd231ps %%ymm12,%%ymm13,%%ymm11\n\t"
        "dec %0\n\t jnz 1b\n\t vzeroupper\n\t"
        : "+r"(iters)
        :
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
          "xmm11", "xmm12", "xmm13", "cc");
}

void fma_loop_zmm(int64_t iters) {
    __asm__ volatile(
        "vpxord %%zmm0,%%zmm0,%%zmm0\n\t vpxord %%zmm1,%%zmm1,%%zmm1\n\t"
        "vpxord %%zmm2,%%zmm2,%%zmm2\n\t vpxord %%zmm3,%%zmm3,%%zmm3\n\t"
        "vpxord %%zmm4,%%zmm4,%%zmm4\n\t vpxord %%zmm5,%%zmm5,%%zmm5\n\t"
        "vpxord %%zmm6,%%zmm6,%%zmm6\n\t vpxord %%zmm7,%%zmm7,%%zmm7\n\t"
        "vpxord %%zmm8,%%zmm8,%%zmm8\n\t vpxord %%zmm9,%%zmm9,%%zmm9\n\t"
        "vpxord %%zmm10,%%zmm10,%%zmm10\n\t vpxord %%zmm11,%%zmm11,%%zmm11\n\t"
        "vpxord %%zmm12,%%zmm12,%%zmm12\n\t vpxord %%zmm13,%%zmm13,%%zmm13\n\t"
        "1:\n\t"
        "vfmadd231ps %%zmm12,%%zmm13,%%zmm0\n\t vfmadd231ps %%zmm12,%%zmm13,%%zmm1\n\t"
        "vfmadd231ps %%zmm12,%%zmm13,%%zmm2\n\t vfmadd231ps %%zmm12,%%zmm13,%%zmm3\n\t"
        "vfmadd231ps %%zmm12,%%zmm13,%%zmm4\n\t vfmadd231ps %%zmm12,%%zmm13,%%zmm5\n\t"
        "vfmadd231ps %%zmm12,%%zmm13,%%zmm6\n\t vfmadd231ps %%zmm12,%%zmm13,%%zmm7\n\t"
        "vfmadd231ps %%zmm12,%%zmm13,%%zmm8\n\t vfmadd231ps %%zmm12,%%zmm13,%%zmm9\n\t"
        "vfmadd231ps %%zmm12,%%zmm13,%%zmm10\n\t vfmadd231ps %%zmm12,%%zmm13,%%zmm11\n\t"
        "dec %0\n\t jnz 1b\n\t vzeroupper\n\t"
        : "+r"(iters)
        :
        : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
          "xmm11", "xmm12", "xmm13", "cc");
}

/// GFLOP/s of `loop` (12 chains of `lanes`-wide FMAs) run on `threads` threads at once: the
/// best of three rounds of about 0.2 s.
double measure_peak(void (*loop)(int64_t), int lanes, int threads) {
    const int64_t iters = 20'000'000;
    double best = 0;
    for (int round = 0; round < 3; ++round) {
        std::vector<std::thread> pool;
        const auto t0 = Clock::now();
        for (int t = 0; t < threads; ++t) pool.emplace_back([&] { loop(iters); });
        for (auto& t : pool) t.join();
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        best = std::max(best, threads * static_cast<double>(iters) * 12 * lanes * 2 / s / 1e9);
    }
    return best;
}

// ---------------------------------------------------------------------------------------------
// Peers' thread counts. oneDNN here is built on OpenMP; its omp_set_num_threads is looked up at
// run time because libgomp is only an indirect dependency of this program.

void set_omp_threads(int n) {
    using Fn = void (*)(int);
    if (auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"))) fn(n);
}

// ---------------------------------------------------------------------------------------------
// Results.

struct Row {
    std::string name;
    std::string code; // which tessera code: "hand IR", "default", "schedule"
    std::string note; // schedule rows: the file, and inputs packed ahead of time
    double flops = 0;
    double tessera = NAN, openblas = NAN, onednn = NAN; // GFLOP/s; NaN = not run
    double error = NAN;      // tessera vs the peer, every element
    std::string checked_against;
    double spot_error = NAN; // worst of all three vs a double-precision reference, sampled
    bool ok = true;
};

double max_rel_error(const float* a, const float* b, size_t n) {
    double worst = 0;
    for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return std::numeric_limits<double>::infinity();
        worst = std::max(worst, std::fabs(double(a[i]) - b[i]) / std::max(1.0, std::fabs(double(b[i]))));
    }
    return worst;
}

Buf random_vector(size_t n, uint64_t seed) {
    std::vector<float> v(n);
    tessera::Rng rng(seed);
    rng.fill(v, -1.0f, 1.0f);
    return Buf(v.begin(), v.end());
}

double gflops(double flops, double seconds) { return flops / seconds / 1e9; }

// ---------------------------------------------------------------------------------------------
// Workloads.

/// One tessera function compiled by the JIT: fn(args) with args[i] = data of params[i].
struct JitFunction {
    std::unique_ptr<tessera::backend::JitModule> module;
    tessera::backend::JitModule::KernelFn fn = nullptr;
};

JitFunction jit(tessera::ir::LoweredFunc f) {
    f = tessera::lower::prepare_for_codegen(f);
    const std::string name = f.name;
    JitFunction out{tessera::backend::JitModule::compile({f}), nullptr};
    out.fn = out.module->get(name);
    return out;
}

/// A hand-written schedule (a file of schedules/) ready to run: replayed on its workload,
/// lowered and compiled, with the inputs in the layouts its input stages store them.
struct ScheduledKernel {
    JitFunction f;
    std::vector<Buf> inputs; ///< Packed (pack_layout) ahead of the timed calls.
    std::string note; ///< "file.json" plus the inputs it takes packed, e.g. "w as [2,3,3,64,32]".
};

/// Lowers and compiles a replayed schedule; inputs it stores in a transformed layout are packed
/// here, once, outside any timing, as vendor libraries pack their weights (the note names them).
ScheduledKernel prepare_state(const tessera::te::OpInstance& op, const tessera::sched::State& state,
                              const std::string& note,
                              const std::vector<const Buf*>& inputs) {
    ScheduledKernel k;
    k.f = jit(tessera::sched::lower_state(state, "scheduled"));
    k.note = note;
    std::string packed;
    for (size_t i = 0; i < op.compute.inputs.size(); ++i) {
        const tessera::ir::Tensor& t = op.compute.inputs[i];
        const tessera::sched::Stage& st = state.stages[state.stage_id_of(t)];
        if (st.layout.is_identity()) {
            k.inputs.push_back(*inputs[i]);
            continue;
        }
        const std::vector<float> packed_data = tessera::sched::pack_layout(
            st.layout, t.shape(), std::vector<float>(inputs[i]->begin(), inputs[i]->end()));
        k.inputs.emplace_back(packed_data.begin(), packed_data.end());
        std::string shape;
        for (int64_t e : tessera::sched::packed_shape(st.layout, t.shape()))
            shape += (shape.empty() ? "" : ",") + std::to_string(e);
        packed += (packed.empty() ? "" : ", ") + t.name() + " as [" + shape + "]";
    }
    if (!packed.empty())
        k.note += "; packed outside the timed call: " + packed;
    return k;
}

/// Loads `dir`/`file`: {"workload": SPEC, "version": 1, "steps": [...]}. The workload must be
/// `spec` (compared in canonical form). Inputs are the dense row-major data of the op's inputs,
/// in order.
ScheduledKernel load_schedule(const std::string& dir, const std::string& file,
                              const std::string& spec,
                              const std::vector<const Buf*>& inputs) {
    const std::string path = dir + "/" + file;
    std::ifstream in(path);
    if (!in)
        throw tessera::UserError() << "cannot read schedule file '" << path << "'";
    std::stringstream text;
    text << in.rdbuf();
    const auto doc = nlohmann::json::parse(text.str(), nullptr, false);
    if (doc.is_discarded() || !doc.contains("workload") || !doc["workload"].is_string())
        throw tessera::UserError() << "schedule file '" << path << "' has no \"workload\" string";
    const tessera::te::OpInstance op =
        tessera::te::make_op(tessera::te::parse_op_spec(doc["workload"].get<std::string>()));
    const std::string want = tessera::te::make_op(tessera::te::parse_op_spec(spec)).canonical_spec;
    if (op.canonical_spec != want)
        throw tessera::UserError() << "schedule file '" << path << "' is for '"
                                   << op.canonical_spec << "', not '" << want << "'";
    return prepare_state(op, tessera::sched::replay(op.compute, tessera::sched::steps_from_json(text.str())),
                         file, inputs);
}

/// The fastest record of `spec`'s workload measured on this machine (same hardware
/// fingerprint, any target string) in the tuning database `db`, ready to run; nullopt when the
/// database holds none.
std::optional<ScheduledKernel> load_tuned(const std::string& db, const std::string& spec,
                                          const std::vector<const Buf*>& inputs) {
    if (db.empty()) return std::nullopt;
    const tessera::te::OpInstance op = tessera::te::make_op(tessera::te::parse_op_spec(spec));
    tessera::tune::TuningDatabase database(db);
    const std::string key = tessera::te::workload_key(op.compute);
    const auto best = database.top_k(key, 1, "", tessera::tune::host_fingerprint().hash());
    if (best.empty()) return std::nullopt;
    const auto& rec = best.front();
    const int64_t trials = static_cast<int64_t>(database.records_of(key).size());
    char note[160];
    std::snprintf(note, sizeof note, "record %lld of %s (best of %lld records, measured %.4f ms)",
                  static_cast<long long>(rec.id), db.c_str(), static_cast<long long>(trials),
                  rec.median_secs * 1e3);
    return prepare_state(op, tessera::sched::replay(op.compute, tessera::sched::steps_from_json(rec.schedule_json)),
                         note, inputs);
}

constexpr double kTolerance = 1e-3;

/// Largest relative error of `c` against a double-precision reference at `samples` positions
/// drawn with a fixed seed; `ref(i)` computes element i. Independent of every peer.
double spot_check(const Buf& c, const std::function<double(int64_t)>& ref,
                  int samples = 512) {
    tessera::Rng rng(99);
    double worst = 0;
    const int64_t n = static_cast<int64_t>(c.size());
    for (int s = 0; s < samples; ++s) {
        const int64_t i = s == 0 ? n - 1 : static_cast<int64_t>(rng.next() % uint64_t(n));
        const double want = ref(i);
        if (!std::isfinite(c[i])) return std::numeric_limits<double>::infinity();
        worst = std::max(worst, std::fabs(c[i] - want) / std::max(1.0, std::fabs(want)));
    }
    return worst;
}

/// Fills in the verdict of a row: tessera against the peer (every element) and every result
/// against the double-precision spot check.
void judge(Row& row, const Buf& mine, const Buf& peer,
           const char* peer_name, const std::vector<const Buf*>& all,
           const std::function<double(int64_t)>& ref) {
    row.checked_against = peer_name;
    row.error = max_rel_error(mine.data(), peer.data(), peer.size());
    row.spot_error = 0;
    for (const auto* r : all) row.spot_error = std::max(row.spot_error, spot_check(*r, ref));
    row.ok = row.error <= kTolerance && row.spot_error <= kTolerance;
}

/// The sgemm rows: the hand-built IR, and when `schedule` names a file of opt.schedules, that
/// schedule, timed in the same rounds as the peers.
std::vector<Row> bench_sgemm(int64_t M, int64_t N, int64_t K, const Options& opt,
                             const std::string& schedule = "") {
    Row row;
    row.name = "sgemm " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
    row.code = "hand IR";
    row.flops = 2.0 * M * N * K;
    Buf a = random_vector(M * K, 1), b = random_vector(K * N, 2);
    Buf c_tessera(M * N), c_blas(M * N), c_dnnl(M * N), c_sched(M * N);

    // tessera: the hand-built IR.
    const tessera::bench::SgemmConfig cfg =
        tessera::bench::sgemm_config_for(tessera::backend::host_info().vector_bits, opt.threads);
    JitFunction f = jit(tessera::bench::build_sgemm_ir(M, N, K, cfg));
    void* args[3] = {a.data(), b.data(), c_tessera.data()};
    auto tessera_run = [&] { f.fn(args); };

    // OpenBLAS.
    auto blas_run = [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a.data(), K,
                    b.data(), N, 0.0f, c_blas.data(), N);
    };

    // oneDNN matmul on plain row-major memory.
    using namespace dnnl;
    engine eng(engine::kind::cpu, 0);
    stream strm(eng);
    memory::desc a_md({M, K}, memory::data_type::f32, memory::format_tag::ab);
    memory::desc b_md({K, N}, memory::data_type::f32, memory::format_tag::ab);
    memory::desc c_md({M, N}, memory::data_type::f32, memory::format_tag::ab);
    matmul::primitive_desc pd(matmul::desc(a_md, b_md, c_md), eng);
    matmul mm(pd);
    memory a_mem(a_md, eng, a.data()), b_mem(b_md, eng, b.data()), c_mem(c_md, eng, c_dnnl.data());
    auto dnnl_run = [&] {
        mm.execute(strm, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
        strm.wait();
    };

    // tessera: the hand-written schedule (B packed inside the call, as the IR does).
    const std::string spec = "matmul:m=" + std::to_string(M) + ",n=" + std::to_string(N) +
                             ",k=" + std::to_string(K);
    std::vector<std::function<void()>> runs = {tessera_run, blas_run, dnnl_run};
    ScheduledKernel sk;
    std::vector<void*> sched_args;
    if (!schedule.empty()) {
        sk = load_schedule(opt.schedules, schedule, spec, {&a, &b});
        sched_args = {sk.inputs[0].data(), sk.inputs[1].data(), c_sched.data()};
        runs.push_back([&] { sk.f.fn(sched_args.data()); });
    }

    // tessera: the best tuned record of the database, if any.
    std::optional<ScheduledKernel> tk = load_tuned(opt.db, spec, {&a, &b});
    Buf c_tuned(M * N);
    std::vector<void*> tuned_args;
    if (tk) {
        tuned_args = {tk->inputs[0].data(), tk->inputs[1].data(), c_tuned.data()};
        runs.push_back([&] { tk->f.fn(tuned_args.data()); });
    }

    const std::vector<double> t = time_interleaved(runs);
    row.tessera = gflops(row.flops, t[0]);
    row.openblas = gflops(row.flops, t[1]);
    row.onednn = gflops(row.flops, t[2]);

    auto ref = [&](int64_t idx) {
        const int64_t i = idx / N, j = idx % N;
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += double(a[i * K + k]) * b[k * N + j];
        return acc;
    };
    judge(row, c_tessera, c_blas, "OpenBLAS", {&c_tessera, &c_blas, &c_dnnl}, ref);
    std::vector<Row> rows = {row};
    if (!schedule.empty()) {
        Row srow = row;
        srow.code = "schedule";
        srow.note = sk.note;
        srow.tessera = gflops(row.flops, t[3]);
        judge(srow, c_sched, c_blas, "OpenBLAS", {&c_sched, &c_blas, &c_dnnl}, ref);
        rows.push_back(srow);
    }
    if (tk) {
        Row trow = row;
        trow.code = "tuned";
        trow.note = tk->note;
        trow.tessera = gflops(row.flops, t.back());
        judge(trow, c_tuned, c_blas, "OpenBLAS", {&c_tuned, &c_blas, &c_dnnl}, ref);
        rows.push_back(trow);
    }
    return rows;
}

/// A 2-D convolution workload (NCHW input, OIHW weights, no bias). Depthwise: one filter per
/// channel (k == c, weights [c, 1, r, s]).
struct ConvShape {
    int64_t n = 1, c = 64, h = 56, w = 56, k = 64, r = 3, s = 3, stride = 1, pad = 1;
    bool depthwise = false;
    int64_t oh() const { return (h + 2 * pad - r) / stride + 1; }
    int64_t ow() const { return (w + 2 * pad - s) / stride + 1; }
    int64_t cin_per_filter() const { return depthwise ? 1 : c; }
    /// The tessera op spec (te/op_registry.h).
    std::string spec() const {
        std::string common = "c=" + std::to_string(c) + ",h=" + std::to_string(h) + ",w=" +
                             std::to_string(w) + ",r=" + std::to_string(r) + ",s=" +
                             std::to_string(s) + ",stride=" + std::to_string(stride) +
                             ",pad=" + std::to_string(pad);
        return depthwise ? "depthwise_conv2d:n=" + std::to_string(n) + "," + common
                         : "conv2d:n=" + std::to_string(n) + "," + common + ",k=" + std::to_string(k);
    }
    std::string name() const {
        return std::string(depthwise ? "dwconv " : "conv2d ") + std::to_string(n) + "x" +
               std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w) +
               (depthwise ? "" : " k" + std::to_string(k)) + " " + std::to_string(r) + "x" +
               std::to_string(s) + (stride > 1 ? " s" + std::to_string(stride) : "") + " p" +
               std::to_string(pad);
    }
};

/// The conv rows: the default (unscheduled) lowering, the hand-written schedule when
/// `schedule` names a file of opt.schedules, and the best tuned record when opt.db holds one,
/// all timed in the same rounds as the peers (OpenBLAS through im2col + sgemm, except for
/// depthwise, and oneDNN's direct convolution).
std::vector<Row> bench_conv2d(const ConvShape& cs, const Options& opt, const std::string& schedule = "") {
    const int64_t n = cs.n, c = cs.c, h = cs.h, w = cs.w, k = cs.k, r = cs.r, s = cs.s;
    const int64_t stride = cs.stride, pad = cs.pad, oh = cs.oh(), ow = cs.ow();
    const int64_t cpf = cs.cin_per_filter();
    const std::string spec = cs.spec();
    Row row;
    row.name = cs.name();
    row.code = "default";
    row.flops = 2.0 * n * k * oh * ow * cpf * r * s;
    Buf x = random_vector(n * c * h * w, 3), wt = random_vector(k * cpf * r * s, 4);
    Buf y_tessera(n * k * oh * ow), y_blas(n * k * oh * ow), y_dnnl(n * k * oh * ow);
    Buf y_sched(n * k * oh * ow), y_tuned(n * k * oh * ow);

    // tessera: the default lowering of the te operator (a serial loop nest, the baseline).
    tessera::te::OpInstance op = tessera::te::make_op(tessera::te::parse_op_spec(spec));
    JitFunction f = jit(tessera::lower::lower_default(op.compute, "conv2d"));
    void* args[3] = {x.data(), wt.data(), y_tessera.data()};
    auto tessera_run = [&] { f.fn(args); };

    // OpenBLAS: im2col (timed, it is part of the operator) then W[k, c*r*s] * col[c*r*s, oh*ow],
    // per image. Not for depthwise (no GEMM formulation worth timing).
    Buf col(cs.depthwise ? 0 : c * r * s * oh * ow);
    auto blas_run = [&] {
        for (int64_t b = 0; b < n; ++b) {
            const float* xb = x.data() + b * c * h * w;
            for (int64_t ci = 0; ci < c; ++ci)
                for (int64_t ri = 0; ri < r; ++ri)
                    for (int64_t si = 0; si < s; ++si) {
                        float* dst = col.data() + ((ci * r + ri) * s + si) * oh * ow;
                        for (int64_t y = 0; y < oh; ++y) {
                            const int64_t iy = y * stride - pad + ri;
                            for (int64_t xo = 0; xo < ow; ++xo) {
                                const int64_t ix = xo * stride - pad + si;
                                dst[y * ow + xo] = (iy >= 0 && iy < h && ix >= 0 && ix < w)
                                                       ? xb[(ci * h + iy) * w + ix]
                                                       : 0.0f;
                            }
                        }
                    }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, k, oh * ow, c * r * s, 1.0f,
                        wt.data(), c * r * s, col.data(), oh * ow, 0.0f,
                        y_blas.data() + b * k * oh * ow, oh * ow);
        }
    };

    // oneDNN direct convolution: it picks its own layouts; reorders stay outside the timing.
    using namespace dnnl;
    engine eng(engine::kind::cpu, 0);
    stream strm(eng);
    const memory::dims w_dims = cs.depthwise ? memory::dims{c, 1, 1, r, s} : memory::dims{k, c, r, s};
    memory::desc x_user({n, c, h, w}, memory::data_type::f32, memory::format_tag::nchw);
    memory::desc w_user(w_dims, memory::data_type::f32,
                        cs.depthwise ? memory::format_tag::goihw : memory::format_tag::oihw);
    memory::desc y_user({n, k, oh, ow}, memory::data_type::f32, memory::format_tag::nchw);
    memory::desc x_any({n, c, h, w}, memory::data_type::f32, memory::format_tag::any);
    memory::desc w_any(w_dims, memory::data_type::f32, memory::format_tag::any);
    memory::desc y_any({n, k, oh, ow}, memory::data_type::f32, memory::format_tag::any);
    convolution_forward::primitive_desc pd(
        convolution_forward::desc(prop_kind::forward_inference, algorithm::convolution_direct,
                                  x_any, w_any, y_any, {stride, stride}, {pad, pad}, {pad, pad}),
        eng);
    memory x_mem(x_user, eng, x.data()), w_mem(w_user, eng, wt.data()), y_mem(y_user, eng, y_dnnl.data());
    memory x_conv(pd.src_desc(), eng), w_conv(pd.weights_desc(), eng), y_conv(pd.dst_desc(), eng);
    reorder(x_mem, x_conv).execute(strm, x_mem, x_conv);
    reorder(w_mem, w_conv).execute(strm, w_mem, w_conv);
    strm.wait();
    convolution_forward conv(pd);
    auto dnnl_run = [&] {
        conv.execute(strm, {{DNNL_ARG_SRC, x_conv}, {DNNL_ARG_WEIGHTS, w_conv}, {DNNL_ARG_DST, y_conv}});
        strm.wait();
    };

    // tessera: the hand-written schedule and the tuned record; inputs they store in a blocked
    // layout are packed here, outside the timing, like oneDNN's reorders above (notes name them).
    std::vector<std::function<void()>> runs = {tessera_run, dnnl_run};
    if (!cs.depthwise) runs.push_back(blas_run);
    ScheduledKernel sk;
    std::vector<void*> sched_args, tuned_args;
    if (!schedule.empty()) {
        sk = load_schedule(opt.schedules, schedule, spec, {&x, &wt});
        sched_args = {sk.inputs[0].data(), sk.inputs[1].data(), y_sched.data()};
        runs.push_back([&] { sk.f.fn(sched_args.data()); });
    }
    std::optional<ScheduledKernel> tk = load_tuned(opt.db, spec, {&x, &wt});
    if (tk) {
        tuned_args = {tk->inputs[0].data(), tk->inputs[1].data(), y_tuned.data()};
        runs.push_back([&] { tk->f.fn(tuned_args.data()); });
    }

    const std::vector<double> t = time_interleaved(runs);
    size_t next = 0;
    row.tessera = gflops(row.flops, t[next++]);
    row.onednn = gflops(row.flops, t[next++]);
    if (!cs.depthwise) row.openblas = gflops(row.flops, t[next++]);
    reorder(y_conv, y_mem).execute(strm, y_conv, y_mem);
    strm.wait();

    auto ref = [&](int64_t idx) {
        const int64_t b = idx / (k * oh * ow), ko = idx / (oh * ow) % k, y = idx / ow % oh, xo = idx % ow;
        double acc = 0;
        for (int64_t cf = 0; cf < cpf; ++cf) {
            const int64_t ci = cs.depthwise ? ko : cf;
            for (int64_t ri = 0; ri < r; ++ri)
                for (int64_t si = 0; si < s; ++si) {
                    const int64_t iy = y * stride - pad + ri, ix = xo * stride - pad + si;
                    if (iy >= 0 && iy < h && ix >= 0 && ix < w)
                        acc += double(x[((b * c + ci) * h + iy) * w + ix]) *
                               wt[((ko * cpf + cf) * r + ri) * s + si];
                }
        }
        return acc;
    };
    std::vector<const Buf*> peers = {&y_dnnl};
    if (!cs.depthwise) peers.push_back(&y_blas);
    auto with = [&](const Buf* mine) {
        std::vector<const Buf*> all = {mine};
        all.insert(all.end(), peers.begin(), peers.end());
        return all;
    };
    judge(row, y_tessera, y_dnnl, "oneDNN", with(&y_tessera), ref);
    std::vector<Row> rows = {row};
    if (!schedule.empty()) {
        Row srow = row;
        srow.code = "schedule";
        srow.note = sk.note;
        srow.tessera = gflops(row.flops, t[next++]);
        judge(srow, y_sched, y_dnnl, "oneDNN", with(&y_sched), ref);
        rows.push_back(srow);
    }
    if (tk) {
        Row trow = row;
        trow.code = "tuned";
        trow.note = tk->note;
        trow.tessera = gflops(row.flops, t[next++]);
        judge(trow, y_tuned, y_dnnl, "oneDNN", with(&y_tuned), ref);
        rows.push_back(trow);
    }
    return rows;
}

// ---------------------------------------------------------------------------------------------
// Output.

std::string fmt_num(double v, const char* spec) {
    if (std::isnan(v)) return "-";
    char buf[64];
    std::snprintf(buf, sizeof buf, spec, v);
    return buf;
}

std::string json_num(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

Options parse_options(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--quick") o.quick = true;
        else if (a == "--json") o.json = true;
        else if (a == "--threads" && i + 1 < argc) {
            char* end = nullptr;
            const long v = std::strtol(argv[++i], &end, 10);
            if (*end != '\0' || v < 1 || v > 1024)
                throw tessera::UserError() << "--threads needs a positive integer, got '" << argv[i] << "'";
            o.threads = static_cast<int>(v);
        } else if (a == "--schedules" && i + 1 < argc) {
            o.schedules = argv[++i];
        } else if (a == "--db" && i + 1 < argc) {
            o.db = argv[++i];
        } else if (a == "--tuned-only") {
            o.tuned_only = true;
        } else if (a == "--help" || a == "-h") {
            std::cout << "usage: tessera_bench_ops [--threads N] [--quick] [--json]"
                         " [--schedules DIR] [--db TUNING_DB] [--tuned-only]\n"
                         "  --db: add a \"tuned\" row per workload with the database's best record\n"
                         "        measured on this machine\n"
                         "  --tuned-only: only the tuning benchmark's workloads (sgemm 1024^3, the\n"
                         "        ResNet 3x3 convs, depthwise 3x3 112x112x32), no extra rows\n";
            std::exit(0);
        } else {
            throw tessera::UserError() << "unknown option '" << a << "'";
        }
    }
    return o;
}

int run(const Options& opt) {
    const tessera::backend::CpuInfo& host = tessera::backend::host_info();
    // Other processes on the machine make every number here noisy; say how busy it was.
    std::string load_before = "unknown";
    if (std::ifstream in("/proc/loadavg"); in) in >> load_before;
    set_omp_threads(opt.threads);
    openblas_set_num_threads(opt.threads);
    tessera::runtime::set_num_threads(opt.threads);

    // The FMA loops need the instructions they time: no FMA, no peak (the % column shows "-").
    const bool fma = host.has_feature("fma") && host.has_feature("avx2");
    const bool avx512 = fma && host.has_feature("avx512f");
    const double peak_avx2 = fma ? measure_peak(fma_loop_ymm, 8, opt.threads) : NAN;
    const double peak_avx512 = avx512 ? measure_peak(fma_loop_zmm, 16, opt.threads) : NAN;
    const double peak = avx512 ? std::max(peak_avx2, peak_avx512) : peak_avx2;

    std::vector<Row> rows;
    std::vector<std::array<int64_t, 3>> gemms = {{1024, 1024, 1024}, {127, 127, 127}};
    if (!opt.quick) gemms = {{512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048}, {127, 127, 127}};
    if (opt.tuned_only) gemms = {{1024, 1024, 1024}};
    // The hand-written schedules of schedules/ (see its README), each on its own workload.
    for (const auto& g : gemms) {
        const bool has_schedule =
            !opt.tuned_only && g[0] == 1024 && g[1] == 1024 && g[2] == 1024;
        for (Row& r : bench_sgemm(g[0], g[1], g[2], opt, has_schedule ? "matmul_1024.json" : ""))
            rows.push_back(std::move(r));
        std::fprintf(stderr, "  measured %s\n", rows.back().name.c_str());
    }
    // ResNet-style 3x3 convolutions (stride 1, pad 1) and a MobileNet-style depthwise one.
    std::vector<ConvShape> convs = {ConvShape{}};
    if (opt.tuned_only || !opt.db.empty())
        convs = {ConvShape{1, 64, 56, 56, 64}, ConvShape{1, 128, 28, 28, 128},
                 ConvShape{1, 256, 14, 14, 256}, ConvShape{1, 512, 7, 7, 512},
                 ConvShape{1, 32, 112, 112, 32, 3, 3, 1, 1, true}};
    for (const ConvShape& cs : convs) {
        const bool has_schedule = !opt.tuned_only && cs.c == 64 && cs.h == 56 && !cs.depthwise;
        for (Row& r : bench_conv2d(cs, opt, has_schedule ? "conv2d_1x64x56x56_k64_3x3.json" : ""))
            rows.push_back(std::move(r));
        std::fprintf(stderr, "  measured %s\n", rows.back().name.c_str());
    }

    bool all_ok = true;
    for (const Row& r : rows) all_ok = all_ok && r.ok;

    if (opt.json) {
        std::cout << "{\"machine\":{\"cpu\":\"" << host.cpu_model_name << "\",\"llvm_cpu\":\""
                  << host.cpu_name << "\",\"cores\":" << host.cores << ",\"threads\":" << opt.threads
                  << ",\"load_average_before\":\"" << load_before << "\""
                  << "},\"peak_gflops\":" << json_num(peak) << ",\"peak_avx2_gflops\":"
                  << json_num(peak_avx2) << ",\"peak_avx512_gflops\":" << json_num(peak_avx512)
                  << ",\"rows\":[";
        for (size_t i = 0; i < rows.size(); ++i) {
            const Row& r = rows[i];
            std::cout << (i ? "," : "") << "{\"workload\":\"" << r.name << "\",\"code\":\""
                      << r.code << "\",\"note\":\"" << r.note << "\",\"tessera\":"
                      << json_num(r.tessera) << ",\"openblas\":" << json_num(r.openblas)
                      << ",\"onednn\":" << json_num(r.onednn) << ",\"max_rel_error\":"
                      << json_num(r.error) << ",\"checked_against\":\"" << r.checked_against
                      << "\",\"spot_max_rel_error\":" << json_num(r.spot_error)
                      << ",\"ok\":" << (r.ok ? "true" : "false") << "}";
        }
        std::cout << "],\"ok\":" << (all_ok ? "true" : "false") << "}\n";
        return all_ok ? 0 : 1;
    }

    std::printf("machine: %s (LLVM cpu %s), %d cores; threads used: %d; load average before: %s\n",
                host.cpu_model_name.c_str(), host.cpu_name.c_str(), host.cores, opt.threads,
                load_before.c_str());
    std::printf("peak FP32 FMA, %d threads: AVX2 %.1f GFLOP/s", opt.threads, peak_avx2);
    if (avx512) std::printf(", AVX-512 %.1f GFLOP/s", peak_avx512);
    std::printf(" -> peak %.1f GFLOP/s\n\n", peak);
    std::printf("%-31s %-8s %8s %8s %8s %10s %9s %8s %9s %9s %s\n", "workload", "code", "tessera",
                "OpenBLAS", "oneDNN", "t/OpenBLAS", "t/oneDNN", "t %peak", "err peer", "err ref",
                "check");
    std::printf("%-31s %-8s %8s %8s %8s\n", "(GFLOP/s)", "", "", "", "");
    for (const Row& r : rows) {
        std::printf("%-31s %-8s %8s %8s %8s %10s %9s %8s %9s %9s %s\n", r.name.c_str(),
                    r.code.c_str(), fmt_num(r.tessera, "%.1f").c_str(),
                    fmt_num(r.openblas, "%.1f").c_str(),
                    fmt_num(r.onednn, "%.1f").c_str(), fmt_num(r.tessera / r.openblas, "%.2f").c_str(),
                    fmt_num(r.tessera / r.onednn, "%.2f").c_str(),
                    fmt_num(100.0 * r.tessera / peak, "%.1f%%").c_str(), fmt_num(r.error, "%.1e").c_str(),
                    fmt_num(r.spot_error, "%.1e").c_str(), (r.ok ? "ok" : "MISMATCH"));
    }
    std::printf("\nerr peer: max relative error of tessera vs OpenBLAS (sgemm) / oneDNN (conv2d), every\n"
                "element; err ref: worst of all three libraries vs a double-precision reference at 512\n"
                "sampled elements. Tolerance %.0e.\n"
                "Times: medians of >= 12 calls in 3 interleaved rounds per library.\n"
                "code: hand IR = bench/sgemm_ir.cpp; default = the unscheduled lowering;\n"
                "schedule = a hand-written schedule replayed from its JSON file in %s;\n"
                "tuned = the best record of the tuning database measured on this machine:\n",
                kTolerance, opt.schedules.c_str());
    for (const Row& r : rows)
        if (!r.note.empty())
            std::printf("  %s: %s\n", r.name.c_str(), r.note.c_str());
    for (const Row& r : rows)
        if (!r.ok)
            std::printf("MISMATCH in %s: tessera vs %s %.3e; worst of all vs the reference %.3e\n",
                        r.name.c_str(), r.checked_against.c_str(), r.error, r.spot_error);
    return all_ok ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    try {
        return run(parse_options(argc, argv));
    } catch (const tessera::UserError& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 2;
    } catch (const dnnl::error& e) {
        std::fprintf(stderr, "error: oneDNN: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 2;
    }
}
