// Mutation fuzz: sampled schedules of every canonical workload go through each mutation and
// through chains of weighted mutations. Every mutated state is either a ScheduleError or a
// valid schedule: it lowers, matches the reference, and its JSON round trip replays to
// structurally equal IR. Nothing else may be thrown.
#include <algorithm>
#include <chrono>
#include <map>

#include "sketch_fuzz_util.h"
#include "tessera/schedule/mutation.h"
#include "tessera/schedule/sampling.h"

namespace tessera::testing {
namespace {

using sched::State;

class MutateFuzz : public ::testing::TestWithParam<Workload> {};

TEST_P(MutateFuzz, MutantsAreValidOrScheduleErrors) {
    const Workload& w = GetParam();
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<State> sketches = sched::generate_sketches(w.compute, fuzz_sketch_options());
    const Reference ref(w.compute);
    sched::SampleOptions opts;
    opts.num_cores = 4;
    opts.max_vectorize_lanes = 8;
    Rng rng(0x3e7a + w.name.size());

    using Mutation = State (*)(const State&, Rng&, const sched::SampleOptions&);
    const std::pair<const char*, Mutation> kinds[] = {
        {"tile_size", sched::mutate_tile_size},
        {"auto_unroll", sched::mutate_auto_unroll},
        {"compute_location", sched::mutate_compute_location},
        {"parallel", sched::mutate_parallel},
    };
    std::map<std::string, std::pair<int, int>> counts; // kind -> (valid, ScheduleError)
    std::string first_lowering_error;
    int with_split = 0, tile_mutated = 0;
    std::vector<State> states;
    std::vector<ir::LoweredFunc> funcs;
    // Lowers a mutant and keeps it for the numeric check; ScheduleErrors are counted.
    auto keep = [&](const std::string& kind, const State& m) {
        try {
            ir::LoweredFunc f = sched::lower_state(m, "kernel");
            expect_round_trip(m, f);
            states.push_back(m);
            funcs.push_back(std::move(f));
            ++counts[kind].first;
        } catch (const ScheduleError& e) {
            ++counts[kind + " (lowering)"].second;
            if (first_lowering_error.empty())
                first_lowering_error = kind + ": " + e.what();
        }
    };

    constexpr int kParents = 25, kChain = 4;
    for (int p = 0; p < kParents; ++p) {
        State parent;
        try {
            parent = sched::sample_initial_state(
                sketches[rng.uniform_int(0, int64_t(sketches.size()) - 1)], rng, opts);
        } catch (const ScheduleError&) {
            continue;
        }
        const bool has_split =
            std::any_of(parent.steps.begin(), parent.steps.end(),
                        [](const sched::Step& st) { return st.kind == sched::StepKind::Split; });
        with_split += has_split;
        const int before = counts["tile_size"].first;
        try {
            for (const auto& [kind, fn] : kinds) {
                try {
                    keep(kind, fn(parent, rng, opts));
                } catch (const ScheduleError&) {
                    ++counts[kind].second;
                }
            }
            tile_mutated += has_split && counts["tile_size"].first > before;
            State cur = parent;
            for (int k = 0; k < kChain; ++k) {
                std::optional<State> m = sched::mutate(cur, rng, opts);
                if (!m) {
                    ++counts["mutate"].second;
                    continue;
                }
                keep("mutate", *m);
                cur = std::move(*m);
            }
        } catch (const std::exception& e) {
            FAIL() << w.name << " parent " << sched::steps_to_json(parent.steps)
                   << ": unexpected exception: " << e.what();
        }
    }
    const int jitted = check_numerics(states, funcs, ref);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cerr << "[mutate fuzz] " << w.name << ":";
    for (const auto& [kind, c] : counts)
        std::cerr << " " << kind << " " << c.first << "/" << c.first + c.second;
    std::cerr << " valid; " << states.size() << " checked (" << jitted << " through the JIT, "
              << secs << " s)"
              << (first_lowering_error.empty() ? ""
                                               : "; first lowering error: " + first_lowering_error)
              << "\n";
    // A state with a split nearly always has another tile size to move to.
    EXPECT_GE(tile_mutated, with_split * 8 / 10) << w.name;
}

INSTANTIATE_TEST_SUITE_P(Canonical, MutateFuzz, ::testing::ValuesIn(canonical_workloads()),
                         workload_name);

} // namespace
} // namespace tessera::testing
