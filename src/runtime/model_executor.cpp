// Runs a model plan: binds tensors to buffers, then calls the kernels in order.
#include "tessera/runtime/model_executor.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "tessera/runtime/thread_pool.h"

namespace tessera::runtime {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::runtime_error(msg); }

bool aligned_to(const void* p, int64_t alignment) {
    return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(alignment) == 0;
}

} // namespace

void ModelExecutor::AlignedFree::operator()(void* p) const { std::free(p); }

ModelExecutor::AlignedBuffer ModelExecutor::allocate(int64_t bytes) {
    // aligned_alloc wants a size that is a multiple of the alignment; a zero-size arena still
    // gets a block so every tensor pointer is valid.
    const size_t rounded = bytes <= 0 ? 64 : (static_cast<size_t>(bytes) + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p)
        fail("out of memory allocating " + std::to_string(rounded) + " bytes for a model");
    return AlignedBuffer(static_cast<unsigned char*>(p));
}

ModelExecutor::ModelExecutor(ModelPlan plan, std::vector<TesseraKernelFn> kernels,
                             const void* weights)
    : plan_(std::move(plan)), kernels_(std::move(kernels)),
      weights_(static_cast<const unsigned char*>(weights)) {
    validate_plan(plan_);
    if (kernels_.size() != plan_.kernels.size())
        fail("model '" + plan_.model_name + "' has " + std::to_string(kernels_.size()) +
             " kernel functions for " + std::to_string(plan_.kernels.size()) + " plan kernels");
    for (size_t k = 0; k < kernels_.size(); ++k)
        if (!kernels_[k])
            fail("model kernel " + std::to_string(k) + " '" + plan_.kernels[k] +
                 "' has no function");
    if (plan_.weight_bytes > 0 && !weights_)
        fail("model '" + plan_.model_name + "' has " + std::to_string(plan_.weight_bytes) +
             " bytes of weights but no weight data");
    if (weights_ && !aligned_to(weights_, 64))
        fail("model '" + plan_.model_name + "' weights are not 64-byte aligned");
    arena_ = allocate(plan_.arena_bytes);

    tensor_ptrs_.assign(plan_.tensors.size(), nullptr);
    for (size_t id = 0; id < plan_.tensors.size(); ++id) {
        const PlanTensor& t = plan_.tensors[id];
        if (t.storage == TensorStorage::Arena)
            tensor_ptrs_[id] = arena_.get() + t.offset;
        else if (t.storage == TensorStorage::Weight && weights_)
            // Kernels take void**; they never write a weight (the plan's copies cannot either:
            // validate_plan refuses a copy into one).
            tensor_ptrs_[id] = const_cast<unsigned char*>(weights_) + t.offset;
    }
    call_args_.resize(plan_.calls.size());
    for (size_t c = 0; c < plan_.calls.size(); ++c)
        call_args_[c].resize(plan_.calls[c].args.size());
    input_staging_.resize(plan_.inputs.size());
    output_staging_.resize(plan_.outputs.size());
}

ModelExecutor::~ModelExecutor() = default;

const PlanTensor& ModelExecutor::input(size_t i) const {
    return plan_.tensors[static_cast<size_t>(plan_.inputs.at(i))];
}

const PlanTensor& ModelExecutor::output(size_t i) const {
    return plan_.tensors[static_cast<size_t>(plan_.outputs.at(i))];
}

void* ModelExecutor::bind_io(const PlanTensor& t, void* caller, std::vector<AlignedBuffer>& staging,
                             size_t index, bool copy_in) {
    if (aligned_to(caller, plan_dtype_bytes(t.dtype)))
        return caller;
    if (!staging[index])
        staging[index] = allocate(t.bytes);
    if (copy_in)
        std::memcpy(staging[index].get(), caller, static_cast<size_t>(t.bytes));
    ++last_staged_;
    return staging[index].get();
}

void ModelExecutor::set_profiling(Profiling mode) {
    profiling_ = mode;
    call_seconds_.assign(plan_.calls.size(), 0.0);
    profiled_runs_ = 0;
}

void ModelExecutor::run_call(size_t c) {
    const PlanCall& call = plan_.calls[c];
    std::vector<void*>& args = call_args_[c];
    if (call.kernel < 0) {
        const PlanTensor& src = plan_.tensors[static_cast<size_t>(call.args[0])];
        // memmove: a plan may copy a value onto itself (an output that is also an output).
        // An empty tensor may have no storage at all (a null pointer memmove must not see).
        if (args[0] != args[1] && src.bytes > 0)
            std::memmove(args[1], args[0], static_cast<size_t>(src.bytes));
    } else {
        kernels_[static_cast<size_t>(call.kernel)](args.data());
    }
}

void ModelExecutor::run(const void* const* inputs, void* const* outputs) {
    if (!plan_.inputs.empty() && !inputs)
        fail("model '" + plan_.model_name + "' run without an input array");
    if (!plan_.outputs.empty() && !outputs)
        fail("model '" + plan_.model_name + "' run without an output array");
    for (size_t i = 0; i < plan_.inputs.size(); ++i)
        if (!inputs[i] && input(i).bytes > 0)
            fail("model input " + std::to_string(i) + " '" + input(i).name + "' is null");
    for (size_t i = 0; i < plan_.outputs.size(); ++i)
        if (!outputs[i] && output(i).bytes > 0)
            fail("model output " + std::to_string(i) + " '" + output(i).name + "' is null");

    last_staged_ = 0;
    for (size_t i = 0; i < plan_.inputs.size(); ++i) {
        // Kernels take void**; the plan never writes an input (validate_plan).
        void* p = const_cast<void*>(inputs[i]);
        tensor_ptrs_[static_cast<size_t>(plan_.inputs[i])] =
            bind_io(input(i), p, input_staging_, i, /*copy_in=*/true);
    }
    for (size_t i = 0; i < plan_.outputs.size(); ++i)
        tensor_ptrs_[static_cast<size_t>(plan_.outputs[i])] =
            bind_io(output(i), outputs[i], output_staging_, i, /*copy_in=*/false);

    runtime::set_num_threads(num_threads_);
    using Clock = std::chrono::steady_clock;
    for (size_t c = 0; c < plan_.calls.size(); ++c) {
        const PlanCall& call = plan_.calls[c];
        std::vector<void*>& args = call_args_[c];
        for (size_t a = 0; a < call.args.size(); ++a)
            args[a] = tensor_ptrs_[static_cast<size_t>(call.args[a])];
        if (profiling_ == Profiling::Off) {
            run_call(c);
            continue;
        }
        if (profiling_ == Profiling::Hot)
            run_call(c);
        const Clock::time_point t0 = Clock::now();
        run_call(c);
        call_seconds_[c] += std::chrono::duration<double>(Clock::now() - t0).count();
    }
    if (profiling_ != Profiling::Off)
        ++profiled_runs_;

    for (size_t i = 0; i < plan_.outputs.size(); ++i) {
        const size_t id = static_cast<size_t>(plan_.outputs[i]);
        if (tensor_ptrs_[id] != outputs[i] && output(i).bytes > 0)
            std::memcpy(outputs[i], tensor_ptrs_[id], static_cast<size_t>(output(i).bytes));
    }
}

} // namespace tessera::runtime
