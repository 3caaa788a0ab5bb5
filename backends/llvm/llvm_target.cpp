// The host TargetMachine, the new-PM optimization pipeline and machine-code emission. The one
// file of the backend that parses PassBuilder.h.
#include <algorithm>
#include <mutex>

#include <llvm/ADT/StringMap.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CodeGen.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/SubtargetFeature.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include "codegen_llvm.h"
#include "tessera/backends/host.h"
#include "tessera/lower/lower_for_codegen.h"
#include "tessera/support/error.h"

namespace tessera::backend::detail {

TargetSpec target_spec(const CompileOptions& opts) {
    TargetSpec spec;
    spec.triple = opts.triple.empty() ? llvm::sys::getProcessTriple()
                                      : llvm::Triple::normalize(opts.triple);
    if (!opts.cpu.empty() || !opts.triple.empty()) {
        spec.cpu = opts.cpu.empty() ? "generic" : opts.cpu;
        spec.features = opts.features;
        return spec;
    }
    spec.cpu = host_info().cpu_name;
    spec.features = host_feature_string();
    return spec;
}

const std::string& host_feature_string() {
    // Every host feature, enabled or not: a CPU name implies features that a virtual machine
    // may have switched off, and "-feature" entries turn those back off.
    static const std::string host_features = [] {
        std::string s;
        for (const auto& f : llvm::sys::getHostCPUFeatures()) {
            if (!s.empty())
                s += ",";
            s += (f.getValue() ? "+" : "-") + f.getKey().str();
        }
        return s;
    }();
    return host_features;
}

bool target_has_features(const TargetSpec& spec, const std::string& features) {
    initialize_targets();
    std::string err;
    const llvm::Target* target = llvm::TargetRegistry::lookupTarget(spec.triple, err);
    if (!target)
        return false;
    // The subtarget that code generation will see: the CPU's features, then the string's.
    std::unique_ptr<llvm::MCSubtargetInfo> sti(
        target->createMCSubtargetInfo(spec.triple, spec.cpu, spec.features));
    if (!sti)
        return false;
    // checkFeatures aborts on a name the target does not know: ask only about known ones.
    const auto known = sti->getAllProcessorFeatures();
    const llvm::SubtargetFeatures asked(features);
    for (const std::string& f : asked.getFeatures()) {
        const llvm::StringRef name = llvm::SubtargetFeatures::StripFlag(f);
        if (!llvm::SubtargetFeatures::hasFlag(f) ||
            std::none_of(known.begin(), known.end(),
                         [&](const llvm::SubtargetFeatureKV& kv) { return name == kv.Key; }))
            return false;
    }
    return sti->checkFeatures(features);
}

void initialize_targets() {
    static std::once_flag once;
    std::call_once(once, [] {
        // Every target LLVM was built with: a build may cross-compile (aarch64 from x86-64).
        llvm::InitializeAllTargetInfos();
        llvm::InitializeAllTargets();
        llvm::InitializeAllTargetMCs();
        llvm::InitializeAllAsmPrinters();
        llvm::InitializeNativeTargetAsmParser();
    });
}

std::unique_ptr<llvm::TargetMachine> create_target_machine(const TargetSpec& spec) {
    initialize_targets();
    std::string err;
    const llvm::Target* target = llvm::TargetRegistry::lookupTarget(spec.triple, err);
    TESSERA_CHECK(target) << "no LLVM target for " << spec.triple << ": " << err;
    llvm::TargetOptions options;
    std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
        spec.triple, spec.cpu, spec.features, options, llvm::Reloc::PIC_, std::nullopt,
        llvm::CodeGenOptLevel::Aggressive));
    TESSERA_CHECK(tm) << "cannot create a target machine for " << spec.triple << " " << spec.cpu;
    return tm;
}

void optimize_module(llvm::Module& m, llvm::TargetMachine& tm, const CompileOptions& opts) {
    std::string err;
    llvm::raw_string_ostream es(err);
    TESSERA_CHECK(!llvm::verifyModule(m, &es)) << "generated invalid LLVM IR: " << es.str();
    if (opts.opt_level <= 0)
        return;

    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PipelineTuningOptions pto;
    pto.LoopVectorization = true;
    pto.SLPVectorization = true;
    // Schedules own unrolling (unroll annotations, auto_unroll_max_step): LLVM's partial and
    // runtime unrolling on top of them tripled the compile time of tuning candidates (conv2d
    // 1x64x56x56: 3.2 s of LLVM per candidate against 1.0 s without) for no faster kernel
    // (the same 16 candidates: median time ratio 0.75 and 1.02 in two runs). Loops of a
    // small constant trip count are still unrolled whole (LoopFullUnrollPass).
    pto.LoopUnrolling = false;
    pto.LoopInterleaving = true;
    // The TargetMachine gives the pipeline real target information (vector widths, costs);
    // without it the vectorizers stay conservative.
    llvm::PassBuilder pb(&tm, pto);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::OptimizationLevel level = opts.opt_level == 1   ? llvm::OptimizationLevel::O1
                                    : opts.opt_level == 2 ? llvm::OptimizationLevel::O2
                                                          : llvm::OptimizationLevel::O3;
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(level);
    mpm.run(m, mam);
}

