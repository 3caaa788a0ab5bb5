// Runs generated CUDA C on the CPU, for machines without a GPU: the source is compiled by the
// host C++ compiler with a small shim (blockIdx/threadIdx thread-locals, __shared__ arrays
// shared by the threads of the running block, __syncthreads a real barrier across one OS
// thread per CUDA thread; blocks run one after another). It checks what the codegen decides -
// launch dimensions, index binding, guards, shared-memory regions, barrier placement - against
// the reference. f32 buffers only in emulate_on_cpu; EmulatedCuda takes any element type.
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
#include <utility>
struct tessera_dim3 { unsigned x = 0, y = 0, z = 0; };
static thread_local tessera_dim3 threadIdx, blockIdx;
static std::barrier<>* tessera_block_barrier = nullptr;
static inline void __syncthreads() { tessera_block_barrier->arrive_and_wait(); }
static inline float __int_as_float(unsigned v) { float f; std::memcpy(&f, &v, 4); return f; }
#include <condition_variable>
#include <mutex>
// Warp shuffles: the lanes named by the mask meet at a per-warp barrier (threadIdx.x only).
struct tessera_warp_state {
    std::mutex m;
    std::condition_variable cv;
    unsigned arrived = 0, generation = 0;
    double slots[32];
    void arrive(unsigned n) {
        std::unique_lock<std::mutex> lock(m);
        const unsigned gen = generation;
        if (++arrived == n) { arrived = 0; ++generation; cv.notify_all(); return; }
        cv.wait(lock, [&] { return generation != gen; });
    }
};
static tessera_warp_state tessera_warps[32];
struct float2 { float x, y; };
struct float4 { float x, y, z, w; };
// f16 through the host compiler's _Float16 (buffers hold IEEE halves, as on the device).
struct __half { _Float16 v; };
struct __half2 { __half x, y; };
static inline float __half2float(__half h) { return (float)h.v; }
static inline __half __float2half_rn(float f) { return __half{(_Float16)f}; }
// cuda_fp16.h's operators on __half (what generated code may use directly, e.g. tessera_max).
static inline bool operator<(__half a, __half b) { return a.v < b.v; }
static inline bool operator>(__half a, __half b) { return a.v > b.v; }
static inline bool operator<=(__half a, __half b) { return a.v <= b.v; }
static inline bool operator>=(__half a, __half b) { return a.v >= b.v; }
static inline bool operator==(__half a, __half b) { return a.v == b.v; }
static inline bool operator!=(__half a, __half b) { return a.v != b.v; }
template <typename T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned delta) {
    const unsigned lane = threadIdx.x % 32, n = __builtin_popcount(mask);
    tessera_warp_state& w = tessera_warps[threadIdx.x / 32];
    w.slots[lane] = (double)v;
    w.arrive(n);
    const T r = lane + delta < 32 ? (T)w.slots[lane + delta] : v;
    w.arrive(n); // nobody overwrites a slot before every lane has read
    return r;
}
// Tensor-core products (the codegen's tessera_mma_f16 / tessera_mma_tf32, device code only
// there): the 32 lanes of a warp (threadIdx.x; warps are rows of threadIdx.y, blockDim.x = 32)
// meet, each leaves its fragments, and each computes its accumulators from the tiles the
// fragments form, placed as the PTX ISA lays out mma.m16n8k16 / m16n8k8 fragments. Written
// from the ISA's tables, not from the code generator, so a fragment index the compiler gets
// wrong shows up as a wrong product.
struct tessera_mma_state {
    tessera_warp_state meet;
    float a[32][8], b[32][4];
};
static tessera_mma_state tessera_mma_warps[32];
static inline float tessera_tf32_round(float x) { // cvt.rna: nearest, ties away from zero
    unsigned u; std::memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
    float r; std::memcpy(&r, &u, 4); return r;
}
// k = 16 (f16) or 8 (tf32); a_at(g, t, i) and b_at(g, t, i) give the fragment element's (row,
// column) in A (16 x k) and B (k x 8).
template <int K, int NA, int NB, typename AAt, typename BAt>
static inline void tessera_mma_emulate(float* d[4], const float* a, const float* b, AAt a_at,
                                       BAt b_at) {
    const unsigned lane = threadIdx.x;
    tessera_mma_state& w = tessera_mma_warps[threadIdx.y];
    for (int i = 0; i < NA; ++i) w.a[lane][i] = a[i];
    for (int i = 0; i < NB; ++i) w.b[lane][i] = b[i];
    w.meet.arrive(32);
    float A[16][16], B[16][8];
    for (int l = 0; l < 32; ++l) {
        for (int i = 0; i < NA; ++i) {
            const auto rc = a_at(l / 4, l % 4, i);
            A[rc.first][rc.second] = w.a[l][i];
        }
        for (int i = 0; i < NB; ++i) {
            const auto rc = b_at(l / 4, l % 4, i);
            B[rc.first][rc.second] = w.b[l][i];
        }
    }
    w.meet.arrive(32); // nobody refills the fragments before every lane has read them
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) { // c0, c1: row g; c2, c3: row g + 8; columns 2t, 2t + 1
        const int row = g + 8 * (i / 2), col = 2 * t + i % 2;
        float s = 0.0f;
        for (int k = 0; k < K; ++k) s += A[row][k] * B[k][col];
        *d[i] += s;
    }
}
static inline unsigned tessera_pack_half2(__half lo, __half hi) {
    unsigned short l, h;
    std::memcpy(&l, &lo, 2);
    std::memcpy(&h, &hi, 2);
    return l | (unsigned)h << 16;
}
static inline float tessera_half_of(unsigned r, int i) { // the low (i = 0) or high f16 of r
    const unsigned short bits = i ? (unsigned short)(r >> 16) : (unsigned short)r;
    __half h;
    std::memcpy(&h, &bits, 2);
    return __half2float(h);
}
static inline void tessera_mma_f16(float& d0, float& d1, float& d2, float& d3,
    unsigned a01, unsigned a23, unsigned a45, unsigned a67, unsigned b01, unsigned b23) {
    float* d[4] = {&d0, &d1, &d2, &d3};
    const unsigned ra[4] = {a01, a23, a45, a67}, rb[2] = {b01, b23};
    float a[8], b[4]; // a0..a7, b0..b3: element 2j in the low half of register j
    for (int i = 0; i < 8; ++i) a[i] = tessera_half_of(ra[i / 2], i % 2);
    for (int i = 0; i < 4; ++i) b[i] = tessera_half_of(rb[i / 2], i % 2);
    // A: a0..a3 columns 2t, 2t + 1 of rows g, g + 8 (pairs); a4..a7 the same 8 columns on.
    // B: b0, b1 rows 2t, 2t + 1 of column g; b2, b3 rows 8 on.
    tessera_mma_emulate<16, 8, 4>(d, a, b,
        [](int g, int t, int i) {
            return std::make_pair(g + 8 * ((i / 2) % 2), 2 * t + i % 2 + 8 * (i / 4));
        },
        [](int g, int t, int i) { return std::make_pair(2 * t + i % 2 + 8 * (i / 2), g); });
}
static inline void tessera_mma_tf32(float& d0, float& d1, float& d2, float& d3,
    float a0, float a1, float a2, float a3, float b0, float b1) {
    float* d[4] = {&d0, &d1, &d2, &d3};
    const float a[4] = {tessera_tf32_round(a0), tessera_tf32_round(a1), tessera_tf32_round(a2),
                        tessera_tf32_round(a3)};
    const float b[2] = {tessera_tf32_round(b0), tessera_tf32_round(b1)};
    // A: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4); B: b0 (t, g), b1 (t + 4, g).
    tessera_mma_emulate<8, 4, 2>(d, a, b,
        [](int g, int t, int i) { return std::make_pair(g + 8 * (i % 2), t + 4 * (i / 2)); },
        [](int g, int t, int i) { return std::make_pair(t + 4 * i, g); });
}
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(n)
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
)";

