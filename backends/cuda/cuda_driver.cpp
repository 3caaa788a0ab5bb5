// The CUDA driver API through dlopen (the runtime's loader, runtime/cuda_driver_api.h): no
// link-time libcuda, so machines without a driver still run tessera (and the GPU tests skip with
// the reason).
#include "tessera/backends/cuda_driver.h"

#include <algorithm>
#include <mutex>

#include "tessera/runtime/cuda_driver_api.h"
#include "tessera/support/error.h"

namespace tessera::backend::cuda {

/// The driver's entry points: the runtime's table (runtime/cuda_driver_api.h, the same loader a
/// built CUDA model uses), with device 0 and its primary context, and errors as UserError.
struct CudaDriver::Api : runtime::cuda::DriverApi {
    void* ctx = nullptr;
    int device = 0;

    /// Throws UserError naming the call and the driver's error.
    void check(Result r, const char* what) const {
        if (r == 0)
            return;
        throw UserError() << "CUDA driver call " << what
                          << " failed: " << runtime::cuda::driver_error_text(*this, r);
    }
};

namespace {

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
    const runtime::cuda::Driver* driver = runtime::cuda::load_driver(&reason_);
    if (!driver) {
        if (reason_.empty())
            reason_ = "no CUDA driver";
        return;
    }
    Api& a = *api_;
    static_cast<runtime::cuda::DriverApi&>(a) = driver->api;
    a.device = driver->device;
    a.ctx = driver->context;
    try {
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
