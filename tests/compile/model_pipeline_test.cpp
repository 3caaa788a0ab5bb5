// The one model pipeline of tune, build and inspect: the same options give the same tasks
// whichever command runs it, options are checked before the import, and the target shapes the
// graph.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/model_library_loader.h"
#include "tessera/compile/model_compiler.h"
#include "tessera/compile/model_pipeline.h"
#include "tessera/support/error.h"

namespace tessera::compile {
namespace {

std::string model_path(const std::string& name) {
    return testing::shared_models_dir() + "/" + name + "/model.onnx";
}

bool have_model(const std::string& name) { return std::filesystem::exists(model_path(name)); }

std::vector<std::string> keys(const std::vector<graph::Task>& tasks) {
    std::vector<std::string> k;
    for (const graph::Task& t : tasks)
        k.push_back(t.workload_key);
    return k;
}

std::vector<std::string> keys(const std::vector<TaskBuild>& tasks) {
    std::vector<std::string> k;
    for (const TaskBuild& t : tasks)
        k.push_back(t.task.workload_key);
    return k;
}

std::string error_of(const ModelPipelineOptions& o) {
    try {
        run_model_pipeline(o);
    } catch (const UserError& e) {
        return e.what();
    }
    return "no error";
}

// What tune extracts is what build compiles: the same workload keys at every level, with and
// without Winograd, for both targets.
TEST(ModelPipeline, BuildCompilesTheTasksThePipelineGives) {
    if (!have_model("small_cnn"))
        GTEST_SKIP() << "shared model small_cnn not found";
    for (int level : {0, 2, 3})
        for (bool winograd : {true, false})
            for (const Target& target : {parse_target("llvm"), parse_target("cuda")}) {
                SCOPED_TRACE("-O" + std::to_string(level) + (winograd ? "" : " no-winograd") + " " +
                             target.str());
                ModelPipelineOptions mpo;
                mpo.model_path = model_path("small_cnn");
                mpo.opt_level = level;
                mpo.winograd = winograd;
                mpo.target = target;
                const ModelPipeline p = run_model_pipeline(mpo);
                ASSERT_FALSE(p.tasks.empty());
                BuildOptions bo;
                bo.model_path = mpo.model_path;
                bo.opt_level = level;
                bo.winograd = winograd;
                bo.target = target;
                bo.jobs = 1;
                EXPECT_EQ(keys(prepare_model_build(bo).tasks), keys(p.tasks));
            }
}

// The CPU graph at -O3 is blocked (NCHW[x]c); a GPU's is not. The report fields are filled.
TEST(ModelPipeline, TheTargetShapesTheGraph) {
    if (!have_model("small_cnn"))
        GTEST_SKIP() << "shared model small_cnn not found";
    ModelPipelineOptions mpo;
    mpo.model_path = model_path("small_cnn");
    EXPECT_EQ(mpo.opt_level, kDefaultOptLevel);
    const ModelPipeline cpu = run_model_pipeline(mpo);
    mpo.target = parse_target("cuda");
    const ModelPipeline gpu = run_model_pipeline(mpo);
    EXPECT_GT(graph::op_histogram(cpu.graph).count("ConvBlocked"), 0u);
    EXPECT_EQ(graph::op_histogram(gpu.graph).count("ConvBlocked"), 0u);
    EXPECT_GT(cpu.nodes_imported, 0);
    EXPECT_GT(cpu.ops_imported.at("Conv"), 0);
    EXPECT_FALSE(cpu.passes.empty());
    EXPECT_FALSE(cpu.groups.empty());
    EXPECT_TRUE(cpu.tasks_error.empty());
}

// Bad options are reported before the (possibly long) import: the missing model is not what
// the error names.
TEST(ModelPipeline, OptionsAreCheckedBeforeTheImport) {
    ModelPipelineOptions o;
    o.model_path = "/nonexistent/model.onnx";
    o.opt_level = 4;
    EXPECT_EQ(error_of(o), "optimization level 4 is not in 0..3");
    o.opt_level = 2;
    o.disabled_passes = {"nosuch"};
    EXPECT_EQ(error_of(o), "unknown pass 'nosuch' to disable");
    o.disabled_passes.clear();
    o.print_after = "nosuch";
    EXPECT_EQ(error_of(o), "unknown pass 'nosuch' in print-after");
    o.print_after.clear();
    o.layout_block = -8;
    EXPECT_EQ(error_of(o), "layout block -8 must be positive");
    o.layout_block = 0;
    EXPECT_NE(error_of(o).find("/nonexistent/model.onnx"), std::string::npos);
}

} // namespace
} // namespace tessera::compile
