// The gradient task scheduler and the round loop over a model's tasks (see
// include/tessera/tuner/task_scheduler.h).
#include "tessera/tuner/task_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "tessera/support/error.h"
#include "tessera/te/workload_key.h"

namespace tessera::tune {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// The base of the flops buckets in similarity tags (the golden ratio, as in Ansor).
constexpr double kTagLogBase = 1.618;

void check_task(int index, int count, double flops) {
    if (count < 1)
        throw UserError() << "task " << index << ": count must be at least 1, got " << count;
    if (!(flops > 0) || !std::isfinite(flops))
        throw UserError() << "task " << index << ": flops must be a finite number above 0, got "
                          << flops;
}

} // namespace

void validate(const GradientSchedulerOptions& opts) {
    if (!(opts.alpha >= 0 && opts.alpha <= 1))
        throw UserError() << "task scheduler alpha must be in [0, 1], got " << opts.alpha;
    if (!(opts.beta > 0) || !std::isfinite(opts.beta))
        throw UserError() << "task scheduler beta must be a finite number above 0, got "
                          << opts.beta;
    if (opts.backward_window < 1)
        throw UserError() << "task scheduler backward_window must be at least 1, got "
                          << opts.backward_window;
}

std::string similarity_tag(const std::string& op, double flops) {
    const double bucket = std::floor(std::log(std::max(0.0, flops) + 1) / std::log(kTagLogBase));
    return fmt::format("{}/{}", op, int64_t(bucket));
}

// ---------------------------------------------------------------------------------------------
// GradientTaskScheduler

GradientTaskScheduler::GradientTaskScheduler(std::vector<SchedulerTask> tasks,
                                             const GradientSchedulerOptions& opts)
    : tasks_(std::move(tasks)), opts_(opts) {
    validate(opts_);
    if (tasks_.empty())
        throw UserError() << "the task scheduler needs at least one task, got none";
    for (size_t i = 0; i < tasks_.size(); ++i)
        check_task(int(i), tasks_[i].count, tasks_[i].flops);
    states_.assign(tasks_.size(), TaskState{kInf, {}, false, false});
}

void GradientTaskScheduler::check_index(int task) const {
    TESSERA_CHECK(task >= 0 && task < num_tasks())
        << "task index " << task << " out of range [0, " << num_tasks() << ")";
}

void GradientTaskScheduler::set_known_best(int task, double secs) {
    check_index(task);
    TESSERA_CHECK(!(secs < 0)) << "negative best time " << secs << " for task " << task;
    TaskState& s = states_[size_t(task)];
    s.best = std::min(s.best, secs);
}

void GradientTaskScheduler::record_round(int task, double best_secs) {
    check_index(task);
    TESSERA_CHECK(!(best_secs < 0)) << "negative best time " << best_secs << " for task " << task;
    TaskState& s = states_[size_t(task)];
    // The best never gets worse: the database keeps every earlier measurement.
    s.best = std::min(s.best, best_secs);
    s.history.push_back(s.best);
    if (s.history.size() == 1 && !std::isfinite(s.best))
        s.dead = true;
}

void GradientTaskScheduler::revise_last_round(int task, double best_secs) {
    check_index(task);
    TESSERA_CHECK(!(best_secs < 0)) << "negative best time " << best_secs << " for task " << task;
    TaskState& s = states_[size_t(task)];
    TESSERA_CHECK(!s.history.empty()) << "task " << task << " revised before its first round";
    s.best = std::min(s.best, best_secs);
    s.history.back() = std::min(s.history.back(), best_secs);
}

void GradientTaskScheduler::mark_exhausted(int task) {
    check_index(task);
    states_[size_t(task)].exhausted = true;
}

bool GradientTaskScheduler::is_live(int task) const {
    check_index(task);
    const TaskState& s = states_[size_t(task)];
    return !s.dead && !s.exhausted;
}

