// Cross-compilation: models built for aarch64 (`--target "llvm -mtriple=aarch64-linux-gnu
// -mcpu=neoverse-n1"`) run under qemu-aarch64 through tessera-run-model built for aarch64, and
// match their references; the same runner built for this host runs host libraries.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/model_library_loader.h"
#include "common/tessera_process.h"
#include "tessera/compile/model_compiler.h"
#include "tessera/graph/tensor_io.h"
#include "tessera/tuner/fingerprint.h"
#include "tessera/tuner/tune_target.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::model_dir;
using testing::outputs_match;
using testing::read_data_set;
using testing::ScratchDir;

constexpr const char* kArm = "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1";

/// qemu-aarch64 with the Debian cross libraries, or "" when either is missing.
std::string qemu_command() {
    if (!fs::exists("/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1"))
        return "";
    for (const char* dir : {"/usr/bin", "/usr/local/bin"})
        if (fs::exists(std::string(dir) + "/qemu-aarch64"))
            return std::string(dir) + "/qemu-aarch64 -L /usr/aarch64-linux-gnu";
    return "";
}

/// Builds `name` for `target` into dir/name.so, writes data set 0's inputs as .npy there and
/// runs `runner` on them; returns the outputs (empty after a gtest failure).
std::vector<graph::TensorData> build_and_run(const std::string& name, const std::string& target,
                                             const std::string& runner, const ScratchDir& dir) {
    compile::BuildOptions opts;
    opts.model_path = model_dir(name) + "/model.onnx";
    opts.target = parse_target(target);
    opts.jobs = 2;
    const compile::ModelBuild b = compile::prepare_model_build(opts);
    const std::string so = dir.file(name + ".so");
    compile::write_model_library(b, so, opts);

    std::string cmd = runner + " " + so;
    const std::vector<graph::TensorData> inputs = read_data_set(model_dir(name), 0, "input");
    for (size_t i = 0; i < inputs.size(); ++i) {
        const std::string path = dir.file(name + "_in" + std::to_string(i) + ".npy");
        graph::write_npy(path, inputs[i]);
        cmd += " " + path;
    }
    const std::string out = dir.file(name + "_out");
    fs::create_directories(out);
    const testing::CommandResult r = testing::run_command(cmd + " --output " + out, dir.path());
    if (r.code != 0) {
        ADD_FAILURE() << cmd << ": exit " << r.code << ": " << r.err;
        return {};
    }
    std::vector<graph::TensorData> got;
    for (size_t i = 0; fs::exists(out + "/output_" + std::to_string(i) + ".npy"); ++i)
        got.push_back(graph::read_npy(out + "/output_" + std::to_string(i) + ".npy"));
    return got;
}

class Aarch64Model : public ::testing::TestWithParam<const char*> {};

TEST_P(Aarch64Model, BuiltForAarch64MatchesTheReferenceUnderQemu) {
    const std::string name = GetParam();
    if (!fs::exists(model_dir(name) + "/model.onnx"))
        GTEST_SKIP() << "model " << name << " not found under " << model_dir(name);
    const std::string qemu = qemu_command();
    const std::string runner = TESSERA_RUN_MODEL_AARCH64;
    if (qemu.empty() || runner.empty())
        GTEST_SKIP() << "needs qemu-user and the aarch64 cross libraries (scripts/setup.sh), "
                        "present when tessera was configured";
    ScratchDir dir("tessera_cross_" + name);
    const auto got = build_and_run(name, kArm, qemu + " " + runner, dir);
    EXPECT_TRUE(outputs_match(got, read_data_set(model_dir(name), 0, "output"))) << name;
}

INSTANTIATE_TEST_SUITE_P(Models, Aarch64Model,
                         ::testing::Values("mlp", "small_cnn", "conv_bn_relu", "mobilenet_tiny"));

