// The peak-rate kernels (backends/peak_rates.h): each computes its recurrence exactly as
// stated, through the instruction measure_peak_rates names for this CPU, and the measurement
// returns a positive rate for each precision.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/reference_ops.h"
#include "tessera/backends/host.h"
#include "tessera/backends/llvm.h"
#include "tessera/backends/peak_rates.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

constexpr int kLanes = 16, kAccumulators = 5;
constexpr int64_t kSteps = 37;

uint32_t bits(float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    return u;
}

float from_bits(uint32_t u) {
    float x;
    std::memcpy(&x, &u, 4);
    return x;
}

/// Runs precision p's kernel on io (kLanes x kAccumulators words) with operand words a, b;
/// returns the assembly.
std::string run_kernel(const std::string& p, std::vector<uint32_t>& io, std::vector<uint32_t> a,
                       std::vector<uint32_t> b, bool dot4_instruction = false) {
    backend::CompileOptions opts;
    opts.keep_assembly = true;
    auto module = backend::JitModule::compile(
        {backend::peak_rate_kernel(p, kLanes, kAccumulators, kSteps, dot4_instruction)}, opts);
    void* args[] = {io.data(), a.data(), b.data()};
    module->get("tessera_peak_" + p)(args);
    return module->assembly();
}

} // namespace

TEST(PeakRates, F32KernelRunsItsMultiplyAddChains) {
    std::vector<uint32_t> io(kLanes * kAccumulators);
    for (size_t i = 0; i < io.size(); ++i)
        io[i] = bits(0.25f + 0.01f * static_cast<float>(i));
    const std::vector<uint32_t> start = io;
    std::vector<uint32_t> a(kLanes), b(kLanes);
    for (int l = 0; l < kLanes; ++l) {
        a[l] = bits(0.97f + 0.001f * l);
        b[l] = bits(0.003f * (l + 1));
    }
    const std::string assembly = run_kernel("f32", io, a, b);
    for (size_t i = 0; i < io.size(); ++i) {
        const size_t l = i % kLanes;
        float want = from_bits(start[i]);
        for (int64_t s = 0; s < kSteps; ++s)
            want = std::fma(want, from_bits(a[l]), from_bits(b[l]));
        EXPECT_EQ(from_bits(io[i]), want) << i;
    }
    if (backend::host_info().has_feature("fma")) {
        EXPECT_NE(assembly.find("vfmadd"), std::string::npos);
    }
}

TEST(PeakRates, Bf16KernelSumsItsProductPairs) {
    // Each step adds 1.5 * 0.5 + (-0.25) * 2 = 0.25 exactly.
    std::vector<uint32_t> io(kLanes * kAccumulators, bits(1.0f));
    const std::vector<uint32_t> a(kLanes, bits(-0.25f) | (bits(1.5f) >> 16));
    const std::vector<uint32_t> b(kLanes, bits(2.0f) | (bits(0.5f) >> 16));
    const std::string assembly = run_kernel("bf16", io, a, b);
    for (size_t i = 0; i < io.size(); ++i)
        EXPECT_EQ(from_bits(io[i]), 1.0f + 0.25f * kSteps) << i;
    if (backend::host_info().has_feature("avx512bf16")) {
        EXPECT_NE(assembly.find("vdpbf16ps"), std::string::npos);
    }
}

TEST(PeakRates, Int8KernelSumsItsByteQuads) {
    // Each step: acc += dot4_u8s8(acc + a, b), the unsigned bytes from the accumulator, so that
    // no product is loop-invariant; b's signed bytes are -1, 5, -7, 9. Sums wrap as i32.
    std::vector<uint32_t> io(kLanes * kAccumulators);
    for (size_t i = 0; i < io.size(); ++i)
        io[i] = static_cast<uint32_t>(int32_t(i) - 40);
    const std::vector<uint32_t> start = io;
    const std::vector<uint32_t> a(kLanes, 0x010203FAu);
    const std::vector<uint32_t> b(kLanes, 0x09F905FFu);
    const std::string assembly = run_kernel("int8", io, a, b);
    for (size_t i = 0; i < io.size(); ++i) {
        uint32_t want = start[i];
        for (int64_t s = 0; s < kSteps; ++s)
            want += static_cast<uint32_t>(
                ref::dot4_u8s8(static_cast<int32_t>(want + a[0]), static_cast<int32_t>(b[0])));
        EXPECT_EQ(io[i], want) << i;
    }
    const backend::CpuInfo& h = backend::host_info();
    if (h.vector_bits >= 512 && h.has_feature("avx512vnni")) {
        EXPECT_NE(assembly.find("vpdpbusd"), std::string::npos);
    }
}

TEST(PeakRates, Int8KernelWithADot4InstructionSumsTheSameBytesEachStep) {
    // With VNNI each step is acc += dot4_u8s8(a, b): vpdpbusd alone, no addition beside it
    // (which took a sixth of its rate on a Zen 4). Computed the same without the instruction.
    std::vector<uint32_t> io(kLanes * kAccumulators);
    for (size_t i = 0; i < io.size(); ++i)
        io[i] = static_cast<uint32_t>(int32_t(i) * 7 - 33);
    const std::vector<uint32_t> start = io;
    const std::vector<uint32_t> a(kLanes, 0x8102F3FAu);
    const std::vector<uint32_t> b(kLanes, 0x09F985FFu);
    const std::string assembly = run_kernel("int8", io, a, b, /*dot4_instruction=*/true);
    const uint32_t product = static_cast<uint32_t>(
        ref::dot4_u8s8(static_cast<int32_t>(a[0]), static_cast<int32_t>(b[0])));
    for (size_t i = 0; i < io.size(); ++i)
        EXPECT_EQ(io[i], start[i] + product * static_cast<uint32_t>(kSteps)) << i;
    const backend::CpuInfo& h = backend::host_info();
    if (h.vector_bits >= 512 && h.has_feature("avx512vnni")) {
        EXPECT_NE(assembly.find("vpdpbusd"), std::string::npos);
        EXPECT_EQ(assembly.find("vpaddd"), std::string::npos) << assembly;
    }
}

TEST(PeakRates, MeasuresEachPrecisionOnOneAndTwoThreads) {
    const std::vector<backend::PeakRate> rates = backend::measure_peak_rates(2, 0.005);
    ASSERT_EQ(rates.size(), 3u);
    for (const char* p : {"f32", "bf16", "int8"}) {
        const backend::PeakRate* r = backend::find_peak_rate(rates, p);
        ASSERT_NE(r, nullptr) << p;
        EXPECT_FALSE(r->instruction.empty()) << p;
        EXPECT_GT(r->one_core, 0.0) << p;
        EXPECT_GT(r->all_cores, 0.0) << p;
        EXPECT_EQ(r->threads, 2) << p;
    }
    EXPECT_EQ(backend::find_peak_rate(rates, "f16"), nullptr);
}

// Asked for some precisions, it measures those only, in its own order.
TEST(PeakRates, MeasuresOnlyThePrecisionsAsked) {
    const std::vector<backend::PeakRate> rates =
        backend::measure_peak_rates(1, 0.005, {"int8", "f32"});
    ASSERT_EQ(rates.size(), 2u);
    EXPECT_EQ(rates[0].precision, "f32");
    EXPECT_EQ(rates[1].precision, "int8");
    EXPECT_EQ(backend::find_peak_rate(rates, "bf16"), nullptr);
}
