// The options every command that imports a model shares (build, inspect, tune): static shapes
// for inputs with symbolic dims (--input-shape), values for inputs that set shapes (--bind)
// and the products' precision (--precision), so that the three make the same graph and tune
// and build see the same tasks.
#pragma once

#include <string>
#include <vector>

#include "tessera/graph/import_onnx.h"
#include "tessera/graph/passes.h"
#include "tessera/support/target.h"

namespace CLI {
class App;
} // namespace CLI

namespace tessera::cli {

struct ModelInputOptions {
    std::vector<std::string> input_shapes; ///< "name=1x3x224x224" each.
    std::vector<std::string> binds;        ///< "name=file.npy" (or .pb) each.
    std::string precision = "fp32";        ///< --precision: fp32, tf32 or bf16.
};

/// Registers --input-shape, --bind and --precision on `cmd`, parsing into `opts`.
void add_model_input_options(CLI::App* cmd, ModelInputOptions& opts);

/// The import options the flags say: shapes parsed, bound files read. Throws UserError quoting
/// a malformed flag, a name given twice, or an unreadable file.
graph::ImportOptions import_options(const ModelInputOptions& opts);

/// The precision --precision names; throws UserError for another name.
graph::Precision precision_of(const ModelInputOptions& opts);

/// A one-line "note: ..." when precision p has no instruction on the CPU of `target` (an Llvm
/// target): bf16 without AVX512-BF16 or AMX-BF16 computes its products as f32 multiply-adds
/// after conversions, slower than fp32 there. Empty otherwise (CUDA targets included).
std::string precision_note(graph::Precision p, const Target& target);

} // namespace tessera::cli
