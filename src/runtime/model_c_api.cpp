// The C API of a built model (tessera_model.h) over ModelExecutor.
//
// The four symbols the generated part of a model library defines (model_plan.h) are declared
// weak here: the runtime archive is also linked into the tessera executable and the test
// binaries, which define none of them; there they resolve to null and tessera_model_create
// reports that the program is not a model library instead of failing to link.
//
// No exception crosses the C boundary: every entry point catches everything and stores the
// message in the calling thread's last-error string.
#include "tessera/runtime/tessera_model.h"

#include <exception>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/runtime/checksum.h"
#include "tessera/runtime/cuda_model_executor.h"
#include "tessera/runtime/model_executor.h"
#include "tessera/runtime/model_plan.h"

extern "C" {
#pragma weak tessera_model_plan
#pragma weak tessera_model_plan_size
#pragma weak tessera_model_weights
#pragma weak tessera_model_kernels
#pragma weak tessera_model_cubins
}

using tessera::runtime::CudaModelExecutor;
using tessera::runtime::ModelExecutor;
using tessera::runtime::PlanTensor;

struct TesseraModel {
    /// Exactly one of the two runs the model, chosen by the plan's target.
    std::unique_ptr<ModelExecutor> executor;
    std::unique_ptr<CudaModelExecutor> cuda;
    /// The plan of whichever executor runs the model.
    const tessera::runtime::ModelPlan* plan = nullptr;
    /// Info of the inputs and outputs; names and shapes point into the executor's plan.
    std::vector<TesseraTensorInfo> inputs, outputs;
};

namespace {

thread_local std::string last_error;

void set_error(std::string msg) { last_error = std::move(msg); }

/// Runs f, returning 0, or -1 with the error stored. A success leaves the last failure's
/// message in place (the header promises the last failure, as errno keeps the last error).
template <typename F> int guarded(const char* fn, F&& f) {
    try {
        f();
        return 0;
    } catch (const std::bad_alloc&) {
        set_error(std::string(fn) + ": out of memory");
    } catch (const std::exception& e) {
        set_error(e.what());
    } catch (...) {
        set_error(std::string(fn) + ": unknown error");
    }
    return -1;
}

TesseraTensorInfo info_of(const PlanTensor& t) {
    TesseraTensorInfo info;
    info.name = t.name.c_str();
    info.dtype = static_cast<int>(t.dtype);
    info.rank = static_cast<int>(t.shape.size());
    info.shape = t.shape.data();
    return info;
}

/// tessera_model_input_info / tessera_model_output_info (`fn`) over the list of `what`s.
int fill_info(const char* fn, const char* what, const TesseraModel* model,
              const std::vector<TesseraTensorInfo>& list, int index, TesseraTensorInfo* info) {
    return guarded(fn, [&] {
        if (!model)
            throw std::runtime_error(std::string(fn) + ": the model is null");
        if (!info)
            throw std::runtime_error(std::string(fn) + ": the info pointer is null");
        if (index < 0 || static_cast<size_t>(index) >= list.size())
            throw std::runtime_error(std::string("model ") + what + " index " +
                                     std::to_string(index) + " is out of range [0, " +
                                     std::to_string(list.size()) + ")");
        *info = list[static_cast<size_t>(index)];
    });
}

} // namespace

