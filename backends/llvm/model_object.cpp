// The data object of a model library (plan, weights, kernel table as LLVM globals) and the
// link step that joins it with the kernels and the runtime archive (model_object.h).
#include "tessera/backends/model_object.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <unistd.h>

#include <llvm/ADT/ArrayRef.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen_llvm.h"
#include "run_tool.h"
#include "tessera/support/error.h"


namespace tessera::backend {

namespace {

/// A constant global byte array `name` holding `bytes`, aligned to `align`, externally visible.
void add_byte_array(llvm::Module& m, const std::string& name, llvm::ArrayRef<uint8_t> bytes,
                    unsigned align) {
    llvm::LLVMContext& ctx = m.getContext();
    llvm::Constant* init = llvm::ConstantDataArray::get(ctx, bytes);
    auto* g = new llvm::GlobalVariable(m, init->getType(), /*isConstant=*/true,
                                       llvm::GlobalValue::ExternalLinkage, init, name);
    g->setAlignment(llvm::Align(align));
}



/// A new empty temporary file named after `stem`; returns its path.
std::string make_temp_file(const std::string& stem) {
    const char* dir = std::getenv("TMPDIR");
    std::string pattern = std::string(dir && *dir ? dir : "/tmp") + "/" + stem + "_XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    const int fd = mkstemp(buf.data());
    if (fd < 0)
        throw UserError() << "cannot create a temporary file in " << (dir && *dir ? dir : "/tmp")
                          << ": " << std::strerror(errno);
    close(fd);
    return std::string(buf.data());
}

} // namespace

void emit_model_data_object(const ModelDataObject& data, const std::string& path,
                            const CompileOptions& opts) {
    const detail::TargetSpec spec = detail::target_spec(opts);
    std::unique_ptr<llvm::TargetMachine> tm = detail::create_target_machine(spec);
    llvm::LLVMContext ctx;
    llvm::Module m("tessera_model_data", ctx);
    m.setTargetTriple(spec.triple);
    m.setDataLayout(tm->createDataLayout());

    const auto* plan = reinterpret_cast<const uint8_t*>(data.plan_bytes.data());
    add_byte_array(m, "tessera_model_plan", llvm::ArrayRef<uint8_t>(plan, data.plan_bytes.size()),
                   8);
    llvm::Type* i64 = llvm::Type::getInt64Ty(ctx);
    auto* size = new llvm::GlobalVariable(
        m, i64, true, llvm::GlobalValue::ExternalLinkage,
        llvm::ConstantInt::get(i64, static_cast<uint64_t>(data.plan_bytes.size())),
        "tessera_model_plan_size");
    size->setAlignment(llvm::Align(8));
    // 64-byte alignment: every weight starts at a 64-byte multiple of the array, so kernels
    // may use aligned vector loads on them.
    add_byte_array(m, "tessera_model_weights", data.weights, 64);
    if (!data.cubins.empty()) {
        const auto* cubins = reinterpret_cast<const uint8_t*>(data.cubins.data());
        add_byte_array(m, "tessera_model_cubins",
                       llvm::ArrayRef<uint8_t>(cubins, data.cubins.size()), 8);
    }

    // The kernel table: pointers to `void fn(void**)`, declared here and defined by the
    // kernels' object.
    llvm::PointerType* ptr = llvm::PointerType::getUnqual(ctx);
    llvm::FunctionType* fn_type =
        llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, /*isVarArg=*/false);
    std::vector<llvm::Constant*> entries;
    std::set<std::string> seen;
    for (const std::string& name : data.kernel_symbols) {
        TESSERA_CHECK(!name.empty() && seen.insert(name).second)
            << "kernel symbol '" << name << "' is empty or repeated";
        entries.push_back(
            llvm::Function::Create(fn_type, llvm::GlobalValue::ExternalLinkage, name, m));
    }
    llvm::ArrayType* table_type = llvm::ArrayType::get(ptr, entries.size());
    auto* table = new llvm::GlobalVariable(m, table_type, true, llvm::GlobalValue::ExternalLinkage,
                                           llvm::ConstantArray::get(table_type, entries),
                                           "tessera_model_kernels");
    table->setAlignment(llvm::Align(8));

