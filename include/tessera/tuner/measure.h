// Measuring schedules on the real machine (DESIGN.md decisions 3 and 4).
//
// measure() takes candidate schedules of one task and returns one MeasureResult each, in order:
//   0. task data, once per task (by te::workload_key) and cached for the Measurer's life:
//      seeded random dense inputs (fill_random, one Rng(seed) over the inputs in order) and
//      the reference outputs from the default loop nest (lower::lower_default, JIT-compiled
//      in this process), all written as raw files into the work directory; an input a
//      candidate stores in another layout is packed once per distinct layout (layout.h);
//   1. build (builder.h): each candidate is lowered (sched::lower_state), prepared for codegen
//      and compiled to a shared library, several at once on build threads (one LLVM context
//      per thread), each against a time limit;
//   2. run (runner.h): a separate worker process (this executable, `tessera __measure-worker`)
//      loads each library, runs it on the task's inputs, compares every output element with
//      the reference output and only then times it: warm-up, then repeats until both
//      min_repeats and min_repeat_secs are reached (at most max_repeats), optionally flushing
//      the caches before each repeat. A wrong result is a WrongAnswer error, never a time. A
//      candidate that crashes (signal), hangs (run_timeout_secs) or aborts becomes an error
//      record with its reason; the worker is restarted and measuring goes on.
// Built libraries are deleted once measured. Candidates run one after the other (timings are
// never taken while another candidate runs); builds all finish before the first run, so
// compilation never disturbs a timing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/schedule/state.h"
#include "tessera/te/compute.h"
#include "tessera/tuner/builder.h"
#include "tessera/tuner/database.h"

