// Whole-model compilation (`tessera build`): an ONNX model to one shared library holding its
// kernels, weights, memory plan and call sequence, with the C API of runtime/tessera_model.h.
//
//   import -> optimize (-O) -> fuse_ops -> extract_tasks
//   -> per task: the best tuning record for this machine (exact fingerprint, then ISA class;
//      tuner/lookup.h) replayed on the task's Compute, else the rule-based default schedule
//      (schedule/default_schedule.h), lowered once and shared by every group of the task
//   -> per group: one kernel call whose parameters are plan tensors (graph inputs and outputs
//      are the caller's buffers, constants are weights packed in the layout the task's schedule
//      reads, intermediates live in one arena at the offsets of graph::plan_memory)
//   -> kernels' objects + data object + runtime archive -> model.so (backends/model_object.h)
//
// With BuildOptions::target Cuda the same flow makes a model library for an NVIDIA GPU: the
// graph skips the CPU layout pass (NCHW[x]c), records are looked up for the CUDA target and
// ISA class, tasks without one get the GPU default schedule, every schedule is lowered for the
// GPU and turned into CUDA C (whose device-limit checks may also send a record back to the
// default), NVRTC compiles one cubin per task for the architecture, and the library embeds the
// cubins beside the plan and the weights (runtime/model_plan.h, PlanTarget::Cuda); it needs no
// GPU to be built.
//
// Two phases, so that a driver can report the coverage (and refuse a --strict build) before
// spending time in code generation: prepare_model_build chooses and lowers every schedule;
// write_model_library generates code and links.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tessera/compile/model_pipeline.h"
#include "tessera/graph/fusion.h"
#include "tessera/graph/graph.h"
#include "tessera/graph/passes.h"
#include "tessera/graph/tasks.h"
#include "tessera/ir/stmt.h"
#include "tessera/runtime/model_plan.h"
#include "tessera/schedule/default_schedule.h"
#include "tessera/schedule/state.h"
#include "tessera/tuner/lookup.h"

namespace tessera::compile {

/// Options of a model build.
struct BuildOptions {
    std::string model_path; ///< The .onnx file.
    /// The tuning database to take schedules from; empty: none (every task gets its default
    /// schedule). The file must exist; the build writes nothing to it.
    std::string db_path;
    /// The machine and target records are looked up for (tune::llvm_tune_target of `target`
    /// for a CPU). Required when db_path is set.
    tune::TuneTarget lookup;
    int opt_level = kDefaultOptLevel; ///< Graph pipeline level 0..3 (graph/pipeline.h).
    /// The winograd pass at -O3 (graph/passes.h); false keeps every conv direct.
    bool winograd = true;
    /// The horizontal fusion passes at -O2 and up (graph/pipeline.h): independent MatMuls and
    /// Convs of one input merged. Off by default (measured no faster on CPUs).
    bool horizontal_fusion = false;
    /// What matrix products compute on (graph/passes.h, the precision pass).
    graph::Precision precision = graph::Precision::FP32;
    /// Static shapes for graph inputs with symbolic dims (graph::ImportOptions::input_shapes).
    std::map<std::string, graph::Shape> input_shapes;
    /// Values fixing graph inputs (graph::ImportOptions::bound_inputs, `--bind`).
    std::map<std::string, graph::TensorData> bound_inputs;
    /// Threads generating code (each compiles a share of the kernels into its own object,
    /// or, for Cuda, its own cubins); 0: one per hardware thread.
    int jobs = 0;
    /// What the library runs on: Llvm (a CPU: this host's, another of its architecture, or a
    /// cross triple; default schedules assume target.num_cores cores, 0: the host's) or Cuda
    /// (cubins for target.arch, "sm_90" when empty; NVRTC must know it; the lookup key should
    /// name the same architecture).
    Target target;
    /// The runtime archive (libtessera_runtime.a) that a library for this host's architecture
    /// links (a Cuda library's host code included); empty: the one this tessera was built with
    /// (runtime_archive_for). The Python package names the copy it carries, so that an
    /// installed package does not depend on the build folder.
    std::string runtime_archive;
};

/// One row of the coverage table: a task, where its schedule came from and its estimated
/// share of a model run.
struct TaskCoverage {
    int task = 0;
    std::string pattern;
    /// What its products run on (te::product_precision): "int8", "bf16", "f32", ...
    std::string precision;
    std::string workload_key;
    int count = 0;     ///< Groups (kernel calls) of this task per model run.
    int64_t flops = 0; ///< Of one call.
    /// Where its schedule came from: the lookup tier that served (tune::LookupTier;
    /// Default: no usable record, see note for why).
    tune::LookupTier source = tune::LookupTier::Default;
    int64_t record_id =
        0; ///< The record served (Exact/IsaClass/Compatible), or the one that failed to replay.
    /// The CPU that recorded the record served (tune::recording_cpu, e.g. "rocketlake").
    std::string record_cpu;
    /// Default rows only: why no record served, e.g. "no record", "record #12 does not
    /// replay: ..." or "12 records from rocketlake: they need avx512f, absent here". Empty for
    /// served rows.
    std::string note;
    /// Ok records of the workload that belong to other machines or targets (lookup.h).
    int64_t foreign_records = 0;
    /// The record's median time of one call, seconds; 0 for Default rows.
    double tuned_secs = 0;
    /// Estimated seconds of all `count` calls of one model run: tuned_secs * count, or for a
    /// Default row an estimate (see `estimated`). 0 when nothing can be estimated.
    double total_secs = 0;
    /// True when total_secs is an estimate for a Default row: its FLOPs at the FLOP rate the
    /// served rows of this build reach together (no row was measured with the default
    /// schedule, so this is a rough guide, printed with "~").
    bool estimated = false;
    /// total_secs over the sum of every row's total_secs, in [0, 1]. When no row has a time
    /// (nothing tuned), the share of FLOPs instead (share_is_flops).
    double share = 0;
    bool share_is_flops = false;
};

/// One task of a build: what it computes, the schedule chosen for it, that schedule lowered
/// for the build's target, and its row of the coverage table.
struct TaskBuild {
    graph::Task task;
    sched::State state; ///< The chosen schedule.
    /// state lowered (not yet prepared; for Cuda lowered with LowerOptions::gpu).
    ir::LoweredFunc kernel;
    /// Cuda only: the CUDA C of its kernel function (backend::cuda::codegen_cuda) and its
    /// launches and workspace sizes (the cubin range is set by make_model_plan).
    std::string cuda_code;
    runtime::PlanCudaModule cuda_module;
    TaskCoverage coverage;
};

/// A model with every task's schedule chosen and lowered: the output of the first phase.
struct ModelBuild {
    std::string
        model_name;      ///< The model file's stem, or its folder's name when the stem is "model".
    std::string db_path; ///< The database consulted (empty: none).
    graph::Graph graph;  ///< Optimized.
    std::vector<graph::FusedGroup> groups;
    std::vector<TaskBuild> tasks; ///< In the pipeline's task order.
    Target target;           ///< As BuildOptions::target (Cuda: arch set).
    double prepare_secs = 0; ///< Wall time of prepare_model_build.

