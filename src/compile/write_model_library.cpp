// Phase 2 of a model build: code generation of every kernel, the data object and the link
// into one shared library (model_compiler.h).
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <thread>

#include <unistd.h>

#include "tessera/backends/host.h"
#include "tessera/backends/llvm.h"
#include "tessera/backends/model_object.h"
#include "tessera/compile/model_compiler.h"
#include "tessera/runtime/checksum.h"
#include "tessera/support/error.h"
#include "tessera/support/replace_file.h"

#ifdef TESSERA_HAVE_CUDA
#include "tessera/backends/cuda.h"
#endif

#ifndef TESSERA_RUNTIME_ARCHIVE
#error "TESSERA_RUNTIME_ARCHIVE (the path of libtessera_runtime.a) must be defined by CMake"
#endif

namespace tessera::compile {

namespace {

using Clock = std::chrono::steady_clock;

/// A private temporary directory, removed with everything in it when this goes away.
class TempDir {
  public:
    TempDir() {
        const char* tmp = std::getenv("TMPDIR");
        std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/tessera_build_XXXXXX";
        std::vector<char> buf(pattern.begin(), pattern.end());
        buf.push_back('\0');
        if (!mkdtemp(buf.data()))
            throw UserError() << "cannot create a temporary directory like '" << pattern
                              << "': " << std::strerror(errno);
        path_ = buf.data();
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return path_; }

