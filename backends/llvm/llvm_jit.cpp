// JitModule: optimized modules compiled into this process with ORC LLJIT. The one file of the
// backend that parses LLJIT.h.
//
// One LLJIT serves the whole process (creating one costs milliseconds, which adds up over the
// thousands of candidates a tuning run compiles); each JitModule gets its own JITDylib, removed
// with the module, which frees its code. Functions carry their own target-cpu and
// target-features, so modules compiled for another CPU share the same JIT.
#include <atomic>
#include <cstdio>
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
#include "tessera/runtime/cpu_tiles.h"
#include "tessera/runtime/thread_pool.h"
#include "tessera/support/error.h"

namespace tessera::backend {

namespace {

std::string error_text(llvm::Error e) { return llvm::toString(std::move(e)); }

/// The process-wide JIT. Never destroyed: a JitModule held in a static object may outlive any
/// destructor order we could choose.
class SharedJit {
  public:
    static SharedJit& get() {
        static SharedJit* jit = new SharedJit();
        return *jit;
    }

    llvm::orc::LLJIT& jit() { return *jit_; }

    /// A fresh JITDylib that sees the runtime functions and the process (libm).
    llvm::orc::JITDylib& new_dylib() {
        std::string name = "tessera_module_" + std::to_string(counter_.fetch_add(1));
        auto jd = jit_->createJITDylib(name);
        TESSERA_CHECK(jd) << "cannot create a JIT dylib: " << error_text(jd.takeError());
        jd->addToLinkOrder(jit_->getMainJITDylib());
        return *jd;
    }

  private:
    SharedJit() {
        detail::initialize_targets();
        detail::TargetSpec spec = detail::target_spec({});
        llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(spec.triple)};
        jtmb.setCPU(spec.cpu);
        jtmb.addFeatures(llvm::SubtargetFeatures(spec.features).getFeatures());
        jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
        // Modules are compiled on the threads that call compile(), possibly several at once:
        // each compilation needs its own TargetMachine (a shared one corrupts its MC state).
        auto jit = llvm::orc::LLJITBuilder()
                       .setJITTargetMachineBuilder(std::move(jtmb))
                       .setSupportConcurrentCompilation(true)
                       .create();
        TESSERA_CHECK(jit) << "cannot create the JIT: " << error_text(jit.takeError());
        jit_ = std::move(*jit);

        // The runtime functions generated code calls, bound by address.
        using namespace llvm::orc;
        auto flags = llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable;
        SymbolMap syms;
        syms[jit_->mangleAndIntern("tessera_parallel_for")] = {
            ExecutorAddr::fromPtr(&tessera_parallel_for), flags};
        syms[jit_->mangleAndIntern("tessera_alloc")] = {ExecutorAddr::fromPtr(&tessera_alloc),
                                                        flags};
        syms[jit_->mangleAndIntern("tessera_free")] = {ExecutorAddr::fromPtr(&tessera_free), flags};
        syms[jit_->mangleAndIntern("tessera_enable_cpu_tiles")] = {
            ExecutorAddr::fromPtr(&tessera_enable_cpu_tiles), flags};
        if (llvm::Error e = jit_->getMainJITDylib().define(absoluteSymbols(std::move(syms))))
            TESSERA_UNREACHABLE() << "cannot bind runtime symbols: " << error_text(std::move(e));
        // libm and anything else the process has loaded.
        auto process = DynamicLibrarySearchGenerator::GetForCurrentProcess(
            jit_->getDataLayout().getGlobalPrefix());
        TESSERA_CHECK(process) << "cannot search the process: " << error_text(process.takeError());
        jit_->getMainJITDylib().addGenerator(std::move(*process));
    }

    std::unique_ptr<llvm::orc::LLJIT> jit_;
    std::atomic<uint64_t> counter_{0};
};

} // namespace

struct JitModule::Impl {
    llvm::orc::JITDylib* dylib = nullptr; ///< Owns the code; removed in the destructor.
    std::vector<std::string> names;
    std::map<std::string, KernelFn> fns;
    std::string ir, assembly;
    bool kept_ir = false, kept_assembly = false;

    ~Impl() {
        if (!dylib)
            return;
        if (llvm::Error e = SharedJit::get().jit().getExecutionSession().removeJITDylib(*dylib))
            std::fprintf(stderr, "tessera: cannot free JIT code: %s\n",
                         error_text(std::move(e)).c_str());
    }
};

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

    SharedJit& shared = SharedJit::get();
    m->setDataLayout(shared.jit().getDataLayout());
    impl->dylib = &shared.new_dylib();
    if (llvm::Error e = shared.jit().addIRModule(
            *impl->dylib, llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
        TESSERA_UNREACHABLE() << "cannot add the module to the JIT: " << error_text(std::move(e));

    // Look every function up now: this compiles the module, and link errors surface here
    // rather than in get().
    for (const ir::LoweredFunc& f : funcs) {
        auto addr = shared.jit().lookup(*impl->dylib, f.name);
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
