// What this machine's CPU is, and the CPU of an Llvm target, as the CPU backend, default
// schedules and the tuning database see them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/support/target.h"

namespace tessera::backend {

/// A CPU as code generation and default schedules see it: what LLVM targets (triple, CPU name,
/// ISA features) and what schedules care about (cores, cache sizes, vector width). The host's
/// is host_info(), a target's describe_cpu(). Fields that cannot be known are 0 or empty.
struct CpuInfo {
    std::string triple;                ///< LLVM target triple, e.g. "x86_64-pc-linux-gnu".
    std::string cpu_name;              ///< LLVM CPU name, e.g. "znver3".
    std::vector<std::string> features; ///< Enabled LLVM features without '+', sorted.
    int cores = 1; ///< Physical cores available to this process (SMT siblings once).
    int64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0; ///< Per cache instance of cpu0.
    int vector_bits = 128;      ///< Widest SIMD register: 512 (AVX-512F), 256 (AVX), 128 otherwise.
    int vector_registers = 16;  ///< SIMD registers: 32 (AVX-512F, AArch64), 16 otherwise.
    std::string cpu_model_name; ///< "model name" from /proc/cpuinfo.

    /// Whether `name` (an LLVM feature name such as "avx2") is enabled.
    bool has_feature(const std::string& name) const;
    /// Matrix tiles for 8-bit products: x86 AMX-INT8 (amx-int8 and amx-tile).
    bool has_u8s8_tiles() const { return has_feature("amx-int8") && has_feature("amx-tile"); }
    /// Matrix tiles for bf16 products: x86 AMX-BF16 (amx-bf16 and amx-tile).
    bool has_bf16_tiles() const { return has_feature("amx-bf16") && has_feature("amx-tile"); }
};

/// The host, detected once (thread-safe) and cached for the process lifetime.
const CpuInfo& host_info();

/// The widest SIMD register of a feature list (sorted, as CpuInfo::features): 512 with
/// AVX-512F, 256 with AVX, 128 otherwise (SSE, NEON; SVE's length is not known at build time).
int vector_bits_of(const std::vector<std::string>& features);

/// The SIMD registers of a triple with a feature list (sorted, as CpuInfo::features): 32 on
/// AArch64 (v0-v31) and on x86 with AVX-512F (zmm0-zmm31), 16 otherwise (AVX and SSE).
int vector_registers_of(const std::string& triple, const std::vector<std::string>& features);

/// The CPU an Llvm target generates code for, described as host_info() describes the host:
/// - the host itself (host_info()) when the target names no other triple or CPU and no -mattr;
/// - otherwise LLVM's view of the target's triple (the host's when empty, normalized) and CPU
///   (the host's for the host's triple, else "generic") with the -mattr changes on top (on the
///   host's CPU: on top of the host's own features): features, vector_bits. Caches and
///   cpu_model_name are the host's when the CPU is the host's, else 0 and empty.
/// cores: target.num_cores, else the host's. Pre: target.is_llvm(). Throws UserError
/// "target 'T': ..." naming a triple LLVM has no backend for or a CPU it does not know.
CpuInfo describe_cpu(const Target& target);

} // namespace tessera::backend