double GradientTaskScheduler::gradient(int task) const {
    check_index(task);
    const TaskState& s = states_[size_t(task)];
    TESSERA_CHECK(is_live(task) && !s.history.empty() && std::isfinite(s.best))
        << "gradient of task " << task << " that is not live or had no measured round";
    const double g = s.best;
    const int t = int(s.history.size());
    const int w = opts_.backward_window;

    double backward = 0;
    if (t > w)
        backward = (s.history[size_t(t - 1)] - s.history[size_t(t - 1 - w)]) / w;

    double next = g - g / t;
    const std::string& tag = tasks_[size_t(task)].similarity_tag;
    if (!tag.empty()) {
        int similar = 0;
        double best_throughput = 0;
        for (size_t j = 0; j < tasks_.size(); ++j) {
            if (tasks_[j].similarity_tag != tag || !std::isfinite(states_[j].best) ||
                !(states_[j].best > 0))
                continue;
            ++similar;
            best_throughput = std::max(best_throughput, tasks_[j].flops / states_[j].best);
        }
        if (similar >= 2)
            next = std::min(next, opts_.beta * tasks_[size_t(task)].flops / best_throughput);
    }
    const double forward = next - g;
    return tasks_[size_t(task)].count * (opts_.alpha * backward + (1 - opts_.alpha) * forward);
}

int GradientTaskScheduler::next_task() const {
    for (int i = 0; i < num_tasks(); ++i)
        if (is_live(i) && states_[size_t(i)].history.empty())
            return i; // warm-up: every task gets a first round, in order
    int pick = -1;
    double pick_grad = 0;
    for (int i = 0; i < num_tasks(); ++i) {
        if (!is_live(i))
            continue;
        const double grad = gradient(i);
        if (pick < 0 || grad < pick_grad) {
            pick = i;
            pick_grad = grad;
        }
    }
    return pick;
}

double GradientTaskScheduler::estimated_task_secs(int task) const {
    check_index(task);
    const TaskState& s = states_[size_t(task)];
    if (std::isfinite(s.best))
        return s.best;
    double lowest_throughput = kInf;
    for (size_t j = 0; j < tasks_.size(); ++j)
        if (std::isfinite(states_[j].best) && states_[j].best > 0)
            lowest_throughput = std::min(lowest_throughput, tasks_[j].flops / states_[j].best);
    if (!std::isfinite(lowest_throughput))
        return kInf; // nothing measured yet (or only zero times): no basis for a guess
    return tasks_[size_t(task)].flops / lowest_throughput;
}

double GradientTaskScheduler::estimated_latency() const {
    double total = 0;
    for (int i = 0; i < num_tasks(); ++i)
        total += tasks_[size_t(i)].count * estimated_task_secs(i);
    return total;
}

// ---------------------------------------------------------------------------------------------
// tune_tasks

