// Tuning many tasks at once (a model's tasks): which task gets the next measured round, and the
// loop that drives one TaskTuningSession per task round by round.
//
// The policy is Ansor's gradient task scheduler. The objective is the estimated end-to-end
// latency f = sum over tasks of count_i x g_i, where g_i is task i's best measured time and
// count_i how often the task runs per model run. After a warm-up that gives every task one
// round (tune_tasks makes it the seed round), in task order, each round goes to the live task with
// the most negative gradient
//   grad_i = count_i x (alpha x backward_i + (1 - alpha) x forward_i)
// where, with t_i the rounds task i had and h_i(1..t_i) its best time after each of them,
//   backward_i = (h_i(t_i) - h_i(t_i - w)) / w when t_i > w (w = backward_window), else 0:
//                the improvement per round seen lately;
//   forward_i  = min(g_i - g_i / t_i, beta x C_i / max_{j in sim(i)} (C_j / g_j)) - g_i:
//                the improvement a next round may bring, either the share a round had on
//                average so far, or (when task i has similar tasks) reaching 1/beta of the best
//                throughput (C = flops) any similar task reached. sim(i): the tasks with i's
//                similarity tag that have a measured time; the term is left out when fewer
//                than two such tasks share the tag.
// count_i is d f / d g_i (the chain factor). Ties go to the lowest task index: the choice is a
// pure function of the recorded rounds.
//
// Live tasks: a task leaves the schedule when a round finds nothing left to measure
// (exhausted), or when its first round ends without any correct measurement (dead: every
// candidate failed, as Ansor retires such tasks).
//
// The estimate for a task with no measured time (dead, or not reached yet): its flops at the
// lowest throughput (flops per second) that any measured task reached, i.e. a pessimistic
// guess from this model's own kernels. While no task has a measured time the end-to-end
// estimate is unknown (+infinity).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "tessera/cost_model/cost_model.h"
#include "tessera/te/compute.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/measure.h"
#include "tessera/tuner/tune_task.h"

namespace tessera::tune {

/// The gradient policy's constants (Ansor's defaults).
struct GradientSchedulerOptions {
    double alpha = 0.2;      ///< Weight of the backward (observed) gradient; 1 - alpha: forward.
    double beta = 2;         ///< A task may reach 1/beta of its similar tasks' best throughput.
    int backward_window = 3; ///< Rounds over which the backward gradient is taken.
};

/// Throws UserError naming the option and value: alpha outside [0, 1], beta not a finite
/// number above 0, backward_window < 1.
void validate(const GradientSchedulerOptions& opts);

/// What the policy knows of a task besides its measured times.
struct SchedulerTask {
    int count = 1;              ///< Runs of the task per model run (its weight), >= 1.
    double flops = 1;           ///< Work of one run, finite and above 0.
    std::string similarity_tag; ///< Tasks with equal non-empty tags are similar.
};

/// The similarity tag of a task: "<op>/<floor(log_1.618(flops + 1))>", so tasks of one op whose
/// work is within a factor of about 1.6 share it. `op` is the anchor op of the fused pattern.
std::string similarity_tag(const std::string& op, double flops);

/// The policy as a plain object: fed the outcome of each round, it says which task is next.
/// Deterministic; no clock, no randomness.
class GradientTaskScheduler {
  public:
    /// Throws UserError on bad options (validate), no task, a count < 1 or flops that are not
    /// a finite number above 0 (naming the task index and the value).
    explicit GradientTaskScheduler(std::vector<SchedulerTask> tasks,
                                   const GradientSchedulerOptions& opts = {});

    int num_tasks() const { return int(tasks_.size()); }

    /// The best time of `task` known before any round (e.g. from the database; +infinity:
    /// none). Counts for the estimate and the similarity term, not for the round history.
    void set_known_best(int task, double secs);
    /// One round of `task` finished; `best_secs` is its best time after the round (+infinity
    /// while it has no correct measurement). A first round without one makes the task dead.
    void record_round(int task, double best_secs);
    /// The best time after `task`'s latest round was in fact `best_secs` (a re-measurement of
    /// its best): lowers the best and that round's entry of the history, so the correction
    /// does not count as progress of a later round. Pre: the task had a round.
    void revise_last_round(int task, double best_secs);
    /// `task` has nothing left to measure: it is never picked again.
    void mark_exhausted(int task);

    /// The task for the next round: during warm-up the first live task without a round, then
    /// the live task with the most negative gradient (ties: lowest index); -1 when no task is
    /// live.
    int next_task() const;
    /// grad_i of the header comment. Pre: the task is live and had at least one round.
    double gradient(int task) const;