// Tuning a target that is not the host: `tune --runner CMD` measures through the aarch64
// worker under qemu (which reads only what the tuner streams to it), commits records of the aarch64
// target (its own fingerprint), and a build for that target serves every task from them; the
// library still matches its reference.
TEST(CrossBuild, TuneThroughAQemuWorkerThenBuildFromItsRecords) {
    if (!fs::exists(model_dir("mlp") + "/model.onnx"))
        GTEST_SKIP() << "shared model mlp not found";
    const std::string qemu = qemu_command();
    const std::string worker = TESSERA_MEASURE_WORKER_AARCH64;
    if (qemu.empty() || worker.empty())
        GTEST_SKIP() << "needs qemu-user and the aarch64 cross libraries (scripts/setup.sh), "
                        "present when tessera was configured";
    ScratchDir dir("tessera_cross_tune");
    const std::string db = dir.file("arm.db"), model = model_dir("mlp") + "/model.onnx";
    const testing::ProcessOutput t =
        testing::run_tessera("tune " + model + " --trials 12 --json --db " + db + " --target '" +
                                 kArm + "' --runner '" + qemu + " " + worker + " --streamed-only'",
                             dir.file("tune"));
    ASSERT_EQ(t.code, 0) << t.out << t.err;
    const auto j = nlohmann::json::parse(t.out);
    EXPECT_EQ(j["target"], "llvm -mtriple=aarch64-unknown-linux-gnu -mcpu=neoverse-n1");
    EXPECT_EQ(j["errors"], 0);
    EXPECT_NE(j["fingerprint"], tune::host_fingerprint().hash());

    compile::BuildOptions opts;
    opts.model_path = model;
    opts.target = parse_target(kArm);
    opts.db_path = db;
    opts.lookup = tune::llvm_tune_target(opts.target);
    const compile::ModelBuild b = compile::prepare_model_build(opts);
    EXPECT_EQ(b.tasks_served_by(tune::LookupTier::Exact), static_cast<int>(b.tasks.size()));
    const std::string so = dir.file("mlp.so");
    compile::write_model_library(b, so, opts);
    graph::write_npy(dir.file("in.npy"), read_data_set(model_dir("mlp"), 0, "input")[0]);
    const testing::CommandResult r =
        testing::run_command(qemu + " " + TESSERA_RUN_MODEL_AARCH64 + " " + so + " " +
                                 dir.file("in.npy") + " --output " + dir.path(),
                             dir.path());
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(outputs_match(
        {graph::read_npy(dir.file("output_0.npy")), graph::read_npy(dir.file("output_1.npy"))},
        read_data_set(model_dir("mlp"), 0, "output")));
}

TEST(CrossBuild, TheRunnerRunsHostLibrariesToo) {
    if (!fs::exists(model_dir("mlp") + "/model.onnx"))
        GTEST_SKIP() << "shared model mlp not found";
    ScratchDir dir("tessera_cross_host");
    const auto got = build_and_run("mlp", "llvm", TESSERA_RUN_MODEL, dir);
    EXPECT_TRUE(outputs_match(got, read_data_set(model_dir("mlp"), 0, "output")));
    // A wrong input is one error line and exit 1.
    const testing::CommandResult r = testing::run_command(
        std::string(TESSERA_RUN_MODEL) + " " + dir.file("mlp.so") + " " + dir.file("mlp.so"),
        dir.path());
    EXPECT_EQ(r.code, 1);
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
}

TEST(CrossBuild, ATargetWithoutARuntimeFailsBeforeTheImport) {
    compile::BuildOptions opts;
    opts.model_path = "/nonexistent/model.onnx";
    opts.target = parse_target("llvm -mtriple=riscv64-linux-gnu");
    try {
        compile::prepare_model_build(opts);
        ADD_FAILURE() << "a riscv64 build was accepted";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("no runtime for riscv64"), std::string::npos)
            << e.what();
    }
}

} // namespace
} // namespace tessera
