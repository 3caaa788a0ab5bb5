// Whole-model builds end to end: shared models built untuned and with tuning records, loaded
// through their C API and compared with the reference outputs (rtol 1e-4, atol 1e-5); the plan
// of a build; the coverage table and --strict; two models in one process; a C program linked
// against a built model. Each model is built once per test program (a few seconds each).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "common/model_library_loader.h"
#include "common/sanitizers.h"
#include "tessera/compile/coverage_table.h"
#include "tessera/compile/model_compiler.h"
#include "tessera/runtime/model_plan.h"
#include "tessera/support/error.h"
#include "tessera/tuner/database.h"
#include "tuning_records.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::commit_record;
using testing::host_key;
using testing::LoadedModel;
using testing::outputs_match;
using testing::read_data_set;
using testing::sampled_schedule;
using testing::ScratchDir;

std::string model_dir(const std::string& name) { return testing::shared_models_dir() + "/" + name; }

bool have_model(const std::string& name) { return fs::exists(model_dir(name) + "/model.onnx"); }

/// Builds shared models once per test program into one scratch folder.
class ModelBuild : public ::testing::Test {
  protected:
    static void SetUpTestSuite() { scratch_ = new ScratchDir("tessera_compile"); }
    static void TearDownTestSuite() {
        delete scratch_;
        scratch_ = nullptr;
        built_.clear();
    }

    /// The untuned library of shared model `name` (built on first use).
    static std::string built(const std::string& name) {
        auto it = built_.find(name);
        if (it != built_.end())
            return it->second;
        compile::BuildOptions opts;
        opts.model_path = model_dir(name) + "/model.onnx";
        const compile::ModelBuild b = compile::prepare_model_build(opts);
        const std::string so = scratch_->file(name + ".so");
        compile::write_model_library(b, so, opts);
        built_[name] = so;
        return so;
    }

    static ScratchDir* scratch_;
    static std::map<std::string, std::string> built_;
};
ScratchDir* ModelBuild::scratch_ = nullptr;
std::map<std::string, std::string> ModelBuild::built_;

class UntunedModel : public ModelBuild, public ::testing::WithParamInterface<const char*> {};

TEST_P(UntunedModel, MatchesReferenceOnBothDataSets) {
    const std::string name = GetParam();
    if (!have_model(name))
        GTEST_SKIP() << "shared model " << name << " not found under "
                     << testing::shared_models_dir();
    LoadedModel m(built(name));
    EXPECT_EQ(m.name(), name); // "<name>/model.onnx": the folder names the model
    for (int set = 0; set < 2; ++set) {
        const auto inputs = read_data_set(model_dir(name), set, "input");
        const auto ref = read_data_set(model_dir(name), set, "output");
        ASSERT_FALSE(inputs.empty());
        EXPECT_TRUE(outputs_match(m.run(inputs), ref)) << name << " data set " << set;
    }
}

INSTANTIATE_TEST_SUITE_P(SharedModels, UntunedModel,
                         ::testing::Values("mlp", "small_cnn", "conv_bn_relu"));

TEST_F(ModelBuild, LibraryDescribesInputsAndOutputsAsTheOnnxModel) {
    if (!have_model("mlp"))
        GTEST_SKIP() << "shared model mlp not found";
    LoadedModel m(built("mlp"));
    const auto in = m.inputs();
    ASSERT_EQ(in.size(), 1u);
    EXPECT_STREQ(in[0].name, "input");
    EXPECT_EQ(in[0].dtype, TESSERA_F32);
    EXPECT_EQ(std::vector<int64_t>(in[0].shape, in[0].shape + in[0].rank),
              (std::vector<int64_t>{1, 784}));
    const auto out = m.outputs();
    ASSERT_EQ(out.size(), 2u);
    EXPECT_STREQ(out[0].name, "logits");
    EXPECT_STREQ(out[1].name, "probs");
    EXPECT_EQ(std::vector<int64_t>(out[1].shape, out[1].shape + out[1].rank),
              (std::vector<int64_t>{1, 10}));
}

