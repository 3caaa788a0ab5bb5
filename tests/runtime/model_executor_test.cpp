// The model executor on a plan whose kernels are JIT-compiled from tensor expressions: a matmul
// with a weight into an arena intermediate, a relu into an output, copies into further outputs;
// checked against a naive reference on random inputs of odd sizes, with two instances, with
// misaligned caller buffers, and its error messages. Also the C API in a program that holds no
// model.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/test_util.h"
#include "tessera/backends/llvm.h"
#include "tessera/lower/lower_default.h"
#include "tessera/lower/lower_for_codegen.h"
#include "tessera/runtime/model_executor.h"
#include "tessera/runtime/tessera_model.h"
#include "tessera/runtime/thread_pool.h"
#include "tessera/te/compute.h"
#include "tessera/te/op_library.h"
#include "tessera/te/tensor.h"

using namespace tessera;
using runtime::ModelExecutor;
using runtime::ModelPlan;
using runtime::PlanDType;
using runtime::TensorStorage;

namespace {

struct AlignedDelete {
    void operator()(float* p) const { std::free(p); }
};
using AlignedFloats = std::unique_ptr<float, AlignedDelete>;

AlignedFloats aligned_floats(const std::vector<float>& v) {
    const size_t bytes = (v.size() * sizeof(float) + 63) / 64 * 64;
    AlignedFloats p(static_cast<float*>(std::aligned_alloc(64, bytes ? bytes : 64)));
    std::memcpy(p.get(), v.data(), v.size() * sizeof(float));
    return p;
}

int64_t round64(int64_t n) { return (n + 63) / 64 * 64; }

/// y = relu(x @ w), h = x @ w, xc = x: three outputs of one model with input x [m, k] and
/// weight w [k, n]. The matmul writes an arena intermediate that the relu reads and a copy
/// turns into output 1; output 2 copies the input.
struct MatmulReluModel {
    int64_t m, k, n;
    std::unique_ptr<backend::JitModule> jit;
    ModelPlan plan;
    std::vector<float> w;
    AlignedFloats weights;

    MatmulReluModel(int64_t m_, int64_t k_, int64_t n_, uint64_t seed) : m(m_), k(k_), n(n_) {
        te::Tensor x = te::placeholder({m, k}, te::DataType::f32(), "x");
        te::Tensor wt = te::placeholder({k, n}, te::DataType::f32(), "w");
        te::Compute mm = te::make_compute({x, wt}, {te::matmul(x, wt)});
        te::Tensor h = te::placeholder({m, n}, te::DataType::f32(), "h");
        te::Compute relu = te::make_compute({h}, {te::relu(h)});
        jit = backend::JitModule::compile(
            {lower::prepare_for_codegen(lower::lower_default(mm, "k_matmul")),
             lower::prepare_for_codegen(lower::lower_default(relu, "k_relu"))});

        const int64_t xb = m * k * 4, wb = k * n * 4, hb = m * n * 4;
        plan.model_name = "matmul_relu";
        // A leading unused arena block, so that h sits at a nonzero arena offset.
        plan.tensors = {
            {"x", PlanDType::F32, {m, k}, TensorStorage::Input, 0, xb},
            {"w", PlanDType::F32, {k, n}, TensorStorage::Weight, 64, wb},
            {"h", PlanDType::F32, {m, n}, TensorStorage::Arena, 128, hb},
            {"y", PlanDType::F32, {m, n}, TensorStorage::Output, 0, hb},
            {"h_out", PlanDType::F32, {m, n}, TensorStorage::Output, 1, hb},
            {"x_out", PlanDType::F32, {m, k}, TensorStorage::Output, 2, xb},
        };
        plan.inputs = {0};
        plan.outputs = {3, 4, 5};
        plan.kernels = {"k_matmul", "k_relu"};
        plan.calls = {{0, {0, 1, 2}, "matmul", 0, ""},
                      {1, {2, 3}, "relu", 0, ""},
                      {-1, {2, 4}, "copy h", 0, ""},
                      {-1, {0, 5}, "copy x", 0, ""}};
        plan.arena_bytes = 128 + round64(hb);
        plan.weight_bytes = 64 + round64(wb);

        w = tessera::testing::random_floats(static_cast<size_t>(k * n), seed);
        std::vector<float> blob(static_cast<size_t>(plan.weight_bytes / 4), 0.0f);
        for (size_t i = 0; i < w.size(); ++i)
            blob[16 + i] = w[i]; // w at byte offset 64
        weights = aligned_floats(blob);
    }

