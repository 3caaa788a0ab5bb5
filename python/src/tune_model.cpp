// tessera.tune(): a model's tasks tuned into a tuning database through compile/model_tuning.h,
// the same prepare_model_tuning and tune_model as `tessera tune MODEL` (src/cli/tune_model.cpp
// is the command's side). The GIL is released while tuning and taken back to report progress.
#include "binding.h"

#include <atomic>
#include <cmath>
#include <optional>

#include <nanobind/stl/string.h>
#include <unistd.h>

#include "tessera/compile/model_tuning.h"
#include "tessera/support/error.h"

namespace tessera::python {

namespace {

/// Milliseconds, or None for +infinity (nothing measured yet).
nb::object ms_or_none(double secs) {
    return std::isfinite(secs) ? nb::object(nb::float_(secs * 1e3)) : nb::none();
}

nb::dict progress_dict(const std::vector<tune::TaskToTune>& tasks, const tune::TasksProgress& p) {
    nb::dict d;
    d["round"] = p.round;
    d["round_done"] = p.round_done;
    d["task"] = p.task >= 0 ? nb::object(nb::int_(p.task)) : nb::none();
    d["task_name"] =
        p.task >= 0 ? nb::object(nb::str(tasks[size_t(p.task)].name.c_str())) : nb::none();
    d["tasks"] = tasks.size();
    d["trials_done"] = p.trials_done;
    d["trials_total"] = p.trials_total;
    d["estimated_ms"] = ms_or_none(p.estimated_secs);
    d["elapsed_secs"] = p.elapsed_secs;
    d["eta_secs"] = p.eta_secs;
    return d;
}

/// What the summary needs of a finished run, kept once the run (its database, measurer and
/// worker) is gone.
struct TuneOutcome {
    tune::TasksResult result;
    compile::ModelTuningPlan plan;
    tune::TuneTarget target;
    bool uses_prior = false;
    std::string note;
    int64_t db_records = 0;
};

nb::dict summary_dict(const TuneRequest& request, const TuneOutcome& o) {
    const tune::TasksResult& r = o.result;
    int errors = 0;
    nb::list tasks;
    for (size_t i = 0; i < o.plan.tasks.size(); ++i) {
        const tune::TuneResult& tr = r.tasks[i];
        const tune::TaskToTune& t = o.plan.tasks[i];
        errors += tr.errors;
        nb::dict d;
        d["index"] = o.plan.index[i];
        d["workload_key"] = tr.workload_key;
        d["pattern"] = t.name;
        d["count"] = t.count;
        d["flops"] = t.flops;
        d["trials"] = tr.trials;
        d["rounds"] = tr.rounds;
        d["errors"] = tr.errors;
        d["best_ms"] = ms_or_none(tr.best ? tr.best->rank_secs : INFINITY);
        tasks.append(d);
    }
    nb::dict s;
    s["model"] = request.model;
    s["db"] = request.db;
    s["target"] = o.target.target;
    s["fingerprint"] = o.target.fingerprint;
    s["seed"] = request.seed;
    s["trials"] = r.trials;
    s["rounds"] = r.round_tasks.size();
    s["errors"] = errors;
    s["estimated_ms_before"] = ms_or_none(r.estimated_secs_before);
    s["estimated_ms_after"] = ms_or_none(r.estimated_secs_after);
    s["elapsed_secs"] = r.elapsed_secs;
    s["db_records"] = o.db_records;
    s["pretrained"] = o.uses_prior;
    s["note"] = o.note;
    s["tasks"] = tasks;
    return s;
}

} // namespace

nb::dict tune_model(const TuneRequest& request, nb::handle report) {
    compile::ModelTuningOptions mt;
    mt.model.model_path = request.model;
    mt.model.import.input_shapes = checked_input_shapes(request.input_shapes);
    mt.model.opt_level = request.opt_level;
    mt.model.precision = graph::parse_precision(request.precision);
    compile::TuningOptions& o = mt.tuning;
    o.db = request.db;
    o.target = request.target;
    o.seed = request.seed;
    // As the command's --trials and --time-budget: a budget alone ends the run by time only.
    o.time_bounded = request.time_budget.has_value();
    o.time_budget_secs = request.time_budget.value_or(0);
    o.trials = request.trials.value_or(o.time_bounded ? 0 : o.trials);
    if (access(request.worker.c_str(), X_OK) != 0)
        throw UserError() << "the measurement worker '" << request.worker
                          << "' is missing: the tessera package is incomplete";
    o.local_worker = {request.worker};
    std::atomic<bool> cancel{false};
    o.cancel = &cancel;

    // A KeyboardInterrupt seen at a report: the round in progress commits, then it is raised.
    std::optional<nb::python_error> interrupt;
    TuneOutcome outcome;
    {
        nb::gil_scoped_release release;
        compile::ModelTuning run = compile::prepare_model_tuning(mt);
        auto on_progress = [&](const tune::TasksProgress& p) {
            nb::gil_scoped_acquire gil;
            try {
                if (PyErr_CheckSignals() != 0) // runs Python's handlers (main thread only)
                    throw nb::python_error();
                if (!report.is_none())
                    report(progress_dict(run.plan.tasks, p));
            } catch (nb::python_error& e) {
                if (!e.matches(PyExc_KeyboardInterrupt) || interrupt)
                    throw; // at once: the callback's own error, or a second Ctrl-C
                interrupt.emplace(std::move(e));
                cancel.store(true);
            }
        };
        outcome.result = compile::tune_model(run, on_progress);
        outcome.plan = std::move(run.plan);
        outcome.target = run.target;
        outcome.uses_prior = run.cost_models.uses_prior;
        outcome.note = run.cost_models.note;
        outcome.db_records = run.db.num_records();
    }
    if (interrupt)
        throw std::move(*interrupt);
    return summary_dict(request, outcome);
}

} // namespace tessera::python