namespace emulation_detail {

/// The generated code with its CUDA header include replaced by the CPU shim, then `extra`.
inline std::string with_cpu_shim(const std::string& code, const std::string& extra = "") {
    std::string out = code;
    const std::string inc = "#include <cuda_fp16.h>\n";
    const size_t at = out.find(inc);
    TESSERA_CHECK(at != std::string::npos) << "no prelude";
    out.replace(at, inc.size(), std::string(kCudaCpuShim) + extra);
    return out;
}

/// The call of kernel `name` on the function's params then its workspaces, each argument
/// written as `open` + "args[i]" (or "work[w]") + `close`.
inline std::string kernel_call(const backend::cuda::CudaSource& src, const std::string& name,
                               const std::string& open, const std::string& close) {
    std::ostringstream call;
    call << name << "(";
    size_t i = 0;
    for (; i < src.params.size(); ++i)
        call << (i ? ", " : "") << open << "args[" << i << "]" << close;
    for (size_t w = 0; w < src.workspaces.size(); ++w, ++i)
        call << (i ? ", " : "") << open << "work[" << w << "]" << close;
    call << ")";
    return call.str();
}

/// An emulation compiled into a shared library and opened: its handle and tessera_emulate.
struct EmulationLibrary {
    void* lib = nullptr;
    void (*fn)(void**, void**) = nullptr;
};

/// Writes `code` to base.cpp, compiles it with the host compiler into base.so and opens it.
/// When the compiler rejects it: TESSERA_UNREACHABLE with "host compiler rejected <what>:",
/// the compiler's log and `appendix`.
inline EmulationLibrary compile_emulation(const std::string& code, const std::string& base,
                                          const std::string& what, const std::string& appendix) {
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
        TESSERA_UNREACHABLE() << "host compiler rejected " << what << ":\n"
                              << text.str() << appendix;
    }
    EmulationLibrary out;
    out.lib = dlopen((base + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
    TESSERA_CHECK(out.lib) << dlerror();
    out.fn = reinterpret_cast<void (*)(void**, void**)>(dlsym(out.lib, "tessera_emulate"));
    TESSERA_CHECK(out.fn) << "no tessera_emulate";
    return out;
}

/// Removes the files compile_emulation wrote for `base`.
inline void remove_emulation_files(const std::string& base) {
    for (const char* ext : {".cpp", ".so", ".log"})
        std::remove((base + ext).c_str());
}

} // namespace emulation_detail

/// Emulates src (from codegen_cuda) on host buffers: args[i] = data of src.params[i].
inline void emulate_on_cpu(const backend::cuda::CudaSource& src, std::vector<void*>& args) {
    std::string code = emulation_detail::with_cpu_shim(src.code);
    std::ostringstream launcher;
    launcher << "extern \"C\" void tessera_emulate(void** args, void** work) {\n";
    for (const auto& k : src.kernels) {
        const std::string call = emulation_detail::kernel_call(src, k.name, "(float*)", "");
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
                 << call << "; });\n"
                 << "    for (auto& t : ts) t.join();\n"
                 << "  }\n";
    }
    launcher << "}\n";
    code += launcher.str();

    static int counter = 0;
    const std::string base = "/tmp/tessera_cuda_emu_" + std::to_string(::getpid()) + "_" +
                             std::to_string(counter++);
    const emulation_detail::EmulationLibrary built =
        emulation_detail::compile_emulation(code, base, "the emulated CUDA", "\n" + code);
    std::vector<std::vector<char>> work;
    std::vector<void*> work_ptrs;
    for (const auto& w : src.workspaces) {
        work.emplace_back(w->num_elements() * w.dtype().bytes());
        work_ptrs.push_back(work.back().data());
    }
    built.fn(args.data(), work_ptrs.data());
    dlclose(built.lib);
    emulation_detail::remove_emulation_files(base);
}

/// The generated CUDA of one function compiled once for the CPU shim and run any number of
/// times (emulate_on_cpu compiles on every call): for chaining a whole model's kernels, where
/// one task runs in several calls. Buffers of any element type (the kernels' parameter types
/// come from the generated code). Removes its files when destroyed.
class EmulatedCuda {
  public:
    explicit EmulatedCuda(const backend::cuda::CudaSource& src) : src_(src) {
        std::string code = emulation_detail::with_cpu_shim(
            src.code, "struct tessera_any_ptr { void* p; template <typename T> operator T*() "
                      "const { return static_cast<T*>(p); } };\n");
        std::ostringstream launcher;
        launcher << "extern \"C\" void tessera_emulate(void** args, void** work) {\n";
        for (const auto& k : src.kernels) {
            const std::string call =
                emulation_detail::kernel_call(src, k.name, "tessera_any_ptr{", "}");
            const auto& g = k.dims.grid;
            const auto& b = k.dims.block;
            const std::string blocks = "    for (unsigned bz = 0; bz < " + std::to_string(g[2]) +
                                       "; ++bz)\n    for (unsigned by = 0; by < " +
                                       std::to_string(g[1]) + "; ++by)\n    for (unsigned bx = 0; bx < " +
                                       std::to_string(g[0]) + "; ++bx) {\n";
            const std::string threads = "    for (unsigned tz = 0; tz < " + std::to_string(b[2]) +
                                        "; ++tz)\n    for (unsigned ty = 0; ty < " +
                                        std::to_string(b[1]) + "; ++ty)\n    for (unsigned tx = 0; tx < " +
                                        std::to_string(b[0]) + "; ++tx)\n";
            if (!has_barrier(src.code, k.name)) {
                // No barrier: the threads of a block may run one after another.
                launcher << "  {\n" << blocks << threads << "      { blockIdx = {bx, by, bz}; "
                         << "threadIdx = {tx, ty, tz}; " << call << "; }\n    }\n  }\n";
                continue;
            }
            // One OS thread per CUDA thread, alive for the whole grid: each runs the blocks in
            // order and waits for the others at the end of each, so that no block's shared
            // arrays (statics) are touched while another block still uses them.
            launcher << "  {\n    std::barrier<> bar(" << k.dims.threads_per_block() << ");\n"
                     << "    tessera_block_barrier = &bar;\n    std::vector<std::thread> ts;\n"
                     << threads << "      ts.emplace_back([=, &bar] { threadIdx = {tx, ty, tz};\n"
                     << blocks << "        blockIdx = {bx, by, bz}; " << call
                     << "; bar.arrive_and_wait();\n    }\n      });\n"
                     << "    for (auto& t : ts) t.join();\n  }\n";
        }
        launcher << "}\n";
        code += launcher.str();
        static int counter = 0;
        base_ = "/tmp/tessera_cuda_emu_model_" + std::to_string(::getpid()) + "_" +
                std::to_string(counter++);
        const emulation_detail::EmulationLibrary built = emulation_detail::compile_emulation(
            code, base_, "the emulated CUDA of " + src.func_name, "");
        lib_ = built.lib;
        fn_ = built.fn;
        for (const auto& w : src.workspaces)
            work_.emplace_back(static_cast<size_t>(w->num_elements() * w.dtype().bytes()));
    }
    ~EmulatedCuda() {
        if (lib_)
            dlclose(lib_);
        emulation_detail::remove_emulation_files(base_);
    }
    EmulatedCuda(const EmulatedCuda&) = delete;
    EmulatedCuda& operator=(const EmulatedCuda&) = delete;

