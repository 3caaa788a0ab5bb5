// The CUDA backend, device side: the CUDA driver API loaded at run time with dlopen (nothing
// links libcuda, so tessera starts on machines without a driver), device query, device
// buffers, module loading, launches and event timing.
//
// Without a driver (no libcuda.so.1, the toolkit's stub, cuInit failing) or without a device,
// CudaDriver::available() is false and unavailable_reason() says why in one line; every other
// entry point then throws UserError with that reason.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/backends/cuda.h"

namespace tessera::backend::cuda {

/// What the device is (device 0). The GPU part of the hardware fingerprint.
struct DeviceInfo {
    std::string name;            ///< "NVIDIA H200".
    int cc_major = 0, cc_minor = 0;
    std::string arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
    int64_t total_memory_bytes = 0;
    int sm_count = 0;
    int driver_version = 0;      ///< cuDriverGetVersion: 13000 for CUDA 13.0.
    int max_threads_per_block = 0;
    int max_shared_per_block = 0; ///< Static shared memory per block, bytes.
    int clock_khz = 0;
};

/// The process-wide driver. Loading is attempted once, on first use; thread-safe.
class CudaDriver {
  public:
    static CudaDriver& get();
    bool available() const { return reason_.empty(); }
    /// Why the driver cannot be used ("no CUDA driver: libcuda.so.1 not found", "no CUDA
    /// device", ...); empty when available.
    const std::string& unavailable_reason() const { return reason_; }
    /// Device 0. Throws UserError when unavailable.
    const DeviceInfo& device() const;
    /// Throws UserError with the reason when unavailable.
    void require() const;

    struct Api;
    const Api& api() const { return *api_; }

  private:
    CudaDriver();
    std::unique_ptr<Api> api_;
    DeviceInfo info_;
    std::string reason_;
};

/// A device allocation of `bytes`; freed on destruction.
class DeviceBuffer {
  public:
    explicit DeviceBuffer(int64_t bytes);
    ~DeviceBuffer();
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    void copy_from_host(const void* src, int64_t bytes);
    void copy_to_host(void* dst, int64_t bytes) const;
    uint64_t device_ptr() const { return ptr_; }
    int64_t bytes() const { return bytes_; }

  private:
    uint64_t ptr_ = 0;
    int64_t bytes_ = 0;
};

/// A compiled function on the device: its module (from the cubin), one device buffer per param
/// and workspace, and its kernels launched in order.
class DeviceFunction {
  public:
    /// Loads cubin (nvrtc_compile of src.code) and allocates the buffers. Throws UserError when
    /// the driver is unavailable or the module does not load.
    DeviceFunction(const CudaSource& src, const std::string& cubin);
    ~DeviceFunction();
    DeviceFunction(const DeviceFunction&) = delete;
    DeviceFunction& operator=(const DeviceFunction&) = delete;

    /// Copies host data (params[i]'s num_elements of its dtype) in or out.
    void copy_in(size_t param, const void* host);
    void copy_out(size_t param, void* host) const;
    /// Launches every kernel once, then waits for them. Throws UserError on a launch failure.
    void run();
    /// Median time in milliseconds of `repeats` runs (after one warm-up), measured with events.
    double time_ms(int repeats);

  private:
    void launch_all();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// Host convenience: runs f's CUDA code on `args` (args[i] = host data of f.params[i], as the
/// CPU backends take them): codegen, NVRTC for the device's architecture, copy in, run, copy
/// every param back. For tests and the reference check.
void run_on_device(const ir::LoweredFunc& f, std::vector<void*>& args);

} // namespace tessera::backend::cuda
