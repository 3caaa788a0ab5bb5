// `tessera op run`: an operator's default schedule (or a tuning record's with --db, a file's
// with --schedule, the naive loop nest with --naive) through the LLVM JIT, or on the CUDA device
// with --target cuda, checked against the tensor-expression reference and timed.
#include "op_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "op_schedule.h"
#include "tune_command.h"
#include "tessera/backends/llvm.h"
#include "tessera/compile/model_compiler.h"
#include "tessera/lower/lower_default.h"
#include "tessera/runtime/thread_pool.h"
#include "tessera/schedule/default_schedule.h"
#include "tessera/schedule/layout.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/step.h"
#include "tessera/support/error.h"
#include "tessera/support/rng.h"
#include "tessera/te/op_registry.h"
#include "tessera/te/reference_eval.h"
#include "tessera/te/tensor.h"
#include "tessera/te/workload_key.h"
#include "tessera/tuner/database.h"
#include "tessera/tuner/host_buffer.h"
#include "tessera/tuner/lookup.h"
#ifdef TESSERA_HAVE_CUDA
#include "tessera/backends/cuda.h"
#include "tessera/backends/cuda_driver.h"
#include "tessera/schedule/gpu_sampling.h"
#endif

namespace tessera::cli {

using namespace ir;

namespace {

using tune::HostBuffer;

/// Host memory for the elements of `shape` in `dtype` of the parameter `name`. The sizes come
/// from the user's spec: more than the machine's memory is bad input, refused before asking
/// (with overcommit the mapping may succeed and the first pages written end in the OOM killer).
HostBuffer host_buffer(const std::string& name, DataType dtype,
                       const std::vector<int64_t>& shape) {
    const int64_t count = te::num_elements(shape);
    const int64_t bytes = count * dtype.bytes();
    const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page_size > 0 && bytes / page_size > pages)
        throw UserError() << "out of memory: " << name << " " << te::shape_to_string(shape)
                          << " needs " << bytes << " bytes";
    return HostBuffer(dtype, count);
}

std::vector<int64_t> unflatten(int64_t flat, const std::vector<int64_t>& shape) {
    std::vector<int64_t> idx(shape.size());
    for (size_t d = shape.size(); d-- > 0;) {
        idx[d] = flat % shape[d];
        flat /= shape[d];
    }
    return idx;
}

double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    double pos = p * (v.size() - 1);
    size_t lo = static_cast<size_t>(pos);
    size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

/// The schedule `op run --db` chose: a replayed record, or none (the default schedule runs).
struct DbSchedule {
    tune::LookupTier tier = tune::LookupTier::Default;
    int64_t record_id = 0;
    std::optional<sched::State> state; ///< Empty: run the default schedule.
    LoweredFunc func;                  ///< state lowered, when state is set.
    std::string note;                  ///< One line for the report: the tier and why.
};

/// Looks up the best record of inst's workload in db_path (tune::lookup_best: exact machine
/// first, then the same ISA class) and replays it; none when there is no record or it no
/// longer replays or lowers.
DbSchedule schedule_from_db(const te::OpInstance& inst, const std::string& db_path,
                            const tune::TuneTarget& target, const sched::LowerOptions& lower_opts) {
    // What runs without a record: on a GPU there is no rule-based default schedule yet.
    const char* fallback = lower_opts.gpu ? "a sampled GPU schedule" : "the default schedule";
    const tune::TuningDatabase db = open_existing_tune_database(db_path, "--db " + db_path);
    const std::string key = te::workload_key(inst.compute);

    DbSchedule chosen;
    const tune::LookupResult found =
        tune::lookup_best(db, key, {target.target, target.fingerprint, target.isa_class},
                          tune::needs_by_replay(inst.compute));
    const std::string foreign =
        found.foreign_records > 0
            ? fmt::format(" ({} records of other targets or ISA classes passed over)",
                          found.foreign_records)
            : std::string();
    if (found.tier == tune::LookupTier::Default || !found.record) {
        chosen.note = fmt::format(
            "default: {} has no ok record of this workload (key {}) for target '{}' on this "
            "machine, its ISA class ({}) or a compatible CPU{}; running {}",
            db_path, key.substr(0, 16), target.target, target.isa_class,
            found.why_none.empty() ? foreign : " (" + found.why_none + ")", fallback);
        return chosen;
    }
    const tune::TuningRecord& rec = *found.record;
    chosen.tier = found.tier;
    try {
        sched::State s = sched::replay(inst.compute, sched::steps_from_json(rec.schedule_json));
        chosen.func = sched::lower_state(s, "kernel", lower_opts);
        chosen.state = std::move(s);
    } catch (const std::exception& e) { // ScheduleError or UserError (another JSON version)
        chosen.tier = tune::LookupTier::Default;
        chosen.note = fmt::format("default: record {} of {} does not replay on this version of "
                                  "tessera ({}); running {}",
                                  rec.id, db_path, e.what(), fallback);
        return chosen;
    }
    chosen.record_id = rec.id;
    const double tuned_gflops = inst.flops / rec.median_secs / 1e9;
    chosen.note =
        chosen.tier == tune::LookupTier::Exact
            ? fmt::format("exact: best record {} measured on this machine (fingerprint {}), "
                          "{:.4g} ms, {:.2f} GFLOP/s when tuned{}",
                          rec.id, rec.fingerprint, rec.median_secs * 1e3, tuned_gflops, foreign)
        : chosen.tier == tune::LookupTier::IsaClass
            ? fmt::format("isa_class: best record {} measured on {}, another machine of this ISA "
                          "class (fingerprint {}, class {}), {:.4g} ms there{}",
                          rec.id, found.record_cpu, rec.fingerprint, rec.isa_class,
                          rec.median_secs * 1e3, foreign)
            : fmt::format("compatible: record {} measured on {} (fingerprint {}), whose code "
                          "needs only what this CPU has, {:.4g} ms there{}",
                          rec.id, found.record_cpu, rec.fingerprint, rec.median_secs * 1e3,
                          foreign);
    return chosen;
}

/// The rule-based default schedule of inst for `target` (its CPU's cores and vector width).
sched::State host_default_schedule(const te::OpInstance& inst, const Target& target) {
    // The options an untuned model build uses for the target, so that `op run` times what a
    // build would run.
    sched::DefaultScheduleOptions o = tune::default_schedule_options_for(target);
    o.weight_inputs = inst.weight_inputs;
    return sched::default_schedule(inst.compute, o);
}

/// Runs the chosen function on the parameter buffers (inputs, then outputs) and times it.
class KernelRunner {
  public:
    virtual ~KernelRunner() = default;
    /// One run: the outputs in `buffers` hold the result afterwards.
    virtual void run(std::vector<HostBuffer>& buffers) = 0;
    /// The time of one run in milliseconds, on the data of the last run().
    virtual double time_ms(std::vector<HostBuffer>& buffers) = 0;
    /// What runs it, for the report ("" for the CPU: the threads line says it).
    virtual std::string device() const { return {}; }
};

/// The CPU through the LLVM JIT; timed with the steady clock around the call.
class JitRunner : public KernelRunner {
  public:
    explicit JitRunner(const LoweredFunc& f)
        : jit_(backend::JitModule::compile({f})),
          kernel_(jit_->get(f.name)) {}
    void run(std::vector<HostBuffer>& buffers) override { kernel_(args(buffers).data()); }
    double time_ms(std::vector<HostBuffer>& buffers) override {
        std::vector<void*> a = args(buffers);
        auto t0 = std::chrono::steady_clock::now();
        kernel_(a.data());
        auto t1 = std::chrono::steady_clock::now();
        return std::chrono::duration<double, std::milli>(t1 - t0).count();
    }

