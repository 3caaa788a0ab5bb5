// Tuning one task: evolutionary search guided by a cost model, candidates measured on the
// machine, every measurement committed to the tuning database (one transaction per measured
// round), the cost model retrained and saved beside the records.
//
// Before the first round (warm start): the model saved under cost_model_name() is loaded when
// the database has one of the same kind and feature layout; it is retrained at once when the
// task's records outnumber what it was trained on (or none loads and there are enough records).
//
// One round (Ansor's search policy):
//   1. population: the init_from_db best measured states of the task for (target,
//      fingerprint) replayed from the database, plus fresh samples (sketches + random
//      annotation) up to `population`;
//   2. evolution (evolutionary_search.h): `generations` rounds in which parents are drawn by
//      predicted score and each child is a mutation (probability mutation_probability) or a
//      copy; every scored state competes for the pick;
//   3. pick n = min(measure_per_round, trials left) states: the seeds not measured yet (the
//      default schedule and the transfer seeds, below), floor(eps_greedy * n) random fresh
//      samples, the rest the best predicted ones; never a schedule JSON already measured for
//      (workload, target, fingerprint) in the database or earlier in this call (those are
//      counted in skipped_already_measured). While the model has learnt nothing of the task
//      (fewer than retrain_min_records Ok records so far), the rest are instead mutations (1 to
//      3 each) of the task's best measured states, fastest most often: random schedules are far
//      slower than a good default, so the first searched round is a local search around the
//      default and the transfer seeds (ResNet-18 on a 2-core Zen 1, 300 s from an empty
//      database: the estimated model time fell 14% with it, 0% without). A model started from
//      a pretrained prior (cost::CostModel::set_prior) ranks four times as many mutations and
//      the best predicted are measured; an untrained one would rank at random, so they are
//      drawn as they come;
//   4. measure and commit in batches of commit_every candidates (failures as error records
//      with their message; the clock is read between batches and the round ends early once
//      the deadline has passed), retrain the model on all records of the task for (target,
//      fingerprint) and save it.
// Rounds continue until num_trials candidates were measured in this call, time_budget_secs has
// passed (read before each round and between batches) or the cancel flag reads true (read
// before each round), or a round finds no schedule left to measure. Given the seed, a fixed
// measurer, a fixed model and the database's content, the sequence of measured schedules is
// deterministic.
//
// Transfer seeds: the best records of up to transfer_seeds other machines whose code runs on
// this one (lookup.h transfer_seeds: another machine of this ISA class, or a compatible CPU),
// replayed here, join the population and are measured in the first round next to the default
// schedule, so that what tuning elsewhere found is tried here first.
//
// Training examples: every record of the task for (target, fingerprint), its features from
// replaying its schedule JSON and lowering it (records that no longer replay are left out), its
// label the normalized throughput best_median / median (error records: 0).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "tessera/cost_model/cost_model.h"
#include "tessera/schedule/default_schedule.h"
#include "tessera/schedule/sampling.h"
#include "tessera/schedule/sketch.h"
#include "tessera/te/compute.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/evolutionary_search.h"
#include "tessera/tuner/measure.h"
#include "tessera/tuner/tune_target.h"

