// `tessera tune`: tune one built-in operator (--op) or every task of an ONNX model (MODEL, see
// tune_model.h) on this machine into the tuning database.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "model_inputs.h"
#include "tessera/compile/model_pipeline.h"
#include "tessera/cost_model/cost_model.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/measure.h"
#include "tessera/tuner/tune_task.h"

namespace tessera::cli {

/// Every option of `tessera tune`, with its default.
struct TuneOptions {
    std::string op;                        ///< NAME:key=value,... (see `tessera op list`).
    std::string model_path;                ///< An ONNX model (exactly one of op, model_path).
    ModelInputOptions inputs; ///< A model's --input-shape, --bind, --precision (as `build`).
    int opt_level = compile::kDefaultOptLevel; ///< Graph pipeline level for a model (as build).
    bool no_winograd = false; ///< --no-winograd: a model's 3x3 convs stay direct (as `build`).
    /// --horizontal-fusion: a model's fan-out products merged (as `build`).
    bool horizontal_fusion = false;
    /// Candidates to measure in this run (all tasks of a model together); 0 = no limit (then
    /// time_budget_secs must be > 0).
    int trials = 1000;
    double time_budget_secs = 0;           ///< Wall-clock limit of the run; 0 = none.
    /// --time-budget was given: the run ends by time alone (trials must then be 0) and the
    /// budget must be above 0.
    bool time_bounded = false;
    std::string db = "tune_logs/tessera.db"; ///< The tuning database (its folder is created).
    uint64_t seed = 1;                     ///< Seeds the search, the model and the inputs.
    int threads = 0;                       ///< Threads of the measured kernels; 0 = all cores.
    /// Time candidates in a real-time (SCHED_FIFO) worker (tune::MeasureOptions::realtime).
    bool realtime = false;
    /// Timed repeats of a candidate last at least this long in total
    /// (tune::MeasureOptions::min_repeat_secs).
    double min_repeat_secs = tune::MeasureOptions{}.min_repeat_secs;
    /// A candidate whose checked run is slower than this many times the task's best is timed
    /// once (tune::MeasureOptions::slow_factor; 0 = never cut).
    double slow_factor = tune::MeasureOptions{}.slow_factor;
    /// Whether each task's weights are evicted from the caches before every timed run
    /// (tune::MeasureOptions::cold_weights): "cold", "warm", or "auto" (cold when tuning a
    /// model, whose kernels find their weights evicted by the others; warm for one operator).
    std::string weights = "auto";
    int population = 512;                  ///< States kept per generation (MetaSchedule's).
    int generations = 3;                   ///< Evolution rounds between measurements.
    int measure_per_round = 64;            ///< Candidates measured and committed per round.
    double eps_greedy = 0.05;              ///< Share of each round that is random samples.
    std::string model = "xgboost";         ///< "xgboost" or "random".
    /// The pretrained model a task's xgboost model starts from when tuning this CPU for real:
    /// "builtin", "none" or the path of a blob `costmodel train` wrote (cost/pretrained.h).
    std::string pretrained = "builtin";
    /// "local" (real), "simulated" (synthetic times, under kSimulatedTargetPrefix's target), or
    /// a command that starts a measurement worker where the target's code runs (runner.h's
    /// protocol on its stdin and stdout), e.g. "qemu-aarch64 -L /usr/aarch64-linux-gnu
    /// build/runtime-aarch64-linux-gnu/tessera-measure-worker".
    std::string runner = "local";
    /// A target string (support/target.h): "llvm" (this CPU), another CPU whose code runs
    /// here ("llvm -mcpu=skylake"), or "cuda" (CUDA device 0: GPU sketches, the CUDA measurer).
    std::string target = "llvm";
    /// CSV of the best-so-far (a model: the estimated end-to-end latency) per round; empty = none.
    std::string curve_file;
    bool json = false;                     ///< Summary as one JSON object instead of text.
    /// "I/N": tune only share I of N of a model's tasks (tune_model.h); empty = every task.
    std::string shard;
};

/// The key under which `tessera tune` adds the operator's canonical spec to every record's
/// measure_settings_json ({"op_spec": "matmul:m=13,n=7,k=127", ...}), so that tools that need
/// the Compute back (`costmodel eval`) can rebuild it from the registry.
constexpr const char* kOpSpecSettingsKey = "op_spec";

/// `--runner simulated` records are stored under target "simulated:" + the host target, so
/// that their synthetic times never count as real measurements of the host target.
constexpr const char* kSimulatedTargetPrefix = "simulated:";

/// The records of `--target cuda`: target "cuda -arch=sm_XX" of CUDA device 0, the host's
/// fingerprint (whose GPU fields name the device) and the ISA class "cuda;sm_XX" (GPUs of one
/// architecture run each other's schedules with the same code). Throws UserError "--target
/// cuda: <the driver's reason>" without a usable device, or "--target cuda: this tessera was
/// built without the CUDA toolkit".
tune::TuneTarget cuda_tune_target();

/// The target a `--target` string names (parse_target; UserError naming the string), checked
/// for commands that run code here: an Llvm target whose code does not run on this machine
/// (another architecture, or extensions this CPU lacks) is refused unless `may_cross`, and
/// `tf32` (--tf32) needs cuda.
Target checked_target(const std::string& text, bool tf32 = false, bool may_cross = false);

/// The worker command of --runner (its program resolved in PATH when it has no '/'); empty
/// for local and simulated. Throws UserError naming --runner when the program does not exist.
std::vector<std::string> runner_command(const TuneOptions& opts);

/// --target checked for a tune run: a target whose code does not run here needs a worker
/// command (--runner CMD), which serves llvm targets only. Throws UserError naming them.
Target tune_target_option(const TuneOptions& opts);

/// The exit code of a run stopped by Ctrl-C (128 + SIGINT), after the summary was printed.
constexpr int kInterruptedExitCode = 130;

/// `tessera tune`: checks that exactly one of opts.model_path and opts.op is given (UserError
/// naming both otherwise), then tunes with run_tune or run_tune_model while a SIGINT handler is
/// installed: the first Ctrl-C lets the round in progress finish and commit, then the summary
/// prints and kInterruptedExitCode is returned; a second Ctrl-C exits at once with that code
/// (what was committed stays: one transaction per round). Returns 0 otherwise.
int run_tune_command(const TuneOptions& opts, std::ostream& out, std::ostream& progress,
                     bool progress_is_terminal);

/// Throws UserError naming the option and value for an option out of range (both modes).
void check_tune_options(const TuneOptions& opts);
/// The search options of opts (host cores and vector width; weight_inputs of the sketches
/// given by the caller, per task). For --target cuda: GPU sketches, no CPU default schedule in
/// the population, and no mutation (the mutation rules know CPU annotations only, so
/// evolution selects among sampled GPU schedules by the model's score).
tune::SearchOptions tune_search_options(const TuneOptions& opts,
                                        const std::vector<int>& weight_inputs);
/// The measurer opts.runner names (local or simulated), seeded with opts.seed; for --target cuda
/// the local runner is the CUDA measurer (tuner/cuda_measure.h).
std::unique_ptr<tune::Measurer> make_tune_measurer(const TuneOptions& opts);
/// tune::llvm_tune_target of --target (cuda_tune_target() for cuda), under kSimulatedTargetPrefix for
/// --runner simulated. A simulated cuda run needs no device: without one its target is
/// "simulated:cuda -arch=sm_90", the architecture the GPU sampling limits assume.
tune::TuneTarget tune_target_of(const TuneOptions& opts);
/// The cost models of a run, one per task: opts.model seeded with opts.seed, started from the
/// pretrained model opts.pretrained names (CostModel::set_prior) when tuning this CPU for real
/// (--target llvm, --runner local) with xgboost. The prior is checked once here: a built-in
/// one that does not load (a build whose features changed since it was trained) is reported
/// on `note` in one line and left out; a --pretrained file that does not load, or one given
/// where no prior applies, throws UserError naming it.
struct TuneCostModels {
    std::function<std::unique_ptr<cost::CostModel>()> make; ///< A fresh model per call.
    bool uses_prior = false;                                ///< The models start from a prior.
};
TuneCostModels tune_cost_models(const TuneOptions& opts, std::ostream& note);
/// Opens a database that must already exist (reading commands must not create an empty one);
/// UserError "<named>: no such file" when `path` is neither a file nor a server URL.
tune::TuningDatabase open_existing_tune_database(const std::string& path, const std::string& named);
/// Opens the database, creating its folder first (tune_logs/ on a first run); UserError naming
/// --db and the path when that fails.
tune::TuningDatabase open_tune_database(const std::string& path);
/// "1.234 ms", or "-" for +infinity.
std::string ms_text(double secs);

/// Tunes opts.op into opts.db. Progress goes to `progress` (rewritten in place when
/// `progress_is_terminal`, one line per round otherwise); the summary (text, or one JSON line
/// with opts.json) goes to `out`. Every record of a measured round is committed before the next
/// round starts, so an interrupted run keeps what it measured and a rerun resumes.
/// Throws UserError naming the option and value on a bad option, a bad spec, a database that
/// cannot be opened or a curve file that cannot be written.
/// `cancel` (may be null) stops the run before the next round once set.
tune::TuneResult run_tune(const TuneOptions& opts, std::ostream& out, std::ostream& progress,
                          bool progress_is_terminal, const std::atomic<bool>* cancel = nullptr);

} // namespace tessera::cli