    std::error_code ec;
    llvm::raw_fd_ostream out(path, ec);
    if (ec)
        throw UserError() << "cannot write object file '" << path << "': " << ec.message();
    llvm::legacy::PassManager pm;
    TESSERA_CHECK(!tm->addPassesToEmitFile(pm, out, nullptr, llvm::CodeGenFileType::ObjectFile))
        << "the target cannot emit object files";
    pm.run(m);
    out.close();
    if (out.has_error()) {
        // The stream's destructor aborts the process (LLVM's report_fatal_error) on an error
        // still set: take the reason and clear it, so that the failure is an exception.
        const std::string reason = out.error().message();
        out.clear_error();
        throw UserError() << "cannot write object file '" << path << "': " << reason;
    }
}

void link_model_library(const std::vector<std::string>& objects, const std::string& runtime_archive,
                        const std::string& so_path, const std::string& triple) {
    if (objects.empty())
        throw UserError() << "no object files to link into '" << so_path << "'";
    if (access(runtime_archive.c_str(), R_OK) != 0)
        throw UserError() << "the runtime archive '" << runtime_archive
                          << "' is missing (rebuild tessera): " << std::strerror(errno);

    // Only the C API and the plan symbols leave the library; everything else (the runtime's
    // thread pool, allocator, the kernels) is local to it.
    const std::string version_script = make_temp_file("tessera_model_ver");
    {
        std::ofstream vs(version_script);
        vs << "{\n  global: tessera_model_*;\n  local: *;\n};\n";
    }
    // Link to a temporary name beside the output and rename: a failed link never leaves a
    // truncated library under the requested name.
    const std::string tmp_so = so_path + ".tmp" + std::to_string(getpid());
#ifdef TESSERA_MODEL_LINK_DRIVER
    std::string driver = TESSERA_MODEL_LINK_DRIVER;
#else
    std::string driver = "c++";
#endif
    std::vector<std::string> argv = {driver, "-shared", "-o", tmp_so};
    if (!triple.empty()) {
#ifdef TESSERA_CROSS_LINK_DRIVER
        driver = TESSERA_CROSS_LINK_DRIVER;
#else
        driver = "clang++";
#endif
        argv = {driver, "--target=" + triple, "-fuse-ld=lld", "-shared", "-o", tmp_so};
    }
    argv.insert(argv.end(), objects.begin(), objects.end());
    argv.insert(argv.end(),
                {"-Wl,--whole-archive", runtime_archive, "-Wl,--no-whole-archive",
                 "-Wl,--version-script=" + version_script, "-Wl,-Bsymbolic",
                 "-Wl,-z,noexecstack", "-lstdc++", "-lm", "-lpthread"});
#ifdef TESSERA_MODEL_LINK_FLAGS
    // The runtime archive is instrumented: the sanitizer runtime's symbols stay undefined here
    // (clang links that runtime into executables only) and come from the loading process.
    // A cross runtime is not instrumented.
    argv.push_back(triple.empty() ? TESSERA_MODEL_LINK_FLAGS : "-Wl,--no-undefined");
#else
    argv.push_back("-Wl,--no-undefined");
#endif
    const std::string log = make_temp_file("tessera_model_link");
    const int rc = run_tool_logged(argv, log);
    const std::string output = one_line(read_text_file(log));
    std::remove(log.c_str());
    std::remove(version_script.c_str());
    if (rc != 0) {
        std::remove(tmp_so.c_str());
        throw UserError() << "linking '" << so_path << "' with " << driver << " failed"
                          << (rc < 0 ? " to start" : " (exit " + std::to_string(rc) + ")")
                          << (output.empty() ? "" : ": ") << output;
    }
    if (std::rename(tmp_so.c_str(), so_path.c_str()) != 0) {
        const int err = errno;
        std::remove(tmp_so.c_str());
        throw UserError() << "cannot write '" << so_path << "': " << std::strerror(err);
    }
}

} // namespace tessera::backend
