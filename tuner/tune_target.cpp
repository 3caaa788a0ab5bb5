#include "tessera/tuner/tune_target.h"

#include <algorithm>

#include "tessera/backends/host.h"
#include "tessera/schedule/sampling.h"
#include "tessera/schedule/sketch.h"
#include "tessera/support/error.h"
#include "tessera/tuner/fingerprint.h"

#ifdef TESSERA_HAVE_CUDA
#include "tessera/backends/cuda_driver.h"
#endif

namespace tessera::tune {

namespace {

/// Whether code for `cpu` runs on this machine: the host's triple, and every vector or matrix
/// extension it may use is the host's too.
bool runs_here(const backend::CpuInfo& cpu) {
    const backend::CpuInfo& host = backend::host_info();
    if (cpu.triple != host.triple)
        return false;
    for (const std::string& f : cpu.features)
        if (is_codegen_isa_feature(f) && !host.has_feature(f))
            return false;
    return true;
}

} // namespace

Target with_cuda_arch(Target target) {
    if (!target.is_cuda() || !target.arch.empty())
        return target;
    target.arch = "sm_90";
#ifdef TESSERA_HAVE_CUDA
    const backend::cuda::CudaDriver& driver = backend::cuda::CudaDriver::get();
    if (driver.available())
        target.arch = driver.device().arch();
#endif
    return target;
}

TuneTarget build_lookup_target(const Target& target) {
    if (target.is_llvm())
        return llvm_tune_target(target);
    TESSERA_CHECK(!target.arch.empty()) << "a CUDA lookup without an architecture";
    return {"cuda -arch=" + target.arch, host_fingerprint().hash(), "cuda;" + target.arch};
}

bool runs_on_this_machine(const Target& target) { return runs_here(backend::describe_cpu(target)); }

TuneTarget llvm_tune_target(const Target& target) {
    TESSERA_CHECK(target.is_llvm())
        << "llvm_tune_target of a " << to_string(target.kind) << " target";
    const backend::CpuInfo cpu = backend::describe_cpu(target);
    TuneTarget t;
    t.target = "llvm";
    if (cpu.triple != backend::host_info().triple)
        t.target += " -mtriple=" + cpu.triple;
    t.target += " -mcpu=" + cpu.cpu_name;
    if (!target.features.empty())
        t.target += " -mattr=" + target.features;
    const HardwareFingerprint own = make_fingerprint(cpu, "");
    t.fingerprint = runs_here(cpu) ? host_fingerprint().hash() : own.hash();
    t.isa_class = own.isa_class();
    return t;
}

sched::DefaultScheduleOptions default_schedule_options_for(const Target& target, int threads) {
    sched::DefaultScheduleOptions d;
    if (target.is_cuda()) {
        d.target = sched::TargetKind::Gpu;
        return d;
    }
    const backend::CpuInfo cpu = backend::describe_cpu(target);
    d.num_cores = threads > 0 ? threads : std::max(1, cpu.cores);
    d.vector_lanes = std::max(4, cpu.vector_bits / 32);
    d.vector_registers = cpu.vector_registers;
    d.cpu_tiles = cpu.has_u8s8_tiles();
    d.cpu_tiles_bf16 = cpu.has_bf16_tiles();
    return d;
}

void set_search_target(const sched::DefaultScheduleOptions& d, sched::SketchOptions& sketch,
                       sched::SampleOptions& sample) {
    sketch.target = d.target;
    if (d.target == sched::TargetKind::Gpu)
        return;
    sketch.num_cores = d.num_cores;
    sample.num_cores = d.num_cores;
    sample.max_vectorize_lanes = d.vector_lanes;
}

} // namespace tessera::tune
