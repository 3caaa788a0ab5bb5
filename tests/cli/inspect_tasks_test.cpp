// `tessera inspect` reports the tuning tasks (text and JSON) and the layout pass at -O3. Runs
// the built executable (skipped when it has not been built yet: test_graph does not depend on
// it).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "common/tessera_process.h"
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

const std::string kModels = TESSERA_SOURCE_DIR "/../shared/models";

using Output = tessera::testing::ProcessOutput;

/// `tessera inspect ARGS`, stdout only in `out`.
Output run_inspect(const std::string& args) {
    return tessera::testing::capture_tessera("inspect " + args, "/dev/null");
}

class InspectTasks : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!fs::exists(TESSERA_BINARY))
            GTEST_SKIP() << "tessera executable not built: " << TESSERA_BINARY;
        if (!fs::exists(kModels + "/conv_bn_relu/model.onnx"))
            GTEST_SKIP() << "shared models missing";
    }
};

TEST_F(InspectTasks, TextListsTasksAndLayout) {
    Output o = run_inspect(kModels + "/conv_bn_relu/model.onnx -O3 --nchwc-block 8");
    ASSERT_EQ(o.code, 0) << o.out;
    EXPECT_NE(o.out.find("layout: 7 changes"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("tasks: 8 unique (9 groups"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("conv2d_nchwc+add+relu f32[1,2,32,32,8]"), std::string::npos) << o.out;
    // --nchwc-block 16: the 16-channel convs use one block of 16.
    Output o16 = run_inspect(kModels + "/conv_bn_relu/model.onnx -O3 --nchwc-block 16");
    ASSERT_EQ(o16.code, 0) << o16.out;
    EXPECT_NE(o16.out.find("f32[1,1,32,32,16]"), std::string::npos) << o16.out;
    // Without the option: one vector register of channels on this host (what build and tune
    // use), 8 with AVX2 or 16 with AVX-512, never another block.
    Output host = run_inspect(kModels + "/conv_bn_relu/model.onnx -O3");
    ASSERT_EQ(host.code, 0) << host.out;
    EXPECT_TRUE(host.out == o.out || host.out == o16.out) << host.out;
    // Disabling the layout pass keeps NCHW convs.
    Output off = run_inspect(kModels + "/conv_bn_relu/model.onnx -O3 --disable-pass layout");
    ASSERT_EQ(off.code, 0) << off.out;
    EXPECT_EQ(off.out.find("nchwc"), std::string::npos) << off.out;
    EXPECT_NE(off.out.find("conv2d+add+relu f32[1,16,32,32]"), std::string::npos) << off.out;
}

TEST_F(InspectTasks, JsonTasksCoverEveryGroup) {
    Output o = run_inspect(kModels + "/conv_bn_relu/model.onnx -O3 --json");
    ASSERT_EQ(o.code, 0) << o.out;
    const nlohmann::json j = nlohmann::json::parse(o.out);
    const auto& tasks = j["tasks"];
    ASSERT_TRUE(tasks.contains("list")) << o.out;
    EXPECT_EQ(tasks["unique"].get<size_t>(), tasks["list"].size());
    int groups = 0;
    for (const auto& t : tasks["list"]) {
        groups += t["count"].get<int>();
        EXPECT_EQ(t["workload_key"].get<std::string>().size(), 64u);
        EXPECT_EQ(t["groups"].size(), t["count"].get<size_t>());
        EXPECT_GE(t["flops"].get<int64_t>(), 0);
    }
    EXPECT_EQ(groups, j["fused_groups"]["count"].get<int>());
}

TEST_F(InspectTasks, ScheduleOfOneTaskByIndexOrKeyPrefix) {
    const std::string model = kModels + "/conv_bn_relu/model.onnx -O3";
    Output first = run_inspect(model + " --schedule 0");
    ASSERT_EQ(first.code, 0) << first.out;
    EXPECT_EQ(first.out.rfind("task 0 ", 0), 0u) << first.out;
    EXPECT_NE(first.out.find("default schedule on this host"), std::string::npos) << first.out;
    // The last line is the step list, as `op default` prints it.
    const size_t json_at = first.out.rfind("{\"version\":1,\"steps\":[");
    ASSERT_NE(json_at, std::string::npos) << first.out;
    const nlohmann::json steps = nlohmann::json::parse(first.out.substr(json_at));
    EXPECT_FALSE(steps["steps"].empty());
    // A key prefix names the same task as its index.
    Output listed = run_inspect(model + " --json");
    ASSERT_EQ(listed.code, 0);
    const nlohmann::json j = nlohmann::json::parse(listed.out);
    const std::string key = j["tasks"]["list"][1]["workload_key"].get<std::string>();
    Output by_index = run_inspect(model + " --schedule 1");
    Output by_key = run_inspect(model + " --schedule " + key.substr(0, 10));
    ASSERT_EQ(by_key.code, 0) << by_key.out;
    EXPECT_EQ(by_key.out, by_index.out);
    // A task that does not exist: one error line, exit 1.
    Output bad = tessera::testing::capture_tessera("inspect " + model + " --schedule 99");
    EXPECT_EQ(bad.code, 1);
    EXPECT_EQ(bad.out.rfind("error: --schedule 99: no task", 0), 0u) << bad.out;
    EXPECT_EQ(std::count(bad.out.begin(), bad.out.end(), '\n'), 1) << bad.out;
}

} // namespace