    /// The tasks' coverage rows, in task order.
    std::vector<TaskCoverage> coverage() const;
    /// Rows served by `s`.
    int tasks_served_by(tune::LookupTier s) const;
};

/// What write_model_library produced.
struct LibrarySummary {
    std::string so_path;
    int64_t weight_bytes = 0; ///< Of the packed weights, padding included.
    int64_t arena_bytes = 0;  ///< Intermediate memory of one instance.
    int num_kernels = 0;
    int num_calls = 0;
    double codegen_secs = 0; ///< Lowering passes, LLVM code generation and linking.
};

/// Phase 1: imports opts.model_path, optimizes, fuses, extracts tasks and chooses, replays and
/// lowers each task's schedule. A record that no longer replays or lowers (ScheduleError or
/// UserError), or that stores a non-weight input in a packed layout, falls back to the
/// default schedule and says so in its row. Throws UserError for an unreadable model, a
/// missing database file or an unusable option (naming the value), and as import_onnx,
/// optimize and extract_tasks do.
ModelBuild prepare_model_build(const BuildOptions& opts);

/// The runtime archive a library for the CPU of the Llvm target `cpu` links: for this host's
/// architecture `host_archive`, or when it is empty the one this tessera was built with; for
/// another, the one built for it (aarch64 when the cross packages were present at build time).
/// Throws UserError naming the target when this tessera has none for it, and as
/// backend::describe_cpu.
std::string runtime_archive_for(const Target& cpu, const std::string& host_archive = {});

/// The runtime plan of a prepared build, with the weights it references (each at its
/// PlanTensor::offset, packed as the schedules read them). Kernel i of the plan is task i's
/// function, named kernel_symbol(i). For a Cuda build, `cubins` holds task i's cubin at i
/// (required, non-empty each) and `cubin_blob`, when non-null, receives them concatenated at
/// the plan modules' offsets (what the library embeds as tessera_model_cubins); both are
/// ignored for a Cpu build. Post: runtime::validate_plan(plan) passes.
runtime::ModelPlan make_model_plan(const ModelBuild& build, std::vector<uint8_t>& weights,
                                   const std::vector<std::string>& cubins = {},
                                   std::string* cubin_blob = nullptr);

/// The C symbol of task i's kernel inside a model library.
std::string kernel_symbol(int task);

/// The graph dtype of a model input or output dtype (a TesseraDType / runtime::PlanDType value):
/// the inverse of the mapping builds use; nullopt for dtypes graph tensors do not carry (f16,
/// i8, u8) and unknown values.
std::optional<graph::DType> graph_dtype_of(int model_dtype);

/// Throws UserError naming so_path unless it can be written: its folder exists and is
/// writable, and it is not a folder or another non-regular file (a device, a pipe: the library
/// is renamed over the name). write_model_library checks it too; drivers call it
/// first to fail before any work.
void check_output_writable(const std::string& so_path);

/// Phase 2: writes the shared library `so_path` (replacing it). Kernels compile in opts.jobs
/// threads (LLVM objects, or for a Cuda build NVRTC cubins for build.target.arch). Throws
/// UserError naming the path when the output cannot be written or linking fails, and naming
/// the task when NVRTC rejects its code; UserError for a Cuda build in a tessera built
/// without the CUDA toolkit.
LibrarySummary write_model_library(const ModelBuild& build, const std::string& so_path,
                                   const BuildOptions& opts);

} // namespace tessera::compile
