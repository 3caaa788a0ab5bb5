// `tessera op sketches | sample | lower` and the schedule files of `op run --schedule`.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "tessera/schedule/state.h"
#include "tessera/te/compute.h"

namespace tessera::cli {

/// Options of the schedule subcommands. Zero cores / lanes mean "this host's".
struct OpScheduleOptions {
    std::string spec;          ///< NAME:key=value,... (see `tessera op list`).
    int cores = 0;             ///< Cores the sketch and parallel heuristics assume.
    int vector_lanes = 0;      ///< Widest vectorized loop (f32 lanes).
    int n = 10;                ///< `sample`: schedules to print.
    uint64_t seed = 1;         ///< `sample`: seed of the sampler.
    std::string schedule_file; ///< `lower`: a schedule JSON file (empty: the default loop nest).
    bool json = false;         ///< `sketches`, `default`, `lower`: one JSON object instead of text.
    /// `default`, `lower`: "llvm" (this CPU) or "cuda" (the GPU default schedule; `lower`
    /// prints the generated CUDA C).
    std::string target = "llvm";
    bool tf32 = false; ///< cuda: f32 matrix products may use TF32 tensor cores.
    /// `lower`, llvm: print the x86/Arm assembly LLVM generates for the target's CPU (this one
    /// by default: what `op run` executes) instead of the loop IR.
    bool assembly = false;
};

/// Reads a schedule file (the versioned step-list JSON of `op sample`) and replays it on c.
/// Throws UserError "schedule FILE: REASON" when the file is missing or unreadable, is not
/// valid step-list JSON, or a step is illegal for c.
sched::State load_schedule(const te::Compute& c, const std::string& path);

/// `op sketches`: each sketch's loop structure (sched::to_string) and its steps. With
/// opts.json one object: {"op", "sketches": [{"index", "steps" (the step-list JSON as a value,
/// step_list_json), "loops" (the printed loop structure)}]}.
void print_sketches(const OpScheduleOptions& opts, std::ostream& out);

/// `op sample`: opts.n sampled schedules that lower, one step-list JSON per line.
void print_samples(const OpScheduleOptions& opts, std::ostream& out);

/// `op default`: the rule-based default schedule (sched::default_schedule for this host's cores
/// and vector width, or opts.cores / opts.vector_lanes): its loop structure, then its step-list
/// JSON on the last line. With opts.json one object: {"op", "cores", "vector_lanes", "steps"
/// (the step-list JSON as a value: dumped to a file it replays), "loops"}.
void print_default_schedule(const OpScheduleOptions& opts, std::ostream& out);

/// `op lower`: the loop IR of the default loop nest or of opts.schedule_file. With opts.json one
/// object: {"op", "schedule" (the file, null for the default loop nest), "ir" (the printed IR)}.
/// Target cuda: the CUDA C that codegen_cuda makes of opts.schedule_file or, without one, of the
/// GPU default schedule (what `op run --target cuda` compiles), the kernels' launch dimensions
/// first; with opts.json {"op", "schedule", "cuda", "kernels": [{"name", "grid", "block",
/// "shared_bytes"}]}. Throws UserError when the schedule does not fit the CUDA codegen's limits
/// or the build has no CUDA backend.
void print_lowered(const OpScheduleOptions& opts, std::ostream& out);

} // namespace tessera::cli
