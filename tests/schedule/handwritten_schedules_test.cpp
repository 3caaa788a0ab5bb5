// The hand-written schedules of schedules/ (the benchmark's "schedule" rows): each JSON file is
// replayed on its own workload and checked against a double-precision reference, and, since
// they are size-generic (imperfect tiles are guarded), on smaller odd-size variants of the same
// operator against the default lowering, element by element. No timing here.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/jit_executor.h"
#include "common/op_runner.h"
#include "common/test_util.h"
#include "schedule_test_util.h"
#include "tessera/support/rng.h"
#include "tessera/te/op_registry.h"
#include "tessera/te/reference_eval.h"
#include "tessera/te/tensor.h"

namespace tessera::testing {
namespace {

const std::string kScheduleDir = TESSERA_SOURCE_DIR "/schedules";

struct ScheduleFile {
    std::string name;     ///< File name, e.g. "matmul_1024.json".
    std::string workload; ///< Its op spec.
    std::vector<sched::Step> steps;
};

std::vector<ScheduleFile> schedule_files() {
    std::vector<std::filesystem::path> paths;
    for (const auto& e : std::filesystem::directory_iterator(kScheduleDir))
        if (e.path().extension() == ".json")
            paths.push_back(e.path());
    std::sort(paths.begin(), paths.end()); // directory order is not stable
    std::vector<ScheduleFile> out;
    for (const auto& p : paths) {
        std::ifstream in(p);
        std::stringstream text;
        text << in.rdbuf();
        const auto doc = nlohmann::json::parse(text.str());
        out.push_back({p.filename().string(), doc.at("workload").get<std::string>(),
                       sched::steps_from_json(text.str())});
    }
    return out;
}

/// Smaller workloads of the same operator with odd extents (the stage ids of the steps must
/// stay valid: conv2d keeps a padding stage, so pad > 0).
const std::map<std::string, std::vector<std::string>> kVariants = {
    {"matmul", {"matmul:m=127,n=67,k=13", "matmul:m=7,n=13,k=5", "matmul:m=1,n=1,k=1"}},
    {"conv2d",
     {"conv2d:n=1,c=13,h=7,w=17,k=37,r=3,s=3,stride=1,pad=1",
      "conv2d:n=2,c=5,h=13,w=29,k=33,r=3,s=3,stride=1,pad=1"}},
};

/// The schedule's kernel, JIT-compiled, on `inputs` (packed as its input stages store them).
std::vector<std::vector<float>> run_scheduled(const sched::State& s,
                                              const std::vector<std::vector<float>>& inputs) {
    return run_lowered(sched::lower_state(s, "scheduled"), pack_inputs(s, inputs), jit_executor());
}

TEST(HandwrittenSchedules, FolderHoldsMatmulAndConv) {
    std::vector<std::string> ops;
    for (const ScheduleFile& f : schedule_files())
        ops.push_back(te::parse_op_spec(f.workload).name);
    EXPECT_NE(std::find(ops.begin(), ops.end(), "matmul"), ops.end());
    EXPECT_NE(std::find(ops.begin(), ops.end(), "conv2d"), ops.end());
}

TEST(HandwrittenSchedules, OwnWorkloadMatchesReference) {
    for (const ScheduleFile& f : schedule_files()) {
        SCOPED_TRACE(f.name + " on " + f.workload);
        const te::OpInstance op = te::make_op(te::parse_op_spec(f.workload));
        sched::State s;
        ASSERT_NO_THROW(s = sched::replay(op.compute, f.steps));
        // The JSON round trip replays to the same steps.
        EXPECT_EQ(sched::steps_from_json(sched::steps_to_json(s.steps)), f.steps);
        const auto inputs = random_inputs(op.compute, 11);
        const auto got = run_scheduled(s, inputs);
        ASSERT_EQ(got.size(), 1u);

        // Sampled elements against the double-precision evaluation of the definition; the
        // samples lean on the first and last index of each dimension, where tiles are partial.
        te::ReferenceEvaluator ref;
        for (size_t i = 0; i < inputs.size(); ++i)
            ref.bind(op.compute.inputs[i], inputs[i].data());
        const ir::Tensor& out = op.compute.outputs[0];
        const std::vector<int64_t>& shape = out.shape();
        Rng rng(5);
        double worst = 0;
        for (int sample = 0; sample < 400; ++sample) {
            std::vector<int64_t> idx;
            int64_t flat = 0;
            for (int64_t e : shape) {
                const uint64_t pick = rng.next() % 8;
                const int64_t v = pick == 0 ? 0 : pick == 1 ? e - 1 : int64_t(rng.next() % e);
                idx.push_back(v);
                flat = flat * e + v;
            }
            const double want = ref.at(out, idx);
            worst =
                std::max(worst, std::fabs(got[0][flat] - want) / std::max(1.0, std::fabs(want)));
        }
        EXPECT_LE(worst, 1e-4);
        // Every element against the default lowering where that runs in well under a second.
        if (op.flops <= 5e8) {
            const auto want = run_compute(op.compute, inputs, jit_executor());
            EXPECT_LE(max_rel_error(got[0], want[0]), 1e-4);
        }
    }
}

TEST(HandwrittenSchedules, OddSizeVariantsMatchDefaultLowering) {
    int checked = 0;
    for (const ScheduleFile& f : schedule_files()) {
        const auto it = kVariants.find(te::parse_op_spec(f.workload).name);
        if (it == kVariants.end())
            continue;
        for (const std::string& spec : it->second) {
            SCOPED_TRACE(f.name + " on " + spec);
            const te::OpInstance op = te::make_op(te::parse_op_spec(spec));
            sched::State s;
            ASSERT_NO_THROW(s = sched::replay(op.compute, f.steps));
            const auto inputs = random_inputs(op.compute, 13);
            const auto want = run_compute(op.compute, inputs, jit_executor());
            const auto got = run_scheduled(s, inputs);
            ASSERT_EQ(got.size(), want.size());
            EXPECT_LE(max_rel_error(got[0], want[0]), 1e-4);
            ++checked;
        }
    }
    EXPECT_GE(checked, 5);
}

} // namespace
} // namespace tessera::testing
