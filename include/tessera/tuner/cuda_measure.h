// Measuring GPU schedules on the CUDA device (issue 7): the Measurer of `tessera tune --target
// cuda`. Only built where the CUDA toolkit is found (TESSERA_HAVE_CUDA).
//
// measure() takes candidate GPU schedules of one task and returns one MeasureResult each, in
// order:
//   0. task data, once per task (by te::workload_key), kept for the Measurer's life: seeded
//      random dense inputs (fill_random, one Rng(seed) over the inputs in order, as the CPU
//      measurer) and the reference outputs, computed on the CPU by the rule-based default
//      schedule (sched::default_schedule, parallel and vectorized, so a 4096^3 matmul's
//      reference takes a second, not the minutes of the naive nest; the naive nest when the
//      default schedule does not lower), JIT-compiled in this process;
//   1. build, several candidates at once on build threads: lower with the GPU flag
//      (sched::lower_state with LowerOptions::gpu), CUDA C (codegen_cuda, whose cheap device
//      limit checks come from the device) and a cubin from NVRTC for the device's
//      architecture. A lowering or codegen ScheduleError is an Instantiation record, an NVRTC
//      failure a CompileDevice record (with the compiler's log);
//   2. run, one candidate at a time, in this process: module loaded, inputs copied in, outputs
//      poisoned (NaN for floats), one checked run, every output element compared with the
//      reference (element_error) - above `tolerance` the candidate is a WrongAnswer record and
//      is not timed; then warm-up runs and timed repeats with CUDA events until both
//      min_repeats and min_repeat_secs are reached (at most max_repeats). A candidate whose
//      checked run took more than slow_factor x the best median known for its task is timed
//      once. A module that does not load is CompileDevice; a launch or execution failure (a CUDA
//      error from the driver) is a RuntimeDevice record with the driver's error name.
//
// Why in-process (not a worker process as the CPU measurer): a faulting GPU kernel returns a
// CUDA error to the host instead of killing it, so it costs one record, not the tuner. Two
// limits follow: an execution fault (illegal address) is "sticky" in CUDA - the context stays
// unusable - so every later candidate of the process becomes a RuntimeDevice record with the
// same error (the rounds committed before are kept; rerun to resume); and there is no watchdog:
// a kernel that never ends would hang the tuner. Generated kernels only have loops of constant
// trip counts, so only a driver fault can hang one.
//
// Without a CUDA driver or device, make_cuda_measurer throws UserError with CudaDriver's
// one-line reason.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/schedule/state.h"
#include "tessera/te/compute.h"
#include "tessera/tuner/measure.h"

namespace tessera::tune {

/// How GPU candidates are built and run, one documented default each.
struct CudaMeasureOptions {
    int build_threads = 0;        ///< Parallel lowerings + NVRTC compilations; 0 = host cores.
    int warmup = 1;               ///< Untimed runs after the checked run.
    int min_repeats = 5;          ///< Timed runs at least ...
    double min_repeat_secs = 0.1; ///< ... and until their total reaches this ...
    int max_repeats = 100;        ///< ... but never more than this many.
    double tolerance = 1e-3;      ///< Max element_error of a correct output.
    /// A candidate whose checked run takes more than slow_factor x the best median time known
    /// for its task is timed once, without warm-up (0 = always the full repeats).
    double slow_factor = 4;
    /// A candidate whose checked run takes longer than this is a RunTimeout, never timed (a
    /// kernel cannot be stopped once launched, so the limit bounds what follows it); the timed
    /// repeats stop once the candidate's runs reach it too, after at least one.
    double run_timeout_secs = 2;
    uint64_t seed = 0;            ///< Seed of the random inputs.
};

/// Throws UserError naming the option and its value when an option is out of range.
void validate(const CudaMeasureOptions& opts);

/// The target string of records measured on device 0: "cuda -arch=sm_XX". Throws UserError
/// with the driver's reason when no device is available.
std::string cuda_target_string();

/// The candidate that lowers `s` for the GPU (sched::lower_state with LowerOptions::gpu) and
/// stores each input in its stage's layout. The GPU counterpart of candidate_from_state.
MeasureCandidate cuda_candidate_from_state(const sched::State& s);

/// The CUDA measurer described at the top of this file. One measure call at a time.
class CudaMeasurer : public Measurer {
  public:
    /// Checks the options (UserError naming one out of range) and the device (UserError with
    /// the driver's reason when there is none).
    explicit CudaMeasurer(const CudaMeasureOptions& opts = {});
    ~CudaMeasurer() override;

    std::vector<MeasureResult> measure(const te::Compute& c,
                                       const std::vector<sched::State>& states) override;
    /// measure() for candidates of any origin (tests hand-build the loop IR). The lowered
    /// function must have the lower_default parameter contract (inputs, then dense outputs)
    /// and be lowered for the GPU. Never throws for a failing candidate.
    std::vector<MeasureResult> measure_candidates(const te::Compute& c,
                                                  const std::vector<MeasureCandidate>& candidates);
    /// {"device", "arch", "warmup", "min_repeats", "min_repeat_secs", "max_repeats",
    /// "slow_factor", "run_timeout_secs", "tolerance", "seed", "timer": "cuda_events"}.
    std::string settings_json() const override;
    void note_best_secs(const std::string& workload_key, double secs) override;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// A CudaMeasurer.
std::unique_ptr<Measurer> make_cuda_measurer(const CudaMeasureOptions& opts = {});

} // namespace tessera::tune