namespace {

/// A per-task seed: the call's seed mixed with the task index (splitmix64's finalizer), so
/// tasks sample independent schedules and the sequence stays a function of the seed.
uint64_t task_seed(uint64_t seed, size_t index) {
    uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (uint64_t(index) + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/// The loop of one tune_tasks call.
class TasksTuner {
  public:
    TasksTuner(const std::vector<TaskToTune>& tasks, const TuneTarget& target, TuningDatabase& db,
               const std::function<std::unique_ptr<cost::CostModel>()>& make_model,
               Measurer& measurer, const SearchOptions& search,
               const GradientSchedulerOptions& policy,
               const std::function<void(const TasksProgress&)>& on_progress)
        : tasks_(tasks), target_(target), db_(db), make_model_(make_model), measurer_(measurer),
          search_(search), on_progress_(on_progress), scheduler_(scheduler_tasks(tasks), policy),
          sessions_(tasks.size()), models_(tasks.size()), clock_(search_clock(search)),
          start_(clock_()),
          deadline_(search.time_budget_secs > 0 ? start_ + search.time_budget_secs : kInf) {}

    TasksResult run() {
        result_.tasks.resize(tasks_.size());
        for (size_t i = 0; i < tasks_.size(); ++i) {
            result_.tasks[i].workload_key = te::workload_key(tasks_[i].compute);
            if (auto best = db_.best_record(result_.tasks[i].workload_key, target_.target,
                                            target_.fingerprint)) {
                scheduler_.set_known_best(int(i), best->rank_secs);
                result_.tasks[i].best = best;
            }
        }
        result_.estimated_secs_before = scheduler_.estimated_latency();
        report(-1, false);

        const int per_round = round_size();
        bool retimed = false;
        while (!finished()) {
            const int task = scheduler_.next_task();
            if (task < 0)
                break; // every task exhausted or dead
            if (!retimed && scheduler_.rounds(task) > 0) {
                // Every task has had its seed round: each best measured once more, seconds
                // later, before the scheduler ranks the tasks by them.
                retimed = true;
                retime_bests();
                continue;
            }
            const bool warm_up = scheduler_.rounds(task) == 0;
            int n = per_round;
            if (search_.num_trials > 0)
                n = std::min(n, search_.num_trials - result_.trials);
            if (!warm_up)
                n = std::min(n, affordable_candidates());
            if (n < 1)
                break; // the time left affords no round
            report(task, false);
            TaskTuningSession& session = session_of(task);
            const int trials_before = session.result().trials;
            const double measure_before = session.result().measure_secs;
            round_task_ = task;
            round_trials_before_ = trials_before;
            const double t0 = clock_();
            bool live = true;
            if (warm_up) {
                // The seed round first: every task gets a measured time within seconds. A task
                // whose seeds measured nothing correct gets a searched round as well.
                session.run_seed_round(deadline_);
                const std::optional<TuningRecord>& best = session.result().best;
                if (!best && !finished())
                    live = session.run_round(n, deadline_);
            } else {
                live = session.run_round(n, deadline_);
            }
            TuneResult r = session.result();
            const int measured = r.trials - trials_before;
            if (!warm_up && measured > 0) {
                search_round_secs_ += clock_() - t0;
                search_round_measure_secs_ += r.measure_secs - measure_before;
                search_round_trials_ += measured;
                ++search_rounds_;
            }
            if (!live && measured == 0) {
                scheduler_.mark_exhausted(task);
                continue;
            }
            if (measured == 0 && finished())
                break; // the deadline passed before the round measured anything
            result_.trials += measured;
            scheduler_.record_round(task, r.best ? r.best->rank_secs : kInf);
            result_.tasks[size_t(task)] = std::move(r);
            result_.round_tasks.push_back(task);
            result_.curve.emplace_back(result_.trials, elapsed(), scheduler_.estimated_latency());
            report(task, true);
        }
        result_.cancelled = search_.cancel && search_.cancel->load();
        result_.estimated_secs_after = scheduler_.estimated_latency();
        result_.elapsed_secs = elapsed();
        return std::move(result_);
    }

  private:
    /// One more measurement of each live task's best (TaskTuningSession::run_retime_round),
    /// task by task until the trials or the time run out; each reported (not a round: the
    /// progress line counts them, and is refreshed while a model's many tasks are retimed).
    void retime_bests() {
        for (size_t i = 0; i < tasks_.size() && !finished(); ++i) {
            if (!sessions_[i] || !scheduler_.is_live(int(i)))
                continue;
            TaskTuningSession& session = *sessions_[i];
            const int measured = session.run_retime_round(deadline_);
            if (measured == 0)
                continue;
            TuneResult r = session.result();
            result_.trials += measured;
            if (r.best)
                scheduler_.revise_last_round(int(i), r.best->rank_secs);
            result_.tasks[i] = std::move(r);
            report(int(i), false);
        }
    }

    static std::vector<SchedulerTask> scheduler_tasks(const std::vector<TaskToTune>& tasks) {
        std::vector<SchedulerTask> out;
        for (size_t i = 0; i < tasks.size(); ++i) {
            check_task(int(i), tasks[i].count, tasks[i].flops);
            out.push_back({tasks[i].count, tasks[i].flops, tasks[i].similarity_tag});
        }
        return out;
    }

    double elapsed() const { return clock_() - start_; }

    /// How many candidates the time left affords after a round's search, at the costs of the
    /// searched rounds so far: the search (sampling, evolution, retraining) costs about the
    /// same whatever the round measures, the rest is per candidate (build and measurement).
    /// Counting the search per candidate instead let a round start with time for its
    /// candidates but not its search, which then ran past the deadline (a budget of 96.5 s
    /// ended at 105.75 in TuneBudget.ARoundStartsOnlyWhenItsSearchAndACandidateFit).
    /// Unlimited before any searched round and without a budget.
    int affordable_candidates() const {
        if (search_.time_budget_secs <= 0 || search_round_trials_ == 0)
            return std::numeric_limits<int>::max();
        const double search_per_round =
            std::max(0.0, search_round_secs_ - search_round_measure_secs_) / search_rounds_;
        const double per_candidate = search_round_measure_secs_ / search_round_trials_;
        const double left = deadline_ - clock_() - search_per_round;
        if (left <= 0)
            return 0;
        return per_candidate > 0 ? int(std::floor(left / per_candidate))
                                 : std::numeric_limits<int>::max();
    }

    /// Candidates per round: measure_per_round, and at most an even share of the trials so that
    /// the warm-up round of every task fits the budget.
    int round_size() const {
        int n = search_.measure_per_round;
        if (search_.num_trials > 0)
            n = std::min(n, std::max(1, search_.num_trials / int(tasks_.size())));
        return n;
    }

    bool finished() const {
        if (search_.cancel && search_.cancel->load())
            return true;
        if (search_.num_trials > 0 && result_.trials >= search_.num_trials)
            return true;
        return clock_() >= deadline_;
    }

    TaskTuningSession& session_of(int task) {
        std::optional<TaskTuningSession>& s = sessions_[size_t(task)];
        if (!s) {
            const TaskToTune& t = tasks_[size_t(task)];
            SearchOptions so = search_;
            so.seed = task_seed(search_.seed, size_t(task));
            so.sketch.weight_inputs = t.compute.weight_inputs;
            so.cancel = nullptr; // this loop reads the flag between rounds
            models_[size_t(task)] = make_model_();
            TESSERA_CHECK(models_[size_t(task)]) << "make_model returned no model";
            // The session reports after each committed batch: the trials of the round so far.
            auto on_batch = [this](const TuneProgress& p) {
                if (round_task_ < 0 || p.round_done)
                    return; // round ends are reported by this loop
                report(round_task_, false, result_.trials + p.trials_done - round_trials_before_);
            };
            s.emplace(t.compute, t.flops, target_, db_, *models_[size_t(task)], measurer_, so,
                      on_batch);
        }
        return *s;
    }

    /// Reports progress; trials_done: measured so far including the round in progress (-1:
    /// the committed rounds' count).
    void report(int task, bool round_done, int trials_done = -1) {
        if (!on_progress_)
            return;
        TasksProgress p;
        p.round = int(result_.round_tasks.size());
        p.task = task;
        p.round_done = round_done;
        p.trials_done = trials_done >= 0 ? trials_done : result_.trials;
        p.trials_total = search_.num_trials;
        p.estimated_secs = scheduler_.estimated_latency();
        p.elapsed_secs = elapsed();
        double eta = 0;
        if (search_.num_trials > 0 && p.trials_done > 0)
            eta = p.elapsed_secs / p.trials_done * (search_.num_trials - p.trials_done);
        if (search_.time_budget_secs > 0) {
            const double left = std::max(0.0, search_.time_budget_secs - p.elapsed_secs);
            eta = eta > 0 ? std::min(eta, left) : left;
        }
        p.eta_secs = eta;
        on_progress_(p);
    }

    const std::vector<TaskToTune>& tasks_;
    const TuneTarget& target_;
    TuningDatabase& db_;
    const std::function<std::unique_ptr<cost::CostModel>()>& make_model_;
    Measurer& measurer_;
    const SearchOptions& search_;
    const std::function<void(const TasksProgress&)>& on_progress_;
    GradientTaskScheduler scheduler_;
    std::vector<std::optional<TaskTuningSession>> sessions_;
    std::vector<std::unique_ptr<cost::CostModel>> models_; ///< One per task, made with its session.
    std::function<double()> clock_;
    double start_;                 ///< clock_() when the call began.
    double deadline_;              ///< start_ + the time budget (+infinity: none).
    int round_task_ = -1;          ///< The task of the round in progress.
    int round_trials_before_ = 0;  ///< Its session's trials before that round.
    double search_round_secs_ = 0; ///< Time of the searched rounds (not seed rounds) so far,
    double search_round_measure_secs_ = 0; ///< the part of it spent measuring,
    int search_round_trials_ = 0;          ///< the candidates they measured,
    int search_rounds_ = 0;                ///< and how many rounds measured any.
    TasksResult result_;
};

} // namespace

TasksResult tune_tasks(const std::vector<TaskToTune>& tasks, const TuneTarget& target,
                       TuningDatabase& db,
                       const std::function<std::unique_ptr<cost::CostModel>()>& make_model,
                       Measurer& measurer, const SearchOptions& search,
                       const GradientSchedulerOptions& policy,
                       const std::function<void(const TasksProgress&)>& on_progress) {
    validate(search);
    validate(policy);
    if (tasks.empty())
        throw UserError() << "no task to tune";
    TESSERA_CHECK(bool(make_model)) << "tune_tasks needs a model factory";
    return TasksTuner(tasks, target, db, make_model, measurer, search, policy, on_progress).run();
}

} // namespace tessera::tune