TEST_F(ModelBuild, PlanPlacesEveryTensorAndPacksWeightsAligned) {
    if (!have_model("small_cnn"))
        GTEST_SKIP() << "shared model small_cnn not found";
    compile::BuildOptions opts;
    opts.model_path = model_dir("small_cnn") + "/model.onnx";
    const compile::ModelBuild b = compile::prepare_model_build(opts);
    std::vector<uint8_t> weights;
    const runtime::ModelPlan plan = compile::make_model_plan(b, weights);
    EXPECT_NO_THROW(runtime::validate_plan(plan));
    EXPECT_EQ(plan.weight_bytes, static_cast<int64_t>(weights.size()));
    EXPECT_EQ(plan.kernels.size(), b.tasks.size());
    EXPECT_EQ(plan.calls.size(), b.groups.size()); // no output repeats an input or a weight
    int64_t constant_bytes = 0;
    for (size_t v = 0; v < b.graph.num_values(); ++v) {
        const graph::Value& val = b.graph.value(static_cast<graph::ValueId>(v));
        if (val.is_constant() && !b.graph.users(static_cast<graph::ValueId>(v)).empty())
            constant_bytes += static_cast<int64_t>(val.constant->nbytes());
    }
    EXPECT_GE(plan.weight_bytes, constant_bytes); // every constant a kernel reads is stored
    for (const runtime::PlanTensor& t : plan.tensors) {
        if (t.storage == runtime::TensorStorage::Weight ||
            t.storage == runtime::TensorStorage::Arena) {
            EXPECT_EQ(t.offset % 64, 0) << t.name;
        }
    }
    const std::string bytes = runtime::serialize_plan(plan);
    const runtime::ModelPlan back = runtime::parse_plan(bytes.data(), bytes.size());
    EXPECT_EQ(back.calls.size(), plan.calls.size());
    EXPECT_GT(plan.arena_bytes, 0);
}

TEST_F(ModelBuild, CoverageWithoutDatabaseIsAllDefaultAndSharesAreFlops) {
    if (!have_model("mlp"))
        GTEST_SKIP() << "shared model mlp not found";
    compile::BuildOptions opts;
    opts.model_path = model_dir("mlp") + "/model.onnx";
    const compile::ModelBuild b = compile::prepare_model_build(opts);
    ASSERT_FALSE(b.tasks.empty());
    double share = 0;
    for (const compile::TaskCoverage& r : b.coverage()) {
        EXPECT_EQ(r.source, tune::LookupTier::Default);
        EXPECT_EQ(compile::schedule_source_text(r), "default (no database)");
        EXPECT_TRUE(r.share_is_flops);
        share += r.share;
    }
    EXPECT_NEAR(share, 1.0, 1e-9);
    std::ostringstream table;
    compile::print_coverage_table(table, b);
    EXPECT_NE(table.str().find("default " + std::to_string(b.tasks.size())), std::string::npos)
        << table.str();
    EXPECT_NE(table.str().find("no tuning database"), std::string::npos) << table.str();
    EXPECT_NE(table.str().find("precision"), std::string::npos) << table.str();
    for (const compile::TaskCoverage& r : b.coverage())
        EXPECT_EQ(r.precision, "f32") << r.pattern;
    // With bf16 products the matmul tasks say so.
    opts.precision = graph::Precision::BF16;
    int bf16 = 0;
    for (const compile::TaskCoverage& r : compile::prepare_model_build(opts).coverage())
        bf16 += r.precision == "bf16";
    EXPECT_GT(bf16, 0);
}

