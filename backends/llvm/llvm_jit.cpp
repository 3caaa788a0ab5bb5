// JitModule: optimized modules compiled into this process with ORC LLJIT. The one file of the
// backend that parses LLJIT.h.
#include <map>

#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Error.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/SubtargetFeature.h>

#include "codegen_llvm.h"
#include "tessera/runtime/alloc.h"
#include "tessera/runtime/thread_pool.h"
#include "tessera/support/error.h"

namespace tessera::backend {

struct JitModule::Impl {
    // The JIT owns the compiled code; it must outlive every KernelFn handed out.
    std::unique_ptr<llvm::orc::LLJIT> jit;
    std::vector<std::string> names;
    std::map<std::string, KernelFn> fns;
    std::string ir, assembly;
    bool kept_ir = false, kept_assembly = false;
};

namespace {

std::string error_text(llvm::Error e) { return llvm::toString(std::move(e)); }

/// The runtime functions generated code calls, bound by address.
llvm::Error define_runtime_symbols(llvm::orc::LLJIT& jit) {
    using namespace llvm::orc;
    auto flags = llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable;
    SymbolMap syms;
    syms[jit.mangleAndIntern("tessera_parallel_for")] = {
        ExecutorAddr::fromPtr(&tessera_parallel_for), flags};
    syms[jit.mangleAndIntern("tessera_alloc")] = {ExecutorAddr::fromPtr(&tessera_alloc), flags};
    syms[jit.mangleAndIntern("tessera_free")] = {ExecutorAddr::fromPtr(&tessera_free), flags};
    return jit.getMainJITDylib().define(absoluteSymbols(std::move(syms)));
}

} // namespace

JitModule::JitModule(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
JitModule::~JitModule() = default;

std::unique_ptr<JitModule> JitModule::compile(std::vector<ir::LoweredFunc> funcs,
                                              const CompileOptions& opts) {
    detail::TargetSpec spec = detail::target_spec(opts);
    std::unique_ptr<llvm::TargetMachine> tm = detail::create_target_machine(spec);
    auto ctx = std::make_unique<llvm::LLVMContext>();
    std::unique_ptr<llvm::Module> m = detail::build_module(funcs, *ctx, *tm, spec, opts);

    auto impl = std::make_unique<Impl>();
    if (opts.keep_llvm_ir) {
        impl->ir = detail::module_to_string(*m);
        impl->kept_ir = true;
    }
    if (opts.keep_assembly) {
        impl->assembly = detail::emit_machine_code(*m, *tm, true);
        impl->kept_assembly = true;
    }

    llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(spec.triple)};
    jtmb.setCPU(spec.cpu);
    llvm::SubtargetFeatures features(spec.features);
    jtmb.addFeatures(features.getFeatures());
    jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create();
    TESSERA_CHECK(jit) << "cannot create the JIT: " << error_text(jit.takeError());
    impl->jit = std::move(*jit);
    if (llvm::Error e = define_runtime_symbols(*impl->jit))
        TESSERA_UNREACHABLE() << "cannot bind runtime symbols: " << error_text(std::move(e));
    // libm and anything else the process has loaded.
    auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        impl->jit->getDataLayout().getGlobalPrefix());
    TESSERA_CHECK(process) << "cannot search the process: " << error_text(process.takeError());
    impl->jit->getMainJITDylib().addGenerator(std::move(*process));

    if (llvm::Error e =
            impl->jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
        TESSERA_UNREACHABLE() << "cannot add the module to the JIT: " << error_text(std::move(e));

    // Look every function up now, so that link errors surface here rather than in get().
    for (const ir::LoweredFunc& f : funcs) {
        auto addr = impl->jit->lookup(f.name);
        TESSERA_CHECK(addr) << "cannot compile " << f.name << ": " << error_text(addr.takeError());
        impl->names.push_back(f.name);
        impl->fns[f.name] = addr->toPtr<KernelFn>();
    }
    return std::unique_ptr<JitModule>(new JitModule(std::move(impl)));
}

JitModule::KernelFn JitModule::get(const std::string& name) const {
    auto it = impl_->fns.find(name);
    if (it == impl_->fns.end())
        throw UserError() << "no compiled function named '" << name << "'";
    return it->second;
}

const std::vector<std::string>& JitModule::function_names() const { return impl_->names; }

const std::string& JitModule::llvm_ir() const {
    TESSERA_CHECK(impl_->kept_ir) << "llvm_ir() needs CompileOptions::keep_llvm_ir";
    return impl_->ir;
}

const std::string& JitModule::assembly() const {
    TESSERA_CHECK(impl_->kept_assembly) << "assembly() needs CompileOptions::keep_assembly";
    return impl_->assembly;
}

} // namespace tessera::backend