namespace tessera::tune {

/// Options of the search, one documented default each (Ansor's CPU defaults where they exist).
struct SearchOptions {
    int num_trials = 1000;          ///< Candidates to measure in this call (0 = no limit).
    double time_budget_secs = 0;    ///< Wall-clock limit of this call; 0 = none.
    /// States per generation (database seeds + fresh samples). MetaSchedule's 512 and 3
    /// generations, not Ansor's 2048 and 4: a round of those lowered about 10,000 states, 70 s
    /// of a 2-core machine's time per round of a 3x3 convolution, longer than measuring the
    /// round's 64 candidates.
    int population = 512;
    int generations = 3;            ///< Evolution rounds between measurements.
    double mutation_probability = 0.85; ///< Chance a child is a mutation (else a copy).
    double eps_greedy = 0.05;       ///< Share of each measured round that is random samples.
    int measure_per_round = 64;     ///< Candidates measured (and committed) per round.
    int init_from_db = 64;          ///< Best measured states of the task seeded into the population.
    int retrain_min_records = 8;    ///< Below this many Ok records the model is not (re)trained.
    uint64_t seed = 0;              ///< Seeds sampling, mutation and selection.
    int search_threads = 0;         ///< Threads lowering candidates for scoring (0 = host cores).
    sched::SketchOptions sketch;    ///< Sketch rules (the CLI fills num_cores).
    sched::SampleOptions sample;    ///< Annotation and mutation (the CLI fills host values).
    /// The rule-based default schedule (sched::default_schedule with `defaults`) joins every
    /// round's population, so evolution also mutates it, and the first round measures it when
    /// the database does not have it yet: the search starts from what an untuned build already
    /// runs and never ends below it.
    bool seed_default_schedule = true;
    /// The measuring target's default-schedule options (cores, vector lanes and registers,
    /// matrix tiles: tune_target.h default_schedule_options_for), what an untuned build of the
    /// task runs with; the seeded default takes its weight_inputs from `sketch`. Its target
    /// must be sketch.target (validated) and its cores and lanes should be the sketch's and
    /// sample's: search_options_for fills the three from one description.
    sched::DefaultScheduleOptions defaults;
    /// Once the task has a best record on this machine, every candidate is timed run for run
    /// in alternation with it (Measurer::set_baseline) and ranked by its time relative to it
    /// (TuningRecord::rank_secs): on a shared host whose speed drifts in phases (the same
    /// schedule at 17 and at 27 ms minutes apart), a record's single measurement would rank it
    /// against records measured in other phases, and the best of hundreds is the luckiest.
    /// Costs the baseline's runs: up to twice the timing of a candidate whose repeats, not
    /// min_repeat_secs, bound it.
    bool measure_beside_best = true;
    /// Best records of up to this many other machines measured first (the file comment).
    int transfer_seeds = 4;
    /// Candidates measured and committed at a time: a killed tuner loses at most this many,
    /// and the time budget is checked this often within a round.
    int commit_every = 16;
    /// The time source, in seconds from any fixed start; empty: std::chrono::steady_clock.
    /// Tests pass a fake clock (advanced by a simulated measurer) to check budgets without
    /// wall time. Copied into every session, so it must stay callable for the whole call.
    std::function<double()> clock;
    /// Read before each round: once true, no further round starts (the one in progress
    /// completes and is committed), e.g. set by a SIGINT handler. nullptr = never. Not owned;
    /// must outlive the call.
    const std::atomic<bool>* cancel = nullptr;
};

/// Progress after each measured round, after each committed batch within a round, and once
/// at the start.
struct TuneProgress {
    bool round_done = true;         ///< False for a batch report within a round.
    int trials_done = 0;            ///< Measured in this call.
    int trials_total = 0;           ///< options.num_trials (0 = time-bounded).
    int errors = 0;                 ///< Error records in this call.
    double best_secs = 0;           ///< Best rank time of the task in the database (inf: none).
    double best_gflops = 0;         ///< flops / best_secs / 1e9.
    double elapsed_secs = 0;        ///< Since the call started.
    double eta_secs = 0;            ///< Estimated time to finish (0 when unknown).
};

/// The summary of a call.
struct TuneResult {
    std::string workload_key;
    int trials = 0;                 ///< Measured in this call.
    int errors = 0;
    int skipped_already_measured = 0; ///< Candidates dropped because the database had them.
    std::optional<TuningRecord> best; ///< Best Ok record of the task for (target, fingerprint).
    double elapsed_secs = 0;
    /// Of elapsed_secs, the time spent measuring and committing candidates: their builds,
    /// checked runs, timed repeats and database writes (the rest: search, retraining, setup).
    double measure_secs = 0;
    /// Of measure_secs, the timed repeats alone (the sum of every candidate's run_secs).
    double repeat_secs = 0;
    /// Best-so-far after each measured round: (trials, seconds since start, best median secs).
    std::vector<std::tuple<int, double, double>> curve;
    /// The model was loaded from the database or trained on earlier records before round 1.
    bool warm_start = false;
    /// cost::CostModel::num_trained() when round 1 began (0 = a cold model).
    int64_t model_examples_at_start = 0;
    int rounds = 0;                  ///< Measured rounds.
    SearchStats search;              ///< Sampling, mutation and lowering counters of the call.
};

/// Throws UserError naming the option and its value when an option is outside its range:
/// num_trials < 0, time_budget_secs < 0 or not finite, both of them 0 (no end), population < 1,
/// generations < 0, mutation_probability or eps_greedy outside [0, 1], measure_per_round < 1,
/// init_from_db < 0, retrain_min_records < 1, search_threads < 0, transfer_seeds < 0,
/// commit_every < 1, defaults.target not sketch.target.
void validate(const SearchOptions& opts);

/// Search options for measuring on `target` (Llvm: its CPU, `threads` > 0 overriding its
/// cores; Cuda: the GPU rules): sketch, sample and defaults filled from one description
/// (tune_target.h), every other field at its default. Throws UserError as
/// backend::describe_cpu.
SearchOptions search_options_for(const Target& target, int threads = 0);

/// opts.clock, or the seconds of std::chrono::steady_clock when it is empty.
std::function<double()> search_clock(const SearchOptions& opts);

/// The name the task's model is saved under in the database:
/// "<model.name()>/<workload_key>/<fingerprint>/<target>" (one model per task and machine,
/// trained on that machine's records of the task only).
std::string cost_model_name(const cost::CostModel& model, const std::string& workload_key,
                            const TuneTarget& target);

/// Tunes compute c (flops = its work, for GFLOP/s). Throws UserError on bad options (see
/// validate), flops <= 0 or not finite, or an empty target or fingerprint. Candidates that fail
/// are error records; the measurer's UserError (measuring impossible) propagates after the
/// rounds committed so far.
TuneResult tune_task(const te::Compute& c, double flops, const TuneTarget& target,
                     TuningDatabase& db, cost::CostModel& model, Measurer& measurer,
                     const SearchOptions& opts,
                     const std::function<void(const TuneProgress&)>& on_progress = {});

/// tune_task taken apart round by round, for a driver that interleaves several tasks (the task
/// scheduler, task_scheduler.h). The constructor does what tune_task does before its first
/// round (adds the workload, warm-starts the model from the database, reports the start); each
/// run_round is one of tune_task's rounds. Given the seed, the measurer, the model and the
/// database's content, the same sequence of run_round calls measures the same schedules.
/// The database, model and measurer must outlive the session (the rest is copied).
class TaskTuningSession {
  public:
    /// Throws UserError as tune_task does (bad options, flops, target or fingerprint).
    TaskTuningSession(const te::Compute& c, double flops, const TuneTarget& target,
                      TuningDatabase& db, cost::CostModel& model, Measurer& measurer,
                      const SearchOptions& opts,
                      const std::function<void(const TuneProgress&)>& on_progress = {});
    ~TaskTuningSession();
    TaskTuningSession(TaskTuningSession&&) noexcept;
    TaskTuningSession& operator=(TaskTuningSession&&) noexcept;

