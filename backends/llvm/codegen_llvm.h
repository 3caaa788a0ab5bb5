// Private to the LLVM backend: loop IR to an LLVM module, and the target/pipeline helpers the
// JIT and object emission share. Kept apart so that only a few files parse the heavy LLVM
// headers (PassBuilder, LLJIT).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tessera/backends/llvm.h"

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
} // namespace llvm

namespace tessera::backend::detail {

/// The triple, CPU and feature strings functions are compiled for: the host's, or
/// opts.triple/opts.cpu/opts.features (no CPU on another triple: "generic").
struct TargetSpec {
    std::string triple, cpu, features;
};
TargetSpec target_spec(const CompileOptions& opts);

/// Every feature of the host CPU, "+name" when present and "-name" when not, comma-separated.
const std::string& host_feature_string();

/// Whether code for spec may use every feature of `features` ("+avx512vnni,+avx512vl"), as
/// LLVM resolves spec's CPU name and feature string (later entries win, and turning a feature
/// off turns off those that need it). False for a name spec's target does not define.
bool target_has_features(const TargetSpec& spec, const std::string& features);

/// Registers every target LLVM was built with once per process (thread-safe).
void initialize_targets();

/// A TargetMachine for spec: position-independent, aggressive code generation.
std::unique_ptr<llvm::TargetMachine> create_target_machine(const TargetSpec& spec);

/// Builds the unoptimized module for funcs (every function carries spec's target-cpu and
/// target-features). Checks the input contract of llvm.h with TESSERA_CHECK.
std::unique_ptr<llvm::Module> codegen_llvm(const std::vector<ir::LoweredFunc>& funcs,
                                           llvm::LLVMContext& ctx, const TargetSpec& spec,
                                           const CompileOptions& opts);

/// Verifies m (InternalError with LLVM's message when broken) and runs the new-PM pipeline at
/// opts.opt_level with tm's target information.
void optimize_module(llvm::Module& m, llvm::TargetMachine& tm, const CompileOptions& opts);

/// codegen_llvm + optimize_module, with m's triple and data layout set from tm.
std::unique_ptr<llvm::Module> build_module(const std::vector<ir::LoweredFunc>& funcs,
                                           llvm::LLVMContext& ctx, llvm::TargetMachine& tm,
                                           const TargetSpec& spec, const CompileOptions& opts);

/// m as LLVM IR text.
std::string module_to_string(const llvm::Module& m);

/// Machine code for a copy of m (codegen mutates its input): assembly text or object bytes.
std::string emit_machine_code(const llvm::Module& m, llvm::TargetMachine& tm, bool assembly);

/// Checks that names are unique non-empty identifiers (UserError otherwise).
void check_function_names(const std::vector<ir::LoweredFunc>& funcs);

} // namespace tessera::backend::detail
