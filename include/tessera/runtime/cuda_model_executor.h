// CudaModelExecutor: runs a CUDA model plan (model_plan.h, PlanTarget::Cuda) on GPU 0 through
// the driver API loaded with dlopen (cuda_driver_api.h).
//
// One executor is one model instance. Creating it does all the device work that does not
// depend on the inputs: it loads every module's cubin, copies the weights to the device once,
// and allocates the arena, every module's workspaces and one device buffer per model input and
// output; every tensor's device pointer is then fixed, so each call's kernel arguments are
// computed once. A run copies the inputs in, launches every call's kernels in plan order on the
// default stream (arguments: the call's tensors' device pointers, then its module's
// workspaces), performs plan copies device to device, waits, and copies the outputs out.
//
// Thread safety: one executor must not run on two threads at once; different executors may
// (each makes the device's primary context current on the calling thread).
//
// This header has no tessera dependencies (the runtime is linked into built models alone).
// Errors are std::runtime_error with a one-line message.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/runtime/model_plan.h"

namespace tessera::runtime {

namespace cuda {
struct Driver;
}

class CudaModelExecutor {
  public:
    /// Pre: plan.target is Cuda; `weights` points to plan.weight_bytes bytes (may be null when
    /// that is 0) and `cubins` to plan.cubin_bytes bytes; both only need to live during the
    /// constructor. Throws std::runtime_error when the plan fails validate_plan or is not a
    /// CUDA plan, when there is no usable driver or device (the loader's one-line reason,
    /// prefixed with the model's name), or when a module does not load or an allocation fails
    /// (naming the kernel or the buffer).
    CudaModelExecutor(ModelPlan plan, const void* weights, const unsigned char* cubins);
    ~CudaModelExecutor();
    CudaModelExecutor(const CudaModelExecutor&) = delete;
    CudaModelExecutor& operator=(const CudaModelExecutor&) = delete;

    const ModelPlan& plan() const { return plan_; }
    /// The input (or output) number i's tensor. Pre: i in range.
    const PlanTensor& input(size_t i) const;
    const PlanTensor& output(size_t i) const;
    /// Bytes of the device arena (the plan's arena_bytes).
    int64_t arena_bytes() const { return plan_.arena_bytes; }

    /// Runs the model: inputs[i] / outputs[i] are dense C-order host buffers of input / output
    /// i (any alignment). Throws std::runtime_error naming a null buffer, or the kernel (its
    /// call label and symbol) whose launch failed; an error found when waiting for the kernels
    /// names the last call launched (launches are asynchronous).
    void run(const void* const* inputs, void* const* outputs);

  private:
    /// A device allocation; 0 when none.
    uint64_t allocate(int64_t bytes, const std::string& what);
    void make_current() const;
    /// Frees every allocation and unloads the modules (idempotent).
    void release();

    ModelPlan plan_;
    const cuda::Driver* driver_ = nullptr;
    std::vector<uint64_t> allocations_;             ///< Freed by the destructor.
    std::vector<void*> modules_;                    ///< Per plan kernel.
    std::vector<std::vector<void*>> functions_;     ///< Per plan kernel, per launch.
    std::vector<std::vector<uint64_t>> workspaces_; ///< Per plan kernel.
    std::vector<uint64_t> tensor_ptrs_;             ///< Per tensor: its device pointer.
    /// Per call: its argument values (device pointers) and the pointers to them that
    /// cuLaunchKernel takes.
    std::vector<std::vector<uint64_t>> arg_values_;
    std::vector<std::vector<void*>> arg_ptrs_;
};

} // namespace tessera::runtime
