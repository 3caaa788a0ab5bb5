// The hardware fingerprint: which machine a measurement was taken on (issue 6, item 1).
//
// A record stores the short hash (exact-machine lookup) and the ISA class (lookup on a
// different machine of the same kind: same target triple and the same codegen-relevant vector
// ISA features). The canonical text is what the hash is computed from; `tessera hw` shows it.
//
// GPU fields (name, SM architecture, memory, driver and CUDA versions) are part of the struct
// but left empty until the CUDA backend exists; empty fields print as "" in the canonical text,
// so adding GPU detection later changes the fingerprints of GPU machines only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::backend {
struct CpuInfo;
}

namespace tessera::tune {

/// What identifies a machine for tuning purposes. Fields that cannot be read are 0 or empty.
struct HardwareFingerprint {
    std::string triple;         ///< LLVM target triple, e.g. "x86_64-pc-linux-gnu".
    std::string cpu_vendor;     ///< "vendor_id" of /proc/cpuinfo, e.g. "GenuineIntel".
    std::string cpu_model_name; ///< "model name" of /proc/cpuinfo.
    std::string cpu_name;       ///< LLVM CPU name, e.g. "skylake-avx512".
    int cpu_family = 0, cpu_model = 0, cpu_stepping = 0; ///< x86 family/model/stepping.
    std::vector<std::string> features;                   ///< Enabled LLVM ISA features, sorted.
    int cores = 0; ///< Physical cores available to this process.
    int64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;
    // GPU: empty until GPU detection exists (see the file comment).
    std::string gpu_name, gpu_arch, gpu_driver, cuda_version;
    int64_t gpu_memory_bytes = 0;

    /// One `key=value` line per field, fixed order, each ending in '\n'; features joined by
    /// ','. Deterministic: equal fingerprints give equal texts on every platform.
    std::string canonical_text() const;
    /// First 16 hex digits of the SHA-256 of canonical_text().
    std::string hash() const;
    /// `<triple>;<sorted vector ISA features joined by ','>`: machines of one class run each
    /// other's schedules with the same codegen (e.g. "x86_64-pc-linux-gnu;avx,avx2,fma").
    std::string isa_class() const;
};

/// The fingerprint of a described host (family/model/stepping and vendor from `cpuinfo_text`,
/// the text of /proc/cpuinfo; empty text leaves them 0/empty). Pure: for tests and tools.
HardwareFingerprint make_fingerprint(const backend::CpuInfo& host,
                                     const std::string& cpuinfo_text);

/// This machine's fingerprint, detected once (thread-safe) and cached.
const HardwareFingerprint& host_fingerprint();

/// Whether an LLVM feature name is one the ISA class keeps: vector and matrix extensions that
/// change generated code (sse*, avx*, fma, f16c, amx*, neon, sve*, ...).
bool is_codegen_isa_feature(const std::string& feature);

} // namespace tessera::tune