    /// Launches every kernel in order on args[i] = data of src.params[i] (workspaces are owned
    /// here, as a device function's are).
    void run(std::vector<void*>& args) {
        TESSERA_CHECK(args.size() == src_.params.size())
            << args.size() << " arguments for " << src_.params.size() << " params";
        std::vector<void*> work;
        for (auto& w : work_)
            work.push_back(w.data());
        fn_(args.data(), work.data());
    }

  private:
    /// Whether kernel `name`'s text (from its signature to the next kernel) has a barrier, a
    /// warp shuffle or a call of a reduction helper, any of which needs its threads to run at
    /// the same time.
    static bool has_barrier(const std::string& code, const std::string& name) {
        const size_t at = code.find(" " + name + "(");
        if (at == std::string::npos)
            return true; // unknown: keep the safe form
        const size_t end = code.find("extern \"C\"", at);
        const std::string body =
            code.substr(at, end == std::string::npos ? std::string::npos : end - at);
        // The prelude's cross-thread reduction helpers (tessera_warp_reduce,
        // tessera_block_reduce) shuffle and synchronize inside.
        return body.find("__syncthreads") != std::string::npos ||
               body.find("__shfl") != std::string::npos ||
               body.find("tessera_mma_") != std::string::npos ||
               body.find("_reduce(") != std::string::npos;
    }

    backend::cuda::CudaSource src_;
    std::string base_;
    void* lib_ = nullptr;
    void (*fn_)(void**, void**) = nullptr;
    std::vector<std::vector<char>> work_;
};

} // namespace tessera::testing