namespace tessera::tune {

/// How candidates are built and run, one documented default each.
struct MeasureOptions {
    int build_threads = 0;          ///< Parallel compilations; 0 = physical cores available.
    /// The CPU candidates are compiled for (backend::compile_options_for); empty: this host.
    /// Its code must run here (the worker runs it).
    backend::CompileOptions compile;
    double build_timeout_secs = 60; ///< Per candidate: lowering + LLVM + link.
    /// A build longer than this many times the median of its batch's builds (and 1 s) is
    /// given up as a straggler (BuilderOptions::straggler_factor); 0: only the time limit.
    double build_straggler_factor = 5;
    double run_timeout_secs = 20;   ///< Per candidate: load + check + all timed repeats.
    int kernel_threads = 0;         ///< Threads the measured kernel uses; 0 = all cores.
    int warmup = 1;                 ///< Untimed runs after the check run.
    int min_repeats = 5;            ///< Timed repeats at least ...
    /// ... and until their total reaches this. 0.1 s: a 150 s resnet18 tune measured 758
    /// candidates instead of 565 at 0.2 s (with slow_factor 2 instead of 4) and built an equally
    /// fast model (BENCHMARKS, "Kernel threads bound in the measurement worker").
    double min_repeat_secs = 0.1;
    int max_repeats = 200;          ///< Upper bound on timed repeats.
    bool flush_cache = false;       ///< Overwrite a buffer twice the LLC before each timed run.
    /// Evict the task's weight inputs (te::Compute::weight_inputs) from every cache level
    /// before each timed run: a model's kernel reads its weights from memory, since the other
    /// kernels' weights and activations have evicted them since its last call, while a kernel
    /// timed alone finds them in cache. Costs one pass over the weights per repeat.
    bool cold_weights = false;
    /// Run the worker under real-time scheduling (SCHED_FIFO), so that other processes on a
    /// shared machine cannot preempt timed runs (builds finish before runs start, so the tuner
    /// itself never competes). Needs root or CAP_SYS_NICE; otherwise timing falls back to
    /// normal scheduling with one warning on stderr. A hanging candidate then holds the cores
    /// until run_timeout_secs (the kernel's real-time throttling still leaves 5% to others).
    bool realtime = false;
    double tolerance = 1e-3;        ///< Max |got - want| / max(1, |want|) over all elements.
    /// A candidate whose checked run takes more than slow_factor x the best median time known
    /// for its task is timed once, without warm-up (0 = always the full repeats). Its time only
    /// tells the search that it is slow; the best known is at most half of it.
    double slow_factor = 2;
    /// Beside a baseline (Measurer::set_baseline), a candidate whose runs, once there are
    /// min_repeats of them, take more than behind_factor x the baseline's run beside them (the
    /// median of the pairs' ratios) stops being timed: it is clearly behind the task's best, and
    /// its rank needs no more precision to tell the search so (0 = always the full repeats).
    /// 1.2: replayed on the 580 pair sets of a 150 s resnet18 tune (Zen 4), it cut 104
    /// candidates and 16% of the timed runs, none that beat the baseline over their full
    /// repeats and two within 5% of it (at 1.1: five that beat it). The median of the ratios,
    /// not the ratio of the medians: a burst of the host's slow phases over the first pairs
    /// slows both runs of each pair alike, and the ratio of the medians cut two winners at 1.2.
    double behind_factor = 1.2;
    /// Beside a baseline, the timed pairs also end before min_repeat_secs once at least 8 are
    /// in and the median of their ratios (candidate / baseline) is known this precisely: its
    /// standard error, estimated as the ratios' interquartile range over the square root of
    /// their count, relative to it (0 = min_repeat_secs alone). 0.005: replayed on the 580
    /// pair sets of a 150 s resnet18 tune (Zen 4), with behind_factor it saves 35% of the
    /// timed runs instead of 16%, the median ratio within 0.3% of the full repeats' for half
    /// of the candidates it stops and within 1.1% for nine in ten.
    double ratio_precision = 0.005;
    uint64_t seed = 0;              ///< Seed of the random inputs.
    /// The worker command line (argv[0] a path); empty = this executable (/proc/self/exe) with
    /// the argument "__measure-worker", which only works in the `tessera` executable: other
    /// programs (tests) pass {path of tessera, "__measure-worker"}.
    std::vector<std::string> worker_command;
    /// Send each candidate and its data through the worker's connection instead of letting it
    /// read them by path (Runner's stream_files): for a worker on another machine.
    bool stream_files = false;
    /// Directory for built libraries, task data and the worker's stderr log
    /// (worker_stderr.log); created when missing. Empty = a fresh directory under $TMPDIR (or
    /// /tmp), removed by the Measurer's destructor.
    std::string work_dir;
};

/// The one range rule of MeasureOptions::slow_factor and behind_factor (and of the flags that
/// set them): 0 (never cut) or a finite number of at least 1.
bool valid_cut_factor(double factor);
/// The one range rule of MeasureOptions::ratio_precision: in [0, 1).
bool valid_ratio_precision(double precision);

/// The outcome of one candidate.
struct MeasureResult {
    MeasureError error = MeasureError::Ok;
    std::string error_message;    ///< Why it failed (signal name, timeout, max error, ...).
    std::vector<double> run_secs; ///< Every timed repeat, in order (Ok only).
    /// The baseline's timed runs, alternated with run_secs (Measurer::set_baseline); empty when
    /// the candidate was timed alone.
    std::vector<double> baseline_run_secs;
    /// Wall time of its build (lowering, LLVM, link); 0 when the library the previous
    /// measure() call built for the same schedule served (LocalMeasurer keeps them till the next).
    double build_secs = 0;
    double max_rel_error = 0;     ///< Of the checked output (Ok and WrongAnswer).
};

class Measurer {
  public:
    virtual ~Measurer() = default;
    /// Measures states (all schedules of compute c) and returns one result per state, in
    /// order. Never throws for a failing candidate (that is its error record); throws
    /// UserError only when measuring is impossible at all (no worker can be started, the
    /// work directory cannot be written).
    virtual std::vector<MeasureResult> measure(const te::Compute& c,
                                               const std::vector<sched::State>& states) = 0;
    /// How it measures, as a JSON object (stored as each record's measure_settings_json).
    virtual std::string settings_json() const = 0;
    /// Tells the measurer the best median time known for a task (e.g. from the database when
    /// tuning resumes), for MeasureOptions::slow_factor. Measurers that do not use it ignore it.
    virtual void note_best_secs(const std::string& workload_key, double secs) {}
    /// Times every later candidate of the task of `c` run for run in alternation with
    /// `baseline` (a schedule of that task already measured correct, e.g. its best record), and
    /// returns the baseline's runs in MeasureResult::baseline_run_secs: a phase of the host
    /// that slows both alike cancels out in their ratio. Replaces the task's earlier baseline.
    /// A baseline that fails to build leaves candidates timed alone. Measurers that cannot
    /// time two kernels together ignore it (their results carry no baseline runs).
    virtual void set_baseline(const te::Compute& c, const sched::State& baseline) {}
};

/// One candidate at the level below schedules: how to lower it, and how each input of the
/// compute is stored. States become candidates through candidate_from_state; tests and tools
/// may hand-build the loop IR instead (the function must have the lower_default parameter
/// contract: inputs then outputs, outputs dense; inputs dense or packed by their layout).
struct MeasureCandidate {
    LowerFn lower;
    /// One per compute input (dense row-major when identity); empty = all identity.
    std::vector<sched::LayoutTransform> input_layouts;
};

/// The candidate that lowers `s` with sched::lower_state and stores each input in its stage's
/// layout.
MeasureCandidate candidate_from_state(const sched::State& s);

/// The real builder + worker-process runner. One measure call at a time (not thread-safe).
class LocalMeasurer : public Measurer {
  public:
    /// Checks the options (UserError naming an option out of range) and creates the work
    /// directory (UserError when it cannot be created). The worker starts on the first run.
    explicit LocalMeasurer(const MeasureOptions& opts = {});
    /// Stops the worker, waits for builds that timed out, and removes the work directory when
    /// this Measurer created it (a given work_dir is kept, with the task data in it).
    ~LocalMeasurer() override;

    std::vector<MeasureResult> measure(const te::Compute& c,
                                       const std::vector<sched::State>& states) override;
    /// measure() for candidates of any origin (same contract).
    std::vector<MeasureResult> measure_candidates(const te::Compute& c,
                                                  const std::vector<MeasureCandidate>& candidates);
    /// {"kernel_threads", "warmup", "slow_factor", "behind_factor", "ratio_precision",
    /// "min_repeats", "min_repeat_secs", "max_repeats", "flush_cache", "cold_weights",
    /// "tolerance", "seed"} ("realtime" when asked for); kernel_threads is the resolved count
    /// (never 0).
    std::string settings_json() const override;
    void note_best_secs(const std::string& workload_key, double secs) override;
    void set_baseline(const te::Compute& c, const sched::State& baseline) override;

    /// The work directory in use.
    const std::string& work_dir() const;
    /// Worker processes started so far (1 + restarts after failures), for tests and logs.
    int workers_started() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// A LocalMeasurer.
std::unique_ptr<Measurer> make_local_measurer(const MeasureOptions& opts = {});

/// The `tessera __measure-worker` entry point: serves measurement requests on stdin/stdout
/// until stdin closes (runner.h's protocol, files streamed or read by path). With
/// streamed_only, a request naming a file that was not streamed fails (tests check that a
/// streaming tuner sends everything). Returns the process exit code.
int measure_worker_main(bool streamed_only = false);

} // namespace tessera::tune
