// `tessera tune`: tune one built-in operator (--op) or every task of an ONNX model (MODEL, see
// tune_model.h) on this machine into the tuning database.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "model_inputs.h"
#include "tessera/compile/model_pipeline.h"
#include "tessera/compile/tuning_options.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/tune_task.h"

namespace tessera::cli {

using compile::checked_target;
using compile::cuda_tune_target;

/// Every option of `tessera tune`, with its default: the library's tuning options
/// (compile/tuning_options.h; `--model` is cost_model) and what names the work and the output.
struct TuneOptions : compile::TuningOptions {
    std::string op;           ///< NAME:key=value,... (see `tessera op list`).
    std::string model_path;   ///< An ONNX model (exactly one of op, model_path).
    ModelInputOptions inputs; ///< A model's --input-shape, --bind, --precision (as `build`).
    int opt_level = compile::kDefaultOptLevel; ///< Graph pipeline level for a model (as build).
    bool no_winograd = false; ///< --no-winograd: a model's 3x3 convs stay direct (as `build`).
    /// --horizontal-fusion: a model's fan-out products merged (as `build`).
    bool horizontal_fusion = false;
    /// CSV of the best-so-far (a model: the estimated end-to-end latency) per round; empty = none.
    std::string curve_file;
    bool json = false; ///< Summary as one JSON object instead of text.
    /// "I/N": tune only share I of N of a model's tasks (tune_model.h); empty = every task.
    std::string shard;
};

/// The key under which `tessera tune` adds the operator's canonical spec to every record's
/// measure_settings_json ({"op_spec": "matmul:m=13,n=7,k=127", ...}), so that tools that need
/// the Compute back (`costmodel eval`) can rebuild it from the registry.
constexpr const char* kOpSpecSettingsKey = "op_spec";

/// The exit code of a run stopped by Ctrl-C (128 + SIGINT), after the summary was printed.
constexpr int kInterruptedExitCode = 130;

/// `tessera tune`: checks that exactly one of opts.model_path and opts.op is given (UserError
/// naming both otherwise), then tunes with run_tune or run_tune_model while a SIGINT handler is
/// installed: the first Ctrl-C lets the round in progress finish and commit, then the summary
/// prints and kInterruptedExitCode is returned; a second Ctrl-C exits at once with that code
/// (what was committed stays: one transaction per round). Returns 0 otherwise.
int run_tune_command(const TuneOptions& opts, std::ostream& out, std::ostream& progress,
                     bool progress_is_terminal);

/// Throws UserError naming the option and value for an option out of range (both modes):
/// --input-shape or --bind with --op, -O, then compile::check_tuning_options.
void check_tune_options(const TuneOptions& opts);
/// Opens a database that must already exist (reading commands must not create an empty one);
/// UserError "<named>: no such file" when `path` is neither a file nor a server URL.
tune::TuningDatabase open_existing_tune_database(const std::string& path, const std::string& named);
/// "1.234 ms", or "-" for +infinity.
std::string ms_text(double secs);

/// Tunes opts.op into opts.db. Progress goes to `progress` (rewritten in place when
/// `progress_is_terminal`, one line per round otherwise); the summary (text, or one JSON line
/// with opts.json) goes to `out`. Every record of a measured round is committed before the next
/// round starts, so an interrupted run keeps what it measured and a rerun resumes.
/// Throws UserError naming the option and value on a bad option, a bad spec, a database that
/// cannot be opened or a curve file that cannot be written.
/// `cancel` (may be null) stops the run before the next round once set.
tune::TuneResult run_tune(const TuneOptions& opts, std::ostream& out, std::ostream& progress,
                          bool progress_is_terminal, const std::atomic<bool>* cancel = nullptr);

} // namespace tessera::cli
