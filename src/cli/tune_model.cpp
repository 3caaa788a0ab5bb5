// `tessera tune MODEL`: the model's tasks, the scheduler's progress line, curve and summary.
#include "tune_model.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "progress_line.h"
#include "tessera/compile/model_pipeline.h"
#include "tessera/cost_model/cost_model.h"
#include "tessera/support/error.h"
#include "tessera/tuner/database.h"

namespace tessera::cli {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string progress_text(const std::vector<tune::TaskToTune>& tasks, const std::string& shard,
                          const tune::TasksProgress& p) {
    const std::string trials = p.trials_total > 0
                                   ? fmt::format("{}/{} trials", p.trials_done, p.trials_total)
                                   : fmt::format("{} trials", p.trials_done);
    const std::string eta = p.eta_secs > 0 ? "  eta " + format_duration(p.eta_secs) : "";
    std::string what = "start";
    if (p.task >= 0)
        what = fmt::format("round {} {} task {}/{} {}", p.round_done ? p.round : p.round + 1,
                           p.round_done ? "tuned" : "tuning", p.task + 1, tasks.size(),
                           tasks[size_t(p.task)].name);
    // A cluster's logs mix shards: a sharded run says which share it is on every line.
    return fmt::format("tune {}{}  {}  e2e {}  elapsed {}{}",
                       shard.empty() ? "" : "shard " + shard + " ", what, trials,
                       ms_text(p.estimated_secs), format_duration(p.elapsed_secs), eta);
}

/// The --curve file of a model: one row per committed round, flushed as it goes.
class ModelCurveWriter {
  public:
    explicit ModelCurveWriter(const std::string& path) {
        if (path.empty())
            return;
        file_.open(path, std::ios::trunc);
        if (!file_)
            throw UserError() << "--curve " << path << ": cannot write the file";
        file_ << "round,trials,seconds,estimated_ms\n" << std::flush;
    }
    /// estimated_secs is +infinity while no task measured Ok: the field stays empty.
    void row(int round, int trials, double secs, double estimated_secs) {
        if (!file_.is_open())
            return;
        if (std::isfinite(estimated_secs))
            file_ << fmt::format("{},{},{:.3f},{:.6g}\n", round, trials, secs,
                                 estimated_secs * 1e3);
        else
            file_ << fmt::format("{},{},{:.3f},\n", round, trials, secs);
        file_.flush();
    }

  private:
    std::ofstream file_;
};

nlohmann::ordered_json ms_or_null(double secs) {
    return std::isfinite(secs) ? nlohmann::ordered_json(secs * 1e3) : nlohmann::ordered_json();
}

/// What a run tuned: the shard and, per tuned task, its index in the model's task list.
struct ShardTasks {
    TaskShard shard;
    size_t model_tasks = 0;    ///< Tasks of the whole model.
    std::vector<size_t> index; ///< Per tuned task: its index among the model's tasks.
};

void print_summary(const TuneOptions& o, const std::vector<tune::TaskToTune>& tasks,
                   const ShardTasks& st, const tune::TuneTarget& t, const tune::TasksResult& r,
                   bool uses_prior, int64_t db_records, std::ostream& out) {
    int errors = 0;
    for (const tune::TuneResult& tr : r.tasks)
        errors += tr.errors;
    auto best_secs = [&](size_t i) { return r.tasks[i].best ? r.tasks[i].best->rank_secs : kInf; };
    if (o.json) {
        nlohmann::ordered_json j;
        j["model"] = o.model_path;
        j["opt_level"] = o.opt_level;
        j["shard"] = task_shard_text(st.shard);
        j["model_tasks"] = st.model_tasks;
        j["target"] = t.target;
        j["fingerprint"] = t.fingerprint;
        j["db"] = o.db;
        j["runner"] = o.runner;
        j["cost_model"] = o.cost_model;
        j["pretrained"] = uses_prior;
        j["seed"] = o.seed;
        j["trials"] = r.trials;
        j["rounds"] = r.round_tasks.size();
        j["errors"] = errors;
        j["interrupted"] = r.cancelled;
        j["estimated_ms_before"] = ms_or_null(r.estimated_secs_before);
        j["estimated_ms_after"] = ms_or_null(r.estimated_secs_after);
        j["db_records"] = db_records;
        j["elapsed_secs"] = r.elapsed_secs;
        nlohmann::ordered_json list = nlohmann::ordered_json::array();
        for (size_t i = 0; i < tasks.size(); ++i) {
            const tune::TuneResult& tr = r.tasks[i];
            list.push_back({{"index", st.index[i]},
                            {"key", tr.workload_key.substr(0, 12)},
                            {"workload_key", tr.workload_key},
                            {"pattern", tasks[i].name},
                            {"count", tasks[i].count},
                            {"flops", tasks[i].flops},
                            {"trials", tr.trials},
                            {"rounds", tr.rounds},
                            {"errors", tr.errors},
                            {"best_ms", ms_or_null(best_secs(i))},
                            {"search_secs", tr.search.lower_secs + tr.search.predict_secs},
                            {"measure_secs", tr.measure_secs},
                            {"repeat_secs", tr.repeat_secs}});
        }
        j["tasks"] = list;
        nlohmann::ordered_json curve = nlohmann::ordered_json::array();
        for (const auto& [trials, secs, estimate] : r.curve)
            curve.push_back(
                {{"trials", trials}, {"seconds", secs}, {"estimated_ms", ms_or_null(estimate)}});
        j["curve"] = curve;
        out << j.dump() << "\n";
        return;
    }
    if (st.shard.count > 1 && tasks.empty()) {
        out << fmt::format("tuned     {} (-O{}) shard {}: no task to tune (the model has {} "
                           "tasks, fewer than the {} shards)\n",
                           o.model_path, o.opt_level, task_shard_text(st.shard), st.model_tasks,
                           st.shard.count);
        return;
    }
    const std::string which =
        st.shard.count > 1 ? fmt::format(" shard {}: {} of {} tasks", task_shard_text(st.shard),
                                         tasks.size(), st.model_tasks)
                           : fmt::format(": {} tasks", tasks.size());
    out << fmt::format("tuned     {} (-O{}){}, {} trials in {} rounds, {} errors{}{}\n",
                       o.model_path, o.opt_level, which, r.trials, r.round_tasks.size(), errors,
                       uses_prior ? "; cost models started from the pretrained one" : "",
                       r.cancelled ? "; interrupted" : "");
    out << fmt::format("estimate  {} before -> {} after (end-to-end: sum of count x best)\n",
                       ms_text(r.estimated_secs_before), ms_text(r.estimated_secs_after));
    out << "     #  key           count  trials     best ms  pattern\n";
    for (size_t i = 0; i < tasks.size(); ++i) {
        const double b = best_secs(i);
        out << fmt::format("  {:4}  {:12}  {:5}  {:6}  {:>10}  {}\n", st.index[i],
                           r.tasks[i].workload_key.substr(0, 12), tasks[i].count, r.tasks[i].trials,
                           std::isfinite(b) ? fmt::format("{:.4g}", b * 1e3) : "-", tasks[i].name);
    }
    out << fmt::format("database  {} ({} records; target '{}', fingerprint {})\n",
                       tune::database_display_name(o.db), db_records, t.target, t.fingerprint);
    double measure = 0, repeats = 0;
    for (const tune::TuneResult& tr : r.tasks) {
        measure += tr.measure_secs;
        repeats += tr.repeat_secs;
    }
    out << fmt::format("elapsed   {}: {}\n", format_duration(r.elapsed_secs),
                       tune_time_split(r.elapsed_secs, measure, repeats));
}

} // namespace

