// Runs generated CUDA C on the CPU, for machines without a GPU: the source is compiled by the
// host C++ compiler with a small shim (blockIdx/threadIdx thread-locals, __shared__ arrays
// shared by the threads of the running block, __syncthreads a real barrier across one OS
// thread per CUDA thread; blocks run one after another). It checks what the codegen decides -
// launch dimensions, index binding, guards, shared-memory regions, barrier placement - against
// the reference. f32 buffers only; no f16.
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/backends/cuda.h"
#include "tessera/support/error.h"

namespace tessera::testing {

inline const char* kCudaCpuShim = R"(#include <math.h>
#include <cstring>
#include <barrier>
#include <thread>
#include <vector>
#include <algorithm>
struct tessera_dim3 { unsigned x = 0, y = 0, z = 0; };
static thread_local tessera_dim3 threadIdx, blockIdx;
static std::barrier<>* tessera_block_barrier = nullptr;
static inline void __syncthreads() { tessera_block_barrier->arrive_and_wait(); }
static inline float __int_as_float(unsigned v) { float f; std::memcpy(&f, &v, 4); return f; }
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(n)
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
)";

/// Emulates src (from codegen_cuda) on host buffers: args[i] = data of src.params[i].
inline void emulate_on_cpu(const backend::cuda::CudaSource& src, std::vector<void*>& args) {
    std::string code = src.code;
    const std::string inc = "#include <cuda_fp16.h>\n";
    const size_t at = code.find(inc);
    TESSERA_CHECK(at != std::string::npos) << "no prelude";
    code.replace(at, inc.size(), kCudaCpuShim);
    std::ostringstream launcher;
    launcher << "extern \"C\" void tessera_emulate(void** args, void** work) {\n";
    for (const auto& k : src.kernels) {
        std::ostringstream call;
        call << k.name << "(";
        size_t i = 0;
        for (; i < src.params.size(); ++i)
            call << (i ? ", " : "") << "(float*)args[" << i << "]";
        for (size_t w = 0; w < src.workspaces.size(); ++w, ++i)
            call << (i ? ", " : "") << "(float*)work[" << w << "]";
        call << ")";
        const auto& g = k.dims.grid;
        const auto& b = k.dims.block;
        launcher << "  for (unsigned bz = 0; bz < " << g[2] << "; ++bz)\n"
                 << "  for (unsigned by = 0; by < " << g[1] << "; ++by)\n"
                 << "  for (unsigned bx = 0; bx < " << g[0] << "; ++bx) {\n"
                 << "    std::barrier<> bar(" << k.dims.threads_per_block() << ");\n"
                 << "    tessera_block_barrier = &bar;\n"
                 << "    std::vector<std::thread> ts;\n"
                 << "    for (unsigned tz = 0; tz < " << b[2] << "; ++tz)\n"
                 << "    for (unsigned ty = 0; ty < " << b[1] << "; ++ty)\n"
                 << "    for (unsigned tx = 0; tx < " << b[0] << "; ++tx)\n"
                 << "      ts.emplace_back([=] { blockIdx = {bx, by, bz}; threadIdx = {tx, ty, tz}; "
                 << call.str() << "; });\n"
                 << "    for (auto& t : ts) t.join();\n"
                 << "  }\n";
    }
    launcher << "}\n";
    code += launcher.str();

    static int counter = 0;
    const std::string base = "/tmp/tessera_cuda_emu_" + std::to_string(::getpid()) + "_" +
                             std::to_string(counter++);
    {
        std::ofstream out(base + ".cpp");
        out << code;
    }
    const std::string cmd = "c++ -std=c++20 -O0 -w -shared -fPIC -pthread -o " + base + ".so " +
                            base + ".cpp 2> " + base + ".log";
    if (std::system(cmd.c_str()) != 0) {
        std::ifstream log(base + ".log");
        std::stringstream text;
        text << log.rdbuf();
        TESSERA_UNREACHABLE() << "host compiler rejected the emulated CUDA:\n"
                              << text.str() << "\n"
                              << code;
    }
    void* lib = dlopen((base + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
    TESSERA_CHECK(lib) << dlerror();
    auto fn = reinterpret_cast<void (*)(void**, void**)>(dlsym(lib, "tessera_emulate"));
    TESSERA_CHECK(fn) << "no tessera_emulate";
    std::vector<std::vector<char>> work;
    std::vector<void*> work_ptrs;
    for (const auto& w : src.workspaces) {
        work.emplace_back(w->num_elements() * w.dtype().bytes());
        work_ptrs.push_back(work.back().data());
    }
    fn(args.data(), work_ptrs.data());
    dlclose(lib);
    for (const char* ext : {".cpp", ".so", ".log"})
        std::remove((base + ext).c_str());
}

} // namespace tessera::testing
