// The CUDA driver API through dlopen: no link-time libcuda, so machines without a driver still
// run tessera (and the GPU tests skip with the reason).
#include "tessera/backends/cuda_driver.h"

#include <dlfcn.h>

#include <algorithm>
#include <mutex>

#include "tessera/support/error.h"

namespace tessera::backend::cuda {

/// The driver entry points we use, with the driver's ABI spelled in plain types (handles are
/// pointers, CUdeviceptr is 64-bit), so no CUDA header decides which symbol versions we get.
struct CudaDriver::Api {
    using Result = int; // CUresult; 0 = CUDA_SUCCESS
    void* lib = nullptr;
    Result (*cuInit)(unsigned) = nullptr;
    Result (*cuDriverGetVersion)(int*) = nullptr;
    Result (*cuDeviceGetCount)(int*) = nullptr;
    Result (*cuDeviceGet)(int*, int) = nullptr;
    Result (*cuDeviceGetName)(char*, int, int) = nullptr;
    Result (*cuDeviceGetAttribute)(int*, int, int) = nullptr;
    Result (*cuDeviceTotalMem)(size_t*, int) = nullptr;
    Result (*cuDevicePrimaryCtxRetain)(void**, int) = nullptr;
    Result (*cuCtxSetCurrent)(void*) = nullptr;
    Result (*cuCtxSynchronize)() = nullptr;
    Result (*cuMemAlloc)(uint64_t*, size_t) = nullptr;
    Result (*cuMemFree)(uint64_t) = nullptr;
    Result (*cuMemcpyHtoD)(uint64_t, const void*, size_t) = nullptr;
    Result (*cuMemcpyDtoH)(void*, uint64_t, size_t) = nullptr;
    Result (*cuModuleLoadData)(void**, const void*) = nullptr;
    Result (*cuModuleUnload)(void*) = nullptr;
    Result (*cuModuleGetFunction)(void**, void*, const char*) = nullptr;
    Result (*cuLaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, void*, void**, void**) = nullptr;
    Result (*cuEventCreate)(void**, unsigned) = nullptr;
    Result (*cuEventRecord)(void*, void*) = nullptr;
    Result (*cuEventSynchronize)(void*) = nullptr;
    Result (*cuEventElapsedTime)(float*, void*, void*) = nullptr;
    Result (*cuEventDestroy)(void*) = nullptr;
    Result (*cuGetErrorName)(Result, const char**) = nullptr;
    void* ctx = nullptr;
    int device = 0;

