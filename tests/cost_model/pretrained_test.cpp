// The built-in pretrained cost model (cost_model/pretrained.h): it is in the binary, it loads
// with this build's feature layout (after a change of the features this test fails until
// scripts/train_cost_model.sh retrains it), its sidecar says what it was trained on, and it
// ranks real schedules of an op it may never have seen with information (not all alike).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/cost_model/cost_model.h"
#include "tessera/cost_model/features.h"
#include "tessera/cost_model/pretrained.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/sampling.h"
#include "tessera/schedule/sketch.h"
#include "tessera/support/error.h"
#include "tessera/support/rng.h"
#include "tessera/te/op_registry.h"

namespace tessera::cost {
namespace {

TEST(Pretrained, BuiltInModelLoadsWithThisFeatureLayout) {
    const std::vector<uint8_t>& blob = builtin_pretrained_blob();
    ASSERT_FALSE(blob.empty()) << "no cost_model/pretrained/cpu_xgboost.tscm in this build";
    std::unique_ptr<CostModel> m = make_xgboost_model();
    ASSERT_NO_THROW(m->set_prior(blob)) << "retrain it: scripts/train_cost_model.sh";
    EXPECT_TRUE(m->has_prior());

    const nlohmann::json info = nlohmann::json::parse(builtin_pretrained_info());
    EXPECT_EQ(info.at("feature_layout_version").get<int>(), kFeatureLayoutVersion);
    EXPECT_EQ(info.at("model").get<std::string>(), "xgboost");
    EXPECT_GT(info.at("records").get<int64_t>(), 1000);
    EXPECT_GT(info.at("tasks").get<int64_t>(), 10);
}

TEST(Pretrained, RanksSampledSchedulesOfAnOddSizedConvolution) {
    std::unique_ptr<CostModel> m = make_xgboost_model();
    m->set_prior(builtin_pretrained_blob());
    const te::OpInstance inst = te::make_op("conv2d:c=24,h=19,w=23,k=40,r=3,pad=1");
    const std::vector<sched::State> sketches = sched::generate_sketches(inst.compute);
    Rng rng(5);
    std::vector<ProgramFeatures> programs;
    for (int attempt = 0; attempt < 400 && programs.size() < 40; ++attempt) {
        const sched::State& sketch = sketches[size_t(rng.uniform_int(0, int64_t(sketches.size()) - 1))];
        try {
            programs.push_back(extract_features(
                sched::lower_state(sched::sample_initial_state(sketch, rng, {}), "k")));
        } catch (const ScheduleError&) {
        }
    }
    ASSERT_GE(programs.size(), 20u);
    const std::vector<double> scores = m->predict(programs);
    EXPECT_GE(std::set<double>(scores.begin(), scores.end()).size(), 10u);
}

TEST(Pretrained, ChoicesOfTheCommandLine) {
    EXPECT_EQ(pretrained_blob("builtin"), builtin_pretrained_blob());
    EXPECT_TRUE(pretrained_blob("none").empty());
    try {
        pretrained_blob("/no/such/model.tscm");
        FAIL() << "no error for a missing file";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("/no/such/model.tscm"), std::string::npos) << e.what();
    }
}

} // namespace
} // namespace tessera::cost