  private:
    std::string path_;
};

/// Runs work(k) for k in [0, n) on `jobs` threads taking indices from a shared queue (one
/// kernel can take far longer than the others, as a heavily unrolled tuned kernel can);
/// rethrows the first failure in index order.
template <typename Work> void for_each_parallel(size_t n, int jobs, Work&& work) {
    std::vector<std::exception_ptr> errors(n);
    std::atomic<size_t> next{0};
    auto worker = [&] {
        for (size_t k; (k = next.fetch_add(1)) < n;) {
            try {
                work(k);
            } catch (...) {
                errors[k] = std::current_exception();
            }
        }
    };
    std::vector<std::thread> threads;
    const size_t workers = std::min(n, static_cast<size_t>(std::max(1, jobs)));
    for (size_t t = 0; t < workers; ++t)
        threads.emplace_back(worker);
    for (auto& t : threads)
        t.join();
    for (const auto& e : errors)
        if (e)
            std::rethrow_exception(e);
}

/// Compiles every kernel into its own object file, `jobs` at a time; returns their paths in
/// kernel order.
std::vector<std::string> compile_all_kernels(const std::vector<TaskBuild>& tasks, int jobs,
                                             const std::string& dir,
                                             const backend::CompileOptions& co) {
    std::vector<std::string> objects(tasks.size());
    for_each_parallel(tasks.size(), jobs, [&](size_t k) {
        objects[k] = dir + "/kernel_" + std::to_string(k) + ".o";
        backend::emit_object_file({tasks[k].kernel}, objects[k], co);
    });
    return objects;
}

/// NVRTC cubins of every task of a Cuda build, `jobs` at a time, in task order.
std::vector<std::string> compile_all_cubins(const ModelBuild& build, int jobs) {
#ifdef TESSERA_HAVE_CUDA
    std::vector<std::string> cubins(build.tasks.size());
    for_each_parallel(cubins.size(), jobs, [&](size_t k) {
        backend::cuda::NvrtcOptions o;
        o.arch = build.target.arch;
        o.want_ptx = false;
        const std::string name = kernel_symbol(static_cast<int>(k));
        try {
            cubins[k] = backend::cuda::nvrtc_compile(build.tasks[k].cuda_code, name, o).cubin;
        } catch (const UserError& e) {
            throw UserError() << "task " << k << " (" << build.tasks[k].task.pattern
                              << "): NVRTC cannot compile its CUDA code for " << build.target.arch
                              << ": " << e.what();
        }
    });
    return cubins;
#else
    (void)build;
    (void)jobs;
    throw UserError() << "target cuda: this tessera was built without the CUDA toolkit";
#endif
}

} // namespace

std::string runtime_archive_for(const Target& cpu, const std::string& host_archive) {
    const std::string triple = backend::describe_cpu(cpu).triple;
    if (triple == backend::host_info().triple)
        return host_archive.empty() ? std::string(TESSERA_RUNTIME_ARCHIVE) : host_archive;
    std::string have = backend::host_info().triple;
#ifdef TESSERA_RUNTIME_ARCHIVE_AARCH64
    if (triple.rfind("aarch64", 0) == 0)
        return TESSERA_RUNTIME_ARCHIVE_AARCH64;
    have += " and aarch64";
#endif
    throw UserError() << "target '" << cpu.str() << "': this tessera has no runtime for "
                      << triple << " (it has " << have
                      << "; aarch64 needs clang-19, libc6-dev-arm64-cross and "
                         "libstdc++-12-dev-arm64-cross when tessera is built: scripts/setup.sh "
                         "installs them)";
}

void check_output_writable(const std::string& so_path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (so_path.empty())
        throw UserError() << "the output path is empty";
    if (fs::is_directory(so_path, ec))
        throw UserError() << "cannot write '" << so_path << "': it is a directory";
    // The library is linked beside the output and renamed over it.
    check_replaceable(so_path);
    fs::path dir = fs::path(so_path).parent_path();
    if (dir.empty())
        dir = ".";
    if (!fs::is_directory(dir, ec))
        throw UserError() << "cannot write '" << so_path << "': no directory " << dir.string();
    if (access(dir.c_str(), W_OK) != 0)
        throw UserError() << "cannot write '" << so_path << "': " << std::strerror(errno);
}

LibrarySummary write_model_library(const ModelBuild& build, const std::string& so_path,
                                   const BuildOptions& opts) {
    const Clock::time_point t0 = Clock::now();
    if (opts.jobs < 0)
        throw UserError() << "jobs must be >= 0, got " << opts.jobs;
    check_output_writable(so_path);

    const int jobs = opts.jobs > 0
                         ? opts.jobs
                         : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    TempDir tmp;
    std::vector<uint8_t> weights;
    std::vector<std::string> objects;
    backend::ModelDataObject data;
    runtime::ModelPlan plan;
    // The library's own code (runtime, data, the kernels of a CPU build) is for the CPU that
    // loads it: a Cuda library is for this host.
    const Target cpu = build.target.is_llvm() ? build.target : Target{};
    const backend::CompileOptions co = backend::compile_options_for(cpu);
    const std::string runtime_archive = runtime_archive_for(cpu, opts.runtime_archive);
    if (build.target.is_cuda()) {
        // The kernels are cubins inside the data object; the library holds no host kernels.
        const std::vector<std::string> cubins = compile_all_cubins(build, jobs);
        plan = make_model_plan(build, weights, cubins, &data.cubins);
    } else {
        plan = make_model_plan(build, weights);
        objects = compile_all_kernels(build.tasks, jobs, tmp.path(), co);
        data.kernel_symbols = plan.kernels;
    }
    plan.weights_checksum = runtime::content_checksum(weights.data(), weights.size());
    data.plan_bytes = runtime::serialize_plan(plan);
    data.weights = std::move(weights);
    const std::string data_obj = tmp.path() + "/model_data.o";
    backend::emit_model_data_object(data, data_obj, co);
    objects.push_back(data_obj);
    backend::link_model_library(objects, runtime_archive, so_path, co.triple);

    LibrarySummary s;
    s.so_path = so_path;
    s.weight_bytes = plan.weight_bytes;
    s.arena_bytes = plan.arena_bytes;
    s.num_kernels = static_cast<int>(plan.kernels.size());
    s.num_calls = static_cast<int>(plan.calls.size());
    s.codegen_secs = std::chrono::duration<double>(Clock::now() - t0).count();
    return s;
}

} // namespace tessera::compile