std::unique_ptr<llvm::Module> build_module(const std::vector<ir::LoweredFunc>& funcs,
                                           llvm::LLVMContext& ctx, llvm::TargetMachine& tm,
                                           const TargetSpec& spec, const CompileOptions& opts) {
    check_function_names(funcs);
    // The one lowering entry before code generation: callers may pass functions as
    // sched::lower_state left them.
    std::vector<ir::LoweredFunc> ready;
    for (const ir::LoweredFunc& f : funcs)
        ready.push_back(lower::prepare_for_codegen(f));
    std::unique_ptr<llvm::Module> m = codegen_llvm(ready, ctx, spec, opts);
    m->setTargetTriple(spec.triple);
    m->setDataLayout(tm.createDataLayout());
    optimize_module(*m, tm, opts);
    return m;
}

std::string module_to_string(const llvm::Module& m) {
    std::string s;
    llvm::raw_string_ostream os(s);
    m.print(os, nullptr);
    return os.str();
}

namespace {

/// LLVM's error diagnostics during code generation (a register allocator that runs out of
/// registers, say), collected instead of the default handler's exit of the whole process:
/// a tuner compiling many candidates must lose only the one.
struct CodegenErrors {
    std::string first;
    static void handle(const llvm::DiagnosticInfo* info, void* self) {
        auto* errors = static_cast<CodegenErrors*>(self);
        if (info->getSeverity() != llvm::DS_Error || !errors->first.empty())
            return;
        llvm::raw_string_ostream os(errors->first);
        llvm::DiagnosticPrinterRawOStream printer(os);
        info->print(printer);
    }
};

} // namespace

std::string emit_machine_code(const llvm::Module& m, llvm::TargetMachine& tm, bool assembly) {
    std::unique_ptr<llvm::Module> copy = llvm::CloneModule(m);
    llvm::SmallString<0> buf;
    llvm::raw_svector_ostream os(buf);
    llvm::legacy::PassManager pm;
    auto kind = assembly ? llvm::CodeGenFileType::AssemblyFile : llvm::CodeGenFileType::ObjectFile;
    TESSERA_CHECK(!tm.addPassesToEmitFile(pm, os, nullptr, kind))
        << "the target cannot emit " << (assembly ? "assembly" : "object files");
    llvm::LLVMContext& ctx = copy->getContext();
    CodegenErrors errors;
    const auto old_handler = ctx.getDiagnosticHandlerCallBack();
    void* const old_context = ctx.getDiagnosticContext();
    ctx.setDiagnosticHandlerCallBack(&CodegenErrors::handle, &errors);
    pm.run(*copy);
    ctx.setDiagnosticHandlerCallBack(old_handler, old_context);
    TESSERA_CHECK(errors.first.empty()) << "LLVM code generation failed: " << errors.first;
    return std::string(buf.begin(), buf.end());
}

} // namespace tessera::backend::detail

namespace tessera::backend {

void initialize_codegen() {
    detail::initialize_targets();
    (void)detail::target_spec(CompileOptions{});
}

void emit_object_file(std::vector<ir::LoweredFunc> funcs, const std::string& path,
                      const CompileOptions& opts) {
    detail::TargetSpec spec = detail::target_spec(opts);
    std::unique_ptr<llvm::TargetMachine> tm = detail::create_target_machine(spec);
    llvm::LLVMContext ctx;
    std::unique_ptr<llvm::Module> m = detail::build_module(funcs, ctx, *tm, spec, opts);
    std::string bytes = detail::emit_machine_code(*m, *tm, false);
    std::error_code ec;
    llvm::raw_fd_ostream out(path, ec);
    if (ec)
        throw UserError() << "cannot write object file '" << path << "': " << ec.message();
    out << bytes;
    out.close();
    if (out.has_error()) {
        // The stream's destructor aborts the process (LLVM's report_fatal_error) on an error
        // still set: take the reason and clear it, so that the failure is an exception.
        const std::string reason = out.error().message();
        out.clear_error();
        throw UserError() << "cannot write object file '" << path << "': " << reason;
    }
}

std::string emit_llvm_ir(std::vector<ir::LoweredFunc> funcs, const CompileOptions& opts) {
    detail::TargetSpec spec = detail::target_spec(opts);
    std::unique_ptr<llvm::TargetMachine> tm = detail::create_target_machine(spec);
    llvm::LLVMContext ctx;
    std::unique_ptr<llvm::Module> m = detail::build_module(funcs, ctx, *tm, spec, opts);
    return detail::module_to_string(*m);
}

std::string emit_assembly(std::vector<ir::LoweredFunc> funcs, const CompileOptions& opts) {
    detail::TargetSpec spec = detail::target_spec(opts);
    std::unique_ptr<llvm::TargetMachine> tm = detail::create_target_machine(spec);
    llvm::LLVMContext ctx;
    std::unique_ptr<llvm::Module> m = detail::build_module(funcs, ctx, *tm, spec, opts);
    return detail::emit_machine_code(*m, *tm, true);
}

} // namespace tessera::backend