extern "C" {

int tessera_model_abi_version(void) { return TESSERA_MODEL_ABI_VERSION; }

int tessera_model_create(TesseraModel** out) {
    return guarded("tessera_model_create", [&] {
        if (!out)
            throw std::runtime_error("tessera_model_create: the out pointer is null");
        *out = nullptr;
        // Weak symbols: null where no model library defines them.
        const unsigned char* plan_bytes = tessera_model_plan;
        const uint64_t* plan_size = &tessera_model_plan_size;
        if (!plan_bytes || !plan_size)
            throw std::runtime_error("this program holds no tessera model (the symbol "
                                     "tessera_model_plan is absent; build one with `tessera "
                                     "build`)");
        tessera::runtime::ModelPlan plan =
            tessera::runtime::parse_plan(plan_bytes, static_cast<size_t>(*plan_size));
        // Once per instance, a few ms per 10 MB: weights damaged after the build would
        // otherwise run and return wrong numbers without a word.
        if (tessera::runtime::content_checksum(tessera_model_weights,
                                               static_cast<size_t>(plan.weight_bytes)) !=
            plan.weights_checksum)
            throw std::runtime_error("model '" + plan.model_name +
                                     "': its weights are corrupt (their checksum does not "
                                     "match the one written at build time): the library was "
                                     "damaged after it was built");
        auto model = std::make_unique<TesseraModel>();
        if (plan.target == tessera::runtime::PlanTarget::Cuda) {
            model->cuda = std::make_unique<CudaModelExecutor>(
                std::move(plan), tessera_model_weights, tessera_model_cubins);
            model->plan = &model->cuda->plan();
        } else {
            const TesseraKernelFn* fns = tessera_model_kernels;
            if (!fns && !plan.kernels.empty())
                throw std::runtime_error("model '" + plan.model_name +
                                         "' has no tessera_model_kernels table");
            std::vector<TesseraKernelFn> kernels(fns, fns + plan.kernels.size());
            const unsigned char* weights = tessera_model_weights;
            model->executor =
                std::make_unique<ModelExecutor>(std::move(plan), std::move(kernels), weights);
            model->plan = &model->executor->plan();
        }
        const tessera::runtime::ModelPlan& p = *model->plan;
        for (int32_t id : p.inputs)
            model->inputs.push_back(info_of(p.tensors[static_cast<size_t>(id)]));
        for (int32_t id : p.outputs)
            model->outputs.push_back(info_of(p.tensors[static_cast<size_t>(id)]));
        *out = model.release();
    });
}

void tessera_model_free(TesseraModel* model) { delete model; }

const char* tessera_model_target(void) {
    const char* target = "";
    guarded("tessera_model_target", [&] {
        const unsigned char* plan_bytes = tessera_model_plan;
        const uint64_t* plan_size = &tessera_model_plan_size;
        if (!plan_bytes || !plan_size)
            throw std::runtime_error("this program holds no tessera model (the symbol "
                                     "tessera_model_plan is absent)");
        target = tessera::runtime::plan_target_name(
            tessera::runtime::parse_plan(plan_bytes, static_cast<size_t>(*plan_size)).target);
    });
    return target;
}

const char* tessera_model_name(const TesseraModel* model) {
    return model ? model->plan->model_name.c_str() : "";
}

int tessera_model_num_inputs(const TesseraModel* model) {
    if (!model)
        set_error("tessera_model_num_inputs: the model is null");
    return model ? static_cast<int>(model->inputs.size()) : -1;
}

int tessera_model_num_outputs(const TesseraModel* model) {
    if (!model)
        set_error("tessera_model_num_outputs: the model is null");
    return model ? static_cast<int>(model->outputs.size()) : -1;
}

int tessera_model_input_info(const TesseraModel* model, int index, TesseraTensorInfo* info) {
    static const std::vector<TesseraTensorInfo> none;
    return fill_info("tessera_model_input_info", "input", model, model ? model->inputs : none,
                     index, info);
}

int tessera_model_output_info(const TesseraModel* model, int index, TesseraTensorInfo* info) {
    static const std::vector<TesseraTensorInfo> none;
    return fill_info("tessera_model_output_info", "output", model, model ? model->outputs : none,
                     index, info);
}

int64_t tessera_model_arena_bytes(const TesseraModel* model) {
    return model ? model->plan->arena_bytes : -1;
}

int tessera_model_set_num_threads(TesseraModel* model, int n) {
    return guarded("tessera_model_set_num_threads", [&] {
        if (!model)
            throw std::runtime_error("tessera_model_set_num_threads: the model is null");
        if (model->executor) // a CUDA model's kernels run on the device: nothing to set
            model->executor->set_num_threads(n);
    });
}

int tessera_model_run(TesseraModel* model, const void* const* inputs, void* const* outputs) {
    return guarded("tessera_model_run", [&] {
        if (!model)
            throw std::runtime_error("tessera_model_run: the model is null");
        if (inputs) // a compiled gather clamps: refuse bad indices before it sees them
            tessera::runtime::check_index_inputs(*model->plan, inputs);
        if (model->cuda)
            model->cuda->run(inputs, outputs);
        else
            model->executor->run(inputs, outputs);
    });
}

int tessera_model_set_profiling(TesseraModel* model, int mode) {
    return guarded("tessera_model_set_profiling", [&] {
        if (!model)
            throw std::runtime_error("tessera_model_set_profiling: the model is null");
        if (mode < 0 || mode > 2)
            throw std::runtime_error("tessera_model_set_profiling: mode " + std::to_string(mode) +
                                     " is not 0 (off), 1 (sequence) or 2 (hot)");
        if (!model->executor)
            throw std::runtime_error("tessera_model_set_profiling: model '" +
                                     model->plan->model_name +
                                     "' runs on CUDA, whose per-call profiling is not supported");
        model->executor->set_profiling(static_cast<ModelExecutor::Profiling>(mode));
    });
}

int tessera_model_num_calls(const TesseraModel* model) {
    if (!model)
        set_error("tessera_model_num_calls: the model is null");
    return model ? static_cast<int>(model->plan->calls.size()) : -1;
}

int tessera_model_call_profile(const TesseraModel* model, int index, TesseraCallProfile* profile) {
    return guarded("tessera_model_call_profile", [&] {
        if (!model || !profile)
            throw std::runtime_error("tessera_model_call_profile: the model or the profile "
                                     "pointer is null");
        const tessera::runtime::ModelPlan& plan = *model->plan;
        if (index < 0 || static_cast<size_t>(index) >= plan.calls.size())
            throw std::runtime_error("model call index " + std::to_string(index) +
                                     " is out of range [0, " + std::to_string(plan.calls.size()) +
                                     ")");
        const tessera::runtime::PlanCall& call = plan.calls[static_cast<size_t>(index)];
        static const std::string copy = "copy";
        profile->kernel =
            call.kernel < 0 ? copy.c_str() : plan.kernels[static_cast<size_t>(call.kernel)].c_str();
        static const std::vector<double> none;
        const std::vector<double>& secs = model->executor ? model->executor->call_seconds() : none;
        profile->seconds = static_cast<size_t>(index) < secs.size() ? secs[index] : 0.0;
        profile->runs = model->executor ? model->executor->profiled_runs() : 0;
    });
}

} // extern "C"

