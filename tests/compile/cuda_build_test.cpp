// `tessera build --target cuda`: the plan's CUDA fields (round trip, strict validation), CLI
// builds of the small shared models and the bundled mobilenet_tiny that load and report their
// target, a clean failure of tessera_model_create without a GPU, and the strongest check that
// needs no GPU: the whole model's generated CUDA run on the CPU emulation (one OS thread per
// CUDA thread, tests/cuda/cpu_emulation.h), kernel after kernel through the plan's calls, against
// the ONNX reference outputs. On a GPU the built library itself is compared with the reference.
#ifdef TESSERA_HAVE_CUDA

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include "common/model_library_loader.h"
#include "common/tessera_process.h"
#include "cuda/cpu_emulation.h"
#include "tessera/backends/cuda.h"
#include "tessera/compile/model_compiler.h"
#include "tessera/runtime/cuda_driver_api.h"
#include "tessera/runtime/model_plan.h"
#include "tessera/schedule/step.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/fingerprint.h"
#include "tuning_records.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::model_dir;
using testing::outputs_match;
using testing::read_data_set;
using testing::ScratchDir;

bool have_model(const std::string& name) { return fs::exists(model_dir(name) + "/model.onnx"); }

// ---- the plan's CUDA fields -------------------------------------------------------------------

/// A valid CUDA plan: y = kernel(x, w) with one module of two launches and a workspace.
runtime::ModelPlan small_cuda_plan() {
    runtime::ModelPlan p;
    p.model_name = "tiny";
    p.tensors = {{"x", runtime::PlanDType::F32, {1, 7}, runtime::TensorStorage::Input, 0, 28},
                 {"w", runtime::PlanDType::F32, {7}, runtime::TensorStorage::Weight, 0, 28},
                 {"y", runtime::PlanDType::F32, {1, 7}, runtime::TensorStorage::Output, 0, 28}};
    p.inputs = {0};
    p.outputs = {2};
    p.kernels = {"tessera_kernel_0"};
    p.calls = {{0, {0, 1, 2}, "group 0 mul", 0, ""}};
    p.weight_bytes = 64;
    p.target = runtime::PlanTarget::Cuda;
    p.cuda_arch = "sm_90";
    runtime::PlanCudaModule m;
    m.cubin_offset = 8;
    m.cubin_bytes = 13;
    m.launches = {{"tessera_kernel_0_k0", {3, 1, 1}, {128, 2, 1}, 0},
                  {"tessera_kernel_0_k1", {1, 1, 1}, {1, 1, 1}, 256}};
    m.workspace_bytes = {44, 0};
    p.cuda_modules = {m};
    p.cubin_bytes = 24;
    return p;
}

TEST(CudaPlan, RoundTripKeepsTheCudaFields) {
    const runtime::ModelPlan p = small_cuda_plan();
    ASSERT_NO_THROW(runtime::validate_plan(p));
    const std::string bytes = runtime::serialize_plan(p);
    const runtime::ModelPlan back = runtime::parse_plan(bytes.data(), bytes.size());
    EXPECT_EQ(back.target, runtime::PlanTarget::Cuda);
    EXPECT_EQ(back.cuda_arch, "sm_90");
    EXPECT_EQ(back.cubin_bytes, 24);
    ASSERT_EQ(back.cuda_modules.size(), 1u);
    const runtime::PlanCudaModule& m = back.cuda_modules[0];
    EXPECT_EQ(m.cubin_offset, 8);
    EXPECT_EQ(m.cubin_bytes, 13);
    ASSERT_EQ(m.launches.size(), 2u);
    EXPECT_EQ(m.launches[0].symbol, "tessera_kernel_0_k0");
    EXPECT_EQ(m.launches[0].grid, (std::array<int64_t, 3>{3, 1, 1}));
    EXPECT_EQ(m.launches[0].block, (std::array<int64_t, 3>{128, 2, 1}));
    EXPECT_EQ(m.launches[1].shared_bytes, 256);
    EXPECT_EQ(m.workspace_bytes, (std::vector<int64_t>{44, 0}));
    EXPECT_EQ(runtime::serialize_plan(back), bytes);
    // Truncating the CUDA part is caught.
    EXPECT_THROW(runtime::parse_plan(bytes.data(), bytes.size() - 9), std::runtime_error);
}

