// The LLVM CPU backend: lowered functions to native code, either JIT-compiled into this
// process (JitModule) or written as an object file and linked into a shared library.
//
// Input contract (ir::LoweredFunc): a lowered function (sched::lower_state, lower_default) with
// no tensor-expression nodes and no free variables; the backend runs
// lower::prepare_for_codegen on it (a no-op for one already prepared), which turns Vectorized
// and Unrolled loops and tile nests into what code generation takes. Each function becomes the
// C symbol `void name(void** args)` with args[i] the data pointer of params[i]. Parameters are assumed
// not to overlap (they are marked noalias) and to hold at least num_elements() elements.
//
// Floats: a*b+c may be fused into one FMA. exp, tanh and erf of f32 (and f16, through f32) are
// inline approximations that vectorize (exp within 2 ulp of expf, tanh and erf within 3e-7);
// f64 math and the other calls use LLVM intrinsics or libm.
//
// Integers: dot4_u8s8 on i32 vectors of a multiple of 4, 8 or 16 lanes, with or without an add
// around it, is vpdpbusd when the target (CPU name and feature string, as LLVM resolves them)
// has AVX-512 VNNI (16 lanes: and 512-bit vectors; 4 and 8: and AVX-512VL) or AVX-VNNI (4 and 8
// lanes). Otherwise, and on scalars, it is an exact widening multiply and sum of the bytes.
//
// A TileMatmul statement (ir/tile_matmul.h) is tile loads, tdpbusd and tile stores when the
// target has AMX-INT8 (accumulators in tile registers across its reduce steps; the function
// requests the tile state with tessera_enable_cpu_tiles on entry), its loops otherwise.
//
// Generated code calls tessera_parallel_for, tessera_alloc, tessera_free and
// tessera_enable_cpu_tiles (runtime) and libm.
// The JIT binds them directly; a shared library leaves them undefined, to be resolved from the
// loading process (link it with ENABLE_EXPORTS / -rdynamic).
//
// No LLVM header leaks from here: the implementation is behind pimpl.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tessera/ir/stmt.h"
#include "tessera/support/target.h"

namespace tessera::backend {

/// How to compile. The defaults target this host at full optimization.
struct CompileOptions {
    /// LLVM optimization level of the IR pipeline, 0..3 (machine code is always optimized).
    int opt_level = 3;
    /// Adds the reassociation, reciprocal, no-signed-zeros and approximate-function float flags
    /// (never no-NaN or no-inf). Fused multiply-add contraction is always on.
    bool fast_math = false;
    /// Keep the optimized LLVM IR text (JitModule::llvm_ir), for tests and inspection.
    bool keep_llvm_ir = false;
    /// Keep the assembly text (JitModule::assembly); costs one extra code generation.
    bool keep_assembly = false;
    /// Target triple (e.g. "aarch64-linux-gnu"); empty means this host's.
    std::string triple;
    /// Target CPU (LLVM name such as "znver3"); empty means this host's (with a triple:
    /// "generic").
    std::string cpu;
    /// LLVM feature list ("+avx2,+fma,-avx512f") used with `cpu`; ignored when cpu and triple
    /// are empty.
    std::string features;
};

/// The options that compile for an Llvm target (support/target.h): none for this host, else
/// its triple, CPU and features (on the host's CPU, on top of the host's own features).
/// Pre: target.is_llvm().
CompileOptions compile_options_for(const Target& target);

/// Functions compiled into this process. Several JitModules may be compiled and used from
/// different threads at the same time (each has its own LLVM context; one process-wide ORC JIT
/// holds the code, in one JITDylib per module). Destroying a JitModule frees its code.
class JitModule {
  public:
    /// The compiled form of a LoweredFunc: `void name(void** args)`.
    using KernelFn = void (*)(void**);

    /// Compiles funcs into one module. Pre: names are unique, non-empty C identifiers other
    /// than the runtime and libm symbols generated code calls, and every function satisfies
    /// the input contract above (violations are InternalErrors).
    static std::unique_ptr<JitModule> compile(std::vector<ir::LoweredFunc> funcs,
                                              const CompileOptions& opts = {});
    ~JitModule();
    JitModule(const JitModule&) = delete;
    JitModule& operator=(const JitModule&) = delete;

    /// The function compiled from the LoweredFunc called `name`; throws UserError if none.
    KernelFn get(const std::string& name) const;
    /// Names of the compiled functions, in the order given to compile().
    const std::vector<std::string>& function_names() const;
    /// The optimized LLVM IR. Pre: compiled with keep_llvm_ir.
    const std::string& llvm_ir() const;
    /// The generated assembly. Pre: compiled with keep_assembly.
    const std::string& assembly() const;

  private:
    struct Impl;
    explicit JitModule(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

/// Compiles funcs (same contract as JitModule::compile) into a relocatable, position-
/// independent object file at `path`. Throws UserError when the file cannot be written.
void emit_object_file(std::vector<ir::LoweredFunc> funcs, const std::string& path,
                      const CompileOptions& opts = {});

/// The optimized LLVM IR text of funcs, without compiling to machine code.
std::string emit_llvm_ir(std::vector<ir::LoweredFunc> funcs, const CompileOptions& opts = {});

/// The assembly text of funcs for opts' CPU (any triple LLVM has a backend for), without
/// loading the code into this process.
std::string emit_assembly(std::vector<ir::LoweredFunc> funcs, const CompileOptions& opts = {});

/// Registers LLVM's native target and detects the host CPU, once per process (thread-safe;
/// later calls return at once). A process that forks children to compile in (the tuner's
/// builder) calls it first, so that no child starts while another thread holds the locks
/// of that one-time setup.
void initialize_codegen();

/// Links object files into a shared library at so_path: with GNU ld (ld.bfd) when the first
/// object is of this host's machine and ld.bfd is in PATH, else with ld.lld (any triple), else
/// `cc -shared`. Runtime symbols stay undefined (see the file comment). Throws UserError with
/// the linker's output when linking fails.
void link_shared_library(const std::vector<std::string>& objects, const std::string& so_path);

} // namespace tessera::backend
