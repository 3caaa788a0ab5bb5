// The peak arithmetic rates of this CPU's product instructions, measured: what a kernel of
// each product precision could reach at best, the yardstick of `tessera hw --peak` and of the
// per-call "% of peak" of `tessera bench --profile`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/ir/stmt.h"

namespace tessera::backend {

/// The measured peak of one product precision (te::product_precision's names).
struct PeakRate {
    /// "f32" (fused multiply-adds), "bf16" (pairs of bf16 products summed in f32) or "int8"
    /// (quads of u8 x s8 products summed in i32).
    std::string precision;
    /// What the code generator makes of that product on this CPU, e.g. "vfmadd231ps zmm",
    /// "vdpbf16ps zmm", "vpdpbusd ymm", or "emulated (...)" where the CPU has no instruction
    /// for it. Matrix tiles (AMX) are not measured: kernels that use them can exceed the rate.
    std::string instruction;
    /// Operations per second, two per multiply-add (GFLOP/s, or GOP/s for int8, as
    /// te::count_flops counts them): on one core, and on `threads` cores at once (each thread
    /// running the same loop on its own accumulators).
    double one_core = 0;
    double all_cores = 0;
    int threads = 1;
};

/// The precisions measure_peak_rates knows, in the order it measures them.
inline const std::vector<std::string>& peak_rate_precisions() {
    static const std::vector<std::string> all = {"f32", "bf16", "int8"};
    return all;
}

/// Measures the product rates of `precisions` (of peak_rate_precisions(); default all three)
/// on the host with kernels JIT-compiled for it: independent vector accumulators (enough to
/// hide the instruction's latency), the operands in registers, no memory traffic, each timed
/// for at least min_secs (best of three) on one thread and then on `threads` threads at once.
/// bf16 on a CPU without AVX512-BF16 gets f32's rate (its products are f32 multiply-adds).
/// Returns them in peak_rate_precisions()' order. Pre: threads >= 1, min_secs > 0, every
/// precision known. Takes about 2 x min_secs per precision. Throws UserError when code
/// generation fails.
std::vector<PeakRate>
measure_peak_rates(int threads, double min_secs = 0.05,
                   const std::vector<std::string>& precisions = peak_rate_precisions());

/// The loop measure_peak_rates times for one precision: `void tessera_peak_<precision>(io,
/// a, b)` runs `iterations` steps of, on each of `accumulators` vectors of `lanes` lanes held
/// in registers (io's values on entry, written back on return), f32: acc = acc * a + b; bf16:
/// acc += dot2_bf16(a, b); int8 (i32 accumulators): acc += dot4_u8s8(a, b) when
/// `dot4_instruction` (one instruction multiplies and sums the bytes into the accumulator,
/// VNNI's vpdpbusd, which no compiler moves out of the loop), else acc += dot4_u8s8(acc + a,
/// b), so that the product is not loop-invariant (the extra addition, timed with it, cost a
/// sixth of vpdpbusd's rate on a Zen 4); a and b are `lanes` f32 (f32) or i32 words. Pre:
/// precision is one of the three, the counts >= 1 (InternalError otherwise).
ir::LoweredFunc peak_rate_kernel(const std::string& precision, int lanes, int accumulators,
                                 int64_t iterations, bool dot4_instruction = false);

/// The rate of `precision` in rates (nullptr when absent).
const PeakRate* find_peak_rate(const std::vector<PeakRate>& rates, const std::string& precision);

} // namespace tessera::backend
