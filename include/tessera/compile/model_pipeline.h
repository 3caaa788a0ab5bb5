// The model pipeline that `tune`, `build` and `inspect` share:
//
//   import (input shapes, bound inputs) -> optimize (-O, precision, the target's layout)
//   -> fuse_ops -> extract_tasks
//
// One function, so that the graph a model is tuned on is the graph it is built from: the
// tasks' workload keys, which tuning records are found by, are equal by construction.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "tessera/graph/fusion.h"
#include "tessera/graph/graph.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/graph/passes.h"
#include "tessera/graph/tasks.h"
#include "tessera/support/target.h"

namespace tessera::compile {

/// The optimization level of build, tune and inspect when none is given.
constexpr int kDefaultOptLevel = 3;

/// How to run the pipeline on one model.
struct ModelPipelineOptions {
    std::string model_path;      ///< The .onnx file.
    graph::ImportOptions import; ///< Input shapes and bound inputs (`--input-shape`, `--bind`).
    int opt_level = kDefaultOptLevel;
    graph::Precision precision = graph::Precision::FP32;
    /// What the model runs on. Cuda skips the layout pass (NCHW[x]c blocks channels for CPU
    /// vector registers); Llvm's CPU sets the block.
    Target target;
    bool winograd = true; ///< false disables the winograd pass (`--no-winograd`).
    /// true runs the horizontal fusion passes (`--horizontal-fusion`).
    bool horizontal_fusion = false;
    /// The x of NCHW[x]c; 0: one vector register of the target's CPU (graph::layout_block_for).
    int64_t layout_block = 0;
    std::set<std::string> disabled_passes; ///< More passes to skip (`inspect --disable-pass`).
    std::string print_after;               ///< A pass name or "all": print the graph after it.
    bool time_passes = false;              ///< Print each pass's time.
    /// Where print_after and time_passes write; nullptr: nowhere.
    std::ostream* pass_output = nullptr;
    /// A task extraction failure (an op without a tensor program) is kept in
    /// ModelPipeline::tasks_error instead of thrown: reports show it beside what worked.
    bool keep_task_error = false;
};

/// The pipeline's products, with what a report shows of each step.
struct ModelPipeline {
    graph::Graph graph; ///< Optimized.
    std::vector<graph::PassResult> passes;
    std::vector<graph::FusedGroup> groups;
    std::vector<graph::Task> tasks;          ///< One per distinct workload key.
    std::string tasks_error;                 ///< Why `tasks` is empty (keep_task_error only).
    std::map<std::string, int> ops_imported; ///< Node count per op before optimizing.
    int nodes_imported = 0;
    double import_seconds = 0, optimize_seconds = 0, fuse_seconds = 0, tasks_seconds = 0;
};

/// Checks the options (level 0..3, a positive layout block, known pass names) before the
/// import, then runs the pipeline. Throws UserError naming the bad option, or from the import
/// (an unreadable or unsupported model), the passes, or task extraction (unless
/// keep_task_error).
ModelPipeline run_model_pipeline(const ModelPipelineOptions& options);

} // namespace tessera::compile
