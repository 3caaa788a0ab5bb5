// The tessera command end to end: bad input gives one "error:" line and exit 1; good input
// checks and times an operator and ends with a JSON line.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <string>
#include <sys/wait.h>
#include <vector>

#include <nlohmann/json.hpp>
#include "common/tessera_process.h"

namespace {

using Output = tessera::testing::ProcessOutput;

/// `tessera ARGS`, stdout and stderr together in `out`.
Output run_tessera(const std::string& args) { return tessera::testing::capture_tessera(args); }

std::string last_line(const std::string& s) {
    size_t end = s.find_last_not_of('\n');
    if (end == std::string::npos) return "";
    size_t start = s.rfind('\n', end);
    return s.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

void expect_user_error(const std::string& args, const std::string& fragment) {
    Output o = run_tessera(args);
    EXPECT_EQ(o.code, 1) << args << "\n" << o.out;
    EXPECT_EQ(o.out.rfind("error: ", 0), 0u) << args << "\n" << o.out;
    EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << args << "\n" << o.out;
    EXPECT_NE(o.out.find(fragment), std::string::npos) << args << "\n" << o.out;
}

} // namespace

TEST(Cli, BadSpecsAreOneLineErrors) {
    expect_user_error("op run matmull:m=4,n=4,k=4", "matmull");
    expect_user_error("op run matmul:m=4,n=4", "'k'");
    expect_user_error("op run matmul:m=-4,n=4,k=4", "-4");
    expect_user_error("op run matmul:m=4,n=4,k=", "k");
    expect_user_error("op run matmul:m=abc,n=4,k=4", "abc");
    expect_user_error("op run conv2d:n=1,c=3,h=5,w=5,k=2,r=3,s=3,bogus=1", "bogus");
    expect_user_error("op run ''", "");
}

TEST(Cli, BadOptionsAreOneLineErrors) {
    expect_user_error("op run matmul:m=4,n=4,k=4 --repeat 0", "--repeat");
    expect_user_error("op run matmul:m=4,n=4,k=4 --threads -1", "--threads");
    expect_user_error("op run matmul:m=4,n=4,k=4 --threads 5000", "not in range 0 to 1024");
    expect_user_error("op run matmul:m=4,n=4,k=4 --no-such-flag", "no-such-flag");
    expect_user_error("frobnicate", "frobnicate");
    // An output of 4 TB: more than any machine can allocate is the spec's fault, not tessera's.
    expect_user_error("op run matmul:m=1000000,n=1000000,k=1", "out of memory");
}

TEST(Cli, HelpOnEverySubcommand) {
    for (const char* sub : {"--help", "hw --help", "op --help", "op run --help", "op list --help"}) {
        Output o = run_tessera(sub);
        EXPECT_EQ(o.code, 0) << sub << "\n" << o.out;
        EXPECT_NE(o.out.find("Usage"), std::string::npos) << sub << "\n" << o.out;
    }
}

TEST(Cli, VersionFlagPrintsTheVersion) {
    Output o = run_tessera("--version");
    EXPECT_EQ(o.code, 0) << o.out;
    EXPECT_EQ(o.out.rfind("tessera ", 0), 0u) << o.out;
    EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << o.out;
}

TEST(Cli, HwJsonNamesTheMachine) {
    Output o = run_tessera("hw --json");
    ASSERT_EQ(o.code, 0) << o.out;
    auto j = nlohmann::json::parse(last_line(o.out));
    EXPECT_FALSE(j["triple"].get<std::string>().empty());
    EXPECT_FALSE(j["cpu"].get<std::string>().empty());
    EXPECT_GE(j["cores"].get<int>(), 1);
    EXPECT_TRUE(j["features"].is_array());
    EXPECT_EQ(j["fingerprint"].get<std::string>().size(), 16u);
    EXPECT_FALSE(j["isa_class"].get<std::string>().empty());
}

TEST(Cli, OpRunChecksAndTimes) {
    for (const char* spec : {"matmul:m=13,n=7,k=127", "conv2d:n=1,c=3,h=13,w=7,k=5,r=3,s=3,stride=2,pad=1",
                             "softmax:m=7,n=13"}) {
        Output o = run_tessera(std::string("op run ") + spec + " --threads 2 --repeat 3 --json");
        ASSERT_EQ(o.code, 0) << spec << "\n" << o.out;
        auto j = nlohmann::json::parse(last_line(o.out));
        EXPECT_TRUE(j["passed"].get<bool>()) << o.out;
        EXPECT_LT(j["max_rel_err"].get<double>(), 1e-4);
        EXPECT_GT(j["gflops"].get<double>(), 0);
        EXPECT_GT(j["median_ms"].get<double>(), 0);
        EXPECT_EQ(j["checked_elements"].get<int64_t>(), j["total_elements"].get<int64_t>());
    }
}

TEST(Cli, LargeOutputsAreSampled) {
    Output o = run_tessera("op run matmul:m=300,n=300,k=300 --repeat 1 --check-budget 100000 --json");
    ASSERT_EQ(o.code, 0) << o.out;
    auto j = nlohmann::json::parse(last_line(o.out));
    EXPECT_LT(j["checked_elements"].get<int64_t>(), j["total_elements"].get<int64_t>());
    EXPECT_TRUE(j["passed"].get<bool>());
}

// ---- schedules: op sketches, op sample, op lower, op run --schedule ---------------------------

namespace {

/// A file under the test's temporary directory holding `text`.
std::string write_temp(const std::string& name, const std::string& text) {
    const std::string path = ::testing::TempDir() + "tessera_cli_" + name;
    FILE* f = std::fopen(path.c_str(), "w");
    if (f) {
        std::fputs(text.c_str(), f);
        std::fclose(f);
    }
    return path;
}

std::vector<std::string> lines_of(const std::string& s) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start < s.size()) {
        size_t end = s.find('\n', start);
        if (end == std::string::npos) end = s.size();
        if (end > start) out.push_back(s.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

} // namespace

TEST(Cli, HelpOnScheduleSubcommands) {
    for (const char* sub :
         {"op sketches --help", "op sample --help", "op lower --help", "op default --help"}) {
        Output o = run_tessera(sub);
        EXPECT_EQ(o.code, 0) << sub << "\n" << o.out;
        EXPECT_NE(o.out.find("Usage"), std::string::npos) << sub << "\n" << o.out;
    }
    EXPECT_NE(run_tessera("op run --help").out.find("--schedule"), std::string::npos);
    EXPECT_NE(run_tessera("op lower --help").out.find("--schedule"), std::string::npos);
    EXPECT_NE(run_tessera("op sample --help").out.find("--seed"), std::string::npos);
}

TEST(Cli, SketchesPrintLoopsAndSteps) {
    Output o = run_tessera("op sketches matmul:m=64,n=64,k=64 --cores 4");
    ASSERT_EQ(o.code, 0) << o.out;
    EXPECT_NE(o.out.find("6 sketches"), std::string::npos) << o.out; // 3 tilings, with and without B panels
    EXPECT_NE(o.out.find("sketch 2"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("for k.0"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("cache_write(stage=2"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("follow_split("), std::string::npos) << o.out;
    expect_user_error("op sketches matmull:m=4", "matmull");
    expect_user_error("op sketches matmul:m=4,n=4,k=4 --cores -2", "--cores");
}

TEST(Cli, SampleIsDeterministicJsonLines) {
    const std::string args = "op sample conv2d:n=1,c=3,h=13,w=7,k=4,r=3,pad=1 --n 4 --cores 4 "
                             "--vector-lanes 8 --seed ";
    Output a = run_tessera(args + "5"), b = run_tessera(args + "5"), c = run_tessera(args + "6");
    ASSERT_EQ(a.code, 0) << a.out;
    EXPECT_EQ(a.out, b.out);
    EXPECT_NE(a.out, c.out);
    const auto lines = lines_of(a.out);
    ASSERT_EQ(lines.size(), 4u) << a.out;
    for (const auto& l : lines) {
        auto j = nlohmann::json::parse(l);
        EXPECT_EQ(j["version"].get<int>(), 1);
        EXPECT_FALSE(j["steps"].empty());
    }
    expect_user_error("op sample matmul:m=4,n=4,k=4 --n -1", "--n");
    EXPECT_EQ(run_tessera("op sample matmul:m=4,n=4,k=4 --n 0").out, "");
}

TEST(Cli, SampledSchedulesRunAndLower) {
    const std::string spec = "matmul:m=13,n=7,k=127";
    Output s = run_tessera("op sample " + spec + " --n 3 --seed 2 --cores 2 --vector-lanes 8");
    ASSERT_EQ(s.code, 0) << s.out;
    const std::string base = run_tessera("op lower " + spec).out;
    EXPECT_EQ(base.rfind("func kernel(", 0), 0u) << base;
    // --asm: the machine code of the same nest (the kernel's symbol and a return in it).
    const Output asm_out = run_tessera("op lower " + spec + " --asm");
    ASSERT_EQ(asm_out.code, 0) << asm_out.out;
    EXPECT_NE(asm_out.out.find("kernel:"), std::string::npos) << asm_out.out;
    EXPECT_NE(asm_out.out.find("ret"), std::string::npos) << asm_out.out;
    EXPECT_EQ(asm_out.out.find("func kernel("), std::string::npos) << asm_out.out;
    // For another CPU's target, that CPU's code: Arm loads, no x86 registers, no warnings.
    const Output arm = run_tessera("op lower " + spec + " --asm --target \"llvm " +
                                   "-mtriple=aarch64-linux-gnu -mcpu=neoverse-n1\"");
    ASSERT_EQ(arm.code, 0) << arm.out;
    EXPECT_NE(arm.out.find("ldr"), std::string::npos) << arm.out;
    EXPECT_EQ(arm.out.find("%r"), std::string::npos) << arm.out;
    EXPECT_EQ(arm.out.find("not a recognized processor"), std::string::npos) << arm.out;
    int k = 0;
    for (const auto& line : lines_of(s.out)) {
        const std::string file = write_temp("sample" + std::to_string(k++) + ".json", line + "\n");
        Output r = run_tessera("op run " + spec + " --schedule " + file + " --repeat 2 --json");
        ASSERT_EQ(r.code, 0) << line << "\n" << r.out;
        auto j = nlohmann::json::parse(last_line(r.out));
        EXPECT_TRUE(j["passed"].get<bool>()) << r.out;
        EXPECT_NE(j["schedule"].get<std::string>().find(file), std::string::npos);
        Output l = run_tessera("op lower " + spec + " --schedule " + file);
        ASSERT_EQ(l.code, 0) << l.out;
        EXPECT_EQ(l.out.rfind("func kernel(", 0), 0u) << l.out;
        EXPECT_NE(l.out, base);
    }
}

// `op default` prints the rule-based default schedule; its JSON line replays and runs correctly,
// and differs with the vector width it is made for.
TEST(Cli, DefaultScheduleReplaysAndRuns) {
    const std::string spec = "conv2d:n=1,c=7,h=13,w=13,k=13,r=3,pad=1";
    Output d = run_tessera("op default " + spec + " --cores 2 --vector-lanes 16");
    ASSERT_EQ(d.code, 0) << d.out;
    EXPECT_NE(d.out.find("default schedule ("), std::string::npos) << d.out;
    const std::string json_line = last_line(d.out);
    const auto j = nlohmann::json::parse(json_line);
    EXPECT_FALSE(j["steps"].empty());
    EXPECT_NE(run_tessera("op default " + spec + " --cores 2 --vector-lanes 8").out, d.out);
    const std::string file = write_temp("default.json", json_line + "\n");
    Output r = run_tessera("op run " + spec + " --schedule " + file + " --repeat 1 --json");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_TRUE(nlohmann::json::parse(last_line(r.out))["passed"].get<bool>()) << r.out;
    expect_user_error("op default matmul:m=4,n=4,k=4 --vector-lanes -1", "--vector-lanes");
}

TEST(Cli, ScheduleWithPackedInputLayout) {
    // b[k, n] stored as panels [n/4][k][4]: op run packs it; the reference reads it unpacked.
    const std::string file = write_temp(
        "layout.json", R"({"version":1,"steps":[{"kind":"transform_layout","stage":1,)"
                       R"("lengths":[1,4],"iters":[1,0,2]}]})");
    Output r = run_tessera("op run matmul:m=5,n=13,k=7 --schedule " + file + " --repeat 1 --json");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_TRUE(nlohmann::json::parse(last_line(r.out))["passed"].get<bool>()) << r.out;
    Output l = run_tessera("op lower matmul:m=5,n=13,k=7 --schedule " + file);
    ASSERT_EQ(l.code, 0) << l.out;
    EXPECT_NE(l.out.find("b: f32[4, 7, 4]"), std::string::npos) << l.out;
}

TEST(Cli, BesideTimesASecondScheduleRunByRun) {
    // A schedule with a packed input beside the default schedule: both checked, each timed
    // run paired with one of the other's, the ratio the median of the pairs' ratios.
    const std::string file =
        write_temp("beside.json", R"({"version":1,"steps":[{"kind":"transform_layout","stage":1,)"
                                  R"("lengths":[1,4],"iters":[1,0,2]}]})");
    Output r = run_tessera("op run matmul:m=5,n=13,k=7 --schedule " + file +
                           " --beside default --repeat 7 --json");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("beside    default schedule"), std::string::npos) << r.out;
    const auto j = nlohmann::json::parse(last_line(r.out));
    EXPECT_TRUE(j["passed"].get<bool>()) << r.out;
    EXPECT_TRUE(j["beside_passed"].get<bool>()) << r.out;
    const auto runs = j["runs_ms"].get<std::vector<double>>();
    const auto beside = j["beside_runs_ms"].get<std::vector<double>>();
    ASSERT_EQ(runs.size(), 7u);
    ASSERT_EQ(beside.size(), 7u);
    std::vector<double> ratios;
    for (size_t i = 0; i < runs.size(); ++i)
        ratios.push_back(runs[i] / beside[i]);
    std::sort(ratios.begin(), ratios.end());
    EXPECT_DOUBLE_EQ(j["ratio_median"].get<double>(), ratios[3]);
    EXPECT_LE(j["ratio_p10"].get<double>(), j["ratio_median"].get<double>());
    EXPECT_GE(j["ratio_p90"].get<double>(), j["ratio_median"].get<double>());

    // The other way round: the default schedule, a file beside it.
    Output back = run_tessera("op run matmul:m=5,n=13,k=7 --beside " + file + " --repeat 2");
    ASSERT_EQ(back.code, 0) << back.out;
    EXPECT_NE(back.out.find("beside    " + file), std::string::npos) << back.out;
    const std::string illegal = write_temp(
        "beside_illegal.json", R"({"version":1,"steps":[{"kind":"split","stage":99,"iter":0,)"
                               R"("lengths":[2],"inner_to_outer":true}]})");
    expect_user_error("op run matmul:m=4,n=4,k=4 --beside " + illegal, illegal);
    expect_user_error("op run matmul:m=4,n=4,k=4 --beside " + illegal + ".missing", "missing");
}

TEST(Cli, BadScheduleFilesAreOneLineErrors) {
    const std::string missing = ::testing::TempDir() + "tessera_cli_no_such_file.json";
    const std::string malformed = write_temp("malformed.json", "{\"version\": 1, \"steps\": [");
    const std::string old = write_temp("old.json", R"({"version":0,"steps":[]})");
    const std::string illegal = write_temp(
        "illegal.json", R"({"version":1,"steps":[{"kind":"split","stage":99,"iter":0,)"
                        R"("lengths":[2],"inner_to_outer":true}]})");
    for (const char* cmd : {"op run", "op lower"}) {
        const std::string pre = std::string(cmd) + " matmul:m=4,n=4,k=4 --schedule ";
        expect_user_error(pre + missing, missing);
        expect_user_error(pre + malformed, malformed);
        expect_user_error(pre + old, "version");
        expect_user_error(pre + illegal, illegal);
        expect_user_error(pre + illegal, "99");
    }
}

// ---- --json on op list, op sketches, op default, op lower --------------------------------------

namespace {

/// `tessera ARGS --json`'s stdout (stderr dropped), which must be exactly one JSON object on one
/// line; the exit code must be 0.
nlohmann::json json_of(const std::string& args) {
    const Output o = tessera::testing::capture_tessera(args + " --json", "/dev/null");
    EXPECT_EQ(o.code, 0) << args << "\n" << o.out;
    const std::vector<std::string> lines = lines_of(o.out);
    EXPECT_EQ(lines.size(), 1u) << args << ": --json must print one line\n" << o.out;
    nlohmann::json j = nlohmann::json::parse(lines.empty() ? "null" : lines[0], nullptr, false);
    EXPECT_TRUE(j.is_object()) << args << "\n" << o.out;
    return j;
}

} // namespace

TEST(CliJson, OpListNamesEveryOpWithItsKeys) {
    const nlohmann::json j = json_of("op list");
    ASSERT_TRUE(j["ops"].is_array()) << j;
    // As many ops as the text lists (one line each after the heading).
    EXPECT_EQ(j["ops"].size(), lines_of(run_tessera("op list").out).size() - 1);
    std::map<std::string, nlohmann::json> ops;
    for (const auto& op : j["ops"])
        ops[op["name"].get<std::string>()] = op["keys"];
    ASSERT_TRUE(ops.count("matmul")) << j;
    std::vector<std::string> names;
    for (const auto& k : ops["matmul"]) {
        names.push_back(k["name"].get<std::string>());
        EXPECT_TRUE(k["required"].get<bool>()) << k;
        EXPECT_TRUE(k["default"].is_null()) << k;
    }
    EXPECT_EQ(names, (std::vector<std::string>{"m", "n", "k"}));
    // conv2d: a numeric default, and a key that defaults to another key.
    ASSERT_TRUE(ops.count("conv2d")) << j;
    std::map<std::string, nlohmann::json> conv;
    for (const auto& k : ops["conv2d"])
        conv[k["name"].get<std::string>()] = k;
    EXPECT_EQ(conv["r"]["default"], 3) << conv["r"];
    EXPECT_FALSE(conv["r"]["required"].get<bool>());
    EXPECT_TRUE(conv["s"]["default"].is_null()) << conv["s"];
    EXPECT_EQ(conv["s"]["default_from"], "r") << conv["s"];
}

TEST(CliJson, OpSketchesGiveStepsAndLoopsPerSketch) {
    const std::string args = "op sketches matmul:m=64,n=64,k=64 --cores 4";
    const nlohmann::json j = json_of(args);
    EXPECT_EQ(j["op"], "matmul:m=64,n=64,k=64");
    // As the text test: 3 tilings, with and without B panels.
    ASSERT_EQ(j["sketches"].size(), 6u) << j;
    const std::string text = run_tessera(args).out;
    for (size_t i = 0; i < j["sketches"].size(); ++i) {
        const nlohmann::json& s = j["sketches"][i];
        EXPECT_EQ(s["index"], i);
        EXPECT_EQ(s["steps"]["version"], 1) << s;
        // The same loop structure and step count as the text prints for this sketch.
        const std::string loops = s["loops"].get<std::string>();
        EXPECT_NE(loops.find("for "), std::string::npos) << loops;
        EXPECT_NE(text.find("sketch " + std::to_string(i) + " (" +
                            std::to_string(s["steps"]["steps"].size()) + " steps)\n" + loops),
                  std::string::npos)
            << i << "\n"
            << text;
    }
    expect_user_error("op sketches matmull:m=4 --json", "matmull");
}

// op default --json: its steps, written to a file, replay through op run and op lower; op lower
// --json carries the same IR as the text.
TEST(CliJson, OpDefaultStepsReplayAndOpLowerCarriesTheIr) {
    const std::string spec = "matmul:m=13,n=7,k=127";
    const std::string args = "op default " + spec + " --cores 2 --vector-lanes 8";
    const nlohmann::json d = json_of(args);
    EXPECT_EQ(d["op"], spec);
    EXPECT_EQ(d["cores"], 2);
    EXPECT_EQ(d["vector_lanes"], 8);
    ASSERT_FALSE(d["steps"]["steps"].empty()) << d;
    // The steps are the text's step-list line, as a JSON value; the loops its loop structure.
    const std::string text = run_tessera(args).out;
    EXPECT_EQ(d["steps"], nlohmann::json::parse(last_line(text)));
    EXPECT_NE(text.find(d["loops"].get<std::string>()), std::string::npos) << text;

    const std::string file = write_temp("default_json.json", d["steps"].dump() + "\n");
    Output r = run_tessera("op run " + spec + " --schedule " + file + " --repeat 1 --json");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_TRUE(nlohmann::json::parse(last_line(r.out))["passed"].get<bool>()) << r.out;

    const nlohmann::json l = json_of("op lower " + spec + " --schedule " + file);
    EXPECT_EQ(l["op"], spec);
    EXPECT_EQ(l["schedule"], file);
    EXPECT_EQ(l["ir"], run_tessera("op lower " + spec + " --schedule " + file).out);
    const nlohmann::json naive = json_of("op lower " + spec);
    EXPECT_TRUE(naive["schedule"].is_null()) << naive;
    EXPECT_EQ(naive["ir"], run_tessera("op lower " + spec).out);
    EXPECT_NE(naive["ir"], l["ir"]);
    expect_user_error("op lower " + spec + " --json --schedule " + file + ".missing", "missing");
}

// ---- tessera inspect (graph pipeline, fusion and memory plan of an ONNX model) ----

namespace {
const std::string kInspectModels = TESSERA_SOURCE_DIR "/../shared/models";
bool have_model(const std::string& name) {
    FILE* f = std::fopen((kInspectModels + "/" + name + "/model.onnx").c_str(), "rb");
    if (!f) return false;
    std::fclose(f);
    return true;
}
std::string model_path(const std::string& name) {
    return kInspectModels + "/" + name + "/model.onnx";
}
} // namespace

TEST(CliInspect, PrecisionIsFp32OrBf16) {
    if (!have_model("mlp")) GTEST_SKIP() << "shared models missing";
    expect_user_error("inspect " + model_path("mlp") + " --precision fp8",
                      "unknown precision 'fp8'");
    Output o = run_tessera("inspect " + model_path("mlp") + " --precision bf16");
    ASSERT_EQ(o.code, 0) << o.out;
    EXPECT_NE(o.out.find("precision: "), std::string::npos) << o.out; // the pass's log line
}

TEST(CliInspect, TextReportOfResnet18) {
    if (!have_model("resnet18")) GTEST_SKIP() << "shared models missing";
    Output o = run_tessera("inspect " + model_path("resnet18") + " -O2");
    ASSERT_EQ(o.code, 0) << o.out;
    EXPECT_NE(o.out.find("pipeline -O2: 49 -> 49 nodes"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("constant-folding: "), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("fused groups: 24"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("2 x conv2d+add+relu f32[1,64,56,56]"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("memory plan: 23 intermediates"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("planned "), std::string::npos) << o.out;
}

TEST(CliInspect, JsonReportOfBert) {
    if (!have_model("bert_emb_op13")) GTEST_SKIP() << "shared models missing";
    Output o = run_tessera("inspect " + model_path("bert_emb_op13") +
                           " -O3 --json --time-passes --disable-pass cse");
    ASSERT_EQ(o.code, 0) << o.out;
    nlohmann::json j = nlohmann::json::parse(o.out);
    EXPECT_EQ(j["opt_level"], 3);
    EXPECT_EQ(j["nodes_before"], 196);
    EXPECT_EQ(j["ops_before"]["Erf"], 4);
    EXPECT_EQ(j["ops_after"]["Gelu"], 4);
    EXPECT_EQ(j["ops_after"].count("Erf"), 0u);
    for (const auto& p : j["passes"]) {
        EXPECT_NE(p["pass"], "cse");
        EXPECT_TRUE(p.contains("seconds"));
    }
    int groups = 0;
    for (const auto& p : j["fused_groups"]["patterns"]) groups += p["count"].get<int>();
    EXPECT_EQ(groups, j["fused_groups"]["count"].get<int>());
    EXPECT_GT(groups, 0);
    const auto& m = j["memory"];
    EXPECT_LE(m["planned_bytes"].get<int64_t>(), m["naive_bytes"].get<int64_t>());
    EXPECT_LE(m["live_lower_bound_bytes"].get<int64_t>(), m["planned_bytes"].get<int64_t>());
}

TEST(CliInspect, OptLevelAndPrintAfter) {
    if (!have_model("conv_bn_relu")) GTEST_SKIP() << "shared models missing";
    // The default level is build's and tune's.
    Output o3 = run_tessera("inspect " + model_path("conv_bn_relu"));
    ASSERT_EQ(o3.code, 0) << o3.out;
    EXPECT_NE(o3.out.find("pipeline -O3: "), std::string::npos) << o3.out;
    Output o0 = run_tessera("inspect " + model_path("conv_bn_relu") + " -O0");
    ASSERT_EQ(o0.code, 0) << o0.out;
    EXPECT_NE(o0.out.find("pipeline -O0: 10 -> 10 nodes"), std::string::npos) << o0.out;
    EXPECT_EQ(o0.out.find("constant-folding:"), std::string::npos) << o0.out;
    Output o2 = run_tessera("inspect " + model_path("conv_bn_relu") +
                            " --opt-level 2 --print-after algebraic-simplification");
    ASSERT_EQ(o2.code, 0) << o2.out;
    EXPECT_NE(o2.out.find("// after algebraic-simplification"), std::string::npos) << o2.out;
    EXPECT_NE(o2.out.find("pipeline -O2: 10 -> 7 nodes"), std::string::npos) << o2.out;
    EXPECT_NE(o2.out.find("x conv2d+relu"), std::string::npos) << o2.out;
}

TEST(CliInspect, BadInputIsOneLineError) {
    expect_user_error("inspect /nonexistent/model.onnx", "/nonexistent/model.onnx");
    expect_user_error("inspect", "model");
    if (!have_model("mlp")) GTEST_SKIP() << "shared models missing";
    const std::string m = model_path("mlp");
    expect_user_error("inspect " + m + " -O7", "7");
    expect_user_error("inspect " + m + " --disable-pass nosuch", "nosuch");
    expect_user_error("inspect " + m + " --print-after nosuch", "nosuch");
    expect_user_error("inspect " + m + " --input-shape bad", "bad");
    expect_user_error("inspect " + m + " --input-shape nosuch=1x2", "nosuch");
    expect_user_error("inspect " + m + " --bogus", "--bogus");
}

// --input-shape and --bind are the same options on every command that imports a model.
TEST(CliModelInputs, BindAndInputShapeOnBuildInspectAndTune) {
    for (const char* cmd : {"build", "inspect", "tune"}) {
        Output o = run_tessera(std::string(cmd) + " --help");
        EXPECT_EQ(o.code, 0) << o.out;
        for (const char* opt : {"--input-shape", "--bind"})
            EXPECT_NE(o.out.find(opt), std::string::npos) << cmd << " " << opt << "\n" << o.out;
    }
    if (!have_model("mlp")) GTEST_SKIP() << "shared models missing";
    const std::string m = model_path("mlp");
    expect_user_error("inspect " + m + " --bind nofile", "--bind 'nofile' is not NAME=FILE");
    expect_user_error("inspect " + m + " --bind x=/nonexistent/x.npy", "/nonexistent/x.npy");
    expect_user_error("build " + m + " --bind x=/nonexistent/x.npy", "/nonexistent/x.npy");
    expect_user_error("tune --op matmul:m=8,n=8,k=8 --bind x=a.npy",
                      "--input-shape and --bind apply to a MODEL, not to --op");
}

TEST(CliInspect, HelpNamesEveryOption) {
    Output o = run_tessera("inspect --help");
    EXPECT_EQ(o.code, 0) << o.out;
    for (const char* opt : {"--input-shape", "--opt-level", "--print-after", "--time-passes",
                            "--disable-pass", "--json"})
        EXPECT_NE(o.out.find(opt), std::string::npos) << opt << "\n" << o.out;
}
