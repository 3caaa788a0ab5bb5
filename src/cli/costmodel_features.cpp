// `tessera costmodel features`: times feature extraction on sampled, lowered schedules.
#include "costmodel_features.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tessera/tuner/tune_target.h"
#include "tessera/cost_model/features.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/sampling.h"
#include "tessera/schedule/sketch.h"
#include "tessera/support/error.h"
#include "tessera/support/rng.h"
#include "tessera/te/op_registry.h"

namespace tessera::cli {

int run_costmodel_features(const std::string& op_spec, int samples, uint64_t seed,
                           std::ostream& out, bool json) {
    if (samples < 1)
        throw UserError() << "--samples must be >= 1, got " << samples;
    te::OpInstance inst = te::make_op(op_spec);
    sched::SketchOptions sketch_opts;
    sched::SampleOptions sample_opts;
    tune::set_search_target(tune::default_schedule_options_for(Target{}), sketch_opts,
                            sample_opts); // this host's CPU
    const std::vector<sched::State> sketches = sched::generate_sketches(inst.compute, sketch_opts);

    // Lowering is not timed: only the extraction is.
    Rng rng(seed);
    std::vector<ir::LoweredFunc> programs;
    const int64_t max_attempts = 50 * int64_t{samples} + 100;
    for (int64_t attempt = 0; int64_t(programs.size()) < samples && attempt < max_attempts;
         ++attempt) {
        const sched::State& sketch = sketches[rng.uniform_int(0, int64_t(sketches.size()) - 1)];
        try {
            programs.push_back(sched::lower_state(
                sched::sample_initial_state(sketch, rng, sample_opts), "kernel"));
        } catch (const ScheduleError&) {
        }
    }
    if (int64_t(programs.size()) < samples)
        throw UserError() << "costmodel features: only " << programs.size() << " of " << samples
                          << " samples lowered after " << max_attempts << " attempts";

    // Repeat the pass over all programs until it has run long enough to time.
    using Clock = std::chrono::steady_clock;
    int64_t rows = 0, passes = 0;
    double seconds = 0;
    const Clock::time_point start = Clock::now();
    do {
        for (const ir::LoweredFunc& f : programs)
            rows += int64_t(cost::extract_features(f).rows.size());
        ++passes;
        seconds = std::chrono::duration<double>(Clock::now() - start).count();
    } while (seconds < 0.5);

    const double n_programs = double(passes) * double(programs.size());
    if (json) {
        nlohmann::ordered_json j;
        j["op"] = inst.canonical_spec;
        j["programs"] = programs.size();
        j["sketches"] = sketches.size();
        j["seed"] = seed;
        j["stores_per_program"] = double(rows) / n_programs;
        j["features_per_store"] = cost::num_features();
        j["passes"] = passes;
        j["elapsed_secs"] = seconds;
        j["programs_per_sec"] = n_programs / seconds;
        j["stores_per_sec"] = double(rows) / seconds;
        j["features_per_sec"] = double(rows) * double(cost::num_features()) / seconds;
        out << j.dump() << "\n";
        return 0;
    }
    out << fmt::format("{}: {} programs ({} sketches, seed {}), {:.1f} stores per program, "
                       "{} features per store\n",
                       inst.canonical_spec, programs.size(), sketches.size(), seed,
                       double(rows) / n_programs, cost::num_features());
    out << fmt::format("extract_features: {:.0f} programs/s, {:.0f} stores/s, {:.3g} features/s "
                       "({} passes, {:.3f} s)\n",
                       n_programs / seconds, double(rows) / seconds,
                       double(rows) * cost::num_features() / seconds, passes, seconds);
    return 0;
}

} // namespace tessera::cli