    /// Measures and commits one round of at most min(max_candidates, opts.measure_per_round)
    /// candidates (and never beyond opts.num_trials in total when that is above 0); the model
    /// is retrained as in tune_task. Between batches of opts.commit_every it reads the clock
    /// and ends the round once `deadline` (in opts.clock's seconds) has passed. Returns false,
    /// committing nothing, when no candidate is left to measure or max_candidates < 1 (a round
    /// cut to nothing by the deadline returns true). opts.time_budget_secs and opts.cancel are
    /// not read: the driver decides when to stop. The measurer's UserError propagates.
    bool run_round(int max_candidates, double deadline = std::numeric_limits<double>::infinity());
    /// The seed round: measures only the seeds not measured yet (the default schedule and the
    /// transfer seeds, at most opts.num_trials in total), with no search, so that a driver of
    /// many tasks can give every task a measured time within seconds. Returns how many were
    /// measured (0: none left to measure; nothing committed).
    int run_seed_round(double deadline = std::numeric_limits<double>::infinity());
    /// Measures the best schedule so far once more and commits it as another record (counted
    /// as a trial, within opts.num_trials; its measurement settings say "retime": true), so that
    /// a best measured at one moment only gets a second moment: a host hiccup during a model's
    /// seed rounds left a resnet18 Winograd transform recorded at 0.106 ms that runs 0.042 in
    /// the model. Once per schedule (a resumed tune finds its bests measured twice). Returns 1
    /// when measured, 0 when there is no best yet, it was measured twice already, or no trial
    /// or time is left (nothing committed).
    int run_retime_round(double deadline = std::numeric_limits<double>::infinity());
    /// Seconds (opts.clock) since the session was made.
    double elapsed_secs() const;
    /// The summary so far (best record, elapsed time and skip count up to date).
    TuneResult result() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// A measurer for tests: no compilation, a deterministic synthetic time per schedule (a
/// function of the lowered program's features and the seed, favouring vectorized, parallel,
/// cache-sized tiles), and configurable failures: every schedule whose JSON hash falls in
/// `error_share` becomes an error of `error_kind`.
std::unique_ptr<Measurer> make_simulated_measurer(uint64_t seed, double error_share = 0,
                                                  MeasureError error_kind = MeasureError::RuntimeDevice);

} // namespace tessera::tune
