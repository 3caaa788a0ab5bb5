// `tessera build MODEL`: compiles an ONNX model into one shared library (kernels, weights,
// memory plan, call sequence and the C API of tessera_model.h), choosing each task's schedule
// from the tuning database (exact machine, then ISA class) or the default schedule, and prints
// the tuning-coverage table.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "model_inputs.h"
#include "tessera/compile/model_pipeline.h"

namespace CLI {
class App;
} // namespace CLI

namespace tessera::cli {

/// The database `build` reads when --db is not given (used only when the file exists).
constexpr const char* kDefaultBuildDb = "tune_logs/tessera.db";

struct BuildCommandOptions {
    std::string model;   ///< Path of the .onnx file.
    std::string output;  ///< The library to write; empty: "<model stem>.so" in the current folder.
    std::string db;      ///< The tuning database; empty: kDefaultBuildDb when it exists, else none.
    bool strict = false; ///< Fail (exit 1) when any task has no usable record.
    bool no_db = false;   ///< --no-db: ignore every database (an untuned build).
    int opt_level = compile::kDefaultOptLevel; ///< Graph optimization level 0..3.
    bool no_winograd = false; ///< --no-winograd: every 3x3 conv stays direct.
    bool horizontal_fusion = false; ///< --horizontal-fusion: merge fan-out products.
    bool json = false;   ///< One JSON object on stdout instead of the table.
    ModelInputOptions inputs; ///< --input-shape, --bind, --precision.
    int jobs = 0; ///< Code generation threads; 0 = one per hardware thread.
    /// "llvm" (this CPU; "cpu" is accepted too) or "cuda" (an NVIDIA GPU).
    std::string target = "llvm";
    /// --target cuda: the GPU architecture; empty: this machine's GPU, else sm_90.
    std::string arch;
};

/// Registers the `build` subcommand on `app`, parsing into `opts`; returns it.
CLI::App* add_build_command(CLI::App& app, BuildCommandOptions& opts);

/// Builds the model; the coverage table (or the JSON summary) and the result line go to
/// `out`. Returns the exit code: 0 when the library was written, 1 when --strict found tasks
/// without a usable record (listed on `err`; nothing is written). Throws UserError for a
/// missing model or database, a malformed input shape, a level outside 0..3 or an output that
/// cannot be written.
int run_build(const BuildCommandOptions& opts, std::ostream& out, std::ostream& err);

} // namespace tessera::cli
