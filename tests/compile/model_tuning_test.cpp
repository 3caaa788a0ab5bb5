// Tuning a model through the library (compile/model_tuning.h): the plan's tasks are the ones a
// build compiles, shards partition them, what tune_model commits a build then serves, and a run
// prepared from its options (prepare_model_tuning) checks them before the import.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "common/model_library_loader.h"
#include "tessera/backends/host.h"
#include "tessera/compile/model_compiler.h"
#include "tessera/compile/model_tuning.h"
#include "tessera/support/error.h"
#include "tessera/te/workload_key.h"
#include "tessera/tuner/fingerprint.h"

namespace tessera::compile {
namespace {

std::string small_cnn() { return testing::shared_models_dir() + "/small_cnn/model.onnx"; }

ModelPipelineOptions model_options() {
    ModelPipelineOptions o;
    o.model_path = small_cnn();
    return o;
}

TEST(ModelTuning, ThePlanHoldsTheTasksABuildCompiles) {
    if (!std::filesystem::exists(small_cnn()))
        GTEST_SKIP() << "shared model small_cnn not found";
    const ModelTuningPlan plan = plan_model_tuning(model_options());
    const ModelPipeline p = run_model_pipeline(model_options());
    ASSERT_EQ(plan.tasks.size(), p.tasks.size());
    EXPECT_EQ(plan.model_tasks, p.tasks.size());
    for (size_t i = 0; i < p.tasks.size(); ++i) {
        EXPECT_EQ(plan.index[i], i);
        EXPECT_EQ(te::workload_key(plan.tasks[i].compute), p.tasks[i].workload_key);
        EXPECT_EQ(plan.tasks[i].name, p.tasks[i].pattern);
        EXPECT_EQ(plan.tasks[i].count, p.tasks[i].count());
        EXPECT_GT(plan.tasks[i].flops, 0);
    }
    // Shards partition the tasks; shards beyond the task count are empty and tune nothing.
    const int n = static_cast<int>(plan.model_tasks) + 2;
    std::vector<size_t> seen;
    for (int s = 0; s < n; ++s) {
        const ModelTuningPlan share = plan_model_tuning(model_options(), {s, n});
        EXPECT_EQ(share.model_tasks, plan.model_tasks);
        EXPECT_LE(share.tasks.size(), 1u);
        seen.insert(seen.end(), share.index.begin(), share.index.end());
        if (share.tasks.empty()) {
            tune::TuningDatabase db(":memory:");
            auto measurer = tune::make_simulated_measurer(1);
            const tune::TasksResult r =
                tune_model(share, {"llvm", "fp", "isa"}, db,
                           [] { return cost::make_model("random", 1); }, *measurer, {});
            EXPECT_EQ(r.trials, 0);
            EXPECT_TRUE(std::isinf(r.estimated_secs_after));
            EXPECT_EQ(db.num_records(), 0);
        }
    }
    std::sort(seen.begin(), seen.end());
    std::vector<size_t> all(plan.model_tasks);
    for (size_t i = 0; i < all.size(); ++i)
        all[i] = i;
    EXPECT_EQ(seen, all);
}

// Tune and build agree on every workload key of every shared model and the bundled one, for
// the host, a cross target and CUDA: records tuned for a model's tasks are found by its build.
TEST(ModelTuning, TuneAndBuildAgreeOnEveryKeyOfEveryModel) {
    std::vector<std::string> models = {std::string(TESSERA_SOURCE_DIR) +
                                       "/models/mobilenet_tiny/model.onnx"};
    for (const char* m : {"mlp", "small_cnn", "conv_bn_relu", "resnet18", "bert_emb_op13"})
        models.push_back(testing::shared_models_dir() + "/" + m + "/model.onnx");
    int checked = 0;
    for (const std::string& model : models) {
        if (!std::filesystem::exists(model))
            continue;
        std::vector<std::string> targets = {"llvm",
                                            "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1"};
#ifdef TESSERA_HAVE_CUDA
        targets.push_back("cuda");
#endif
        for (const std::string& target : targets) {
            SCOPED_TRACE(model + " " + target);
            ModelPipelineOptions mpo;
            mpo.model_path = model;
            mpo.target = parse_target(target);
            std::vector<std::string> tuned;
            for (const tune::TaskToTune& t : plan_model_tuning(mpo).tasks)
                tuned.push_back(te::workload_key(t.compute));
            BuildOptions bo;
            bo.model_path = model;
            bo.target = mpo.target;
            std::vector<std::string> built;
            for (const TaskBuild& t : prepare_model_build(bo).tasks)
                built.push_back(t.task.workload_key);
            EXPECT_EQ(tuned, built);
            EXPECT_FALSE(built.empty());
            ++checked;
        }
    }
    if (checked == 0)
        GTEST_SKIP() << "no model found";
}

// A program tunes a model with the library and builds it from the records: every task is
// served by an exact record.
TEST(ModelTuning, WhatTheLibraryTunesABuildServes) {
    if (!std::filesystem::exists(small_cnn()))
        GTEST_SKIP() << "shared model small_cnn not found";
    testing::ScratchDir dir("tessera_model_tuning");
    const std::string db_path = dir.file("t.db");
    const tune::HardwareFingerprint& fp = tune::host_fingerprint();
    const tune::TuneTarget target{"llvm -mcpu=" + backend::host_info().cpu_name, fp.hash(),
                                  fp.isa_class()};
    const ModelTuningPlan plan = plan_model_tuning(model_options());
    {
        tune::TuningDatabase db(db_path);
        auto measurer = tune::make_simulated_measurer(3);
        tune::SearchOptions so;
        so.num_trials = static_cast<int>(4 * plan.tasks.size());
        so.population = 16;
        so.generations = 1;
        so.measure_per_round = 4;
        so.search_threads = 1;
        so.seed = 5;
        const tune::TasksResult r = tune_model(
            plan, target, db, [] { return cost::make_model("random", 1); }, *measurer, so);
        EXPECT_EQ(r.tasks.size(), plan.tasks.size());
        for (const tune::TaskToTune& t : plan.tasks)
            EXPECT_FALSE(db.records_of(te::workload_key(t.compute)).empty());
    }
    BuildOptions bo;
    bo.model_path = small_cnn();
    bo.db_path = db_path;
    bo.lookup = {target.target, target.fingerprint, target.isa_class};
    bo.jobs = 1;
    const ModelBuild b = prepare_model_build(bo);
    EXPECT_EQ(b.tasks_served_by(tune::LookupTier::Exact), static_cast<int>(b.tasks.size()));
}

// The run `tessera tune MODEL` and tessera.tune assemble: simulated times under their own
// target, the database created with its folder, every task tuned, the shard's tasks only.
TEST(ModelTuning, APreparedRunTunesItsTasksIntoItsDatabase) {
    if (!std::filesystem::exists(small_cnn()))
        GTEST_SKIP() << "shared model small_cnn not found";
    testing::ScratchDir dir("tessera_prepared_tuning");
    ModelTuningOptions o;
    o.model = model_options();
    o.tuning.db = dir.file("logs/t.db");
    o.tuning.runner = "simulated";
    o.tuning.cost_model = "random";
    o.tuning.population = 16;
    o.tuning.generations = 1;
    o.tuning.measure_per_round = 4;
    o.tuning.trials = 40;
    o.tuning.seed = 3;
    ModelTuning run = prepare_model_tuning(o);
    EXPECT_EQ(run.target.target.rfind(kSimulatedTargetPrefix, 0), 0u) << run.target.target;
    EXPECT_FALSE(run.cost_models.uses_prior) << "a prior serves real measurements only";
    ASSERT_EQ(run.plan.tasks.size(), run.plan.model_tasks);
    int reports = 0;
    const tune::TasksResult r = tune_model(run, [&](const tune::TasksProgress&) { ++reports; });
    EXPECT_EQ(r.trials, 40);
    EXPECT_GT(reports, 1);
    EXPECT_EQ(run.db.num_records(), 40);
    for (const tune::TuneResult& t : r.tasks)
        EXPECT_GE(t.trials, 1) << t.workload_key;

    o.shard = {1, 2};
    o.tuning.trials = 4;
    const ModelTuning half = prepare_model_tuning(o);
    EXPECT_EQ(half.plan.index, shard_task_indices(run.plan.tasks, o.shard));
}

TEST(ModelTuning, BadOptionsFailBeforeTheImportWithTheCommandsMessages) {
    ModelTuningOptions o;
    o.model.model_path = "/no/such/model.onnx"; // never read: the options fail first
    o.tuning.db = "/no/such/folder/t.db";
    auto message = [&](const std::function<void(TuningOptions&)>& change) {
        ModelTuningOptions bad = o;
        change(bad.tuning);
        try {
            prepare_model_tuning(bad);
        } catch (const UserError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(message([](TuningOptions& t) { t.trials = 0; }),
              "--trials must be at least 1, got 0");
    EXPECT_EQ(message([](TuningOptions& t) { t.weights = "hot"; }),
              "--weights must be auto, cold or warm, got 'hot'");
    EXPECT_EQ(message([](TuningOptions& t) { t.cost_model = "gbm"; }),
              "--model must be xgboost or random, got 'gbm'");
    EXPECT_EQ(message([](TuningOptions& t) { t.db.clear(); }), "--db must name a file, got ''");
    EXPECT_EQ(message([](TuningOptions& t) {
                  t.time_bounded = true;
                  t.time_budget_secs = -1;
              }),
              "--time-budget must be a number of seconds above 0, got -1");
    o.model.opt_level = 4;
    EXPECT_EQ(message([](TuningOptions&) {}), "-O must be 0..3, got 4");
    o.model.opt_level = 3;
    EXPECT_NE(message([](TuningOptions&) {}).find("/no/such/model.onnx"), std::string::npos)
        << "good options reach the import";
}

} // namespace
} // namespace tessera::compile
