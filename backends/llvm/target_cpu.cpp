// The CPU of an Llvm target (host.h's describe_cpu) and the compile options for it: what LLVM's
// subtarget tables say a triple, CPU name and feature string enable.
#include <algorithm>
#include <memory>

#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/TargetParser/Triple.h>

#include "codegen_llvm.h"
#include "tessera/backends/host.h"
#include "tessera/backends/llvm.h"
#include "tessera/support/error.h"

namespace tessera::backend {

namespace {

std::string normalized(const std::string& triple) { return llvm::Triple::normalize(triple); }

/// Whether the target's triple is the host's (an empty triple is; the vendor is not compared:
/// x86_64-linux-gnu is x86_64-pc-linux-gnu).
bool host_triple(const Target& t) {
    if (t.triple.empty())
        return true;
    const llvm::Triple a(normalized(t.triple)), b(host_info().triple);
    return a.getArch() == b.getArch() && a.getOS() == b.getOS() &&
           a.getEnvironment() == b.getEnvironment();
}

/// Code for the host's own CPU (its features, switched on and off as detected).
bool host_cpu(const Target& t) {
    return host_triple(t) && (t.cpu.empty() || t.cpu == host_info().cpu_name);
}

} // namespace

int vector_bits_of(const std::vector<std::string>& features) {
    auto has = [&](const char* f) {
        return std::binary_search(features.begin(), features.end(), std::string(f));
    };
    if (has("avx512f"))
        return 512;
    if (has("avx"))
        return 256;
    return 128;
}

int vector_registers_of(const std::string& triple, const std::vector<std::string>& features) {
    if (triple.rfind("aarch64", 0) == 0 || triple.rfind("arm64", 0) == 0)
        return 32;
    return std::binary_search(features.begin(), features.end(), std::string("avx512f")) ? 32 : 16;
}

CompileOptions compile_options_for(const Target& target) {
    TESSERA_CHECK(target.is_llvm())
        << "compile options of a " << to_string(target.kind) << " target";
    CompileOptions o;
    if (host_cpu(target) && target.features.empty())
        return o; // this host: target_spec's own path
    if (host_cpu(target)) {
        o.cpu = host_info().cpu_name;
        o.features = detail::host_feature_string() + "," + target.features;
        return o;
    }
    o.triple = host_triple(target) ? "" : target.triple;
    o.cpu = target.cpu.empty() ? "generic" : target.cpu;
    o.features = target.features;
    return o;
}

CpuInfo describe_cpu(const Target& target) {
    TESSERA_CHECK(target.is_llvm()) << "describe_cpu of a " << to_string(target.kind) << " target";
    const CpuInfo& host = host_info();
    const int cores = target.num_cores > 0 ? target.num_cores : host.cores;
    if (host_cpu(target) && target.features.empty()) {
        CpuInfo h = host;
        h.cores = cores;
        return h;
    }
    const CompileOptions co = compile_options_for(target);
    const detail::TargetSpec spec = detail::target_spec(co);
    detail::initialize_targets();
    std::string err;
    const llvm::Target* llvm_target = llvm::TargetRegistry::lookupTarget(spec.triple, err);
    if (!llvm_target)
        throw UserError() << "target '" << target.str() << "': LLVM has no backend for triple "
                          << spec.triple;
    // Asked without the CPU: LLVM prints a warning of its own for a CPU it does not know.
    std::unique_ptr<llvm::MCSubtargetInfo> sti(
        llvm_target->createMCSubtargetInfo(spec.triple, "", ""));
    TESSERA_CHECK(sti) << "no subtarget information for " << spec.triple;
    if (!sti->isCPUStringValid(spec.cpu))
        throw UserError() << "target '" << target.str() << "': LLVM knows no CPU '" << spec.cpu
                          << "' for " << spec.triple;

    CpuInfo d;
    d.triple = spec.triple;
    d.cpu_name = spec.cpu;
    d.cores = cores;
    // The CPU's features with the feature string applied (later entries win, and switching a
    // feature off switches off those that need it).
    std::unique_ptr<llvm::MCSubtargetInfo> resolved(
        llvm_target->createMCSubtargetInfo(spec.triple, spec.cpu, spec.features));
    TESSERA_CHECK(resolved) << "no subtarget information for " << spec.triple;
    for (const llvm::SubtargetFeatureKV& kv : resolved->getAllProcessorFeatures())
        if (resolved->checkFeatures(std::string("+") + kv.Key))
            d.features.push_back(kv.Key);
    std::sort(d.features.begin(), d.features.end());
    d.vector_bits = vector_bits_of(d.features);
    d.vector_registers = vector_registers_of(d.triple, d.features);
    if (host_cpu(target)) {
        d.l1d_bytes = host.l1d_bytes;
        d.l2_bytes = host.l2_bytes;
        d.l3_bytes = host.l3_bytes;
        d.cpu_model_name = host.cpu_model_name;
    }
    return d;
}

} // namespace tessera::backend