    /// Throws UserError naming the call and the driver's error name.
    void check(Result r, const char* what) const {
        if (r == 0)
            return;
        const char* name = nullptr;
        if (!cuGetErrorName || cuGetErrorName(r, &name) != 0 || !name)
            name = "unknown error";
        throw UserError() << "CUDA driver call " << what << " failed: " << name << " (" << r
                          << ")";
    }
};

namespace {

/// The first of `names` the library exports (newer driver ABIs carry a _v2 suffix).
template <typename Fn> bool resolve(void* lib, Fn& fn, std::initializer_list<const char*> names) {
    for (const char* n : names)
        if (void* p = dlsym(lib, n)) {
            fn = reinterpret_cast<Fn>(p);
            return true;
        }
    return false;
}

// CUdevice_attribute values (stable across driver versions).
constexpr int kAttrMaxThreadsPerBlock = 1;
constexpr int kAttrMaxSharedPerBlock = 8;
constexpr int kAttrClockRate = 13;
constexpr int kAttrSmCount = 16;
constexpr int kAttrCcMajor = 75;
constexpr int kAttrCcMinor = 76;

} // namespace

CudaDriver& CudaDriver::get() {
    static CudaDriver driver;
    return driver;
}

CudaDriver::CudaDriver() : api_(std::make_unique<Api>()) {
    Api& a = *api_;
    a.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!a.lib) {
        reason_ = "no CUDA driver (libcuda.so.1 not found)";
        return;
    }
    bool ok = resolve(a.lib, a.cuInit, {"cuInit"}) &&
              resolve(a.lib, a.cuDriverGetVersion, {"cuDriverGetVersion"}) &&
              resolve(a.lib, a.cuDeviceGetCount, {"cuDeviceGetCount"}) &&
              resolve(a.lib, a.cuDeviceGet, {"cuDeviceGet"}) &&
              resolve(a.lib, a.cuDeviceGetName, {"cuDeviceGetName"}) &&
              resolve(a.lib, a.cuDeviceGetAttribute, {"cuDeviceGetAttribute"}) &&
              resolve(a.lib, a.cuDeviceTotalMem, {"cuDeviceTotalMem_v2", "cuDeviceTotalMem"}) &&
              resolve(a.lib, a.cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}) &&
              resolve(a.lib, a.cuCtxSetCurrent, {"cuCtxSetCurrent"}) &&
              resolve(a.lib, a.cuCtxSynchronize, {"cuCtxSynchronize"}) &&
              resolve(a.lib, a.cuMemAlloc, {"cuMemAlloc_v2"}) &&
              resolve(a.lib, a.cuMemFree, {"cuMemFree_v2"}) &&
              resolve(a.lib, a.cuMemcpyHtoD, {"cuMemcpyHtoD_v2"}) &&
              resolve(a.lib, a.cuMemcpyDtoH, {"cuMemcpyDtoH_v2"}) &&
              resolve(a.lib, a.cuModuleLoadData, {"cuModuleLoadData"}) &&
              resolve(a.lib, a.cuModuleUnload, {"cuModuleUnload"}) &&
              resolve(a.lib, a.cuModuleGetFunction, {"cuModuleGetFunction"}) &&
              resolve(a.lib, a.cuLaunchKernel, {"cuLaunchKernel"}) &&
              resolve(a.lib, a.cuEventCreate, {"cuEventCreate"}) &&
              resolve(a.lib, a.cuEventRecord, {"cuEventRecord"}) &&
              resolve(a.lib, a.cuEventSynchronize, {"cuEventSynchronize"}) &&
              resolve(a.lib, a.cuEventElapsedTime,
                      {"cuEventElapsedTime_v2", "cuEventElapsedTime"}) &&
              resolve(a.lib, a.cuEventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"}) &&
              resolve(a.lib, a.cuGetErrorName, {"cuGetErrorName"});
    if (!ok) {
        reason_ = "CUDA driver lacks an entry point tessera needs (driver too old?)";
        return;
    }
    if (int r = a.cuInit(0); r != 0) {
        reason_ = r == 34   ? "no CUDA driver (only the toolkit's stub libcuda)"
                  : r == 100 ? "no CUDA device"
                             : "cuInit failed with CUDA error " + std::to_string(r);
        return;
    }
    int count = 0;
    if (a.cuDeviceGetCount(&count) != 0 || count == 0) {
        reason_ = "no CUDA device";
        return;
    }
    try {
        a.check(a.cuDeviceGet(&a.device, 0), "cuDeviceGet");
        char name[256] = {};
        a.check(a.cuDeviceGetName(name, sizeof name, a.device), "cuDeviceGetName");
        info_.name = name;
        a.check(a.cuDriverGetVersion(&info_.driver_version), "cuDriverGetVersion");
        auto attr = [&](int which) {
            int v = 0;
            a.check(a.cuDeviceGetAttribute(&v, which, a.device), "cuDeviceGetAttribute");
            return v;
        };
        info_.cc_major = attr(kAttrCcMajor);
        info_.cc_minor = attr(kAttrCcMinor);
        info_.sm_count = attr(kAttrSmCount);
        info_.max_threads_per_block = attr(kAttrMaxThreadsPerBlock);
        info_.max_shared_per_block = attr(kAttrMaxSharedPerBlock);
        info_.clock_khz = attr(kAttrClockRate);
        size_t mem = 0;
        a.check(a.cuDeviceTotalMem(&mem, a.device), "cuDeviceTotalMem");
        info_.total_memory_bytes = static_cast<int64_t>(mem);
        a.check(a.cuDevicePrimaryCtxRetain(&a.ctx, a.device), "cuDevicePrimaryCtxRetain");
        a.check(a.cuCtxSetCurrent(a.ctx), "cuCtxSetCurrent");
    } catch (const UserError& e) {
        reason_ = e.what();
    }
}

void CudaDriver::require() const {
    if (!available())
        throw UserError() << "CUDA unavailable: " << reason_;
    // The primary context is per process; make it current on the calling thread.
    api_->check(api_->cuCtxSetCurrent(api_->ctx), "cuCtxSetCurrent");
}

const DeviceInfo& CudaDriver::device() const {
    require();
    return info_;
}

// ---- DeviceBuffer ----------------------------------------------------------------------------

DeviceBuffer::DeviceBuffer(int64_t bytes) : bytes_(bytes) {
    const CudaDriver& d = CudaDriver::get();
    d.require();
    d.api().check(d.api().cuMemAlloc(&ptr_, static_cast<size_t>(std::max<int64_t>(bytes, 1))),
                  "cuMemAlloc");
}

DeviceBuffer::~DeviceBuffer() {
    if (ptr_)
        CudaDriver::get().api().cuMemFree(ptr_);
}

void DeviceBuffer::copy_from_host(const void* src, int64_t bytes) {
    TESSERA_CHECK(bytes <= bytes_) << "copy of " << bytes << " bytes into " << bytes_;
    const auto& a = CudaDriver::get().api();
    a.check(a.cuMemcpyHtoD(ptr_, src, static_cast<size_t>(bytes)), "cuMemcpyHtoD");
}

void DeviceBuffer::copy_to_host(void* dst, int64_t bytes) const {
    TESSERA_CHECK(bytes <= bytes_) << "copy of " << bytes << " bytes out of " << bytes_;
    const auto& a = CudaDriver::get().api();
    a.check(a.cuMemcpyDtoH(dst, ptr_, static_cast<size_t>(bytes)), "cuMemcpyDtoH");
}

// ---- DeviceFunction --------------------------------------------------------------------------

