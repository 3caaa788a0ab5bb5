// Running a CUDA model plan on the GPU (cuda_model_executor.h).
#include "tessera/runtime/cuda_model_executor.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "tessera/runtime/cuda_driver_api.h"

namespace tessera::runtime {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::runtime_error(msg); }

std::string call_text(const ModelPlan& plan, size_t c) {
    const PlanCall& call = plan.calls[c];
    std::string s = "call " + std::to_string(c) + " '" + call.label + "'";
    if (call.kernel >= 0)
        s += " (kernel " + plan.kernels[static_cast<size_t>(call.kernel)] + ")";
    return s;
}

} // namespace

CudaModelExecutor::CudaModelExecutor(ModelPlan plan, const void* weights,
                                     const unsigned char* cubins)
    : plan_(std::move(plan)) {
    validate_plan(plan_);
    if (plan_.target != PlanTarget::Cuda)
        fail("model '" + plan_.model_name + "' is a " + plan_target_name(plan_.target) +
             " model, not a CUDA one");
    if (!weights && plan_.weight_bytes > 0)
        fail("model '" + plan_.model_name + "' has no weights");
    if (!cubins && plan_.cubin_bytes > 0)
        fail("model '" + plan_.model_name + "' has no tessera_model_cubins");
    std::string reason;
    driver_ = cuda::load_driver(&reason);
    if (!driver_)
        fail("model '" + plan_.model_name + "' runs on CUDA (" + plan_.cuda_arch + "): " + reason);
    try {
        make_current();
        const cuda::DriverApi& a = driver_->api;
        // Modules: cuModuleLoadData reads an ELF image; copy each into 8-byte aligned storage,
        // since its offset inside tessera_model_cubins need not be aligned.
        for (size_t m = 0; m < plan_.cuda_modules.size(); ++m) {
            const PlanCudaModule& mod = plan_.cuda_modules[m];
            std::vector<uint64_t> image(static_cast<size_t>((mod.cubin_bytes + 7) / 8) + 1, 0);
            std::memcpy(image.data(), cubins + mod.cubin_offset,
                        static_cast<size_t>(mod.cubin_bytes));
            void* module = nullptr;
            cuda::check_driver(a, a.cuModuleLoadData(&module, image.data()),
                               "loading the module of kernel " + plan_.kernels[m] + " (built for " +
                                   plan_.cuda_arch + ")");
            modules_.push_back(module);
            std::vector<void*> fns;
            for (const PlanCudaLaunch& k : mod.launches) {
                void* fn = nullptr;
                cuda::check_driver(a, a.cuModuleGetFunction(&fn, module, k.symbol.c_str()),
                                   "finding " + k.symbol + " in the module of kernel " +
                                       plan_.kernels[m]);
                fns.push_back(fn);
            }
            functions_.push_back(std::move(fns));
            std::vector<uint64_t> ws;
            for (size_t w = 0; w < mod.workspace_bytes.size(); ++w)
                ws.push_back(
                    allocate(mod.workspace_bytes[w],
                             "workspace " + std::to_string(w) + " of kernel " + plan_.kernels[m]));
            workspaces_.push_back(std::move(ws));
        }
        const uint64_t dev_weights = allocate(plan_.weight_bytes, "the weights");
        if (plan_.weight_bytes > 0)
            cuda::check_driver(
                a, a.cuMemcpyHtoD(dev_weights, weights, static_cast<size_t>(plan_.weight_bytes)),
                "copying the weights to the device");
        const uint64_t arena = allocate(plan_.arena_bytes, "the arena");
        tensor_ptrs_.assign(plan_.tensors.size(), 0);
        for (size_t id = 0; id < plan_.tensors.size(); ++id) {
            const PlanTensor& t = plan_.tensors[id];
            switch (t.storage) {
            case TensorStorage::Weight:
                tensor_ptrs_[id] = dev_weights + static_cast<uint64_t>(t.offset);
                break;
            case TensorStorage::Arena:
                tensor_ptrs_[id] = arena + static_cast<uint64_t>(t.offset);
                break;
            case TensorStorage::Input:
            case TensorStorage::Output:
                tensor_ptrs_[id] = allocate(
                    t.bytes,
                    "model " + std::string(t.storage == TensorStorage::Input ? "input" : "output") +
                        " '" + t.name + "'");
                break;
            }
        }
        arg_values_.resize(plan_.calls.size());
        arg_ptrs_.resize(plan_.calls.size());
        for (size_t c = 0; c < plan_.calls.size(); ++c) {
            const PlanCall& call = plan_.calls[c];
            std::vector<uint64_t>& v = arg_values_[c];
            for (int32_t id : call.args)
                v.push_back(tensor_ptrs_[static_cast<size_t>(id)]);
            if (call.kernel >= 0) {
                const auto& ws = workspaces_[static_cast<size_t>(call.kernel)];
                v.insert(v.end(), ws.begin(), ws.end());
            }
            for (uint64_t& p : v) // v is complete: its element addresses are final
                arg_ptrs_[c].push_back(&p);
        }
    } catch (...) {
        release(); // the destructor does not run for a throwing constructor
        throw;
    }
}

