// What the tuner and a build derive from one Target (support/target.h): the identity records
// carry, and the options default schedules and the search are made with. One place, so that
// `tune`, `build`, `op run` and the measurers never build them apart.
#pragma once

#include <string>

#include "tessera/schedule/default_schedule.h"
#include "tessera/support/target.h"

namespace tessera::sched {
struct SketchOptions;
struct SampleOptions;
} // namespace tessera::sched

namespace tessera::tune {

/// The target and machine a record was measured for, stored in every record and used to look
/// records up (lookup.h).
struct TuneTarget {
    std::string target;      ///< e.g. "llvm -mcpu=rocketlake", "cuda -arch=sm_90"
    std::string fingerprint; ///< HardwareFingerprint::hash() of the measuring machine
    std::string isa_class;   ///< HardwareFingerprint::isa_class() of the code's CPU
};

/// The record identity of an Llvm target:
/// - target: "llvm -mcpu=<cpu>", with "-mtriple=<triple>" first when the triple is not the
///   host's and "-mattr=<features>" last when given (-num-cores is not part of it: records
///   are compared by time whatever split they use);
/// - fingerprint: this machine's when the code runs here (the host's triple, and every vector
///   or matrix extension it may use is the host's: it is measured here), else the described CPU's
///   own (make_fingerprint of backend::describe_cpu, no cpuinfo), so records of a cross target
///   never pass for the host's;
/// - isa_class: the described CPU's.
/// For this host (`llvm`) it is the identity records always had: "llvm -mcpu=<host cpu>", the
/// host's fingerprint and ISA class. Throws UserError as backend::describe_cpu.
/// Pre: target.is_llvm().
TuneTarget llvm_tune_target(const Target& target);

/// `target` with its CUDA architecture decided: a Cuda target without -arch gets GPU 0's, else
/// sm_90 (a build needs no GPU). Other targets are returned as they are.
Target with_cuda_arch(Target target);

/// The records a build for `target` looks up: llvm_tune_target for Llvm; for Cuda (pre: arch
/// set) target "cuda -arch=<arch>", this machine's fingerprint and the ISA class
/// "cuda;<arch>" (GPUs of one architecture run each other's schedules with the same code), as
/// `tune --target cuda` records them on a machine with that GPU.
TuneTarget build_lookup_target(const Target& target);

/// Whether code for an Llvm target runs on this machine: the host's triple, and every vector
/// or matrix extension its CPU may use is the host's too. Throws UserError as
/// backend::describe_cpu. Pre: target.is_llvm().
bool runs_on_this_machine(const Target& target);

/// The default-schedule options of `target`: Llvm: the described CPU's cores (`threads` > 0
/// overrides), f32 lanes of its widest vector register, its AMX tiles; Cuda: the GPU rules.
/// Throws UserError as backend::describe_cpu.
sched::DefaultScheduleOptions default_schedule_options_for(const Target& target, int threads = 0);

/// The values of `defaults` (default_schedule_options_for) in the search's sketch and
/// sampling options (cores, vector lanes, the GPU rule list for Gpu).
void set_search_target(const sched::DefaultScheduleOptions& defaults, sched::SketchOptions& sketch,
                       sched::SampleOptions& sample);

} // namespace tessera::tune
