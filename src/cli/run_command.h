// `tessera run`: runs a built model library on .npy inputs and writes one .npy per output.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace tessera::cli {

struct RunModelOptions {
    std::string model; ///< Path of the model library (.so).
    /// "NAME=FILE.npy" per input (or FILE.pb, an ONNX TensorProto); a single-input model
    /// also takes a bare "FILE.npy".
    std::vector<std::string> inputs;
    std::string output_dir; ///< Created (with parents) when missing.
    int threads = 0;        ///< <= 0: one per physical core.
    bool json = false;      ///< One JSON object instead of the "wrote" lines.
};

/// Loads the model, reads and checks the inputs, runs it once and writes DIR/NAME.npy for each
/// output (characters other than letters, digits and "._-" in NAME become '_'), printing one
/// line per file written, or with opts.json one JSON object: {"model", "path", "threads",
/// "output_dir", "outputs": [{"name", "file", "dtype", "shape"}]} in the model's output order.
/// Throws UserError (one line) for a missing, unknown or repeated
/// input, an input whose shape or dtype differs from the model's (naming the input, the
/// expected and the given), an unreadable file, or a failed run.
void run_model(const RunModelOptions& opts, std::ostream& out);

/// Registers the `run` subcommand on app, its options bound to opts.
CLI::App* add_run_command(CLI::App& app, RunModelOptions& opts);

} // namespace tessera::cli
