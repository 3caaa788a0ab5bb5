// How a tuning run searches, measures and records, whatever it tunes: the options `tessera tune`
// shares between --op and MODEL and the Python package's tessera.tune takes, checked once, and
// the parts of a run they make (the search options, the record target, the measurer, the cost
// models, the database). A model's run is assembled from them in model_tuning.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tessera/cost_model/cost_model.h"
#include "tessera/support/target.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/measure.h"
#include "tessera/tuner/tune_target.h"
#include "tessera/tuner/tune_task.h"

namespace tessera::compile {

/// The options of a tuning run, with `tessera tune`'s defaults. Error messages name them as
/// the command spells them (--trials, --db, ...).
struct TuningOptions {
    /// Candidates to measure in this run (all tasks of a model together); 0 = no limit (then
    /// time_budget_secs must be > 0).
    int trials = 1000;
    double time_budget_secs = 0; ///< Wall-clock limit of the run; 0 = none.
    /// A time budget was given: the run ends by time alone when trials is 0, and the budget
    /// must be above 0.
    bool time_bounded = false;
    std::string db = "tune_logs/tessera.db"; ///< The tuning database (its folder is created).
    uint64_t seed = 1;                       ///< Seeds the search, the model and the inputs.
    int threads = 0;                         ///< Threads of the measured kernels; 0 = all cores.
    /// Time candidates in a real-time (SCHED_FIFO) worker (tune::MeasureOptions::realtime).
    bool realtime = false;
    /// Timed repeats of a candidate last at least this long in total
    /// (tune::MeasureOptions::min_repeat_secs).
    double min_repeat_secs = tune::MeasureOptions{}.min_repeat_secs;
    /// A candidate whose checked run is slower than this many times the task's best is timed
    /// once (tune::MeasureOptions::slow_factor; 0 = never cut).
    double slow_factor = tune::MeasureOptions{}.slow_factor;
    /// Beside the task's best, a candidate more than this many times slower over its first
    /// pairs of runs stops being timed (tune::MeasureOptions::behind_factor; 0 = never cut).
    double behind_factor = tune::MeasureOptions{}.behind_factor;
    /// Beside the task's best, a candidate's timed pairs end once the median of their ratios is
    /// known to this relative standard error (tune::MeasureOptions::ratio_precision; 0 = never).
    double ratio_precision = tune::MeasureOptions{}.ratio_precision;
    /// Time each candidate alone, not run for run beside its task's best record
    /// (tune::SearchOptions::measure_beside_best off): records are then ranked by their medians.
    bool measure_alone = false;
    /// Whether each task's weights are evicted from the caches before every timed run
    /// (tune::MeasureOptions::cold_weights): "cold", "warm", or "auto" (cold when tuning a
    /// model, whose kernels find their weights evicted by the others; warm for one operator).
    std::string weights = "auto";
    int population = 512;               ///< States kept per generation (MetaSchedule's).
    int generations = 3;                ///< Evolution rounds between measurements.
    int measure_per_round = 64;         ///< Candidates measured and committed per round.
    double eps_greedy = 0.05;           ///< Share of each round that is random samples.
    std::string cost_model = "xgboost"; ///< "xgboost" or "random" (`--model`).
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
    /// The worker command of runner "local" for a CPU target (argv[0] a path): empty = this
    /// executable's `__measure-worker`, which only the `tessera` command has; other programs
    /// (the Python package) name a tessera-measure-worker executable.
    std::vector<std::string> local_worker;
    /// Set (by another thread, a signal handler) to stop the run before its next round.
    const std::atomic<bool>* cancel = nullptr;
};

/// `--runner simulated` records are stored under target "simulated:" + the host target, so
/// that their synthetic times never count as real measurements of the host target.
constexpr const char* kSimulatedTargetPrefix = "simulated:";

/// Throws UserError naming the option (as `tessera tune` spells it) and its value for an
/// option out of range, a runner command whose program does not exist, an empty database path,
/// or a target that tuning cannot measure (tuning_target_option).
void check_tuning_options(const TuningOptions& opts);

/// The target a target string names (parse_target; UserError naming the string), checked
/// for commands that run code here: an Llvm target whose code does not run on this machine
/// (another architecture, or extensions this CPU lacks) is refused unless `may_cross`, and
/// `tf32` (--tf32) needs cuda.
Target checked_target(const std::string& text, bool tf32 = false, bool may_cross = false);

/// The worker command of opts.runner (its program resolved in PATH when it has no '/'); empty
/// for local and simulated. Throws UserError naming --runner when the program does not exist.
std::vector<std::string> runner_command(const TuningOptions& opts);

/// opts.target checked for a tuning run: a target whose code does not run here needs a worker
/// command (--runner CMD), which serves llvm targets only. Throws UserError naming them.
Target tuning_target_option(const TuningOptions& opts);

/// The records of `--target cuda`: target "cuda -arch=sm_XX" of CUDA device 0, the host's
/// fingerprint (whose GPU fields name the device) and the ISA class "cuda;sm_XX" (GPUs of one
/// architecture run each other's schedules with the same code). Throws UserError "--target
/// cuda: <the driver's reason>" without a usable device, or "--target cuda: this tessera was
/// built without the CUDA toolkit".
tune::TuneTarget cuda_tune_target();

/// The identity records of the run get: tune::llvm_tune_target of opts.target
/// (cuda_tune_target() for cuda), under kSimulatedTargetPrefix for runner simulated. A
/// simulated cuda run needs no device: without one its target is "simulated:cuda -arch=sm_90",
/// the architecture the GPU sampling limits assume.
tune::TuneTarget tuning_target(const TuningOptions& opts);

/// The search options of opts (the target's cores and vector width; weight_inputs of the
/// sketches given by the caller, per task; opts.cancel). For cuda: GPU sketches, no CPU default
/// schedule in the population, and no mutation (the mutation rules know CPU annotations only,
/// so evolution selects among sampled GPU schedules by the model's score).
tune::SearchOptions tuning_search_options(const TuningOptions& opts,
                                          const std::vector<int>& weight_inputs);

/// The measurer opts.runner names (local or simulated), seeded with opts.seed; for cuda the
/// local runner is the CUDA measurer (tuner/cuda_measure.h). `tunes_model` chooses what
/// weights "auto" means (cold for a model).
std::unique_ptr<tune::Measurer> make_tuning_measurer(const TuningOptions& opts, bool tunes_model);

/// The cost models of a run, one per task: opts.cost_model seeded with opts.seed, started from
/// the pretrained model opts.pretrained names (CostModel::set_prior) when tuning this CPU for
/// real (target llvm, runner local) with xgboost.
struct TuningCostModels {
    std::function<std::unique_ptr<cost::CostModel>()> make; ///< A fresh model per call.
    bool uses_prior = false;                                ///< The models start from a prior.
    /// One line for the user when the built-in prior is left out (empty: none).
    std::string note;
};

/// The prior is checked once here: a built-in one that does not load (a build whose features
/// changed since it was trained) is left out and said in `note`; a --pretrained file that does
/// not load, or one given where no prior applies, throws UserError naming it.
TuningCostModels tuning_cost_models(const TuningOptions& opts);

/// Opens the database, creating its folder first (tune_logs/ on a first run); UserError naming
/// --db and the path when that fails.
tune::TuningDatabase open_tuning_database(const std::string& path);

} // namespace tessera::compile
