// ModelExecutor: runs a built model's plan (model_plan.h) in this process.
//
// One executor is one model instance: it owns an arena for the plan's intermediates (64-byte
// aligned, allocated once) and runs the plan's calls in order, binding each tensor to the
// caller's input/output buffers, the model's weights or the arena. The C API of a built model
// (tessera_model.h) is a thin layer over it; tests drive it directly with JIT-compiled kernels.
//
// Alignment: generated kernels access each buffer with its element type's natural alignment
// (backends/llvm: loads and stores carry align = element size), while the C API accepts
// buffers of any alignment. An input or output whose address is not a multiple of its element
// size is therefore staged through an aligned copy owned by the executor (inputs copied in
// before the first call, outputs copied out after the last); aligned buffers are used in place.
//
// Thread safety: one executor must not run on two threads at once; different executors may.
// The thread count is applied to the process-wide pool (thread_pool.h) at the start of each
// run, so two executors with different counts running concurrently take turns on the pool
// with whichever count was set last.
//
// This header has no tessera dependencies (the runtime is linked into built models alone).
// Errors are std::runtime_error with a one-line message.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tessera/runtime/model_plan.h"

namespace tessera::runtime {

class ModelExecutor {
  public:
    /// Binds a plan to its kernels and weights and allocates the arena.
    /// Pre: `kernels` has one function per plan.kernels entry, in that order; `weights` points
    /// to plan.weight_bytes bytes, 64-byte aligned, that outlive the executor (may be null when
    /// weight_bytes is 0). Throws std::runtime_error when the plan fails validate_plan, the
    /// kernel count differs, a kernel is null, weights are missing or misaligned, or the arena
    /// cannot be allocated.
    ModelExecutor(ModelPlan plan, std::vector<TesseraKernelFn> kernels, const void* weights);
    ~ModelExecutor();
    ModelExecutor(const ModelExecutor&) = delete;
    ModelExecutor& operator=(const ModelExecutor&) = delete;

    const ModelPlan& plan() const { return plan_; }
    /// The input (or output) number i's tensor. Pre: i in range.
    const PlanTensor& input(size_t i) const;
    const PlanTensor& output(size_t i) const;

    /// Threads of this instance's parallel loops, the calling thread included; n <= 0 means
    /// one per physical core (the default). Applied at the start of each run.
    void set_num_threads(int n) { num_threads_ = n; }
    int num_threads_setting() const { return num_threads_; }

    /// Runs the model: inputs[i] / outputs[i] are dense C-order buffers of input / output i
    /// (plan.tensors[...].bytes bytes, any alignment). Inputs are not modified; outputs must
    /// not overlap inputs or each other. Throws std::runtime_error naming a null buffer.
    void run(const void* const* inputs, void* const* outputs);

    /// Bytes of the arena (the plan's arena_bytes).
    int64_t arena_bytes() const { return plan_.arena_bytes; }
    /// How many inputs and outputs the last run staged through aligned copies (for tests).
    int last_run_staged() const { return last_staged_; }

    /// Per-call timing, for finding where a model's time goes (`tessera bench --profile`).
    ///  - Off: runs time nothing (the default; no clock reads).
    ///  - Sequence: each run adds every call's wall time, as it ran in the model, to its total.
    ///  - Hot: each call runs twice in a row and only the second run is timed, so its inputs,
    ///    weights and code are as warm as a kernel benchmark's; the difference to Sequence is
    ///    the price of data that the previous calls evicted. A call that updates a buffer in
    ///    place computes twice, so outputs of a Hot run are not the model's.
    /// Setting a mode clears the totals.
    enum class Profiling { Off, Sequence, Hot };
    void set_profiling(Profiling mode);
    Profiling profiling() const { return profiling_; }
    /// Per plan call, its total timed seconds over the runs since set_profiling.
    const std::vector<double>& call_seconds() const { return call_seconds_; }
    /// Runs timed since set_profiling.
    int64_t profiled_runs() const { return profiled_runs_; }

  private:
    struct AlignedFree {
        void operator()(void* p) const;
    };
    using AlignedBuffer = std::unique_ptr<unsigned char, AlignedFree>;
    static AlignedBuffer allocate(int64_t bytes);


    /// The pointer bound to an input/output tensor for this run: the caller's, or the staging
    /// buffer of model input/output `index` when the caller's is misaligned.
    void* bind_io(const PlanTensor& t, void* caller, std::vector<AlignedBuffer>& staging,
                  size_t index, bool copy_in);
    /// Executes plan call c on the pointers already in call_args_[c].
    void run_call(size_t c);

    ModelPlan plan_;
    std::vector<TesseraKernelFn> kernels_;
    const unsigned char* weights_;
    AlignedBuffer arena_;
    int num_threads_ = 0;
    int last_staged_ = 0;
    Profiling profiling_ = Profiling::Off;
    std::vector<double> call_seconds_;
    int64_t profiled_runs_ = 0;
    /// Per tensor, its pointer in the current run (weights and arena set once).
    std::vector<void*> tensor_ptrs_;
    /// Per call, its argument pointers (reused so that a run allocates nothing).
    std::vector<std::vector<void*>> call_args_;
    /// Aligned copies of misaligned inputs / outputs, allocated on first need and kept.
    std::vector<AlignedBuffer> input_staging_, output_staging_;
};

} // namespace tessera::runtime
