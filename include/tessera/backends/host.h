// What this machine is, as the CPU backend and the tuning database see it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::backend {

/// The host CPU: what LLVM targets (triple, CPU name, ISA features) and what schedules care
/// about (cores, cache sizes, vector width). Fields that cannot be read are 0 or empty.
struct HostInfo {
    std::string triple;                ///< LLVM target triple, e.g. "x86_64-pc-linux-gnu".
    std::string cpu_name;              ///< LLVM CPU name, e.g. "znver3".
    std::vector<std::string> features; ///< Enabled LLVM features without '+', sorted.
    int cores = 1; ///< Physical cores available to this process (SMT siblings once).
    int64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0; ///< Per cache instance of cpu0.
    int vector_bits = 128;      ///< Widest SIMD register: 512 (AVX-512F), 256 (AVX), 128 otherwise.
    std::string cpu_model_name; ///< "model name" from /proc/cpuinfo.

    /// Whether `name` (an LLVM feature name such as "avx2") is enabled.
    bool has_feature(const std::string& name) const;
    /// Matrix tiles for 8-bit products: x86 AMX-INT8 (amx-int8 and amx-tile).
    bool has_u8s8_tiles() const { return has_feature("amx-int8") && has_feature("amx-tile"); }
    /// Matrix tiles for bf16 products: x86 AMX-BF16 (amx-bf16 and amx-tile).
    bool has_bf16_tiles() const { return has_feature("amx-bf16") && has_feature("amx-tile"); }
};

/// The host, detected once (thread-safe) and cached for the process lifetime.
const HostInfo& host_info();

} // namespace tessera::backend
