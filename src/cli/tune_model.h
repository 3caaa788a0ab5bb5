// `tessera tune MODEL`: tune every task of an ONNX model with the gradient task scheduler.
#pragma once

#include <atomic>
#include <ostream>
#include <string>
#include <vector>

#include "tessera/compile/model_tuning.h"
#include "tune_command.h"

namespace tessera::cli {

using compile::TaskShard;

/// Parses "I/N" (two decimal integers, 0 <= I < N). Throws UserError naming --shard, the
/// expected form and the offending text otherwise.
TaskShard parse_task_shard(const std::string& text);

/// The text form "I/N" of a shard.
std::string task_shard_text(TaskShard shard);

/// Tunes every task of opts.model_path into opts.db (compile::prepare_model_tuning and
/// tune_model, from the options of opts that are compile::TuningOptions): opts.trials and
/// opts.time_budget_secs are totals over all tasks. Progress goes to `progress` (one line per
/// round, rewritten in place when `progress_is_terminal`: round, the task being tuned, trials,
/// the estimated end-to-end latency, elapsed time and ETA); the summary (text, or one JSON line
/// with opts.json: per task key prefix, pattern, count, trials and best time; the estimate
/// before and after) goes to `out`; opts.curve_file gets one CSV row per round
/// (round,trials,seconds,estimated_ms). `cancel` (may be null) stops the run before the next
/// round once set; the summary then says "interrupted". Throws UserError on a bad option or
/// model, a database that cannot be opened or a curve file that cannot be written.
/// With opts.shard ("I/N", parse_task_shard) only that share of the tasks
/// (compile::shard_task_indices)
/// is tuned; opts.trials and the time budget are then this shard's; the summary names the shard
/// and lists its tasks by their index in the model; the estimate covers the shard's tasks only.
/// An empty shard tunes nothing and says so (exit 0: a cluster array job larger than the model
/// does not fail).
tune::TasksResult run_tune_model(const TuneOptions& opts, std::ostream& out, std::ostream& progress,
                                 bool progress_is_terminal,
                                 const std::atomic<bool>* cancel = nullptr);

} // namespace tessera::cli