  private:
    static std::vector<void*> args(std::vector<HostBuffer>& buffers) {
        std::vector<void*> a;
        for (HostBuffer& b : buffers) a.push_back(b.data());
        return a;
    }
    std::unique_ptr<backend::JitModule> jit_;
    backend::JitModule::KernelFn kernel_;
};

#ifdef TESSERA_HAVE_CUDA
/// CUDA device 0: CUDA C from the GPU-lowered function, a cubin from NVRTC for the device's
/// architecture; each run copies every parameter in and the outputs back; timed with CUDA
/// events (one untimed run before each timed one, inside DeviceFunction::time_ms).
class CudaRunner : public KernelRunner {
  public:
    CudaRunner(const LoweredFunc& f, size_t num_inputs) : num_inputs_(num_inputs) {
        namespace cuda = backend::cuda;
        const cuda::DeviceInfo& d = cuda::CudaDriver::get().device();
        cuda::DeviceLimits limits;
        limits.max_threads_per_block = d.max_threads_per_block;
        limits.max_shared_bytes = d.max_shared_per_block;
        cuda::CudaSource src;
        try {
            src = cuda::codegen_cuda(f, limits);
        } catch (const ScheduleError& e) {
            throw UserError() << "--target cuda: the schedule does not fit the device: " << e.what();
        }
        cuda::NvrtcOptions o;
        o.arch = d.arch();
        o.want_ptx = false;
        fn_ = std::make_unique<cuda::DeviceFunction>(src, cuda::nvrtc_compile(src.code, f.name, o).cubin);
        device_ = fmt::format("{} ({}), {} kernel{}", d.name, d.arch(), src.kernels.size(),
                              src.kernels.size() == 1 ? "" : "s");
    }
    void run(std::vector<HostBuffer>& buffers) override {
        for (size_t i = 0; i < buffers.size(); ++i) fn_->copy_in(i, buffers[i].data());
        fn_->run();
        for (size_t i = num_inputs_; i < buffers.size(); ++i) fn_->copy_out(i, buffers[i].data());
    }
    double time_ms(std::vector<HostBuffer>&) override { return fn_->time_ms(1); }
    std::string device() const override { return device_; }