    std::unique_ptr<ModelExecutor> instance() const {
        return std::make_unique<ModelExecutor>(
            plan, std::vector<TesseraKernelFn>{jit->get("k_matmul"), jit->get("k_relu")},
            weights.get());
    }

    /// The reference h = x @ w (double accumulation).
    std::vector<float> reference_h(const std::vector<float>& x) const {
        std::vector<float> h(static_cast<size_t>(m * n));
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
                double acc = 0;
                for (int64_t r = 0; r < k; ++r)
                    acc += double(x[size_t(i * k + r)]) * double(w[size_t(r * n + j)]);
                h[size_t(i * n + j)] = static_cast<float>(acc);
            }
        return h;
    }

    /// Runs `e` on x and checks all three outputs against the reference.
    void run_and_check(ModelExecutor& e, const std::vector<float>& x) const {
        std::vector<float> y(size_t(m * n), -7.0f), h(size_t(m * n), -7.0f), xc(x.size(), -7.0f);
        const void* in[] = {x.data()};
        void* out[] = {y.data(), h.data(), xc.data()};
        e.run(in, out);
        const std::vector<float> ref_h = reference_h(x);
        std::vector<float> ref_y = ref_h;
        for (float& v : ref_y)
            v = v > 0 ? v : 0;
        EXPECT_LT(tessera::testing::max_rel_error(h, ref_h), 1e-5);
        EXPECT_LT(tessera::testing::max_rel_error(y, ref_y), 1e-5);
        EXPECT_EQ(xc, x);
    }
};

struct ThreadCountGuard {
    int saved = runtime::num_threads();
    ~ThreadCountGuard() { runtime::set_num_threads(saved); }
};

} // namespace

TEST(ModelExecutor, MatmulReluMatchesReferenceOnOddSizes) {
    const int64_t sizes[][3] = {{1, 1, 1}, {7, 13, 127}, {13, 127, 7}, {1, 13, 7}};
    uint64_t seed = 11;
    for (const auto& s : sizes) {
        SCOPED_TRACE(std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" +
                     std::to_string(s[2]));
        MatmulReluModel model(s[0], s[1], s[2], seed++);
        auto e = model.instance();
        EXPECT_EQ(e->arena_bytes(), model.plan.arena_bytes);
        // Two runs with different inputs: nothing of the first leaks into the second.
        model.run_and_check(*e, tessera::testing::random_floats(size_t(s[0] * s[1]), seed++));
        model.run_and_check(
            *e, tessera::testing::random_floats(size_t(s[0] * s[1]), seed++, -3.0f, 2.0f));
        EXPECT_EQ(e->last_run_staged(), 0); // vectors of floats are 4-byte aligned
    }
}

TEST(ModelExecutor, TwoInstancesRunIndependently) {
    MatmulReluModel model(7, 13, 127, 21);
    auto a = model.instance();
    auto b = model.instance();
    const std::vector<float> xa = tessera::testing::random_floats(7 * 13, 22);
    const std::vector<float> xb = tessera::testing::random_floats(7 * 13, 23, -2.0f, 1.0f);
    // Interleaved on one thread.
    model.run_and_check(*a, xa);
    model.run_and_check(*b, xb);
    model.run_and_check(*a, xa);
    // Concurrently on two threads (each instance on one thread only).
    std::thread ta([&] {
        for (int i = 0; i < 20; ++i)
            model.run_and_check(*a, xa);
    });
    std::thread tb([&] {
        for (int i = 0; i < 20; ++i)
            model.run_and_check(*b, xb);
    });
    ta.join();
    tb.join();
}

