// `tessera run` and `tessera bench` end to end on the mlp model built by `tessera build`:
// outputs against the reference outputs, one-line errors for bad inputs, bench's JSON; and the
// built library's C API used directly through dlopen (two instances, threads, misaligned
// buffers).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <dlfcn.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/tessera_process.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/graph/tensor_io.h"
#include "tessera/runtime/tessera_model.h"

namespace fs = std::filesystem;
using tessera::graph::DType;
using tessera::graph::TensorData;

namespace {

const std::string kModels = TESSERA_SOURCE_DIR "/../shared/models";

using Output = tessera::testing::ProcessOutput;

/// `tessera ARGS`, stdout and stderr together in `out`.
Output run_tessera(const std::string& args) { return tessera::testing::capture_tessera(args); }

/// Every element within atol + rtol * |ref| (the models' README tolerance).
void expect_close(const TensorData& got, const TensorData& ref, const std::string& what) {
    ASSERT_EQ(got.dtype(), ref.dtype()) << what;
    ASSERT_EQ(got.shape(), ref.shape()) << what;
    const std::vector<double> g = got.as_f64(), r = ref.as_f64();
    int bad = 0;
    for (size_t i = 0; i < g.size(); ++i)
        if (!(std::fabs(g[i] - r[i]) <= 1e-5 + 1e-4 * std::fabs(r[i])) && bad++ < 5)
            ADD_FAILURE() << what << "[" << i << "] = " << g[i] << ", reference " << r[i];
}

/// Builds mlp once for all tests of this file into a fresh temporary folder.
class RunBench : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = fs::temp_directory_path() / ("tessera_run_bench_" + std::to_string(getpid()));
        fs::create_directories(dir_);
        if (!fs::exists(kModels + "/mlp/model.onnx"))
            return;
        const Output o =
            run_tessera("build " + kModels + "/mlp/model.onnx -o " + (dir_ / "mlp.so").string());
        build_log_ = o.out;
        built_ = o.code == 0 && fs::exists(dir_ / "mlp.so");
    }
    static void TearDownTestSuite() {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    void SetUp() override {
        if (!fs::exists(kModels + "/mlp/model.onnx"))
            GTEST_SKIP() << "shared models absent: " << kModels;
        ASSERT_TRUE(built_) << "tessera build failed:\n" << build_log_;
    }

    static std::string so() { return (dir_ / "mlp.so").string(); }
    static std::string data(int set, const std::string& file) {
        return kModels + "/mlp/test_data_set_" + std::to_string(set) + "/" + file;
    }
    /// Writes t as a .npy file in the temporary folder and returns its path.
    static std::string npy(const std::string& name, const TensorData& t) {
        const std::string path = (dir_ / name).string();
        tessera::graph::write_npy(path, t);
        return path;
    }
    void expect_user_error(const std::string& args, const std::vector<std::string>& parts) {
        const Output o = run_tessera(args);
        EXPECT_EQ(o.code, 1) << args << "\n" << o.out;
        EXPECT_EQ(o.out.rfind("error: ", 0), 0u) << args << "\n" << o.out;
        EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << args << "\n" << o.out;
        for (const std::string& p : parts)
            EXPECT_NE(o.out.find(p), std::string::npos) << "'" << p << "' in\n" << o.out;
    }

    static inline fs::path dir_;
    static inline bool built_ = false;
    static inline std::string build_log_;
};

} // namespace

TEST_F(RunBench, RunMatchesTheReferenceOutputs) {
    for (int set : {0, 1}) {
        SCOPED_TRACE("test_data_set_" + std::to_string(set));
        const fs::path out = dir_ / ("out" + std::to_string(set)) / "nested"; // created
        // Set 0 with NAME=FILE.npy, set 1 with the bare FILE of a single-input model, as an
        // ONNX TensorProto.
        const std::string input =
            set == 0 ? "input=" + data(set, "input_0.npy") : data(set, "input_0.pb");
        const Output o = run_tessera("run " + so() + " --input " + input + " --output " +
                                     out.string() + " --threads " + std::to_string(set + 1));
        ASSERT_EQ(o.code, 0) << o.out;
        EXPECT_NE(o.out.find("logits.npy"), std::string::npos) << o.out;
        expect_close(tessera::graph::read_npy((out / "logits.npy").string()),
                     tessera::graph::read_npy(data(set, "output_0.npy")), "logits");
        expect_close(tessera::graph::read_npy((out / "probs.npy").string()),
                     tessera::graph::read_npy(data(set, "output_1.npy")), "probs");
    }
}

