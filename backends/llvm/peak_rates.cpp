// Peak product rates of the host (peak_rates.h): one JIT-compiled loop per precision whose
// accumulators stay in registers, timed on one thread and on several at once.
#include "tessera/backends/peak_rates.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "tessera/backends/host.h"
#include "tessera/backends/llvm.h"
#include "tessera/ir/op.h"
#include "tessera/support/error.h"

namespace tessera::backend {

namespace {

using Clock = std::chrono::steady_clock;

/// Vector steps per call of a kernel: long enough that the call costs nothing, short enough
/// that a call is a few microseconds.
constexpr int64_t kIterations = 1024;

/// The register name of a vector of `bits`.
std::string register_name(int bits) { return bits >= 512 ? "zmm" : bits >= 256 ? "ymm" : "xmm"; }

/// Whether the host multiplies bf16 pairs in one instruction (vdpbf16ps); without it the code
/// generator's dot2_bf16 is f32 multiply-adds.
bool has_bf16_products(const CpuInfo& h) { return h.has_feature("avx512bf16"); }

/// Whether the code generator's byte products take vpdpbusd on 512-bit registers.
bool has_vnni512(const CpuInfo& h) {
    return h.vector_bits >= 512 && h.has_feature("avx512vnni");
}

/// Whether one instruction multiplies bytes and sums them into i32 lanes (VNNI's vpdpbusd,
/// on 512-bit registers or, AVX-VNNI, on 256-bit ones).
bool has_dot4_instruction(const CpuInfo& h) { return has_vnni512(h) || h.has_feature("avxvnni"); }

/// What the code generator makes of precision p's product on the host (llvm.h's contract).
std::string instruction_of(const std::string& p, const CpuInfo& h) {
    const std::string reg = " " + register_name(h.vector_bits);
    if (p == "f32")
        return h.has_feature("fma") ? "vfmadd231ps" + reg : "multiply and add" + reg;
    if (p == "bf16")
        return has_bf16_products(h) ? "vdpbf16ps" + reg : "emulated (f32 multiply-adds)";
    if (has_dot4_instruction(h))
        return "vpdpbusd" + (has_vnni512(h) ? reg : std::string(" ymm"));
    // The generic lowering's byte pairs in 16-bit halves (lanes_of: 256-bit registers).
    if (h.has_feature("avx2"))
        return "vpmaddwd ymm (no VNNI)";
    return "emulated (widening multiplies)";
}

/// Operations (two per multiply-add) of one lane's product step.
int64_t ops_per_lane(const std::string& p) { return p == "f32" ? 2 : p == "bf16" ? 4 : 8; }

/// The lanes of the kernel of precision p: the widest vector the code generator takes
/// (VNNI on 256-bit registers only, without AVX-512 VNNI on 512).
int lanes_of(const std::string& p, const CpuInfo& h) {
    int bits = h.vector_bits;
    if (p == "int8" && bits >= 512 && !has_vnni512(h))
        bits = 256;
    return std::max(1, bits / 32);
}

/// The accumulators: twice what hides a 4-to-6-cycle latency at two instructions per cycle,
/// within the register file (32 vector registers with AVX-512, 16 otherwise).
int accumulators_of(const CpuInfo& h) { return h.vector_bits >= 512 ? 12 : 8; }

/// One compiled kernel with its operands, run by one thread.
struct KernelRun {
    JitModule::KernelFn fn = nullptr;
    std::vector<uint32_t> io, a, b; // accumulators and operand words (f32 bits or i32)

