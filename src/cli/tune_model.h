// `tessera tune MODEL`: tune every task of an ONNX model with the gradient task scheduler.
#pragma once

#include <atomic>
#include <ostream>
#include <string>
#include <vector>

#include "tessera/tuner/task_scheduler.h"
#include "tune_command.h"

namespace tessera::cli {

/// The tasks of a model as `build` sees them for `target` ("llvm", or "cuda": without the CPU
/// layout pass): import, the graph pipeline at `opt_level`,
/// fusion and task extraction, each task named by its pattern, weighted by its count and tagged
/// for similarity by its anchor op (the pattern's first op) and its work. A task without flops
/// (pure data movement: layout changes, flatten) counts one operation per output element, so
/// that its throughput is still defined. Throws UserError for a file that is not a model, a
/// level outside 0..3 or an op without a tensor program. `winograd` false keeps 3x3 convs direct
/// (as `build --no-winograd`); `precision` runs the precision pass (as `build --precision`).
std::vector<tune::TaskToTune> model_tasks(const std::string& model_path,
                                          const graph::ImportOptions& import, int opt_level,
                                          const std::string& target = "llvm",
                                          bool winograd = true,
                                          graph::Precision precision = graph::Precision::FP32);

/// Share `index` of `count` of a model's tasks (`tune MODEL --shard I/N`).
struct TaskShard {
    int index = 0; ///< 0 <= index < count.
    int count = 1; ///< 1 = every task.
};

/// Parses "I/N" (two decimal integers, 0 <= I < N). Throws UserError naming --shard, the
/// expected form and the offending text otherwise.
TaskShard parse_task_shard(const std::string& text);

/// The text form "I/N" of a shard.
std::string task_shard_text(TaskShard shard);

/// The tasks of `shard` as indices into `tasks` (extract_tasks order), ascending. Deal order:
/// tasks sorted by estimated cost (flops x count, the largest first; equal costs by index) and
/// dealt in snake order (shards 0..N-1, then N-1..0, then 0..N-1, ...), so every shard gets a
/// similar share of the big tasks and a shard's share does not depend on which shards run.
/// A pure function of the task list: every machine with the same model, -O level and tessera
/// version deals the same shares, and the N shares partition the tasks (each task in exactly
/// one; a shard may be empty when N exceeds the number of tasks).
std::vector<size_t> shard_task_indices(const std::vector<tune::TaskToTune>& tasks, TaskShard shard);

/// Tunes every task of opts.model_path into opts.db (tune::tune_tasks): opts.trials and
/// opts.time_budget_secs are totals over all tasks. Progress goes to `progress` (one line per
/// round, rewritten in place when `progress_is_terminal`: round, the task being tuned, trials,
/// the estimated end-to-end latency, elapsed time and ETA); the summary (text, or one JSON line
/// with opts.json: per task key prefix, pattern, count, trials and best time; the estimate
/// before and after) goes to `out`; opts.curve_file gets one CSV row per round
/// (round,trials,seconds,estimated_ms). `cancel` (may be null) stops the run before the next
/// round once set; the summary then says "interrupted". Throws UserError on a bad option or
/// model, a database that cannot be opened or a curve file that cannot be written.
/// With opts.shard ("I/N", parse_task_shard) only that share of the tasks (shard_task_indices)
/// is tuned; opts.trials and the time budget are then this shard's; the summary names the shard
/// and lists its tasks by their index in the model; the estimate covers the shard's tasks only.
/// An empty shard tunes nothing and says so (exit 0: a cluster array job larger than the model
/// does not fail).
tune::TasksResult run_tune_model(const TuneOptions& opts, std::ostream& out, std::ostream& progress,
                                 bool progress_is_terminal,
                                 const std::atomic<bool>* cancel = nullptr);

} // namespace tessera::cli