CudaModelExecutor::~CudaModelExecutor() { release(); }

void CudaModelExecutor::release() {
    if (!driver_)
        return;
    const cuda::DriverApi& a = driver_->api;
    a.cuCtxSetCurrent(driver_->context);
    for (uint64_t p : allocations_)
        a.cuMemFree(p);
    allocations_.clear();
    for (void* m : modules_)
        a.cuModuleUnload(m);
    modules_.clear();
}

uint64_t CudaModelExecutor::allocate(int64_t bytes, const std::string& what) {
    if (bytes <= 0)
        return 0;
    const cuda::DriverApi& a = driver_->api;
    uint64_t p = 0;
    cuda::check_driver(a, a.cuMemAlloc(&p, static_cast<size_t>(bytes)),
                       "allocating " + std::to_string(bytes) + " device bytes for " + what +
                           " of model '" + plan_.model_name + "'");
    allocations_.push_back(p);
    return p;
}

void CudaModelExecutor::make_current() const {
    cuda::check_driver(driver_->api, driver_->api.cuCtxSetCurrent(driver_->context),
                       "making the CUDA context current");
}

const PlanTensor& CudaModelExecutor::input(size_t i) const {
    return plan_.tensors[static_cast<size_t>(plan_.inputs.at(i))];
}

const PlanTensor& CudaModelExecutor::output(size_t i) const {
    return plan_.tensors[static_cast<size_t>(plan_.outputs.at(i))];
}

void CudaModelExecutor::run(const void* const* inputs, void* const* outputs) {
    if (!inputs && !plan_.inputs.empty())
        fail("model '" + plan_.model_name + "': the inputs array is null");
    if (!outputs && !plan_.outputs.empty())
        fail("model '" + plan_.model_name + "': the outputs array is null");
    make_current();
    const cuda::DriverApi& a = driver_->api;
    for (size_t i = 0; i < plan_.inputs.size(); ++i) {
        const PlanTensor& t = input(i);
        if (!inputs[i])
            fail("model input " + std::to_string(i) + " '" + t.name + "' is null");
        if (t.bytes > 0)
            cuda::check_driver(a,
                               a.cuMemcpyHtoD(tensor_ptrs_[static_cast<size_t>(plan_.inputs[i])],
                                              inputs[i], static_cast<size_t>(t.bytes)),
                               "copying input '" + t.name + "' to the device");
    }
    for (size_t i = 0; i < plan_.outputs.size(); ++i)
        if (!outputs[i])
            fail("model output " + std::to_string(i) + " '" + output(i).name + "' is null");
    for (size_t c = 0; c < plan_.calls.size(); ++c) {
        const PlanCall& call = plan_.calls[c];
        if (call.kernel < 0) {
            const PlanTensor& src = plan_.tensors[static_cast<size_t>(call.args[0])];
            if (src.bytes > 0)
                cuda::check_driver(a,
                                   a.cuMemcpyDtoD(arg_values_[c][1], arg_values_[c][0],
                                                  static_cast<size_t>(src.bytes)),
                                   call_text(plan_, c));
            continue;
        }
        const size_t k = static_cast<size_t>(call.kernel);
        const PlanCudaModule& mod = plan_.cuda_modules[k];
        for (size_t l = 0; l < mod.launches.size(); ++l) {
            const PlanCudaLaunch& L = mod.launches[l];
            const int r = a.cuLaunchKernel(
                functions_[k][l], static_cast<unsigned>(L.grid[0]),
                static_cast<unsigned>(L.grid[1]), static_cast<unsigned>(L.grid[2]),
                static_cast<unsigned>(L.block[0]), static_cast<unsigned>(L.block[1]),
                static_cast<unsigned>(L.block[2]), static_cast<unsigned>(L.shared_bytes), nullptr,
                arg_ptrs_[c].data(), nullptr);
            if (r != 0)
                fail("launching " + L.symbol + " of " + call_text(plan_, c) +
                     " failed: " + cuda::driver_error_text(a, r));
        }
    }
    if (const int r = a.cuCtxSynchronize(); r != 0)
        fail(
            "model '" + plan_.model_name + "' failed on the device while running its kernels " +
            "(launched up to " +
            (plan_.calls.empty() ? std::string("none") : call_text(plan_, plan_.calls.size() - 1)) +
            "): " + cuda::driver_error_text(a, r));
    for (size_t i = 0; i < plan_.outputs.size(); ++i) {
        const PlanTensor& t = output(i);
        if (t.bytes > 0)
            cuda::check_driver(a,
                               a.cuMemcpyDtoH(outputs[i],
                                              tensor_ptrs_[static_cast<size_t>(plan_.outputs[i])],
                                              static_cast<size_t>(t.bytes)),
                               "copying output '" + t.name + "' from the device");
    }
}

} // namespace tessera::runtime