// run --json: one object naming each output and the file written for it, in the model's output
// order; the files hold the reference outputs. An error stays one line on stderr.
TEST_F(RunBench, RunJsonNamesTheWrittenFiles) {
    const fs::path out = dir_ / "json_out";
    const Output o = tessera::testing::capture_tessera(
        "run " + so() + " --input input=" + data(0, "input_0.npy") + " --output " + out.string() +
            " --threads 1 --json",
        "/dev/null");
    ASSERT_EQ(o.code, 0) << o.out;
    ASSERT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << o.out;
    const nlohmann::json j = nlohmann::json::parse(o.out);
    EXPECT_FALSE(j.at("model").get<std::string>().empty());
    EXPECT_EQ(j.at("path"), so());
    EXPECT_EQ(j.at("threads"), 1);
    EXPECT_EQ(j.at("output_dir"), out.string());
    ASSERT_EQ(j.at("outputs").size(), 2u) << j;
    const char* refs[] = {"output_0.npy", "output_1.npy"};
    const char* names[] = {"logits", "probs"};
    for (size_t i = 0; i < 2; ++i) {
        const nlohmann::json& t = j["outputs"][i];
        EXPECT_EQ(t.at("name"), names[i]);
        EXPECT_EQ(t.at("file"), (out / (std::string(names[i]) + ".npy")).string());
        EXPECT_EQ(t.at("dtype"), "f32");
        EXPECT_EQ(t.at("shape"), nlohmann::json::array({1, 10}));
        ASSERT_TRUE(fs::exists(t.at("file").get<std::string>())) << t;
        expect_close(tessera::graph::read_npy(t.at("file").get<std::string>()),
                     tessera::graph::read_npy(data(0, refs[i])), names[i]);
    }
    expect_user_error("run " + so() + " --json --output " + out.string(), {"missing input"});
}

TEST_F(RunBench, BadInputsAreOneLineErrors) {
    const std::string in = data(0, "input_0.npy");
    const std::string out = " --output " + (dir_ / "bad").string();
    expect_user_error("run " + so() + " --input image=" + in + out,
                      {"unknown input 'image'", "the model's inputs: input"});
    expect_user_error("run " + so() + out, {"missing input 'input'", "f32[1,784]"});
    expect_user_error("run " + so() + " --input input=" + in + " --input input=" + in + out,
                      {"input 'input' is given twice"});
    std::vector<float> v(783);
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = 0.25f + 0.001f * static_cast<float>(i);
    const std::string short_npy = npy("short.npy", TensorData::from_vector<float>({1, 783}, v));
    expect_user_error("run " + so() + " --input input=" + short_npy + out,
                      {"input 'input'", "expected f32[1,784]", "given f32[1,783]"});
    std::vector<double> d(784, 0.5);
    const std::string f64_npy = npy("f64.npy", TensorData::from_vector<double>({1, 784}, d));
    expect_user_error("run " + so() + " --input " + f64_npy + out,
                      {"input 'input'", "expected f32[1,784]", "given f64[1,784]"});
    expect_user_error("run " + so() + " --input input=" + (dir_ / "absent.npy").string() + out,
                      {"absent.npy"});
    // Not a model library at all.
    const std::string text = (dir_ / "not_a_model.so").string();
    std::ofstream(text) << "hello\n";
    expect_user_error("run " + text + " --input " + in + out,
                      {"cannot load model library '" + text + "'"});
    // A library cut short (a copy interrupted): one line naming it, not SIGBUS inside dlopen.
    const std::string cut = (dir_ / "cut.so").string();
    fs::copy_file(so(), cut, fs::copy_options::overwrite_existing);
    fs::resize_file(cut, fs::file_size(cut) * 2 / 3);
    expect_user_error("bench " + cut, {"model library '" + cut + "' is truncated"});
    expect_user_error("run " + cut + " --input " + in + out, {"'" + cut + "' is truncated"});
    // A library for another machine: dlopen calls it "No such file or directory"; the one line
    // says what it is instead.
    const std::string arm = (dir_ / "aarch64.so").string();
    {
        std::ifstream lib(so(), std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(lib)), std::istreambuf_iterator<char>());
        bytes[18] = static_cast<char>(183); // e_machine (little-endian): EM_AARCH64
        bytes[19] = 0;
        std::ofstream(arm, std::ios::binary) << bytes;
    }
    expect_user_error("bench " + arm, {"'" + arm + "' is built for another machine (aarch64"});
    expect_user_error("run " + arm + " --input " + in + out, {"another machine (aarch64"});
    expect_user_error("bench " + (dir_ / "missing.so").string(),
                      {"'" + (dir_ / "missing.so").string() + "' does not exist"});
    expect_user_error("bench " + so() + " --repeat 3 --min-secs 1", {"--min-secs"});
    // Thread counts outside 0..1024, as op run and tune refuse them.
    expect_user_error("bench " + so() + " --threads -1",
                      {"--threads", "-1", "not in range 0 to 1024"});
    expect_user_error("bench " + so() + " --threads 99999999", {"--threads", "99999999"});
    expect_user_error("run " + so() + " --input " + in + out + " --threads 2000",
                      {"--threads", "2000"});
}

