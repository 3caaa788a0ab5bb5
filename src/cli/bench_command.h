// `tessera bench`: the latency of a built model library on seeded random inputs.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace tessera::cli {

struct BenchOptions {
    std::string model;     ///< Path of the model library (.so).
    int threads = 0;       ///< <= 0: one per physical core.
    int warmup = 10;       ///< Untimed runs first.
    int repeat = 0;        ///< Timed runs; 0: run until min_secs have passed.
    double min_secs = 1.0; ///< With repeat 0: time runs for at least this long (and >= 5 runs).
    uint64_t seed = 1;     ///< Seed of the random inputs.
    bool json = false;     ///< One JSON object instead of text.
    /// After timing, also time every call of the model's sequence, in sequence and hot
    /// (tessera_model_set_profiling), measure the CPU's peak product rates, and print them
    /// with each call's share of its precision's peak.
    bool profile = false;
};

/// One call of a model's sequence, timed by `bench --profile`.
struct CallTiming {
    std::string kernel; ///< Its kernel's symbol (tessera_kernel_<task>), or "copy".
    std::string label;  ///< What it computes: its group, pattern and output type.
    double ms = 0;      ///< Median milliseconds as it runs in the model's sequence.
    double hot_ms = 0;  ///< Median milliseconds when repeated at once (warm caches).
    int64_t flops = 0;  ///< Operations of one run (2 per multiply-add); 0 for copies.
    std::string precision; ///< What its products compute on ("int8", "bf16", "f32", ...).
    /// Its operations per second in the sequence over the CPU's measured peak rate of its
    /// precision at the run's threads (backend::measure_peak_rates; f32's for precisions
    /// other than int8 and bf16); 0 when not known (no operations, a CUDA library, a library
    /// that does not say its calls' work).
    double peak_fraction = 0;
};

/// The result of a benchmark; times in milliseconds.
struct BenchResult {
    std::string model_name;
    int threads = 0; ///< As requested (0: one per physical core).
    int runs = 0;
    double median_ms = 0, p10_ms = 0, p90_ms = 0;
    double spread = 0;          ///< p90 / p10.
    int64_t peak_rss_bytes = 0; ///< This process's peak resident memory (getrusage).
    /// Peak resident memory minus the resident memory just before the library was loaded: what
    /// the model costs (code, weights, arena, thread pool), without the tessera program itself.
    int64_t model_rss_bytes = 0;
    int64_t arena_bytes = -1;   ///< The instance's intermediate memory (-1: not reported).
    std::vector<CallTiming> calls; ///< With BenchOptions::profile: per call of the sequence.
    /// With BenchOptions::profile on a CPU library: the milliseconds the calls' operations take
    /// at the measured peak rates, a lower bound of the run (0 when not known).
    double peak_ms = 0;
    /// With more than one thread: the cache-line round trip between two CPUs measured right
    /// after the timed runs (measure_core_round_trip_ns), which tells a run on a host
    /// whose CPUs were on one die from one in a spell with them apart; negative when not
    /// measured.
    double core_round_trip_ns = -1;
};

/// Loads the model, fills its inputs with seeded random values (floats uniform in [-1, 1),
/// integers and bools in {0, 1}, which index any non-empty axis), runs `warmup` untimed runs,
/// then times each run, and prints the result (text, or one JSON object with the fields of
/// BenchResult). Throws UserError for bad options or a model that fails to load or run.
BenchResult bench_model(const BenchOptions& opts, std::ostream& out);

/// Registers the `bench` subcommand on app, its options bound to opts.
CLI::App* add_bench_command(CLI::App& app, BenchOptions& opts);

/// The q-quantile (0..1) of sorted samples, interpolating linearly between neighbours.
/// Pre: sorted is not empty.
double quantile(const std::vector<double>& sorted, double q);

} // namespace tessera::cli