TEST(ModelExecutor, MisalignedBuffersAreStaged) {
    MatmulReluModel model(7, 13, 127, 31);
    auto e = model.instance();
    const std::vector<float> x = tessera::testing::random_floats(7 * 13, 32);
    const size_t xb = x.size() * 4, hb = 7 * 127 * 4;
    // Byte buffers with every tensor at an odd address.
    std::vector<unsigned char> in_bytes(xb + 1), y_bytes(hb + 3), h_bytes(hb + 2), xc_bytes(xb + 1);
    std::memcpy(in_bytes.data() + 1, x.data(), xb);
    const std::vector<unsigned char> in_before = in_bytes;
    for (int round = 0; round < 2; ++round) { // the second round reuses the staging buffers
        const void* in[] = {in_bytes.data() + 1};
        void* out[] = {y_bytes.data() + 3, h_bytes.data() + 1, xc_bytes.data() + 1};
        e->run(in, out);
        EXPECT_EQ(e->last_run_staged(), 4);
        EXPECT_EQ(in_bytes, in_before); // inputs are not modified
        std::vector<float> y(7 * 127), h(7 * 127), xc(x.size());
        std::memcpy(y.data(), y_bytes.data() + 3, hb);
        std::memcpy(h.data(), h_bytes.data() + 1, hb);
        std::memcpy(xc.data(), xc_bytes.data() + 1, xb);
        const std::vector<float> ref_h = model.reference_h(x);
        std::vector<float> ref_y = ref_h;
        for (float& v : ref_y)
            v = v > 0 ? v : 0;
        EXPECT_LT(tessera::testing::max_rel_error(h, ref_h), 1e-5);
        EXPECT_LT(tessera::testing::max_rel_error(y, ref_y), 1e-5);
        EXPECT_EQ(xc, x);
    }
    // Back to aligned buffers: nothing staged.
    model.run_and_check(*e, x);
    EXPECT_EQ(e->last_run_staged(), 0);
}

TEST(ModelExecutor, AppliesItsThreadCountAtEachRun) {
    ThreadCountGuard guard;
    MatmulReluModel model(13, 7, 13, 41);
    auto e = model.instance();
    const std::vector<float> x = tessera::testing::random_floats(13 * 7, 42);
    e->set_num_threads(1);
    model.run_and_check(*e, x);
    EXPECT_EQ(runtime::num_threads(), 1);
    e->set_num_threads(2);
    model.run_and_check(*e, x);
    EXPECT_EQ(runtime::num_threads(), 2);
    e->set_num_threads(0);
    model.run_and_check(*e, x);
    EXPECT_EQ(runtime::num_threads(), runtime::default_num_threads());
}

TEST(ModelExecutor, RefusesBadBindingsWithClearMessages) {
    MatmulReluModel model(7, 13, 7, 51);
    auto expect_error = [](const std::function<void()>& f, const std::string& part) {
        try {
            f();
            ADD_FAILURE() << "no error; expected '" << part << "'";
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
        }
    };
    const TesseraKernelFn mm = model.jit->get("k_matmul");
    expect_error([&] { ModelExecutor(model.plan, {mm}, model.weights.get()); },
                 "has 1 kernel functions for 2 plan kernels");
    expect_error(
        [&] {
            ModelExecutor(model.plan, {mm, nullptr}, model.weights.get());
        },
        "model kernel 1 'k_relu' has no function");
    expect_error([&] { ModelExecutor(model.plan, {mm, mm}, nullptr); }, "but no weight data");
    expect_error(
        [&] {
            ModelExecutor(model.plan, {mm, mm},
                          reinterpret_cast<const unsigned char*>(model.weights.get()) + 4);
        },
        "weights are not 64-byte aligned");
    ModelPlan bad = model.plan;
    bad.calls[1].kernel = 5;
    expect_error([&] { ModelExecutor(bad, {mm, mm}, model.weights.get()); }, "names kernel 5");

    auto e = model.instance();
    std::vector<float> x(7 * 13, 0.5f), y(49), h(49), xc(x.size());
    const void* in_null[] = {nullptr};
    void* out[] = {y.data(), h.data(), xc.data()};
    expect_error([&] { e->run(in_null, out); }, "model input 0 'x' is null");
    const void* in[] = {x.data()};
    void* out_null[] = {y.data(), nullptr, xc.data()};
    expect_error([&] { e->run(in, out_null); }, "model output 1 'h_out' is null");
    expect_error([&] { e->run(nullptr, out); }, "run without an input array");
}

