// What code is generated for: one value, parsed from the strings users write after `--target`
// and written into tuning records.
//
//   llvm                                             this host's CPU
//   llvm -mcpu=skylake-avx512                        another CPU of this host's architecture
//   llvm -mcpu=znver4 -mattr=-avx512f                its features, some switched off
//   llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1   another architecture (cross-compiled)
//   llvm -num-cores=4                                the parallel split assumes 4 cores
//   cuda                                             NVIDIA GPU 0 of this machine (else sm_90)
//   cuda -arch=sm_80                                 an NVIDIA GPU architecture
//
// The option names are LLVM's (-mtriple, -mcpu, -mattr) and TVM's (-num-cores, -arch). "cpu"
// is accepted for "llvm". What an unset field means (the host's CPU, the device's architecture)
// is decided where the host is known: backend::describe_cpu (backends/host.h) and the tuner
// (tune::tune_target_for).
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

struct Target {
    enum class Kind : uint8_t {
        Llvm, ///< A CPU, through LLVM.
        Cuda, ///< An NVIDIA GPU, through CUDA C and NVRTC.
    };
    Kind kind = Kind::Llvm;
    std::string triple;   ///< Llvm: LLVM target triple; empty: this host's.
    std::string cpu;      ///< Llvm: LLVM CPU name; empty: this host's (or the triple's generic).
    std::string features; ///< Llvm: LLVM features to add or remove ("+avx2,-avx512f").
    int num_cores = 0;    ///< Llvm: cores the parallel split assumes; 0: the host's.
    std::string arch;     ///< Cuda: "sm_<digits>"; empty: GPU 0's, else sm_90.

    bool is_cuda() const { return kind == Kind::Cuda; }
    bool is_llvm() const { return kind == Kind::Llvm; }
    /// The canonical text: the kind, then each set field in the fixed order -mtriple, -mcpu,
    /// -mattr, -num-cores, -arch. parse_target(t.str()) == t.
    std::string str() const;
    bool operator==(const Target& o) const;
    bool operator!=(const Target& o) const { return !(*this == o); }
};

/// Parses a target string (the file comment). Options may repeat (the last wins) and take
/// `-opt=value` or `-opt value`; a leading "--" works like "-". Throws UserError naming the
/// string and the offending word: an unknown kind or option, an option of the other kind
/// (-arch on llvm), an empty value, -num-cores outside 1..4096, an -arch not sm_<digits>, a
/// -mattr entry without + or -.
Target parse_target(const std::string& text);

/// Whether `arch` names an NVIDIA architecture as -arch takes it: "sm_" and digits.
bool is_cuda_arch(const std::string& arch);

/// "llvm" or "cuda".
const char* to_string(Target::Kind kind);

} // namespace tessera