/// A database serving mlp's tasks: task 0 exact, task 1 isa_class (another fingerprint), the
/// last task a record that does not replay. Returns the record ids by task.
std::map<int, int64_t> make_mlp_database(const std::string& path, const compile::ModelBuild& b) {
    tune::TuningDatabase db(path);
    std::map<int, int64_t> ids;
    const tune::TuneTarget key = host_key();
    ids[0] = commit_record(db, b.tasks[0].task, sampled_schedule(b.tasks[0].task, 7), key, 2e-5);
    if (b.tasks.size() >= 3) {
        tune::TuneTarget other = key;
        other.fingerprint = "another-machine-of-this-isa";
        ids[1] = commit_record(db, b.tasks[1].task, sampled_schedule(b.tasks[1].task, 11), other,
                               1e-5);
        const std::string broken =
            R"({"version": 1, "steps": [{"kind": "split", "stage": 99, "iter": 0, )"
            R"("lengths": [4], "inner_to_outer": true}]})";
        const int last = static_cast<int>(b.tasks.size()) - 1;
        ids[last] = commit_record(db, b.tasks[static_cast<size_t>(last)].task, broken, key, 1e-6);
    }
    return ids;
}

TEST_F(ModelBuild, RecordsServeTheirTiersAndTheModelStillMatches) {
    if (!have_model("mlp"))
        GTEST_SKIP() << "shared model mlp not found";
    ScratchDir dir("tessera_compile_db");
    compile::BuildOptions opts;
    opts.model_path = model_dir("mlp") + "/model.onnx";
    const compile::ModelBuild untuned = compile::prepare_model_build(opts);
    ASSERT_GE(untuned.tasks.size(), 3u) << "mlp should have at least three tasks";
    const std::string db = dir.file("tune.db");
    const std::map<int, int64_t> ids = make_mlp_database(db, untuned);

    // Through the CLI, as a user would.
    const std::string so = dir.file("mlp_tuned.so");
    const testing::CommandResult r = testing::run_command(
        std::string(TESSERA_BINARY) + " build " + opts.model_path + " --db " + db + " -o " + so,
        dir.file("build"));
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("exact #" + std::to_string(ids.at(0))), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("isa_class #" + std::to_string(ids.at(1))), std::string::npos) << r.out;
    const int last = static_cast<int>(untuned.tasks.size()) - 1;
    const std::string rec = "record #" + std::to_string(ids.at(last)) + " does not replay";
    EXPECT_NE(r.out.find("default (" + rec + ", see below)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  task " + std::to_string(last) + ": " + rec + ": "), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("exact 1, isa_class 1"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("wrote " + so), std::string::npos) << r.out;

    LoadedModel m(so);
    for (int set = 0; set < 2; ++set)
        EXPECT_TRUE(outputs_match(m.run(read_data_set(model_dir("mlp"), set, "input")),
                                  read_data_set(model_dir("mlp"), set, "output")))
            << "data set " << set;

    // The JSON summary says the same.
    const testing::CommandResult j =
        testing::run_command(std::string(TESSERA_BINARY) + " build " + opts.model_path + " --db " +
                                 db + " -o " + so + " --json",
                             dir.file("json"));
    ASSERT_EQ(j.code, 0) << j.err;
    const nlohmann::json summary = nlohmann::json::parse(j.out);
    EXPECT_EQ(summary["tiers"]["exact"], 1);
    EXPECT_EQ(summary["tiers"]["isa_class"], 1);
    EXPECT_EQ(summary["tasks"][0]["source"], "exact");
    EXPECT_EQ(summary["tasks"][0]["record_id"], ids.at(0));
    EXPECT_FALSE(summary["tasks"][0]["estimated"].get<bool>());
    EXPECT_TRUE(summary["tasks"][static_cast<size_t>(last)]["estimated"].get<bool>());
    EXPECT_EQ(summary["output"], so);
}

