// The two larger shared models (ResNet-18 and the BERT encoder), built untuned and with a record
// for every task (sampled schedules with made-up times, packed weights included), run through
// their C API against the reference outputs. Each build takes a few seconds on a 2-core
// machine, most of it LLVM code generation.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

#include <sys/resource.h>

#include "common/model_library_loader.h"
#include "tessera/compile/model_compiler.h"
#include "tuning_records.h"

namespace tessera {
namespace {

/// User + system CPU seconds of this process so far (all threads).
double cpu_secs() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

class LargeModel : public ::testing::TestWithParam<const char*> {
  protected:
    void SetUp() override {
        dir_ = testing::shared_models_dir() + "/" + GetParam();
        if (!std::filesystem::exists(dir_ + "/model.onnx"))
            GTEST_SKIP() << "shared model " << GetParam() << " not found under " << dir_;
        opts_.model_path = dir_ + "/model.onnx";
    }

    /// Writes the library of `b` and checks both data sets through the C API.
    void build_and_check(const compile::ModelBuild& b) {
        const std::string so = scratch_.file(std::string(GetParam()) + ".so");
        const double cpu0 = cpu_secs();
        const compile::LibrarySummary lib = compile::write_model_library(b, so, opts_);
        // For the record (never asserted): wall and CPU time of code generation.
        std::cout << GetParam() << ": schedules " << b.prepare_secs << " s, code generation and "
                  << "link " << lib.codegen_secs << " s wall, " << cpu_secs() - cpu0
                  << " s CPU in this process\n";
        testing::LoadedModel m(so);
        for (int set = 0; set < 2; ++set)
            EXPECT_TRUE(testing::outputs_match(m.run(testing::read_data_set(dir_, set, "input")),
                                               testing::read_data_set(dir_, set, "output")))
                << GetParam() << " data set " << set;
    }

    std::string dir_;
    compile::BuildOptions opts_;
    testing::ScratchDir scratch_{"tessera_compile_large"};
};

TEST_P(LargeModel, UntunedBuildMatchesReference) {
    build_and_check(compile::prepare_model_build(opts_));
}

TEST_P(LargeModel, BuildWithARecordForEveryTaskMatchesReference) {
    const std::string db = scratch_.file("full.db");
    testing::write_full_database(db, compile::prepare_model_build(opts_), 100);
    opts_.db_path = db;
    opts_.lookup = testing::host_key();
    const compile::ModelBuild b = compile::prepare_model_build(opts_);
    EXPECT_EQ(b.tasks_served_by(tune::LookupTier::Exact), static_cast<int>(b.tasks.size()));
    for (const compile::TaskCoverage& r : b.coverage())
        EXPECT_EQ(r.source, tune::LookupTier::Exact) << r.task << " " << r.note;
    build_and_check(b);
}

INSTANTIATE_TEST_SUITE_P(SharedModels, LargeModel, ::testing::Values("resnet18", "bert_emb_op13"));

} // namespace
} // namespace tessera
