// CUDA C to PTX and cubin with NVRTC (no GPU needed).
#include "tessera/backends/cuda.h"

#include <nvrtc.h>

#include <memory>

#include "tessera/support/error.h"

#ifndef TESSERA_CUDA_INCLUDE_DIR
#error "TESSERA_CUDA_INCLUDE_DIR must name the CUDA toolkit's include directory"
#endif

namespace tessera::backend::cuda {
namespace {

/// Destroys the NVRTC program on every path out.
struct ProgramGuard {
    nvrtcProgram prog = nullptr;
    ~ProgramGuard() {
        if (prog)
            nvrtcDestroyProgram(&prog);
    }
};

std::string program_log(nvrtcProgram prog) {
    size_t size = 0;
    if (nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size <= 1)
        return "";
    std::string log(size, '\0');
    if (nvrtcGetProgramLog(prog, log.data()) != NVRTC_SUCCESS)
        return "";
    log.resize(size - 1); // drop the terminating NUL
    return log;
}

void check(nvrtcResult r, const char* what) {
    TESSERA_CHECK(r == NVRTC_SUCCESS) << what << ": " << nvrtcGetErrorString(r);
}

/// Compiles once for `arch`; returns the program (compiled) or throws with the log.
void compile(ProgramGuard& g, const std::string& code, const std::string& name,
             const std::string& arch, bool fast_math) {
    check(nvrtcCreateProgram(&g.prog, code.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr),
          "nvrtcCreateProgram");
    const std::string arch_opt = "--gpu-architecture=" + arch;
    const std::string include_opt = std::string("-I") + TESSERA_CUDA_INCLUDE_DIR;
    std::vector<const char*> opts = {arch_opt.c_str(), include_opt.c_str(), "--std=c++17",
                                     "-default-device"};
    if (fast_math)
        opts.push_back("--use_fast_math");
    const nvrtcResult r = nvrtcCompileProgram(g.prog, static_cast<int>(opts.size()), opts.data());
    if (r != NVRTC_SUCCESS)
        throw UserError() << "NVRTC failed to compile " << name << " for " << arch << " ("
                          << nvrtcGetErrorString(r) << "):\n"
                          << program_log(g.prog);
}

} // namespace

NvrtcResult nvrtc_compile(const std::string& code, const std::string& program_name,
                          const NvrtcOptions& opts) {
    if (opts.arch.rfind("sm_", 0) != 0)
        throw UserError() << "NVRTC target '" << opts.arch
                          << "' is not a real architecture (want sm_XX, e.g. sm_90)";
    NvrtcResult out;
    ProgramGuard g;
    compile(g, code, program_name, opts.arch, opts.fast_math);
    out.log = program_log(g.prog);
    size_t size = 0;
    check(nvrtcGetCUBINSize(g.prog, &size), "nvrtcGetCUBINSize");
    // A virtual architecture yields success with no cubin: never hand back nothing.
    if (size == 0)
        throw UserError() << "NVRTC produced an empty cubin for " << program_name << " ("
                          << opts.arch << ")";
    out.cubin.resize(size);
    check(nvrtcGetCUBIN(g.prog, out.cubin.data()), "nvrtcGetCUBIN");
    if (opts.want_ptx) {
        // A real architecture keeps the PTX it assembled the cubin from.
        check(nvrtcGetPTXSize(g.prog, &size), "nvrtcGetPTXSize");
        out.ptx.resize(size);
        check(nvrtcGetPTX(g.prog, out.ptx.data()), "nvrtcGetPTX");
        if (!out.ptx.empty() && out.ptx.back() == '\0')
            out.ptx.pop_back();
    }
    return out;
}

std::string nvrtc_version() {
    int major = 0, minor = 0;
    check(nvrtcVersion(&major, &minor), "nvrtcVersion");
    return std::to_string(major) + "." + std::to_string(minor);
}

} // namespace tessera::backend::cuda