    KernelRun(JitModule::KernelFn f, const std::string& p, int lanes, int accs) : fn(f) {
        const float one = 1.0f, m = 0.9999999f, c = 1e-7f;
        auto bits = [](float x) {
            uint32_t u;
            std::memcpy(&u, &x, 4);
            return u;
        };
        io.assign(static_cast<size_t>(lanes * accs), p == "int8" ? 0u : bits(one));
        if (p == "f32") {
            a.assign(static_cast<size_t>(lanes), bits(m));
            b.assign(static_cast<size_t>(lanes), bits(c));
        } else if (p == "bf16") {
            // Two bf16 values of 2^-10 each: the sums grow by 2^-19 per step, far from
            // overflow or rounding away.
            a.assign(static_cast<size_t>(lanes), 0x3a803a80u);
            b.assign(static_cast<size_t>(lanes), 0x3a803a80u);
        } else {
            // Zero bytes on one side: the i32 sums stay 0, however long the run.
            a.assign(static_cast<size_t>(lanes), 0x01020304u);
            b.assign(static_cast<size_t>(lanes), 0u);
        }
    }
    void call() {
        void* args[] = {io.data(), a.data(), b.data()};
        fn(args);
    }
};

/// Seconds that `calls` calls take on each of `threads` threads started together (the
/// slowest thread's). Each thread has its own operands.
double time_calls(JitModule::KernelFn fn, const std::string& p, int lanes, int accs, int threads,
                  int64_t calls) {
    std::vector<std::unique_ptr<KernelRun>> runs;
    for (int t = 0; t < threads; ++t)
        runs.push_back(std::make_unique<KernelRun>(fn, p, lanes, accs));
    std::atomic<int> ready{0};
    std::vector<double> secs(static_cast<size_t>(threads), 0);
    auto body = [&](int t) {
        KernelRun& r = *runs[static_cast<size_t>(t)];
        r.call(); // warm: code and operands in cache
        ready.fetch_add(1);
        while (ready.load() < threads) {
        }
        const auto start = Clock::now();
        for (int64_t i = 0; i < calls; ++i)
            r.call();
        secs[static_cast<size_t>(t)] = std::chrono::duration<double>(Clock::now() - start).count();
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t)
        pool.emplace_back(body, t);
    body(0);
    for (std::thread& th : pool)
        th.join();
    return *std::max_element(secs.begin(), secs.end());
}

} // namespace

ir::LoweredFunc peak_rate_kernel(const std::string& precision, int lanes, int accumulators,
                                 int64_t iterations, bool dot4_instruction) {
    using namespace ir;
    TESSERA_CHECK(precision == "f32" || precision == "bf16" || precision == "int8")
        << "no peak kernel for precision '" << precision << "'";
    TESSERA_CHECK(lanes >= 1 && accumulators >= 1 && iterations >= 1)
        << lanes << " lanes, " << accumulators << " accumulators, " << iterations << " steps";
    const int64_t n = int64_t{lanes} * accumulators;
    const DataType acc_t = precision == "int8" ? DataType::i32() : DataType::f32();
    const DataType word_t = precision == "f32" ? DataType::f32() : DataType::i32();
    Buffer io = Buffer::make("io", acc_t, {n}), a = Buffer::make("a", word_t, {lanes}),
           b = Buffer::make("b", word_t, {lanes}), acc = Buffer::make("acc", acc_t, {n});
    auto ramp = [&](int64_t base) { return Ramp::make(Expr(base), Expr(int64_t{1}), lanes); };
    const Expr va = Load::make(a, ramp(0)), vb = Load::make(b, ramp(0));
    // Without VNNI, int8 reads its unsigned bytes from the accumulator (plus a): the code
    // generator would otherwise compute the loop-invariant dot4_u8s8(a, b) once, before the
    // loop, and time additions alone (750 G "operations" per second on a Zen 3 core). (bf16
    // without its instruction is timed as f32: measure_peak_rates.)
    std::vector<Stmt> load, step, store;
    for (int k = 0; k < accumulators; ++k) {
        const Expr at = ramp(int64_t{k} * lanes);
        const Expr old = Load::make(acc, at);
        const Expr next = precision == "f32"    ? old * va + vb
                          : precision == "bf16" ? old + dot2_bf16(va, vb)
                          : dot4_instruction    ? old + dot4_u8s8(va, vb)
                                                : old + dot4_u8s8(old + va, vb);
        load.push_back(Store::make(acc, Load::make(io, at), at));
        step.push_back(Store::make(acc, next, at));
        store.push_back(Store::make(io, Load::make(acc, at), at));
    }
    Var it("step");
    Stmt body = Seq::make(
        {Seq::make(load),
         For::make(it, Expr(int64_t{0}), Expr(iterations), ForKind::Serial, Seq::make(step)),
         Seq::make(store)});
    return LoweredFunc{
        "tessera_peak_" + precision, {io, a, b}, Allocate::make(acc, MemoryScope::Stack, body)};
}

std::vector<PeakRate> measure_peak_rates(int threads, double min_secs,
                                         const std::vector<std::string>& precisions) {
    TESSERA_CHECK(threads >= 1 && min_secs > 0) << threads << " threads, " << min_secs << " s";
    const std::vector<std::string>& known = peak_rate_precisions();
    for (const std::string& p : precisions)
        TESSERA_CHECK(std::find(known.begin(), known.end(), p) != known.end())
            << "no peak-rate kernel for precision '" << p << "'";
    const CpuInfo& h = host_info();
    const int accs = accumulators_of(h);
    std::vector<PeakRate> out;
    for (const std::string& p : known) {
        if (std::find(precisions.begin(), precisions.end(), p) == precisions.end())
            continue;
        // bf16 without vdpbf16ps is one f32 multiply-add per product (dot2_bf16's generic
        // form: a multiply and a fused multiply-add per two), so its peak is f32's; its own
        // kernel's product, of loop-invariant operands, would be computed before the loop.
        const std::string timed = p == "bf16" && !has_bf16_products(h) ? "f32" : p;
        const int lanes = lanes_of(timed, h);
        auto module = JitModule::compile(
            {peak_rate_kernel(timed, lanes, accs, kIterations, has_dot4_instruction(h))});
        const JitModule::KernelFn fn = module->get("tessera_peak_" + timed);
        const double ops_per_call =
            double(ops_per_lane(timed)) * lanes * accs * static_cast<double>(kIterations);
        // Calls that last min_secs: grow a calibration run to an eighth of it, then scale.
        int64_t calls = 16;
        double secs = time_calls(fn, timed, lanes, accs, 1, calls);
        while (secs < min_secs / 8) {
            calls *= 4;
            secs = time_calls(fn, timed, lanes, accs, 1, calls);
        }
        calls = std::max<int64_t>(calls, static_cast<int64_t>(calls * min_secs / secs));
        PeakRate r;
        r.precision = p;
        r.instruction = instruction_of(p, h);
        r.threads = threads;
        for (int trial = 0; trial < 3; ++trial) {
            r.one_core = std::max(r.one_core, ops_per_call * calls /
                                                  time_calls(fn, timed, lanes, accs, 1, calls));
            r.all_cores =
                std::max(r.all_cores, ops_per_call * calls * threads /
                                          time_calls(fn, timed, lanes, accs, threads, calls));
        }
        out.push_back(r);
    }
    return out;
}

const PeakRate* find_peak_rate(const std::vector<PeakRate>& rates, const std::string& precision) {
    for (const PeakRate& r : rates)
        if (r.precision == precision)
            return &r;
    return nullptr;
}

} // namespace tessera::backend