  private:
    size_t num_inputs_;
    std::unique_ptr<backend::cuda::DeviceFunction> fn_;
    std::string device_;
};

/// The rule-based GPU default schedule of the operator (what an untuned CUDA model build runs).
sched::State gpu_default_schedule(const te::OpInstance& inst, bool tf32) {
    sched::DefaultScheduleOptions o;
    o.target = sched::TargetKind::Gpu;
    o.weight_inputs = inst.weight_inputs;
    o.gpu_tf32 = tf32;
    return sched::default_schedule(inst.compute, o);
}
#endif

std::unique_ptr<KernelRunner> make_runner(bool gpu, const LoweredFunc& f, size_t num_inputs) {
#ifdef TESSERA_HAVE_CUDA
    if (gpu) return std::make_unique<CudaRunner>(f, num_inputs);
#endif
    TESSERA_CHECK(!gpu) << "--target cuda without the CUDA backend";
    return std::make_unique<JitRunner>(f);
}

/// The layout each input of c is stored in under schedule s (packed before the call).
std::vector<sched::LayoutTransform> input_layouts(const sched::State& s, const te::Compute& c) {
    std::vector<sched::LayoutTransform> layouts;
    for (const Tensor& t : c.inputs)
        layouts.push_back(s.stages[s.stage_id_of(t)].layout);
    return layouts;
}

/// A compiled kernel with its parameter buffers (inputs in its layouts, then outputs).
struct Kernel {
    std::vector<sched::LayoutTransform> layouts; ///< One per input of the compute.
    std::unique_ptr<KernelRunner> runner;
    std::vector<HostBuffer> buffers;
};

Kernel prepare_kernel(bool gpu, const LoweredFunc& f, std::vector<sched::LayoutTransform> layouts,
                      const te::OpInstance& inst) {
    Kernel k;
    k.layouts = std::move(layouts);
    k.runner = make_runner(gpu, f, inst.compute.inputs.size());
    // Parameters are the compute's inputs, then its outputs (lower_default's and
    // lower_state's contract).
    for (const auto& p : f.params)
        k.buffers.push_back(host_buffer(p.name(), p.dtype(), p.shape()));
    return k;
}

/// Copies (or packs, for an input stored in a transformed layout) the dense inputs into k's
/// parameters and poisons its outputs.
void fill_parameters(Kernel& k, const te::OpInstance& inst,
                     const std::vector<HostBuffer>& dense_inputs) {
    const size_t num_inputs = inst.compute.inputs.size();
    for (size_t i = 0; i < k.buffers.size(); ++i) {
        if (i >= num_inputs) {
            tune::poison(k.buffers[i]);
            continue;
        }
        const Tensor& t = inst.compute.inputs[i];
        if (k.layouts[i].is_identity())
            std::memcpy(k.buffers[i].data(), dense_inputs[i].data(), dense_inputs[i].bytes());
        else
            sched::pack_layout(k.layouts[i], t.shape(), t.dtype().bytes(), dense_inputs[i].data(),
                               k.buffers[i].data());
    }
}

struct CheckResult {
    double max_rel_err = 0;
    int64_t checked = 0, total = 0; ///< Output elements checked, and in all.
};

/// Compares k's outputs (after a run) with the reference: every element when the reference
/// is cheap, a seeded sample otherwise.
CheckResult check_outputs(const Kernel& k, const te::OpInstance& inst,
                          const std::vector<HostBuffer>& dense_inputs, const OpRunOptions& opts) {
    CheckResult c;
    const size_t num_inputs = inst.compute.inputs.size();
    te::ReferenceEvaluator ref;
    for (size_t i = 0; i < num_inputs; ++i)
        ref.bind(inst.compute.inputs[i], dense_inputs[i].data());
    for (size_t o = 0; o < inst.compute.outputs.size(); ++o) {
        const Tensor& t = inst.compute.outputs[o];
        const HostBuffer& hb = k.buffers[num_inputs + o];
        int64_t n = hb.num_elements();
        double cost = std::max(1.0, inst.flops / std::max<int64_t>(1, n));
        int64_t budget = std::max<int64_t>(64, static_cast<int64_t>(opts.check_budget / cost));
        bool all = budget >= n;
        int64_t count = all ? n : budget;
        Rng pick(opts.seed ^ 0x5eedULL);
        for (int64_t e = 0; e < count; ++e) {
            int64_t flat = all ? e : pick.uniform_int(0, n - 1);
            double want = ref.at(t, unflatten(flat, t.shape()));
            c.max_rel_err = std::max(c.max_rel_err,
                                     tune::element_error(tune::element_as_double(hb, flat), want));
        }
        c.checked += count;
        c.total += n;
    }
    return c;
}

} // namespace

