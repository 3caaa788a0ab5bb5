// `tessera tune MODEL`: tune every task of an ONNX model with the gradient task scheduler.
#pragma once

#include <atomic>
#include <ostream>
#include <vector>

#include "tessera/tuner/task_scheduler.h"
#include "tune_command.h"

namespace tessera::cli {

/// The tasks of a model as `build` sees them: import, the graph pipeline at `opt_level`,
/// fusion and task extraction, each task named by its pattern, weighted by its count and tagged
/// for similarity by its anchor op (the pattern's first op) and its work. A task without flops
/// (pure data movement: layout changes, flatten) counts one operation per output element, so
/// that its throughput is still defined. Throws UserError for a file that is not a model, a
/// level outside 0..3 or an op without a tensor program.
std::vector<tune::TaskToTune> model_tasks(const std::string& model_path, int opt_level);

/// Tunes every task of opts.model_path into opts.db (tune::tune_tasks): opts.trials and
/// opts.time_budget_secs are totals over all tasks. Progress goes to `progress` (one line per
/// round, rewritten in place when `progress_is_terminal`: round, the task being tuned, trials,
/// the estimated end-to-end latency, elapsed time and ETA); the summary (text, or one JSON line
/// with opts.json: per task key prefix, pattern, count, trials and best time; the estimate
/// before and after) goes to `out`; opts.curve_file gets one CSV row per round
/// (round,trials,seconds,estimated_ms). `cancel` (may be null) stops the run before the next
/// round once set; the summary then says "interrupted". Throws UserError on a bad option or
/// model, a database that cannot be opened or a curve file that cannot be written.
tune::TasksResult run_tune_model(const TuneOptions& opts, std::ostream& out, std::ostream& progress,
                                 bool progress_is_terminal,
                                 const std::atomic<bool>* cancel = nullptr);

} // namespace tessera::cli
