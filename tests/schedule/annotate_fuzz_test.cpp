// Annotation fuzz: 200 sampled schedules per canonical workload, fixed seeds. Each sample
// either raises ScheduleError (counted; a small minority) or lowers to IR that verifies,
// matches the reference (every sample through the interpreter after prepare_for_codegen, a
// subset through the LLVM JIT; see check_numerics), and whose JSON round trip replays to
// structurally equal IR. Nothing else may be thrown.
#include <chrono>

#include "sketch_fuzz_util.h"
#include "tessera/schedule/sampling.h"

namespace tessera::testing {
namespace {

using sched::State;

class AnnotateFuzz : public ::testing::TestWithParam<Workload> {};

TEST_P(AnnotateFuzz, SamplesAreValidOrScheduleErrors) {
    const Workload& w = GetParam();
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<State> sketches = sched::generate_sketches(w.compute, fuzz_sketch_options());
    ASSERT_FALSE(sketches.empty());
    const Reference ref(w.compute);
    sched::SampleOptions opts;
    opts.num_cores = 4;
    opts.max_vectorize_lanes = 8;
    Rng rng(0x5a3d + w.name.size());

    constexpr int kSamples = 200;
    int invalid = 0, valid = 0;
    std::string first_error;
    std::vector<State> states;
    std::vector<ir::LoweredFunc> funcs;
    for (int i = 0; i < kSamples; ++i) {
        const State& sketch = sketches[rng.uniform_int(0, int64_t(sketches.size()) - 1)];
        try {
            State s = sched::sample_initial_state(sketch, rng, opts);
            ir::LoweredFunc f = sched::lower_state(s, "kernel");
            ASSERT_NO_THROW(ir::verify(f)) << sched::steps_to_json(s.steps);
            expect_round_trip(s, f);
            states.push_back(std::move(s));
            funcs.push_back(std::move(f));
            ++valid;
        } catch (const ScheduleError& e) {
            if (first_error.empty())
                first_error = e.what();
            ++invalid;
        } catch (const std::exception& e) {
            FAIL() << w.name << " sample " << i << ": unexpected exception: " << e.what();
        }
    }
    const int jitted = check_numerics(states, funcs, ref);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cerr << "[annotate fuzz] " << w.name << ": " << sketches.size() << " sketches, " << valid
              << " valid (" << jitted << " through the JIT), " << invalid << " ScheduleErrors of "
              << kSamples << " (" << secs << " s)"
              << (first_error.empty() ? "" : "; first error: " + first_error) << "\n";
    EXPECT_EQ(valid + invalid, kSamples);
    EXPECT_LE(invalid, kSamples / 10)
        << "most samples should be valid; first error: " << first_error;
}

INSTANTIATE_TEST_SUITE_P(Canonical, AnnotateFuzz, ::testing::ValuesIn(canonical_workloads()),
                         workload_name);

} // namespace
} // namespace tessera::testing