struct DeviceFunction::Impl {
    CudaSource src;
    void* module = nullptr;
    std::vector<void*> functions;
    std::vector<std::unique_ptr<DeviceBuffer>> buffers; // params, then workspaces
    std::vector<uint64_t> ptrs;
    std::vector<void*> arg_ptrs;
};

DeviceFunction::DeviceFunction(const CudaSource& src, const std::string& cubin)
    : impl_(std::make_unique<Impl>()) {
    const CudaDriver& d = CudaDriver::get();
    d.require();
    const auto& a = d.api();
    impl_->src = src;
    a.check(a.cuModuleLoadData(&impl_->module, cubin.data()), "cuModuleLoadData");
    for (const KernelInfo& k : src.kernels) {
        void* fn = nullptr;
        a.check(a.cuModuleGetFunction(&fn, impl_->module, k.name.c_str()), "cuModuleGetFunction");
        impl_->functions.push_back(fn);
    }
    std::vector<ir::Buffer> all = src.params;
    all.insert(all.end(), src.workspaces.begin(), src.workspaces.end());
    for (const ir::Buffer& b : all)
        impl_->buffers.push_back(
            std::make_unique<DeviceBuffer>(b->num_elements() * b.dtype().bytes()));
    for (const auto& b : impl_->buffers)
        impl_->ptrs.push_back(b->device_ptr());
    for (uint64_t& p : impl_->ptrs)
        impl_->arg_ptrs.push_back(&p);
}

DeviceFunction::~DeviceFunction() {
    impl_->buffers.clear();
    if (impl_->module)
        CudaDriver::get().api().cuModuleUnload(impl_->module);
}

void DeviceFunction::copy_in(size_t param, const void* host) {
    TESSERA_CHECK(param < impl_->src.params.size()) << "param " << param;
    impl_->buffers[param]->copy_from_host(host, impl_->buffers[param]->bytes());
}

void DeviceFunction::copy_out(size_t param, void* host) const {
    TESSERA_CHECK(param < impl_->src.params.size()) << "param " << param;
    impl_->buffers[param]->copy_to_host(host, impl_->buffers[param]->bytes());
}

void DeviceFunction::launch_all() {
    const auto& a = CudaDriver::get().api();
    for (size_t i = 0; i < impl_->functions.size(); ++i) {
        const LaunchDims& dm = impl_->src.kernels[i].dims;
        a.check(a.cuLaunchKernel(impl_->functions[i], static_cast<unsigned>(dm.grid[0]),
                                 static_cast<unsigned>(dm.grid[1]),
                                 static_cast<unsigned>(dm.grid[2]),
                                 static_cast<unsigned>(dm.block[0]),
                                 static_cast<unsigned>(dm.block[1]),
                                 static_cast<unsigned>(dm.block[2]), 0, nullptr,
                                 impl_->arg_ptrs.data(), nullptr),
                "cuLaunchKernel");
    }
}

void DeviceFunction::run() {
    CudaDriver::get().require();
    launch_all();
    const auto& a = CudaDriver::get().api();
    a.check(a.cuCtxSynchronize(), "cuCtxSynchronize (kernel execution)");
}

double DeviceFunction::time_ms(int repeats) {
    TESSERA_CHECK(repeats >= 1) << "repeats " << repeats;
    run(); // warm-up
    const auto& a = CudaDriver::get().api();
    void *start = nullptr, *stop = nullptr;
    a.check(a.cuEventCreate(&start, 0), "cuEventCreate");
    a.check(a.cuEventCreate(&stop, 0), "cuEventCreate");
    std::vector<double> times;
    for (int r = 0; r < repeats; ++r) {
        a.check(a.cuEventRecord(start, nullptr), "cuEventRecord");
        launch_all();
        a.check(a.cuEventRecord(stop, nullptr), "cuEventRecord");
        a.check(a.cuEventSynchronize(stop), "cuEventSynchronize");
        float ms = 0;
        a.check(a.cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
        times.push_back(ms);
    }
    a.cuEventDestroy(start);
    a.cuEventDestroy(stop);
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

void run_on_device(const ir::LoweredFunc& f, std::vector<void*>& args) {
    const CudaDriver& d = CudaDriver::get();
    d.require();
    TESSERA_CHECK(args.size() == f.params.size())
        << args.size() << " arguments for " << f.params.size() << " params";
    DeviceLimits lim;
    lim.max_threads_per_block = d.device().max_threads_per_block;
    lim.max_shared_bytes = d.device().max_shared_per_block;
    const CudaSource src = codegen_cuda(f, lim);
    NvrtcOptions opts;
    opts.arch = d.device().arch();
    opts.want_ptx = false;
    const NvrtcResult bin = nvrtc_compile(src.code, f.name, opts);
    DeviceFunction fn(src, bin.cubin);
    for (size_t i = 0; i < args.size(); ++i)
        fn.copy_in(i, args[i]);
    fn.run();
    for (size_t i = 0; i < args.size(); ++i)
        fn.copy_out(i, args[i]);
}

} // namespace tessera::backend::cuda
