// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1"): nothing links libcuda,
// so a CUDA model library (and tessera itself) loads on machines without a driver and reports
// why it cannot run instead of failing to load.
//
// The table holds only the entry points a built model and the CUDA backend use, with the
// driver's ABI spelled in plain types (handles are pointers, CUdeviceptr is 64-bit), so no CUDA
// header decides which symbol versions are bound (the _v2 names are preferred where they exist).
//
// This header has no tessera dependencies: the runtime is linked alone into each model library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tessera::runtime::cuda {

/// The driver entry points, resolved once; all non-null in a table that load_driver returns.
struct DriverApi {
    using Result = int; ///< CUresult; 0 = CUDA_SUCCESS.
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
    Result (*cuMemcpyDtoD)(uint64_t, uint64_t, size_t) = nullptr;
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
    Result (*cuGetErrorString)(Result, const char**) = nullptr;
};

/// The driver after a successful start: its entry points, device 0 and device 0's primary
/// context (retained for the life of the process).
struct Driver {
    DriverApi api;
    int device = 0;
    void* context = nullptr;
};

/// Loads libcuda.so.1, resolves the table, calls cuInit(0), takes device 0 and retains its
/// primary context. Attempted once per process (per copy of the runtime), thread-safe. Returns
/// null when any step fails, with *reason (when non-null) set to one line such as "no CUDA
/// driver: libcuda.so.1 not found", "no CUDA driver: only the toolkit's stub libcuda",
/// "no CUDA device".
const Driver* load_driver(std::string* reason);

/// "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory" for a driver result; "CUDA error N" when the
/// driver cannot name it.
std::string driver_error_text(const DriverApi& api, int result);

/// Throws std::runtime_error "`what` failed: <driver_error_text>" unless result is 0.
void check_driver(const DriverApi& api, int result, const std::string& what);

} // namespace tessera::runtime::cuda