TaskShard parse_task_shard(const std::string& text) {
    auto bad = [&] {
        return UserError() << "--shard must be I/N with 0 <= I < N (e.g. 0/4), got '" << text
                           << "'";
    };
    const size_t slash = text.find('/');
    if (slash == std::string::npos)
        throw bad();
    // from_chars: digits only (no sign, space or trailing text), overflow reported.
    auto number = [&](size_t begin, size_t end, int& value) {
        const char* first = text.data() + begin;
        const char* last = text.data() + end;
        const auto [ptr, ec] = std::from_chars(first, last, value);
        return first != last && ec == std::errc() && ptr == last;
    };
    TaskShard s;
    if (!number(0, slash, s.index) || !number(slash + 1, text.size(), s.count) || s.count < 1 ||
        s.index < 0 || s.index >= s.count)
        throw bad();
    return s;
}

std::string task_shard_text(TaskShard shard) {
    return fmt::format("{}/{}", shard.index, shard.count);
}

tune::TasksResult run_tune_model(const TuneOptions& opts, std::ostream& out, std::ostream& progress,
                                 bool progress_is_terminal, const std::atomic<bool>* cancel) {
    check_tune_options(opts);
    compile::ModelTuningOptions mt;
    mt.tuning = opts;
    mt.tuning.cancel = cancel;
    if (!opts.shard.empty())
        mt.shard = parse_task_shard(opts.shard);
    mt.model.model_path = opts.model_path;
    mt.model.import = import_options(opts.inputs);
    mt.model.opt_level = opts.opt_level;
    mt.model.precision = precision_of(opts.inputs);
    mt.model.winograd = !opts.no_winograd;
    mt.model.horizontal_fusion = opts.horizontal_fusion;
    compile::ModelTuning run = compile::prepare_model_tuning(mt);
    if (const std::string note =
            precision_note(mt.model.precision, compile::tuning_target_option(mt.tuning));
        !note.empty())
        progress << note << "\n";
    const std::vector<tune::TaskToTune>& tasks = run.plan.tasks;
    const std::string shard_name = opts.shard.empty() ? "" : task_shard_text(mt.shard);
    if (!run.cost_models.note.empty())
        progress << run.cost_models.note << "\n";
    ModelCurveWriter curve(opts.curve_file);
    ShardTasks st;
    st.shard = mt.shard;
    st.model_tasks = run.plan.model_tasks;
    st.index = run.plan.index;

    LatestProgress<tune::TasksProgress> latest; // outlives the line, whose refresher reads it
    ProgressLine line(progress, progress_is_terminal);
    auto on_progress = [&](const tune::TasksProgress& p) {
        latest.set(p);
        if (p.round_done)
            curve.row(p.round, p.trials_done, p.elapsed_secs, p.estimated_secs);
        // A log gets one line per round; a terminal also shows which task is being tuned and
        // each committed batch.
        if (p.round_done || p.task < 0 || progress_is_terminal)
            line.update(progress_text(tasks, shard_name, p));
    };
    line.refresh_every(progress_refresh_secs(progress_is_terminal),
                       [&] { return progress_text(tasks, shard_name, latest.now()); });
    const tune::TasksResult r = compile::tune_model(run, on_progress);
    line.finish();
    print_summary(opts, tasks, st, run.target, r, run.cost_models.uses_prior, run.db.num_records(),
                  out);
    return r;
}

} // namespace tessera::cli
