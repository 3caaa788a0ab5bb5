// The generated data of a built model library, and the link step that makes the library.
//
// A model library (`tessera build`) is three parts linked together:
//   - the kernels' object file(s) (emit_object_file of every task's lowered function);
//   - the data object written here, defining the four symbols of runtime/model_plan.h:
//     tessera_model_plan / tessera_model_plan_size (the serialized plan), tessera_model_weights
//     (one 64-byte aligned read-only byte array) and tessera_model_kernels (a constant table of
//     pointers to the kernel functions, which the kernels' object defines);
//   - the runtime archive (thread pool, allocator, plan parser and the C API of
//     runtime/tessera_model.h), linked whole into each library.
// The library exports only the tessera_model_* symbols (a version script), and binds its own
// references to its own definitions (-Bsymbolic): every model library carries a private copy
// of the runtime, so two models loaded into one process never share or interpose state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/backends/llvm.h"

namespace tessera::backend {

/// What the data object holds.
struct ModelDataObject {
    std::string plan_bytes;                  ///< runtime::serialize_plan of the model's plan.
    std::vector<uint8_t> weights;            ///< Every weight at its plan offset.
    std::vector<std::string> kernel_symbols; ///< In tessera_model_kernels order (CPU models).
    /// CUDA models: every module's cubin at its plan offset, defined as tessera_model_cubins
    /// (8-byte aligned); empty for CPU models, which then define no such symbol.
    std::string cubins;
};

/// Writes the relocatable, position-independent object defining tessera_model_plan,
/// tessera_model_plan_size, tessera_model_weights, tessera_model_kernels (empty when
/// kernel_symbols is) and, when data.cubins is not empty, tessera_model_cubins (the kernel symbols
/// stay undefined: they come from the kernels' object) for this host (opts.cpu/features as in
/// emit_object_file). Throws UserError when the file cannot be written, InternalError when a
/// kernel symbol is empty or repeated.
void emit_model_data_object(const ModelDataObject& data, const std::string& path,
                            const CompileOptions& opts = {});

/// Links `objects` (kernels and data) with the whole runtime archive into the shared library
/// `so_path`, exporting only tessera_model_* symbols. Uses the system C++ compiler driver
/// (`c++ -shared`): it supplies the C runtime start files, libgcc and the libstdc++ search
/// paths that the C++ runtime archive needs, which a bare ld.lld invocation would have to
/// rediscover. Every symbol must resolve (--no-undefined), so a missing kernel or runtime
/// function fails here rather than at load time. A `triple` other than empty (the host's)
/// links with LLVM's clang++ for that triple and ld.lld instead (its C and C++ libraries from
/// the Debian cross packages), with a runtime archive built for it. Throws UserError with the
/// linker's output when linking fails or the output cannot be written.
void link_model_library(const std::vector<std::string>& objects, const std::string& runtime_archive,
                        const std::string& so_path, const std::string& triple = "");

} // namespace tessera::backend