TEST_F(RunBench, ALibraryWithDamagedWeightsRefusesToLoad) {
    // One flipped byte inside the weights (found by the bytes of a run of four of the model's
    // constant elements): run and bench refuse the library in one line instead of computing.
    const tessera::graph::Graph g =
        tessera::graph::import_onnx(kModels + "/mlp/model.onnx");
    std::ifstream in(so(), std::ios::binary);
    std::string lib((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t at = std::string::npos;
    for (size_t v = 0; v < g.num_values() && at == std::string::npos; ++v) {
        const tessera::graph::Value& val = g.value(static_cast<tessera::graph::ValueId>(v));
        if (!val.is_constant() || val.dtype != DType::F32 || val.constant->numel() < 4)
            continue;
        at = lib.find(std::string(reinterpret_cast<const char*>(val.constant->raw()), 16));
    }
    ASSERT_NE(at, std::string::npos) << "no weight of the model found in its library";
    lib[at + 2] = static_cast<char>(lib[at + 2] ^ 0x40);
    const std::string damaged = (dir_ / "damaged.so").string();
    std::ofstream(damaged, std::ios::binary) << lib;
    expect_user_error("bench " + damaged, {"weights are corrupt", "damaged after it was built"});
    expect_user_error("run " + damaged + " --input " + data(0, "input_0.npy") + " --output " +
                          (dir_ / "damaged_out").string(),
                      {"weights are corrupt"});
}

TEST_F(RunBench, BenchJsonHasTheDistribution) {
    const Output o = run_tessera("bench " + so() + " --json --warmup 2 --repeat 25 --threads 1");
    ASSERT_EQ(o.code, 0) << o.out;
    const nlohmann::json j = nlohmann::json::parse(o.out);
    EXPECT_EQ(j.at("runs").get<int>(), 25);
    EXPECT_EQ(j.at("threads").get<int>(), 1);
    EXPECT_EQ(j.at("warmup").get<int>(), 2);
    const double p10 = j.at("p10_ms"), median = j.at("median_ms"), p90 = j.at("p90_ms");
    EXPECT_GT(p10, 0.0);
    EXPECT_LE(p10, median);
    EXPECT_LE(median, p90);
    EXPECT_NEAR(j.at("spread").get<double>(), p90 / p10, 1e-9);
    EXPECT_GT(j.at("peak_rss_bytes").get<int64_t>(), 0);
    // mlp's largest intermediate is 1x512 f32: its arena holds at least that.
    EXPECT_GE(j.at("arena_bytes").get<int64_t>(), 512 * 4);
    EXPECT_FALSE(j.at("model").get<std::string>().empty());
    EXPECT_FALSE(j.contains("core_round_trip_ns")) << "one thread: not measured";

    const Output text = run_tessera("bench " + so() + " --warmup 1 --min-secs 0.05");
    ASSERT_EQ(text.code, 0) << text.out;
    for (const char* field : {"median", "p10", "p90", "spread", "peak RSS", "arena"})
        EXPECT_NE(text.out.find(field), std::string::npos) << field << " in\n" << text.out;

    // With two threads, the cache-line round trip between the CPUs beside the latency, where
    // the process has two CPUs.
    cpu_set_t set;
    CPU_ZERO(&set);
    ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
    const Output two = run_tessera("bench " + so() + " --json --repeat 5 --threads 2");
    ASSERT_EQ(two.code, 0) << two.out;
    const nlohmann::json j2 = nlohmann::json::parse(two.out);
    if (CPU_COUNT(&set) >= 2) {
        EXPECT_GT(j2.at("core_round_trip_ns").get<double>(), 0.0) << two.out;
    }
}

// --profile: one entry per call of the model's sequence, named by its kernel and labelled with
// what it computes (its fused group, pattern and output type), each with a positive time in
// sequence and hot, its operations (mlp's dense kernels: 2 x 784 x 512 and more) and product
// precision, and its share of the CPU's peak for them, in the JSON and in the text table; the
// sum of the calls' operations at peak bounds the run.
TEST_F(RunBench, BenchProfileTimesEveryCall) {
    const Output o =
        run_tessera("bench " + so() + " --json --warmup 1 --repeat 10 --threads 1 --profile");
    ASSERT_EQ(o.code, 0) << o.out;
    const nlohmann::json j = nlohmann::json::parse(o.out);
    const nlohmann::json& calls = j.at("calls");
    ASSERT_GE(calls.size(), 2u) << o.out; // mlp: at least two dense kernels
    int kernels = 0;
    for (const nlohmann::json& c : calls) {
        const std::string kernel = c.at("kernel");
        kernels += kernel.rfind("tessera_kernel_", 0) == 0;
        EXPECT_TRUE(kernel == "copy" || kernel.rfind("tessera_kernel_", 0) == 0) << kernel;
        const std::string label = c.at("label");
        if (kernel != "copy") { // "group 0 dense+relu f32[1,128]"
            EXPECT_EQ(label.rfind("group ", 0), 0u) << label;
            EXPECT_NE(label.find(" f32["), std::string::npos) << label;
        }
        EXPECT_GT(c.at("ms").get<double>(), 0.0) << kernel;
        EXPECT_GT(c.at("hot_ms").get<double>(), 0.0) << kernel;
        if (label.find("group 0 ") == 0) { // the first dense layer, 784 -> 512
            EXPECT_GE(c.at("flops").get<int64_t>(), 2 * 784 * 512) << label;
            EXPECT_EQ(c.at("precision"), "f32") << label;
            const double fraction = c.at("peak_fraction").get<double>();
            EXPECT_GT(fraction, 0.0) << label;
            EXPECT_LT(fraction, 1.5) << label; // a measured peak is not exceeded by half
        }
        if (kernel == "copy") {
            EXPECT_EQ(c.at("flops").get<int64_t>(), 0) << label;
        }
    }
    EXPECT_GE(kernels, 2);
    const double peak_ms = j.at("peak_ms").get<double>();
    EXPECT_GT(peak_ms, 0.0);
    EXPECT_LT(peak_ms, j.at("median_ms").get<double>());

    const Output text = run_tessera("bench " + so() + " --repeat 5 --profile");
    ASSERT_EQ(text.code, 0) << text.out;
    for (const char* field : {"per call", "tessera_kernel_0", "hot ms", "GOP/s", "peak", "computes",
                              "group 0 ", "sum", "at peak "})
        EXPECT_NE(text.out.find(field), std::string::npos) << field << " in\n" << text.out;
}

// The library's C API directly: what any C program linking model.so sees.
TEST_F(RunBench, CApiTwoInstancesThreadsAndMisalignedBuffers) {
    void* h = dlopen(so().c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(h, nullptr) << dlerror();
    auto sym = [&](const char* name) {
        void* s = dlsym(h, name);
        EXPECT_NE(s, nullptr) << name;
        return s;
    };
    auto abi = reinterpret_cast<int (*)()>(sym("tessera_model_abi_version"));
    auto create = reinterpret_cast<int (*)(TesseraModel**)>(sym("tessera_model_create"));
    auto free_model = reinterpret_cast<void (*)(TesseraModel*)>(sym("tessera_model_free"));
    auto input_info = reinterpret_cast<int (*)(const TesseraModel*, int, TesseraTensorInfo*)>(
        sym("tessera_model_input_info"));
    auto num_outputs =
        reinterpret_cast<int (*)(const TesseraModel*)>(sym("tessera_model_num_outputs"));
    auto set_threads =
        reinterpret_cast<int (*)(TesseraModel*, int)>(sym("tessera_model_set_num_threads"));
    auto run = reinterpret_cast<int (*)(TesseraModel*, const void* const*, void* const*)>(
        sym("tessera_model_run"));
    auto last_error = reinterpret_cast<const char* (*)()>(sym("tessera_model_last_error"));
    auto call_label = reinterpret_cast<const char* (*)(const TesseraModel*, int)>(
        sym("tessera_model_call_label"));
    ASSERT_FALSE(HasFailure());
    EXPECT_EQ(abi(), TESSERA_MODEL_ABI_VERSION);

    TesseraModel* a = nullptr;
    TesseraModel* b = nullptr;
    ASSERT_EQ(create(&a), 0) << last_error();
    ASSERT_EQ(create(&b), 0) << last_error();
    TesseraTensorInfo info;
    ASSERT_EQ(input_info(a, 0, &info), 0);
    EXPECT_STREQ(info.name, "input");
    EXPECT_EQ(info.dtype, TESSERA_F32);
    ASSERT_EQ(info.rank, 2);
    EXPECT_EQ(info.shape[1], 784);
    EXPECT_EQ(input_info(a, 1, &info), -1);
    EXPECT_NE(std::string(last_error()).find("out of range"), std::string::npos);
    // The message stays until the next failure of this thread.
    EXPECT_EQ(set_threads(a, 1), 0);
    EXPECT_NE(std::string(last_error()).find("out of range"), std::string::npos);
    ASSERT_EQ(num_outputs(a), 2);
    ASSERT_NE(call_label(a, 0), nullptr) << last_error();
    EXPECT_EQ(std::string(call_label(a, 0)).rfind("group 0 ", 0), 0u) << call_label(a, 0);
    EXPECT_EQ(call_label(a, 1000), nullptr);
    EXPECT_NE(std::string(last_error()).find("out of range"), std::string::npos);
    EXPECT_EQ(call_label(nullptr, 0), nullptr);

    const TensorData x0 = tessera::graph::read_npy(data(0, "input_0.npy"));
    const TensorData x1 = tessera::graph::read_npy(data(1, "input_0.npy"));
    // Each instance on its own thread with its own thread count and data set, many runs; the
    // buffers of instance b sit at odd byte addresses.
    auto worker = [&](TesseraModel* m, const TensorData& x, int set, int threads, size_t shift) {
        EXPECT_EQ(set_threads(m, threads), 0);
        std::vector<unsigned char> in(x.nbytes() + shift), l(40 + shift), p(40 + shift);
        std::memcpy(in.data() + shift, x.raw(), x.nbytes());
        const void* ins[] = {in.data() + shift};
        void* outs[] = {l.data() + shift, p.data() + shift};
        for (int r = 0; r < 10; ++r) {
            ASSERT_EQ(run(m, ins, outs), 0) << last_error();
            TensorData logits(DType::F32, {1, 10}), probs(DType::F32, {1, 10});
            std::memcpy(logits.raw(), l.data() + shift, 40);
            std::memcpy(probs.raw(), p.data() + shift, 40);
            expect_close(logits, tessera::graph::read_npy(data(set, "output_0.npy")), "logits");
            expect_close(probs, tessera::graph::read_npy(data(set, "output_1.npy")), "probs");
        }
    };
    std::thread ta(worker, a, std::cref(x0), 0, 2, size_t(0));
    std::thread tb(worker, b, std::cref(x1), 1, 1, size_t(3));
    ta.join();
    tb.join();
    free_model(a);
    free_model(b);
    dlclose(h);
}

// --precision bf16 for a CPU without bf16 products (a Zen 3: AVX2) says, in one note, that
// they run as f32 multiply-adds; for a CPU with them (a Sapphire Rapids), and in fp32, nothing.
TEST_F(RunBench, Bf16ForACpuWithoutItsProductsSaysSo) {
    const std::string build =
        "build " + kModels + "/mlp/model.onnx -o " + (dir_ / "mlp_bf16.so").string() + " --no-db";
    const Output zen3 = run_tessera(build + " --precision bf16 --target \"llvm -mcpu=znver3\"");
    ASSERT_EQ(zen3.code, 0) << zen3.out;
    EXPECT_NE(zen3.out.find("note: znver3 has no bf16 products (avx512bf16, amx-bf16)"),
              std::string::npos)
        << zen3.out;
    for (const std::string& other : {std::string(" --precision bf16 --target \"llvm "
                                                 "-mcpu=sapphirerapids\""),
                                     std::string(" --target \"llvm -mcpu=znver3\"")}) {
        const Output o = run_tessera(build + other);
        ASSERT_EQ(o.code, 0) << other << "\n" << o.out;
        EXPECT_EQ(o.out.find("note:"), std::string::npos) << other << "\n" << o.out;
    }
}
