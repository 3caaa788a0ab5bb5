// Tuning a whole model through the library: its tasks exactly as a build compiles them (the
// one model pipeline, model_pipeline.h), a share of them for one shard of a cluster
// (plan_model_tuning), and the task scheduler over them (tune_model). `tessera tune MODEL` is a
// thin layer over the two: it parses options, makes the database, measurer and cost models,
// and prints.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "tessera/compile/model_pipeline.h"
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

} // namespace tessera::compile