TEST(ModelCApi, WithoutModelSymbolsCreateFailsClearly) {
    // This test program links the runtime but defines no tessera_model_plan (weak: null).
    EXPECT_EQ(tessera_model_abi_version(), TESSERA_MODEL_ABI_VERSION);
    TesseraModel* m = reinterpret_cast<TesseraModel*>(&m); // must be reset to null
    EXPECT_EQ(tessera_model_create(&m), -1);
    EXPECT_EQ(m, nullptr);
    EXPECT_NE(std::string(tessera_model_last_error()).find("tessera_model_plan is absent"),
              std::string::npos)
        << tessera_model_last_error();
    EXPECT_EQ(tessera_model_create(nullptr), -1);
    EXPECT_NE(std::string(tessera_model_last_error()).find("out pointer is null"),
              std::string::npos);
    // The error is per thread: another thread sees none.
    std::string other = "unset";
    std::thread([&] { other = tessera_model_last_error(); }).join();
    EXPECT_EQ(other, "");
    EXPECT_EQ(tessera_model_run(nullptr, nullptr, nullptr), -1);
    EXPECT_NE(std::string(tessera_model_last_error()).find("the model is null"), std::string::npos);
    TesseraTensorInfo info;
    EXPECT_EQ(tessera_model_input_info(nullptr, 0, &info), -1);
    EXPECT_STREQ(tessera_model_last_error(), "tessera_model_input_info: the model is null");
    EXPECT_EQ(tessera_model_num_inputs(nullptr), -1);
    tessera_model_free(nullptr);
}

TEST(ModelExecutor, ProfilingTimesEveryCallWithoutChangingResults) {
    MatmulReluModel model(13, 127, 7, 41);
    auto e = model.instance();
    EXPECT_EQ(e->profiling(), ModelExecutor::Profiling::Off);
    EXPECT_TRUE(e->call_seconds().empty()); // nothing timed before a mode is set

    // Sequence: results are the model's, every call gets a positive total, runs are counted.
    e->set_profiling(ModelExecutor::Profiling::Sequence);
    const std::vector<float> x = tessera::testing::random_floats(13 * 127, 42);
    model.run_and_check(*e, x);
    model.run_and_check(*e, x);
    ASSERT_EQ(e->call_seconds().size(), model.plan.calls.size());
    EXPECT_EQ(e->profiled_runs(), 2);
    for (size_t c = 0; c < model.plan.calls.size(); ++c)
        EXPECT_GT(e->call_seconds()[c], 0.0) << "call " << c;

    // Hot: this plan updates nothing in place, so its outputs are still right; totals restart.
    e->set_profiling(ModelExecutor::Profiling::Hot);
    EXPECT_EQ(e->profiled_runs(), 0);
    model.run_and_check(*e, x);
    EXPECT_EQ(e->profiled_runs(), 1);
    for (size_t c = 0; c < model.plan.calls.size(); ++c)
        EXPECT_GT(e->call_seconds()[c], 0.0) << "call " << c;

    // Off again: runs add nothing.
    e->set_profiling(ModelExecutor::Profiling::Off);
    model.run_and_check(*e, x);
    EXPECT_EQ(e->profiled_runs(), 0);
    for (double s : e->call_seconds())
        EXPECT_EQ(s, 0.0);
}