TEST(CudaPlan, CpuPlanRoundTripsAsCpu) {
    runtime::ModelPlan p = small_cuda_plan();
    p.target = runtime::PlanTarget::Cpu;
    p.cuda_arch.clear();
    p.cuda_modules.clear();
    p.cubin_bytes = 0;
    const std::string bytes = runtime::serialize_plan(p);
    EXPECT_EQ(runtime::parse_plan(bytes.data(), bytes.size()).target, runtime::PlanTarget::Cpu);
}

/// validate_plan's message for p, or "" when it passes.
std::string validation_error(const runtime::ModelPlan& p) {
    try {
        runtime::validate_plan(p);
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

TEST(CudaPlan, ValidationRefusesBrokenCudaFields) {
    struct Case {
        const char* what;
        void (*breaks)(runtime::ModelPlan&);
        const char* message;
    };
    const Case cases[] = {
        {"bad arch", [](runtime::ModelPlan& p) { p.cuda_arch = "compute_90"; }, "not sm_<digits>"},
        {"no arch", [](runtime::ModelPlan& p) { p.cuda_arch = ""; }, "not sm_<digits>"},
        {"module count", [](runtime::ModelPlan& p) { p.cuda_modules.clear(); },
         "0 modules for 1 kernels"},
        {"cubin outside", [](runtime::ModelPlan& p) { p.cuda_modules[0].cubin_offset = 16; },
         "lies outside the 24 cubin bytes"},
        {"empty cubin", [](runtime::ModelPlan& p) { p.cuda_modules[0].cubin_bytes = 0; },
         "is empty or lies outside"},
        {"no launches", [](runtime::ModelPlan& p) { p.cuda_modules[0].launches.clear(); },
         "has no launches"},
        {"no symbol", [](runtime::ModelPlan& p) { p.cuda_modules[0].launches[0].symbol = ""; },
         "has no symbol"},
        {"zero grid", [](runtime::ModelPlan& p) { p.cuda_modules[0].launches[0].grid[1] = 0; },
         "grid extent 0 in dimension 1"},
        {"grid y", [](runtime::ModelPlan& p) { p.cuda_modules[0].launches[0].grid[2] = 70000; },
         "grid extent 70000 in dimension 2"},
        {"threads",
         [](runtime::ModelPlan& p) {
             p.cuda_modules[0].launches[0].block = {64, 32, 1};
         },
         "2048 threads per block"},
        {"shared", [](runtime::ModelPlan& p) { p.cuda_modules[0].launches[1].shared_bytes = -1; },
         "shared bytes -1"},
        {"workspace", [](runtime::ModelPlan& p) { p.cuda_modules[0].workspace_bytes[1] = -4; },
         "workspace 1 has -4 bytes"},
        {"cpu with cuda fields", [](runtime::ModelPlan& p) { p.target = runtime::PlanTarget::Cpu; },
         "a CPU plan carries CUDA fields"},
        {"unknown target",
         [](runtime::ModelPlan& p) { p.target = static_cast<runtime::PlanTarget>(7); },
         "plan target 7 is unknown"},
    };
    for (const Case& c : cases) {
        runtime::ModelPlan p = small_cuda_plan();
        c.breaks(p);
        const std::string msg = validation_error(p);
        EXPECT_NE(msg.find(c.message), std::string::npos) << c.what << ": got \"" << msg << "\"";
        // The parser validates too: a broken plan inside a library does not load.
        const std::string bytes = runtime::serialize_plan(p);
        EXPECT_THROW(runtime::parse_plan(bytes.data(), bytes.size()), std::runtime_error) << c.what;
    }
}

// ---- CLI builds -----------------------------------------------------------------------------

/// A loaded model library (dlopen) for looking at what it holds without running it.
class Library {
  public:
    explicit Library(const std::string& path) : h_(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {}
    ~Library() {
        if (h_)
            dlclose(h_);
    }
    Library(const Library&) = delete;
    Library& operator=(const Library&) = delete;
    bool loaded() const { return h_ != nullptr; }
    template <typename T> T sym(const char* name) const {
        return reinterpret_cast<T>(dlsym(h_, name));
    }
    runtime::ModelPlan plan() const {
        const auto* bytes = sym<const unsigned char*>("tessera_model_plan");
        const auto* size = sym<const uint64_t*>("tessera_model_plan_size");
        if (!bytes || !size)
            throw std::runtime_error("no plan symbols");
        return runtime::parse_plan(bytes, static_cast<size_t>(*size));
    }

  private:
    void* h_;
};

class CudaModelBuild : public ::testing::TestWithParam<const char*> {
  protected:
    static void SetUpTestSuite() { scratch_ = new ScratchDir("tessera_cuda_build"); }
    static void TearDownTestSuite() {
        delete scratch_;
        scratch_ = nullptr;
    }
    static ScratchDir* scratch_;
};
ScratchDir* CudaModelBuild::scratch_ = nullptr;

TEST_P(CudaModelBuild, CliBuildsALibraryThatSaysCudaAndStartsOnlyWithADevice) {
    const std::string name = GetParam();
    if (!have_model(name))
        GTEST_SKIP() << "model " << name << " not found under " << model_dir(name);
    const std::string so = scratch_->file(name + "_cuda.so");
    const testing::ProcessOutput r = testing::run_tessera(
        "build " + model_dir(name) + "/model.onnx --target cuda --arch sm_90 --no-db -j 2 -o " + so,
        scratch_->file(name + "_build"));
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("target cuda sm_90"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("(cuda -arch=sm_90)"), std::string::npos) << r.out;

    Library lib(so);
    ASSERT_TRUE(lib.loaded()) << dlerror();
    const runtime::ModelPlan plan = lib.plan();
    EXPECT_EQ(plan.target, runtime::PlanTarget::Cuda);
    EXPECT_EQ(plan.cuda_arch, "sm_90");
    ASSERT_EQ(plan.cuda_modules.size(), plan.kernels.size());
    // Each module's bytes inside the library are an ELF cubin.
    const auto* cubins = lib.sym<const unsigned char*>("tessera_model_cubins");
    ASSERT_NE(cubins, nullptr);
    for (const runtime::PlanCudaModule& m : plan.cuda_modules)
        EXPECT_EQ(std::memcmp(cubins + m.cubin_offset,
                              "\x7f"
                              "ELF",
                              4),
                  0);
    auto target = lib.sym<const char* (*)(void)>("tessera_model_target");
    ASSERT_NE(target, nullptr);
    EXPECT_STREQ(target(), "cuda");

    auto create = lib.sym<int (*)(TesseraModel**)>("tessera_model_create");
    auto last_error = lib.sym<const char* (*)(void)>("tessera_model_last_error");
    auto free_model = lib.sym<void (*)(TesseraModel*)>("tessera_model_free");
    ASSERT_TRUE(create && last_error && free_model);
    std::string reason;
    if (!runtime::cuda::load_driver(&reason)) {
        TesseraModel* m = nullptr;
        EXPECT_EQ(create(&m), -1);
        EXPECT_EQ(m, nullptr);
        const std::string err = last_error();
        EXPECT_EQ(err.find('\n'), std::string::npos) << err;
        EXPECT_NE(err.find("model '" + name + "' runs on CUDA (sm_90): " + reason),
                  std::string::npos)
            << err;
        // The CLI reports it in one line and exits 1.
        const testing::ProcessOutput run =
            testing::run_tessera("bench " + so + " --repeat 2", scratch_->file(name + "_bench"));
        EXPECT_EQ(run.code, 1) << run.out << run.err;
        EXPECT_NE(run.err.find(reason), std::string::npos) << run.err;
        std::printf("[SKIP] running %s on a GPU: %s\n", name.c_str(), reason.c_str());
        return;
    }
    // A GPU: the library's outputs equal the reference.
    if (!fs::exists(model_dir(name) + "/test_data_set_0"))
        GTEST_SKIP() << "no reference data for " << name;
    testing::LoadedModel lm(so);
    const auto inputs = read_data_set(model_dir(name), 0, "input");
    const auto ref = read_data_set(model_dir(name), 0, "output");
    EXPECT_TRUE(outputs_match(lm.run(inputs), ref)) << name << " on the GPU";
}

INSTANTIATE_TEST_SUITE_P(Models, CudaModelBuild,
                         ::testing::Values("mlp", "small_cnn", "conv_bn_relu", "mobilenet_tiny"));

TEST(CudaBuildOptions, RefusesABadArchitectureAndArchWithoutCuda) {
    ScratchDir scratch("tessera_cuda_opts");
    const std::string model = model_dir("mobilenet_tiny") + "/model.onnx";
    testing::ProcessOutput r = testing::run_tessera(
        "build " + model + " --target cuda --arch compute_90 --no-db -o " + scratch.file("a.so"),
        scratch.file("a"));
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("CUDA architecture 'compute_90' is not sm_<digits>"), std::string::npos)
        << r.err;
    r = testing::run_tessera("build " + model + " --arch sm_90 --no-db -o " + scratch.file("b.so"),
                             scratch.file("b"));
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("--arch sm_90 needs --target cuda"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(scratch.file("b.so")));
}

// ---- the whole model on the CPU emulation ---------------------------------------------------

/// Runs a prepared CUDA build's kernels on the CPU emulation through its plan: host memory for
/// the arena, the packed weights and the inputs/outputs, each call's generated CUDA launched
/// with the call's tensors as arguments (what CudaModelExecutor does on the device).
std::vector<graph::TensorData> emulate_model(const compile::ModelBuild& b,
                                             const std::vector<graph::TensorData>& inputs) {
    std::vector<uint8_t> weights;
    // Plan offsets only need some cubin per task here; the emulation compiles the CUDA C.
    const std::vector<std::string> fake_cubins(b.tasks.size(), std::string("cubin"));
    const runtime::ModelPlan plan = compile::make_model_plan(b, weights, fake_cubins);
    EXPECT_EQ(plan.target, runtime::PlanTarget::Cuda);
    std::vector<uint64_t> arena(static_cast<size_t>(plan.arena_bytes / 8 + 1));
    std::vector<uint64_t> weight_copy(weights.size() / 8 + 1);
    std::memcpy(weight_copy.data(), weights.data(), weights.size());
    std::vector<graph::TensorData> outputs;
    for (int32_t id : plan.outputs) {
        const runtime::PlanTensor& t = plan.tensors[static_cast<size_t>(id)];
        const std::map<runtime::PlanDType, graph::DType> dtypes = {
            {runtime::PlanDType::F32, graph::DType::F32},
            {runtime::PlanDType::F64, graph::DType::F64},
            {runtime::PlanDType::I32, graph::DType::I32},
            {runtime::PlanDType::I64, graph::DType::I64},
            {runtime::PlanDType::Bool, graph::DType::Bool}};
        outputs.emplace_back(dtypes.at(t.dtype), t.shape);
    }
    auto ptr = [&](int32_t id) -> void* {
        const runtime::PlanTensor& t = plan.tensors[static_cast<size_t>(id)];
        switch (t.storage) {
        case runtime::TensorStorage::Input:
            return const_cast<uint8_t*>(inputs.at(static_cast<size_t>(t.offset)).raw());
        case runtime::TensorStorage::Output:
            return outputs.at(static_cast<size_t>(t.offset)).raw();
        case runtime::TensorStorage::Weight:
            return reinterpret_cast<uint8_t*>(weight_copy.data()) + t.offset;
        case runtime::TensorStorage::Arena:
            return reinterpret_cast<uint8_t*>(arena.data()) + t.offset;
        }
        return nullptr;
    };
    std::map<int, std::unique_ptr<testing::EmulatedCuda>> emulated; // per task, compiled once
    for (const runtime::PlanCall& call : plan.calls) {
        if (call.kernel < 0) {
            const runtime::PlanTensor& src = plan.tensors[static_cast<size_t>(call.args[0])];
            std::memcpy(ptr(call.args[1]), ptr(call.args[0]), static_cast<size_t>(src.bytes));
            continue;
        }
        auto& e = emulated[call.kernel];
        if (!e)
            e = std::make_unique<testing::EmulatedCuda>(
                backend::cuda::codegen_cuda(b.tasks[static_cast<size_t>(call.kernel)].kernel));
        std::vector<void*> args;
        for (int32_t id : call.args)
            args.push_back(ptr(id));
        e->run(args);
    }
    return outputs;
}

TEST(CudaBuildLookup, CudaRecordOfAnotherMachineServesItsIsaClassAndCpuRecordsDoNot) {
    if (!have_model("mlp"))
        GTEST_SKIP() << "shared model mlp not found under " << model_dir("mlp");
    ScratchDir scratch("tessera_cuda_lookup");
    const std::string db_path = scratch.file("t.db");
    compile::BuildOptions opts;
    opts.model_path = model_dir("mlp") + "/model.onnx";
    opts.target = parse_target("cuda");
    const compile::ModelBuild untuned = compile::prepare_model_build(opts);
    ASSERT_GE(untuned.tasks.size(), 2u);
    const std::string this_machine = tune::host_fingerprint().hash();
    {
        tune::TuningDatabase db(db_path);
        // Task 0: a GPU schedule measured on another machine of class cuda;sm_90.
        const std::string gpu_steps = sched::steps_to_json(untuned.tasks[0].state.steps);
        testing::commit_record(db, untuned.tasks[0].task, gpu_steps,
                               {"cuda -arch=sm_90", "another-gpu-machine", "cuda;sm_90"}, 2e-6);
        // Task 1: only a CPU record of this machine, which a CUDA build must not take.
        testing::commit_record(db, untuned.tasks[1].task,
                               testing::sampled_schedule(untuned.tasks[1].task, 7),
                               testing::host_key(), 1e-6);
    }
    opts.db_path = db_path;
    opts.lookup = {"cuda -arch=sm_90", this_machine, "cuda;sm_90"};
    const compile::ModelBuild b = compile::prepare_model_build(opts);
    EXPECT_EQ(b.tasks[0].coverage.source, tune::LookupTier::IsaClass) << b.tasks[0].coverage.note;
    EXPECT_EQ(b.tasks[1].coverage.source, tune::LookupTier::Default);
    EXPECT_EQ(b.tasks[1].coverage.foreign_records, 1);
    for (const compile::TaskBuild& t : b.tasks)
        EXPECT_FALSE(t.cuda_module.launches.empty()) << t.task.pattern;
}

TEST(CudaBuildPrecision, Tf32PutsTheModelsMatrixProductsOnTensorCores) {
    if (!have_model("bert_emb_op13"))
        GTEST_SKIP() << "shared model bert_emb_op13 not found";
    compile::BuildOptions opts;
    opts.model_path = model_dir("bert_emb_op13") + "/model.onnx";
    opts.target = parse_target("cuda");
    auto tensor_core_tasks = [&](graph::Precision p) {
        opts.precision = p;
        const compile::ModelBuild b = compile::prepare_model_build(opts);
        int n = 0;
        for (const compile::TaskBuild& t : b.tasks)
            n += t.cuda_code.find("tessera_mma_tf32(") != std::string::npos;
        return n;
    };
    EXPECT_EQ(tensor_core_tasks(graph::Precision::FP32), 0);
    // The projections with their bias, residual and gelu epilogues and both attention
    // products (128 rows, columns and k multiples of 64): six of the eleven tasks.
    EXPECT_EQ(tensor_core_tasks(graph::Precision::TF32), 6);
    try {
        tensor_core_tasks(graph::Precision::FP16);
        ADD_FAILURE() << "a CUDA build took --precision fp16";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("fp16 is for CPU targets"), std::string::npos);
    }
    opts.target = parse_target("llvm");
    try {
        tensor_core_tasks(graph::Precision::TF32);
        ADD_FAILURE() << "a CPU build took --precision tf32";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("needs --target cuda"), std::string::npos);
    }
}