    /// Estimated end-to-end time: sum of count x best, unmeasured tasks estimated as the header
    /// comment says; +infinity while no task has a measured time.
    double estimated_latency() const;
    /// The estimate of one task (count not applied), as estimated_latency() uses it.
    double estimated_task_secs(int task) const;

    int rounds(int task) const { return int(states_.at(size_t(task)).history.size()); }
    /// Best time after each round of the task, in order.
    const std::vector<double>& history(int task) const { return states_.at(size_t(task)).history; }
    /// Current best time (+infinity: none).
    double best(int task) const { return states_.at(size_t(task)).best; }
    bool is_live(int task) const;
    bool is_dead(int task) const { return states_.at(size_t(task)).dead; }
    bool is_exhausted(int task) const { return states_.at(size_t(task)).exhausted; }

  private:
    struct TaskState {
        double best;
        std::vector<double> history;
        bool dead = false;
        bool exhausted = false;
    };
    void check_index(int task) const;

    std::vector<SchedulerTask> tasks_;
    GradientSchedulerOptions opts_;
    std::vector<TaskState> states_;
};

/// One task of a tune_tasks call.
struct TaskToTune {
    te::Compute compute;        ///< Its weight_inputs become the sketches' weight inputs.
    double flops = 1;           ///< Work of one run (finite, above 0), for GFLOP/s and tags.
    int count = 1;              ///< Runs per model run.
    std::string name;           ///< For progress and summaries, e.g. the fused pattern.
    std::string similarity_tag; ///< See similarity_tag(); empty: similar to no task.
};

/// The progress of a tune_tasks call: reported once at the start (task -1), when a round starts
/// (round_done false: `task` is being tuned) and when it has been committed (round_done true).
struct TasksProgress {
    int round = 0; ///< Rounds committed so far (the current one not included).
    int task = -1; ///< Index of the task being (or just) tuned.
    bool round_done = false;
    int trials_done = 0;       ///< Measured in this call, all tasks.
    int trials_total = 0;      ///< The call's num_trials (0 = time-bounded).
    double estimated_secs = 0; ///< GradientTaskScheduler::estimated_latency() now.
    double elapsed_secs = 0;
    double eta_secs = 0; ///< Estimated time left (0 = unknown).
};

/// The summary of a tune_tasks call.
struct TasksResult {
    std::vector<TuneResult> tasks;    ///< Per task (workload_key always set; trials 0 if untuned).
    std::vector<int> round_tasks;     ///< The task of each committed round, in order.
    int trials = 0;                   ///< Measured in this call, all tasks.
    double estimated_secs_before = 0; ///< The estimate from the database's records alone.
    double estimated_secs_after = 0;
    bool cancelled = false; ///< Stopped by the cancel flag.
    double elapsed_secs = 0;
    /// After each committed round: (trials, seconds since start, estimated end-to-end secs).
    std::vector<std::tuple<int, double, double>> curve;
};

/// Tunes `tasks` into `db` with the gradient policy. `search` holds the shared search options:
/// num_trials and time_budget_secs are totals over all tasks (whichever comes first), cancel
/// ends the call before the next round, measure_per_round caps a round, which is also capped at
/// max(1, num_trials / tasks.size()) so that the warm-up fits the budget. Each task gets its own
/// TaskTuningSession (created at its first round), its own cost model from make_model (saved in
/// the database under cost_model_name), the seed mixed with its index and its Compute's weight
/// inputs as sketch weight inputs.
///
/// The warm-up round of a task is its seed round (TaskTuningSession::run_seed_round: the
/// default schedule and the transfer seeds, no search), so every task has a measured time after
/// a few seconds each; a task whose seeds measured nothing correct gets a searched round too.
/// The gradient policy spends the rest. With a time budget, a searched round starts only when
/// the time left holds a round's search (the searched rounds' time so far less their
/// measuring, per round) and at least one candidate, and is cut to the candidates the rest
/// affords at their measuring cost so far; every round ends at the deadline between two
/// committed batches (search.commit_every), so the call ends within about one batch of its
/// budget. The clock is search.clock.
/// A task is exhausted when a round finds nothing to measure; the call ends when the trials or
/// the time are spent, the flag is set, or no task is live.
/// Deterministic for a seed, a deterministic measurer and the database's content (and, with a
/// time budget, a deterministic clock).
/// Throws UserError on bad options (validate), an empty task list or a task's bad flops or
/// count; the measurer's UserError propagates after the rounds committed so far.
TasksResult tune_tasks(const std::vector<TaskToTune>& tasks, const TuneTarget& target,
                       TuningDatabase& db,
                       const std::function<std::unique_ptr<cost::CostModel>()>& make_model,
                       Measurer& measurer, const SearchOptions& search,
                       const GradientSchedulerOptions& policy = {},
                       const std::function<void(const TasksProgress&)>& on_progress = {});

} // namespace tessera::tune
