// Loading the CUDA driver with dlopen (cuda_driver_api.h).
#include "tessera/runtime/cuda_driver_api.h"

#include <dlfcn.h>

#include <initializer_list>
#include <stdexcept>

namespace tessera::runtime::cuda {

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

bool resolve_all(void* lib, DriverApi& a) {
    return resolve(lib, a.cuInit, {"cuInit"}) &&
           resolve(lib, a.cuDriverGetVersion, {"cuDriverGetVersion"}) &&
           resolve(lib, a.cuDeviceGetCount, {"cuDeviceGetCount"}) &&
           resolve(lib, a.cuDeviceGet, {"cuDeviceGet"}) &&
           resolve(lib, a.cuDeviceGetName, {"cuDeviceGetName"}) &&
           resolve(lib, a.cuDeviceGetAttribute, {"cuDeviceGetAttribute"}) &&
           resolve(lib, a.cuDeviceTotalMem, {"cuDeviceTotalMem_v2", "cuDeviceTotalMem"}) &&
           resolve(lib, a.cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}) &&
           resolve(lib, a.cuCtxSetCurrent, {"cuCtxSetCurrent"}) &&
           resolve(lib, a.cuCtxSynchronize, {"cuCtxSynchronize"}) &&
           resolve(lib, a.cuMemAlloc, {"cuMemAlloc_v2"}) &&
           resolve(lib, a.cuMemFree, {"cuMemFree_v2"}) &&
           resolve(lib, a.cuMemcpyHtoD, {"cuMemcpyHtoD_v2"}) &&
           resolve(lib, a.cuMemcpyDtoH, {"cuMemcpyDtoH_v2"}) &&
           resolve(lib, a.cuMemcpyDtoD, {"cuMemcpyDtoD_v2"}) &&
           resolve(lib, a.cuModuleLoadData, {"cuModuleLoadData"}) &&
           resolve(lib, a.cuModuleUnload, {"cuModuleUnload"}) &&
           resolve(lib, a.cuModuleGetFunction, {"cuModuleGetFunction"}) &&
           resolve(lib, a.cuLaunchKernel, {"cuLaunchKernel"}) &&
           resolve(lib, a.cuEventCreate, {"cuEventCreate"}) &&
           resolve(lib, a.cuEventRecord, {"cuEventRecord"}) &&
           resolve(lib, a.cuEventSynchronize, {"cuEventSynchronize"}) &&
           resolve(lib, a.cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}) &&
           resolve(lib, a.cuEventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"}) &&
           resolve(lib, a.cuGetErrorName, {"cuGetErrorName"}) &&
           resolve(lib, a.cuGetErrorString, {"cuGetErrorString"});
}

// CUresult values the start-up distinguishes.
constexpr int kErrorStubLibrary = 34;
constexpr int kErrorNoDevice = 100;

/// One attempt per process; the result (driver or reason) is kept.
struct Loaded {
    Driver driver;
    std::string reason; ///< Empty when the driver is usable.

    Loaded() {
        void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            reason = "no CUDA driver: libcuda.so.1 not found";
            return;
        }
        // The library stays loaded for the life of the process: the table points into it.
        DriverApi& a = driver.api;
        if (!resolve_all(lib, a)) {
            reason = "no CUDA driver: libcuda.so.1 lacks an entry point tessera needs (driver "
                     "too old?)";
            return;
        }
        if (const int r = a.cuInit(0); r != 0) {
            reason = r == kErrorStubLibrary ? "no CUDA driver: only the toolkit's stub libcuda"
                     : r == kErrorNoDevice
                         ? "no CUDA device"
                         : "no CUDA driver: cuInit failed with " + driver_error_text(a, r);
            return;
        }
        int count = 0;
        if (a.cuDeviceGetCount(&count) != 0 || count == 0) {
            reason = "no CUDA device";
            return;
        }
        if (const int r = a.cuDeviceGet(&driver.device, 0); r != 0) {
            reason = "cannot open CUDA device 0: " + driver_error_text(a, r);
            return;
        }
        if (const int r = a.cuDevicePrimaryCtxRetain(&driver.context, driver.device); r != 0) {
            reason = "cannot create a context on CUDA device 0: " + driver_error_text(a, r);
            return;
        }
    }
};

} // namespace

const Driver* load_driver(std::string* reason) {
    static const Loaded loaded; // thread-safe initialization, attempted once
    if (!loaded.reason.empty()) {
        if (reason)
            *reason = loaded.reason;
        return nullptr;
    }
    return &loaded.driver;
}

std::string driver_error_text(const DriverApi& api, int result) {
    const char* name = nullptr;
    const char* text = nullptr;
    if (!api.cuGetErrorName || api.cuGetErrorName(result, &name) != 0 || !name)
        return "CUDA error " + std::to_string(result);
    std::string out = std::string(name) + " (" + std::to_string(result) + ")";
    if (api.cuGetErrorString && api.cuGetErrorString(result, &text) == 0 && text)
        out += std::string(": ") + text;
    return out;
}

void check_driver(const DriverApi& api, int result, const std::string& what) {
    if (result != 0)
        throw std::runtime_error(what + " failed: " + driver_error_text(api, result));
}

} // namespace tessera::runtime::cuda