class CudaModelEmulated : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaModelEmulated, WholeModelOnTheCpuEmulationMatchesTheReference) {
    const std::string name = GetParam();
    if (!have_model(name))
        GTEST_SKIP() << "model " << name << " not found under " << model_dir(name);
    compile::BuildOptions opts;
    opts.model_path = model_dir(name) + "/model.onnx";
    opts.target = parse_target("cuda");
    const compile::ModelBuild b = compile::prepare_model_build(opts);
    for (const compile::TaskBuild& t : b.tasks)
        ASSERT_FALSE(t.cuda_module.launches.empty()) << t.task.pattern;
    const auto inputs = read_data_set(model_dir(name), 0, "input");
    const auto ref = read_data_set(model_dir(name), 0, "output");
    ASSERT_FALSE(inputs.empty());
    EXPECT_TRUE(outputs_match(emulate_model(b, inputs), ref)) << name << " emulated";
}

// conv_bn_relu is left out: its shared-memory tiled convolutions need one OS thread per CUDA
// thread with real barriers, about 30 s on two cores; small_cnn covers the same kinds of kernel
// (tiled convolution with shared copies, pooling, dense) at a smaller size.
INSTANTIATE_TEST_SUITE_P(SharedModels, CudaModelEmulated, ::testing::Values("mlp", "small_cnn"));

} // namespace
} // namespace tessera

#endif // TESSERA_HAVE_CUDA