/// Call number `index` of model's plan; nullptr (with the error set, naming `function`) when
/// model is null or index is out of range.
static const tessera::runtime::PlanCall* plan_call(const TesseraModel* model, int index,
                                                   const char* function) {
    if (!model) {
        set_error(std::string(function) + ": the model is null");
        return nullptr;
    }
    const std::vector<tessera::runtime::PlanCall>& calls = model->plan->calls;
    if (index < 0 || static_cast<size_t>(index) >= calls.size()) {
        set_error("model call index " + std::to_string(index) + " is out of range [0, " +
                  std::to_string(calls.size()) + ")");
        return nullptr;
    }
    return &calls[static_cast<size_t>(index)];
}

extern "C" {

const char* tessera_model_call_label(const TesseraModel* model, int index) {
    const tessera::runtime::PlanCall* call = plan_call(model, index, "tessera_model_call_label");
    return call ? call->label.c_str() : nullptr;
}

int tessera_model_call_work(const TesseraModel* model, int index, int64_t* flops,
                            const char** precision) {
    const tessera::runtime::PlanCall* call = plan_call(model, index, "tessera_model_call_work");
    if (!call)
        return -1;
    if (flops)
        *flops = call->flops;
    if (precision)
        *precision = call->precision.c_str();
    return 0;
}

const char* tessera_model_last_error(void) { return last_error.c_str(); }

} // extern "C"
