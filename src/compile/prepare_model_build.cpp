// Phase 1 of a model build: graph, tasks, and one chosen and lowered schedule per task
// (model_compiler.h).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "tessera/backends/host.h"
#include "tessera/compile/model_compiler.h"
#include "tessera/schedule/default_schedule.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/schedule.h"
#include "tessera/support/error.h"
#include "tessera/tuner/database.h"

#ifdef TESSERA_HAVE_CUDA
#include "tessera/backends/cuda.h"
#endif

namespace tessera::compile {

namespace {

using Clock = std::chrono::steady_clock;

/// Throws ScheduleError when s stores an input that is not a weight in a packed layout: only
/// weights are packed when the model is built; activations arrive dense at run time.
void check_packed_inputs_are_weights(const sched::State& s) {
    for (size_t i = 0; i < s.compute.inputs.size(); ++i) {
        const int sid = s.stage_id_of(s.compute.inputs[i]);
        if (sid < 0 || s.stages[static_cast<size_t>(sid)].layout.is_identity())
            continue;
        const auto& w = s.compute.weight_inputs;
        if (std::find(w.begin(), w.end(), static_cast<int>(i)) == w.end())
            throw ScheduleError(fmt::format("input {} ('{}') is not a weight but is stored in a "
                                            "packed layout",
                                            i, s.compute.inputs[i]->name));
    }
}

/// s lowered as `symbol` for `target` (TaskBuild's state, kernel and, for Cuda, its CUDA C
/// with the module's launches and workspaces). Throws ScheduleError when s does not lower or
/// breaks a device limit.
TaskBuild lower_task(sched::State s, const std::string& symbol, const Target& target) {
    check_packed_inputs_are_weights(s);
    TaskBuild t;
    sched::LowerOptions lo;
    lo.gpu = target.is_cuda();
    // A CUDA function is named "task<i>": its kernels ("task3_kernel0") live in their own
    // module, and the CUDA codegen keeps the "tessera_" prefix for its own helpers.
    const std::string name = lo.gpu ? "task" + symbol.substr(symbol.rfind('_') + 1) : symbol;
    t.kernel = sched::lower_state(s, name, lo);
    if (target.is_cuda()) {
#ifdef TESSERA_HAVE_CUDA
        const backend::cuda::CudaSource src = backend::cuda::codegen_cuda(t.kernel);
        t.cuda_code = src.code;
        for (const backend::cuda::KernelInfo& k : src.kernels) {
            runtime::PlanCudaLaunch l;
            l.symbol = k.name;
            l.grid = k.dims.grid;
            l.block = k.dims.block;
            l.shared_bytes = 0; // the codegen's shared memory is static
            t.cuda_module.launches.push_back(std::move(l));
        }
        for (const ir::Buffer& w : src.workspaces)
            t.cuda_module.workspace_bytes.push_back(w->num_elements() * w.dtype().bytes());
#else
        TESSERA_UNREACHABLE() << "a CUDA build without the CUDA backend";
#endif
    }
    t.state = std::move(s);
    return t;
}

/// The schedule a record describes, replayed on c and lowered as `symbol`. Throws
/// ScheduleError or UserError (an unreadable schedule JSON) when it does not replay or lower.
TaskBuild replay_record(const te::Compute& c, const tune::TuningRecord& rec,
                        const std::string& symbol, const Target& target) {
    return lower_task(sched::replay(c, sched::steps_from_json(rec.schedule_json)), symbol, target);
}

/// Fills the time estimates and shares of the tasks' coverage rows (see TaskCoverage).
void estimate_shares(std::vector<TaskBuild>& tasks) {
    double tuned_flops = 0, tuned_secs = 0;
    for (TaskBuild& t : tasks) {
        TaskCoverage& r = t.coverage;
        if (r.source == tune::LookupTier::Default)
            continue;
        r.total_secs = r.tuned_secs * r.count;
        tuned_flops += static_cast<double>(r.flops) * r.count;
        tuned_secs += r.total_secs;
    }
    const double rate = tuned_secs > 0 ? tuned_flops / tuned_secs : 0;
    double total = 0, total_flops = 0;
    for (TaskBuild& t : tasks) {
        TaskCoverage& r = t.coverage;
        if (r.source == tune::LookupTier::Default && rate > 0) {
            r.total_secs = static_cast<double>(r.flops) * r.count / rate;
            r.estimated = true;
        }
        total += r.total_secs;
        total_flops += static_cast<double>(r.flops) * r.count;
    }
    for (TaskBuild& t : tasks) {
        TaskCoverage& r = t.coverage;
        if (total > 0) {
            r.share = r.total_secs / total;
        } else {
            r.share_is_flops = true;
            r.share = total_flops > 0 ? static_cast<double>(r.flops) * r.count / total_flops : 0;
        }
    }
}

} // namespace

int ModelBuild::tasks_served_by(tune::LookupTier s) const {
    return static_cast<int>(std::count_if(tasks.begin(), tasks.end(), [s](const TaskBuild& t) {
        return t.coverage.source == s;
    }));
}

std::vector<TaskCoverage> ModelBuild::coverage() const {
    std::vector<TaskCoverage> rows;
    for (const TaskBuild& t : tasks)
        rows.push_back(t.coverage);
    return rows;
}


std::string kernel_symbol(int task) { return "tessera_kernel_" + std::to_string(task); }

ModelBuild prepare_model_build(const BuildOptions& opts) {
    const Clock::time_point t0 = Clock::now();
    // parse_target's checks, for a Target made in code.
    const Target target = parse_target(opts.target.str());
    if (target.is_cuda()) {
#ifndef TESSERA_HAVE_CUDA
        throw UserError() << "target cuda: this tessera was built without the CUDA toolkit";
#endif
    } else {
        // Before the import: a target it cannot link.
        (void)runtime_archive_for(target, opts.runtime_archive);
    }
    std::error_code ec;
    if (!std::filesystem::is_regular_file(opts.model_path, ec))
        throw UserError() << "model '" << opts.model_path << "': no such file";

    std::optional<tune::TuningDatabase> db;
    if (!opts.db_path.empty()) {
        if (!tune::is_server_database(opts.db_path) &&
            !std::filesystem::is_regular_file(opts.db_path, ec))
            throw UserError() << "database '" << opts.db_path << "': no such file";
        if (opts.lookup.target.empty() || opts.lookup.fingerprint.empty())
            throw UserError() << "a database lookup needs a target and a fingerprint (got "
                              << "target '" << opts.lookup.target << "')";
        db.emplace(opts.db_path);
    }

    ModelBuild b;
    // The file's stem, or its folder's name for the usual "<name>/model.onnx" layout.
    const std::filesystem::path model_path = std::filesystem::absolute(opts.model_path);
    b.model_name = model_path.stem().string();
    if (b.model_name == "model" && model_path.parent_path().has_filename())
        b.model_name = model_path.parent_path().filename().string();
    b.db_path = opts.db_path;
    b.target = target;
    if (target.is_cuda() && b.target.arch.empty())
        b.target.arch = "sm_90";
    ModelPipelineOptions mpo;
    mpo.model_path = opts.model_path;
    mpo.import.input_shapes = opts.input_shapes;
    mpo.import.bound_inputs = opts.bound_inputs;
    mpo.opt_level = opts.opt_level;
    mpo.precision = opts.precision;
    mpo.target = target;
    mpo.winograd = opts.winograd;
    mpo.horizontal_fusion = opts.horizontal_fusion;
    ModelPipeline pipeline = run_model_pipeline(mpo);
    b.graph = std::move(pipeline.graph);
    b.groups = std::move(pipeline.groups);

    sched::DefaultScheduleOptions dso = tune::default_schedule_options_for(target);
    dso.gpu_tf32 = opts.precision == graph::Precision::TF32;

    for (size_t i = 0; i < pipeline.tasks.size(); ++i) {
        graph::Task& task = pipeline.tasks[i];
        const te::Compute& c = task.compute.compute;
        const std::string symbol = kernel_symbol(static_cast<int>(i));
        TaskCoverage row;
        row.task = static_cast<int>(i);
        row.pattern = task.pattern;
        row.precision = te::product_precision(c);
        row.workload_key = task.workload_key;
        row.count = task.count();
        row.flops = task.flops;

        std::optional<TaskBuild> lowered;
        if (db) {
            const tune::LookupResult lr = tune::lookup_best(*db, task.workload_key, opts.lookup,
                                                            tune::needs_by_replay(c));
            row.foreign_records = lr.foreign_records;
            if (lr.tier != tune::LookupTier::Default) {
                const tune::TuningRecord& rec = *lr.record;
                row.record_id = rec.id;
                try {
                    lowered = replay_record(c, rec, symbol, target);
                    row.source = lr.tier;
                    row.record_cpu = lr.record_cpu;
                    row.tuned_secs = rec.median_secs;
                } catch (const ScheduleError& e) {
                    row.note = fmt::format("record #{} does not replay: {}", rec.id, e.what());
                } catch (const UserError& e) {
                    row.note = fmt::format("record #{} does not replay: {}", rec.id, e.what());
                }
            } else {
                row.note = !lr.why_none.empty() ? lr.why_none : "no record";
            }
        } else {
            row.note = "no database";
        }
        if (!lowered) {
            dso.weight_inputs = c.weight_inputs;
            try {
                lowered = lower_task(sched::default_schedule(c, dso), symbol, target);
            } catch (const ScheduleError& e) {
                TESSERA_CHECK(false) << "the default schedule of task " << i << " (" << task.pattern
                                     << ") does not lower: " << e.what();
            }
        }
        lowered->task = std::move(task);
        lowered->coverage = std::move(row);
        b.tasks.push_back(std::move(*lowered));
    }
    estimate_shares(b.tasks);
    b.prepare_secs = std::chrono::duration<double>(Clock::now() - t0).count();
    return b;
}

} // namespace tessera::compile