TEST_F(ModelBuild, RecordsOfAnotherCpuModelServeAsCompatibleOrSayWhyNot) {
    if (!have_model("mlp"))
        GTEST_SKIP() << "shared model mlp not found";
    ScratchDir dir("tessera_compile_compatible");
    compile::BuildOptions opts;
    opts.model_path = model_dir("mlp") + "/model.onnx";
    const compile::ModelBuild untuned = compile::prepare_model_build(opts);
    ASSERT_GE(untuned.tasks.size(), 2u);
    const std::string db_path = dir.file("tune.db");
    int64_t compatible_id = 0;
    {
        tune::TuningDatabase db(db_path);
        // Task 0: a CPU model with this host's ISA and one extension more (another ISA class),
        // whose schedule was sampled for this host's vector width: its code runs here.
        const tune::TuneTarget host = host_key();
        tune::TuneTarget newer{"llvm -mcpu=diamondrapids", "feedfacecafef00d",
                              host.isa_class + ",avx10.2-512"};
        const graph::Task& t0 = untuned.tasks[0].task;
        compatible_id = commit_record(db, t0, sampled_schedule(t0, 7), newer, 3e-5);
        // Task 1: an Arm machine's record: another architecture, never served here.
        tune::TuneTarget arm{"llvm -mcpu=neoverse-v2", "0123456789abcdef",
                            "aarch64-unknown-linux-gnu;neon,sve"};
        const graph::Task& t1 = untuned.tasks[1].task;
        commit_record(db, t1, sampled_schedule(t1, 9), arm, 1e-5);
    }
    const std::string so = dir.file("mlp.so");
    const testing::CommandResult r = testing::run_command(
        std::string(TESSERA_BINARY) + " build " + opts.model_path + " --db " + db_path + " -o " + so,
        dir.file("build"));
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("compatible #" + std::to_string(compatible_id) + " from diamondrapids"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("task 1: 1 record from neoverse-v2: another architecture "
                         "(aarch64-unknown-linux-gnu)"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("compatible 1, default"), std::string::npos) << r.out;
    LoadedModel m(so);
    EXPECT_TRUE(outputs_match(m.run(read_data_set(model_dir("mlp"), 0, "input")),
                              read_data_set(model_dir("mlp"), 0, "output")));
}

TEST_F(ModelBuild, StrictFailsOnTasksWithoutRecordAndWritesNothing) {
    if (!have_model("mlp"))
        GTEST_SKIP() << "shared model mlp not found";
    ScratchDir dir("tessera_compile_strict");
    const std::string so = dir.file("never.so");
    // Run in the scratch folder so that no tune_logs/tessera.db is picked up.
    const testing::CommandResult r =
        testing::run_command("cd " + dir.path() + " && " + TESSERA_BINARY + " build " +
                                 model_dir("mlp") + "/model.onnx --strict -o " + so,
                             dir.file("strict"));
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    EXPECT_NE(r.err.find("error: --strict:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("#0 "), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("no tuning database"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(so));
}

TEST_F(ModelBuild, CliReportsBadInputsInOneLine) {
    ScratchDir dir("tessera_compile_cli");
    const std::string bin = TESSERA_BINARY;
    testing::CommandResult r =
        testing::run_command(bin + " build " + dir.file("missing.onnx"), dir.file("a"));
    EXPECT_EQ(r.code, 1);
    EXPECT_EQ(r.err, "error: model '" + dir.file("missing.onnx") + "': no such file\n");
    if (have_model("small_cnn")) {
        r = testing::run_command(bin + " build " + model_dir("small_cnn") +
                                     "/model.onnx -o /nonexistent_dir/x.so",
                                 dir.file("b"));
        EXPECT_EQ(r.code, 1);
        EXPECT_NE(r.err.find("error: cannot write '/nonexistent_dir/x.so'"), std::string::npos)
            << r.err;
        EXPECT_EQ(r.out, ""); // refused before any work
        r = testing::run_command(bin + " build " + model_dir("small_cnn") + "/model.onnx -O 7 -o " +
                                     dir.file("x.so"),
                                 dir.file("o"));
        EXPECT_EQ(r.code, 1);
        EXPECT_EQ(r.err, "error: -O/--opt-level must be 0..3, got 7\n");
        r = testing::run_command(bin + " build " + model_dir("small_cnn") + "/model.onnx --db " +
                                     dir.file("none.db"),
                                 dir.file("c"));
        EXPECT_EQ(r.code, 1);
        EXPECT_NE(r.err.find("none.db"), std::string::npos) << r.err;
    }
    r = testing::run_command(bin + " build --help", dir.file("d"));
    EXPECT_EQ(r.code, 0);
    for (const char* opt :
         {"--output", "--db", "--strict", "--opt-level", "--json", "--input-shape", "--jobs",
          "--no-winograd"})
        EXPECT_NE(r.out.find(opt), std::string::npos) << opt << " missing from --help";
}

TEST_F(ModelBuild, NoWinogradKeepsResnetConvsDirectAndBothLibrariesMatch) {
    if (!have_model("resnet18"))
        GTEST_SKIP() << "shared model resnet18 not found";
    ScratchDir dir("tessera_compile_winograd");
    const std::string model = model_dir("resnet18");
    const auto inputs = read_data_set(model, 0, "input");
    const auto ref = read_data_set(model, 0, "output");
    int kernels[2] = {0, 0};
    for (int direct = 0; direct < 2; ++direct) {
        const std::string so = dir.file(direct ? "direct.so" : "winograd.so");
        testing::CommandResult r = testing::run_command(
            std::string(TESSERA_BINARY) + " build " + model + "/model.onnx --no-db --json -o " +
                so + (direct ? " --no-winograd" : ""),
            dir.file("build" + std::to_string(direct)));
        ASSERT_EQ(r.code, 0) << r.err;
        kernels[direct] = nlohmann::json::parse(r.out)["kernels"].get<int>();
        LoadedModel m(so);
        EXPECT_TRUE(outputs_match(m.run(inputs), ref, 1e-4, 1e-4))
            << (direct ? "direct" : "winograd");
    }
    // Direct: 19 kernels. Winograd: the 13 stride-1 3x3 convs, in 4 distinct shapes, become an
    // input transform, a matmul and an output transform each (27 kernels).
    EXPECT_EQ(kernels[1], 19);
    EXPECT_EQ(kernels[0], 27);
}

TEST_F(ModelBuild, TwoModelsInOneProcessStayIndependent) {
    if (!have_model("mlp") || !have_model("small_cnn"))
        GTEST_SKIP() << "shared models mlp and small_cnn not found";
    // A second copy of the mlp library: loaded again under another path, it carries its own
    // runtime state.
    const std::string copy = scratch_->file("mlp_copy.so");
    fs::copy_file(built("mlp"), copy, fs::copy_options::overwrite_existing);
    LoadedModel a(built("mlp")), b(built("small_cnn")), c(copy);
    a.set_num_threads(2);
    b.set_num_threads(1);
    for (int set = 0; set < 2; ++set) {
        EXPECT_TRUE(outputs_match(a.run(read_data_set(model_dir("mlp"), set, "input")),
                                  read_data_set(model_dir("mlp"), set, "output")));
        EXPECT_TRUE(outputs_match(b.run(read_data_set(model_dir("small_cnn"), set, "input")),
                                  read_data_set(model_dir("small_cnn"), set, "output")));
        EXPECT_TRUE(outputs_match(c.run(read_data_set(model_dir("mlp"), 1 - set, "input")),
                                  read_data_set(model_dir("mlp"), 1 - set, "output")));
    }
}

constexpr const char* kCProgram =
    R"(/* Runs a tessera model: input 0 from argv[1] (raw bytes), output 0 to argv[2]. */
#include <stdio.h>
#include <stdlib.h>
#include "tessera/runtime/tessera_model.h"

static size_t bytes_of(const TesseraTensorInfo* t) {
    size_t n = t->dtype == TESSERA_F64 || t->dtype == TESSERA_I64 ? 8 : 4;
    if (t->dtype == TESSERA_BOOL) n = 1;
    for (int i = 0; i < t->rank; ++i) n *= (size_t)t->shape[i];
    return n;
}

int main(int argc, char** argv) {
    TesseraModel* m = NULL;
    if (argc != 3 || tessera_model_create(&m) != 0) {
        fprintf(stderr, "create: %s\n", tessera_model_last_error());
        return 1;
    }
    tessera_model_set_num_threads(m, 1);
    TesseraTensorInfo in, out;
    if (tessera_model_num_inputs(m) != 1 || tessera_model_input_info(m, 0, &in) != 0 ||
        tessera_model_output_info(m, 0, &out) != 0) return 2;
    int nout = tessera_model_num_outputs(m);
    void** outs = calloc((size_t)nout, sizeof(void*));
    for (int i = 0; i < nout; ++i) {
        TesseraTensorInfo t;
        tessera_model_output_info(m, i, &t);
        outs[i] = malloc(bytes_of(&t));
    }
    void* x = malloc(bytes_of(&in));
    FILE* f = fopen(argv[1], "rb");
    if (!f || fread(x, 1, bytes_of(&in), f) != bytes_of(&in)) return 3;
    fclose(f);
    const void* ins[1] = {x};
    if (tessera_model_run(m, ins, outs) != 0) {
        fprintf(stderr, "run: %s\n", tessera_model_last_error());
        return 4;
    }
    f = fopen(argv[2], "wb");
    fwrite(outs[0], 1, bytes_of(&out), f);
    fclose(f);
    printf("%s %s\n", tessera_model_name(m), out.name);
    tessera_model_free(m);
    for (int i = 0; i < nout; ++i) free(outs[i]);
    free(outs);
    free(x);
    return 0;
}
)";

TEST_F(ModelBuild, CProgramLinkedAgainstTheLibraryGivesTheSameBytes) {
    if (!have_model("small_cnn"))
        GTEST_SKIP() << "shared model small_cnn not found";
    ScratchDir dir("tessera_compile_c");
    const std::string so = built("small_cnn");
    { std::ofstream(dir.file("main.c")) << kCProgram; }
    const testing::CommandResult cc = testing::run_command(
        std::string(testing::c_driver()) + " -std=c99 -Wall -Werror -I" +
            std::string(TESSERA_SOURCE_DIR) + "/include " +
            dir.file("main.c") + " " + so + " -Wl,-rpath," + fs::path(so).parent_path().string() +
            " -o " + dir.file("run_model"),
        dir.file("cc"));
    ASSERT_EQ(cc.code, 0) << cc.out << cc.err;

    const auto inputs = read_data_set(model_dir("small_cnn"), 0, "input");
    ASSERT_EQ(inputs.size(), 1u);
    {
        std::ofstream in(dir.file("input.bin"), std::ios::binary);
        in.write(reinterpret_cast<const char*>(inputs[0].raw()),
                 static_cast<std::streamsize>(inputs[0].nbytes()));
    }
    const testing::CommandResult run = testing::run_command(
        dir.file("run_model") + " " + dir.file("input.bin") + " " + dir.file("output.bin"),
        dir.file("run"));
    ASSERT_EQ(run.code, 0) << run.out << run.err;
    EXPECT_EQ(run.out, "small_cnn logits\n");

    LoadedModel m(so);
    m.set_num_threads(1);
    const auto got = m.run(inputs);
    std::ifstream out(dir.file("output.bin"), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(out)),
                            std::istreambuf_iterator<char>());
    ASSERT_EQ(bytes.size(), got[0].nbytes());
    EXPECT_EQ(std::memcmp(bytes.data(), got[0].raw(), bytes.size()), 0);
    EXPECT_TRUE(outputs_match(got, read_data_set(model_dir("small_cnn"), 0, "output")));
}

TEST(BuildOutput, OnlyRegularFilesOrNewNamesAreWritten) {
    // The library is renamed over its output name: a device node there would be replaced.
    try {
        compile::check_output_writable("/dev/null");
        ADD_FAILURE() << "/dev/null accepted as an output";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("'/dev/null': it is not a regular file"),
                  std::string::npos)
            << e.what();
    }
    ScratchDir dir("tessera_build_output");
    EXPECT_THROW(compile::check_output_writable(dir.path()), UserError);
    EXPECT_NO_THROW(compile::check_output_writable(dir.file("new.so")));
    { std::ofstream(dir.file("old.so")) << "x"; }
    EXPECT_NO_THROW(compile::check_output_writable(dir.file("old.so")));
}

} // namespace
} // namespace tessera