OpRunResult run_op(const OpRunOptions& opts, std::ostream& out) {
    if (opts.repeat < 1) throw UserError() << "--repeat must be at least 1, got " << opts.repeat;
    if (opts.threads < 0) throw UserError() << "--threads must be >= 0, got " << opts.threads;
    const Target target = checked_target(opts.target, opts.tf32);
    const bool gpu = target.is_cuda();
    // The device, before anything is compiled: one line naming why there is none.
    const std::optional<tune::TuneTarget> cuda_target =
        gpu ? std::optional<tune::TuneTarget>(cuda_tune_target()) : std::nullopt;
    sched::LowerOptions lower_opts;
    lower_opts.gpu = gpu;

    te::OpInstance inst = te::make_op(te::parse_op_spec(opts.spec));
    runtime::set_num_threads(opts.threads);

    OpRunResult r;
    r.op = inst.name;
    r.spec = inst.canonical_spec;
    r.schedule = "naive loop nest";
    r.threads = runtime::num_threads();
    r.flops = inst.flops;

    LoweredFunc func;
    std::vector<sched::LayoutTransform> layouts(inst.compute.inputs.size());
    std::string db_note; // with --db: which tier served, and why
    std::optional<sched::State> scheduled;
    if (!opts.schedule_file.empty() && !opts.db.empty())
        throw UserError() << "--schedule " << opts.schedule_file << " and --db " << opts.db
                          << " exclude each other";
    if (!opts.beside.empty() && gpu)
        throw UserError() << "--beside runs on the CPU only; it cannot be used with --target "
                          << opts.target;
    if (opts.naive && (!opts.schedule_file.empty() || !opts.db.empty()))
        throw UserError() << "--naive excludes --schedule and --db";
    if (!opts.schedule_file.empty()) {
        const sched::State s = load_schedule(inst.compute, opts.schedule_file);
        try {
            func = sched::lower_state(s, "kernel", lower_opts);
        } catch (const ScheduleError& e) {
            throw UserError() << "schedule " << opts.schedule_file << ": " << e.what();
        }
        r.schedule = fmt::format("{} ({} steps)", opts.schedule_file, s.steps.size());
        scheduled = s;
    } else if (!opts.db.empty()) {
        const tune::TuneTarget key = gpu ? *cuda_target : tune::llvm_tune_target(target);
        DbSchedule chosen = schedule_from_db(inst, opts.db, key, lower_opts);
        r.tier = chosen.tier;
        r.record_id = chosen.record_id;
        db_note = chosen.note;
        if (chosen.state) {
            func = chosen.func;
            r.schedule = fmt::format("record {} of {} ({} steps)", chosen.record_id, opts.db,
                                     chosen.state->steps.size());
            scheduled = std::move(chosen.state);
        }
    }
    if (!scheduled && !opts.naive && !gpu) {
        scheduled = host_default_schedule(inst, target);
        r.schedule = fmt::format("default schedule ({} steps)", scheduled->steps.size());
    }
#ifdef TESSERA_HAVE_CUDA
    if (!scheduled && !opts.naive && gpu) {
        scheduled = gpu_default_schedule(inst, opts.tf32);
        r.schedule = fmt::format("GPU default schedule ({} steps)", scheduled->steps.size());
    }
#endif
    if (scheduled) {
        const sched::State& s = *scheduled;
        if (!func.body.defined())
            func = sched::lower_state(s, "kernel", lower_opts);
        layouts = input_layouts(s, inst.compute);
    } else {
        func = lower::lower_default(inst.compute, "kernel");
    }
    Kernel main_kernel = prepare_kernel(gpu, func, layouts, inst);
    r.device = main_kernel.runner->device();

    // Inputs are filled in their dense row-major shape (what the reference reads) and packed
    // into each kernel's parameters in its own layouts.
    std::vector<HostBuffer> dense_inputs;
    Rng rng(opts.seed);
    for (const auto& t : inst.compute.inputs) {
        dense_inputs.push_back(host_buffer(t.name(), t.dtype(), t.shape()));
        tune::fill_random(dense_inputs.back(), rng);
    }
    fill_parameters(main_kernel, inst, dense_inputs);
    main_kernel.runner->run(main_kernel.buffers); // also the warm-up run
    const CheckResult main_check = check_outputs(main_kernel, inst, dense_inputs, opts);
    r.max_rel_err = main_check.max_rel_err;
    r.checked = main_check.checked;
    r.total = main_check.total;
    r.passed = r.max_rel_err <= opts.tolerance;

    // --beside: a second schedule, checked the same way, each of its runs just before one of
    // the first's, so that both meet the same phases of a drifting host.
    std::optional<Kernel> beside;
    std::string beside_name;
    CheckResult beside_check;
    if (!opts.beside.empty()) {
        sched::State bs = opts.beside == "default" ? host_default_schedule(inst, target)
                                                   : load_schedule(inst.compute, opts.beside);
        LoweredFunc bf;
        try {
            bf = sched::lower_state(bs, "kernel", lower_opts);
        } catch (const ScheduleError& e) {
            throw UserError() << "--beside " << opts.beside << ": " << e.what();
        }
        beside = prepare_kernel(false, bf, input_layouts(bs, inst.compute), inst);
        fill_parameters(*beside, inst, dense_inputs);
        beside->runner->run(beside->buffers);
        beside_check = check_outputs(*beside, inst, dense_inputs, opts);
        beside_name = opts.beside == "default"
                          ? fmt::format("default schedule ({} steps)", bs.steps.size())
                          : fmt::format("{} ({} steps)", opts.beside, bs.steps.size());
        r.beside_passed = beside_check.max_rel_err <= opts.tolerance;
        r.passed = r.passed && r.beside_passed;
    }

    std::vector<double> ms, beside_ms, ratios;
    for (int i = 0; i < opts.repeat; ++i) {
        if (beside)
            beside_ms.push_back(beside->runner->time_ms(beside->buffers));
        ms.push_back(main_kernel.runner->time_ms(main_kernel.buffers));
        if (beside && beside_ms.back() > 0)
            ratios.push_back(ms.back() / beside_ms.back());
    }
    r.median_ms = percentile(ms, 0.5);
    r.min_ms = *std::min_element(ms.begin(), ms.end());
    r.max_ms = *std::max_element(ms.begin(), ms.end());
    r.spread_pct = r.median_ms > 0 ? (percentile(ms, 0.9) - percentile(ms, 0.1)) / r.median_ms * 100 : 0;
    r.gflops = r.flops / (r.median_ms * 1e-3) / 1e9;
    if (beside) {
        r.beside_median_ms = percentile(beside_ms, 0.5);
        if (!ratios.empty()) {
            r.ratio_median = percentile(ratios, 0.5);
            r.ratio_p10 = percentile(ratios, 0.1);
            r.ratio_p90 = percentile(ratios, 0.9);
        }
    }

    out << fmt::format("op        {}\n", r.spec);
    out << fmt::format("schedule  {}\n", r.schedule);
    if (!db_note.empty())
        out << fmt::format("tuning    {}\n", db_note);
    if (r.device.empty())
        out << fmt::format("threads   {}\n", r.threads);
    else
        out << fmt::format("device    {}\n", r.device);
    out << fmt::format("check     {}: max rel error {:.3g} over {} of {} output elements{} "
                       "(tolerance {:.3g})\n",
                       r.max_rel_err <= opts.tolerance ? "ok" : "FAILED", r.max_rel_err, r.checked,
                       r.total, r.checked < r.total ? " (seeded sample)" : "", opts.tolerance);
    out << fmt::format("time      median {:.4f} ms, min {:.4f}, max {:.4f}, p10-p90 spread "
                       "{:.1f}% over {} runs\n",
                       r.median_ms, r.min_ms, r.max_ms, r.spread_pct, opts.repeat);
    out << fmt::format("speed     {:.2f} GFLOP/s\n", r.gflops);
    if (beside) {
        out << fmt::format("beside    {}: check {} (max rel error {:.3g}), median {:.4f} ms, "
                           "{:.2f} GFLOP/s\n",
                           beside_name, r.beside_passed ? "ok" : "FAILED", beside_check.max_rel_err,
                           r.beside_median_ms, r.flops / (r.beside_median_ms * 1e-3) / 1e9);
        out << fmt::format("ratio     this / beside, run by run: median {:.3f} (p10 {:.3f}, "
                           "p90 {:.3f}) over {} pairs\n",
                           r.ratio_median, r.ratio_p10, r.ratio_p90, ratios.size());
    }
    if (opts.json) {
        nlohmann::ordered_json j;
        j["op"] = r.op;
        j["spec"] = r.spec;
        j["schedule"] = r.schedule;
        if (r.tier) {
            j["tier"] = to_string(*r.tier);
            j["record_id"] = r.record_id ? nlohmann::ordered_json(r.record_id) : nullptr;
        }
        j["target"] = opts.target;
        if (!r.device.empty())
            j["device"] = r.device;
        j["threads"] = r.threads;
        j["flops"] = r.flops;
        j["median_ms"] = r.median_ms;
        j["min_ms"] = r.min_ms;
        j["max_ms"] = r.max_ms;
        j["spread_pct"] = r.spread_pct;
        j["gflops"] = r.gflops;
        j["max_rel_err"] = r.max_rel_err;
        j["checked_elements"] = r.checked;
        j["total_elements"] = r.total;
        j["passed"] = r.passed;
        j["runs_ms"] = ms;
        if (beside) {
            j["beside"] = beside_name;
            j["beside_passed"] = r.beside_passed;
            j["beside_max_rel_err"] = beside_check.max_rel_err;
            j["beside_median_ms"] = r.beside_median_ms;
            j["beside_runs_ms"] = beside_ms;
            j["ratio_median"] = r.ratio_median;
            j["ratio_p10"] = r.ratio_p10;
            j["ratio_p90"] = r.ratio_p90;
        }
        out << j.dump() << "\n";
    }
    return r;
}

} // namespace tessera::cli
