// Tuning a whole model through the library: its tasks exactly as a build compiles them (the
// one model pipeline, model_pipeline.h), a share of them for one shard of a cluster
// (plan_model_tuning), and the task scheduler over them (tune_model). prepare_model_tuning
// assembles a run from its options (the database, measurer, cost models and search options of
// tuning_options.h); `tessera tune MODEL` and the Python package's tessera.tune are thin layers
// over it and tune_model: they parse options, report progress and print or return the summary.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "tessera/compile/model_pipeline.h"
#include "tessera/compile/tuning_options.h"
#include "tessera/cost_model/cost_model.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/measure.h"
#include "tessera/tuner/task_scheduler.h"

namespace tessera::compile {

/// The tasks of a model as a build with the same options compiles them, for the tuner: each
/// named by its pattern, weighted by its count, tagged for similarity by its anchor op (the
/// pattern's first op) and its work. A task without flops (pure data movement) counts one
/// operation per output element, so that its throughput is defined. Throws as
/// run_model_pipeline.
std::vector<tune::TaskToTune> model_tuning_tasks(const ModelPipelineOptions& model);

/// Share `index` of `count` of a model's tasks.
struct TaskShard {
    int index = 0; ///< 0 <= index < count.
    int count = 1; ///< 1 = every task.
};

/// The tasks of `shard` as indices into `tasks` (extract_tasks order), ascending. Deal order:
/// tasks sorted by estimated cost (flops x count, the largest first; equal costs by index) and
/// dealt in snake order (shards 0..N-1, then N-1..0, then 0..N-1, ...), so every shard gets a
/// similar share of the big tasks and a shard's share does not depend on which shards run.
/// A pure function of the task list: every machine with the same model, options and tessera
/// version deals the same shares, and the N shares partition the tasks (a shard may be empty
/// when N exceeds the number of tasks). Pre: 0 <= index < count.
std::vector<size_t> shard_task_indices(const std::vector<tune::TaskToTune>& tasks, TaskShard shard);

/// The tasks one tuning run of a model tunes: the model's, or a shard's share of them.
struct ModelTuningPlan {
    size_t model_tasks = 0;              ///< Tasks of the whole model.
    std::vector<tune::TaskToTune> tasks; ///< The shard's tasks (every task without a shard).
    std::vector<size_t> index;           ///< Per task: its index among the model's tasks.
};

/// The tasks of `model` in `shard` (model_tuning_tasks, shard_task_indices). Throws as
/// run_model_pipeline. Pre: 0 <= shard.index < shard.count.
ModelTuningPlan plan_model_tuning(const ModelPipelineOptions& model, TaskShard shard = {});

/// Tunes the plan's tasks into `db` with the task scheduler (tune::tune_tasks: `search` holds
/// the trial and time budgets, totals over these tasks; `on_progress` gets its reports). An
/// empty plan (a shard beyond the model's task count: a cluster array larger than the model
/// is not an error) tunes nothing and estimates infinite times. Throws UserError as
/// tune_tasks does; records committed before an error stay in `db`.
tune::TasksResult
tune_model(const ModelTuningPlan& plan, const tune::TuneTarget& target, tune::TuningDatabase& db,
           const std::function<std::unique_ptr<cost::CostModel>()>& make_model,
           tune::Measurer& measurer, const tune::SearchOptions& search,
           const std::function<void(const tune::TasksProgress&)>& on_progress = {});

/// A model tuning run: what is tuned and how.
struct ModelTuningOptions {
    /// The model and the pipeline's options, as the build that serves from the records uses
    /// them. `model.target` is replaced by the target tuning.target names.
    ModelPipelineOptions model;
    TaskShard shard;      ///< The share of the tasks (default: every task).
    TuningOptions tuning; ///< Budgets, search, measurement, cost models, database.
};

/// A model tuning run assembled from its options, ready for tune_model.
struct ModelTuning {
    ModelTuningPlan plan;
    tune::TuneTarget target;    ///< The identity its records get (tuning_target).
    tune::SearchOptions search; ///< Totals over the plan's tasks; cancel is tuning.cancel.
    tune::TuningDatabase db;
    std::unique_ptr<tune::Measurer> measurer;
    TuningCostModels cost_models; ///< Its note is for the user (the caller prints it).
};

/// Assembles a run, in this order: the options checked (check_tuning_options, -O, the search
/// options' tune::validate) before the import, the record target, the plan (the import, the
/// pipeline and the shard's tasks), the database (created with its folder), the measurer and
/// the cost models. Throws UserError as those do, naming the option as `tessera tune` spells
/// it. Pre: 0 <= shard.index < shard.count.
ModelTuning prepare_model_tuning(const ModelTuningOptions& opts);

/// Tunes a prepared run: tune_model of its parts. Exceptions thrown by `on_progress` stop the
/// run and propagate (records committed before stay in the database).
tune::TasksResult
tune_model(ModelTuning& run,
           const std::function<void(const tune::TasksProgress&)>& on_progress = {});

} // namespace tessera::compile
