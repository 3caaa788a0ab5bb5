// The CUDA measurer: GPU candidates lowered, compiled to cubins with NVRTC on build threads,
// then checked against a CPU reference and timed with CUDA events on the device, in this
// process (see include/tessera/tuner/cuda_measure.h for the contract and its limits).
#ifdef TESSERA_HAVE_CUDA

#include "tessera/tuner/cuda_measure.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "tessera/backends/cuda.h"
#include "tessera/backends/cuda_driver.h"
#include "tessera/backends/llvm.h"
#include "tessera/lower/lower_default.h"
#include "tessera/lower/lower_for_codegen.h"
#include "tessera/runtime/thread_pool.h"
#include "tessera/schedule/default_schedule.h"
#include "tessera/schedule/layout.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/support/error.h"
#include "tessera/te/workload_key.h"
#include "tessera/tuner/host_buffer.h"
#include "tessera/tuner/tune_target.h"

namespace tessera::tune {

namespace cuda = backend::cuda;

namespace {

using Clock = std::chrono::steady_clock;

double secs_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// One task's host data: dense inputs, inputs packed per layout, reference outputs.
struct TaskData {
    std::vector<HostBuffer> inputs;     ///< Dense row-major, one per compute input.
    std::vector<HostBuffer> references; ///< One per compute output.
    /// Packed inputs by "<input index>:<layout text>".
    std::map<std::string, HostBuffer> packed;
};

std::string layout_key(size_t input, const sched::LayoutTransform& t) {
    std::string s = std::to_string(input) + ":f";
    for (int64_t f : t.factors)
        s += "_" + std::to_string(f);
    s += "_o";
    for (int o : t.order)
        s += "_" + std::to_string(o);
    return s;
}

/// `dense` (an input of shape `shape`) stored in `layout`.
HostBuffer pack_input(const HostBuffer& dense, const ir::Tensor& t,
                      const sched::LayoutTransform& layout) {
    sched::check_layout(layout, t.shape());
    const std::vector<int64_t> shape = sched::packed_shape(layout, t.shape());
    HostBuffer packed(t.dtype(), ir::Buffer::make(t.name(), t.dtype(), shape)->num_elements());
    sched::pack_layout(layout, t.shape(), static_cast<size_t>(t.dtype().bytes()), dense.data(),
                       packed.data());
    return packed;
}

/// The CPU reference of c on `inputs`: the default schedule (parallel and vectorized: a large
/// task's reference takes seconds, where the naive nest would take minutes), or the naive nest
/// when the default schedule does not lower. Returns one buffer per output.
std::vector<HostBuffer> cpu_reference(const te::Compute& c, const std::vector<HostBuffer>& inputs) {
    ir::LoweredFunc f;
    std::vector<sched::LayoutTransform> layouts(c.inputs.size());
    try {
        const sched::State s = sched::default_schedule(c, default_schedule_options_for(Target{}));
        f = sched::lower_state(s, "tessera_reference");
        for (size_t i = 0; i < c.inputs.size(); ++i) {
            const int sid = s.stage_id_of(c.inputs[i]);
            if (sid >= 0)
                layouts[i] = s.stages[static_cast<size_t>(sid)].layout;
        }
    } catch (const ScheduleError&) {
        f = lower::lower_default(c, "tessera_reference");
        layouts.assign(c.inputs.size(), sched::LayoutTransform());
    }
    f = lower::prepare_for_codegen(f);
    std::vector<HostBuffer> packed; // inputs stored in another layout by the default schedule
    std::vector<void*> args;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
        if (layouts[i].is_identity()) {
            args.push_back(const_cast<void*>(inputs[i].data()));
        } else {
            packed.push_back(pack_input(inputs[i], c.inputs[i], layouts[i]));
            args.push_back(packed.back().data());
        }
    }
    std::vector<HostBuffer> outputs;
    outputs.reserve(c.outputs.size());
    for (size_t o = c.inputs.size(); o < f.params.size(); ++o) {
        outputs.emplace_back(f.params[o]);
        args.push_back(outputs.back().data());
    }
    auto jit = backend::JitModule::compile({f});
    jit->get("tessera_reference")(args.data());
    return outputs;
}

/// A candidate after the build threads: its CUDA source and cubin, or why it has none.
struct BuiltCandidate {
    MeasureError error = MeasureError::Ok;
    std::string error_message;
    double build_secs = 0;
    cuda::CudaSource source;
    std::string cubin;
};

BuiltCandidate build_candidate(const MeasureCandidate& cand, const std::string& name,
                               const cuda::DeviceLimits& limits, const std::string& arch) {
    BuiltCandidate b;
    const Clock::time_point t0 = Clock::now();
    ir::LoweredFunc f;
    try {
        f = cand.lower(name);
        b.source = cuda::codegen_cuda(f, limits); // ScheduleError: a device limit
    } catch (const std::exception& e) {
        b.error = MeasureError::Instantiation;
        b.error_message = e.what();
        b.build_secs = secs_since(t0);
        return b;
    }
    try {
        cuda::NvrtcOptions o;
        o.arch = arch;
        o.want_ptx = false;
        b.cubin = cuda::nvrtc_compile(b.source.code, name, o).cubin;
    } catch (const std::exception& e) {
        b.error = MeasureError::CompileDevice;
        b.error_message = e.what();
    }
    b.build_secs = secs_since(t0);
    return b;
}

} // namespace

void validate(const CudaMeasureOptions& o) {
    if (o.build_threads < 0)
        throw UserError() << "build_threads must be >= 0, got " << o.build_threads;
    if (o.warmup < 0)
        throw UserError() << "warmup must be >= 0, got " << o.warmup;
    if (o.min_repeats < 1)
        throw UserError() << "min_repeats must be >= 1, got " << o.min_repeats;
    if (o.max_repeats < o.min_repeats)
        throw UserError() << "max_repeats (" << o.max_repeats << ") must be >= min_repeats ("
                          << o.min_repeats << ")";
    if (!(o.min_repeat_secs >= 0))
        throw UserError() << "min_repeat_secs must be >= 0, got " << o.min_repeat_secs;
    if (!(o.tolerance >= 0))
        throw UserError() << "tolerance must be >= 0, got " << o.tolerance;
    if (!(o.slow_factor == 0 || o.slow_factor >= 1))
        throw UserError() << "slow_factor must be 0 (off) or at least 1, got " << o.slow_factor;
    if (!(o.run_timeout_secs > 0))
        throw UserError() << "run_timeout_secs must be > 0, got " << o.run_timeout_secs;
}

std::string cuda_target_string() {
    return "cuda -arch=" + cuda::CudaDriver::get().device().arch();
}

MeasureCandidate cuda_candidate_from_state(const sched::State& s) {
    MeasureCandidate c;
    c.lower = [s](const std::string& name) {
        sched::LowerOptions o;
        o.gpu = true;
        return sched::lower_state(s, name, o);
    };
    for (const ir::Tensor& t : s.compute.inputs) {
        const int sid = s.stage_id_of(t);
        c.input_layouts.push_back(sid >= 0 ? s.stages[static_cast<size_t>(sid)].layout
                                           : sched::LayoutTransform());
    }
    return c;
}

struct CudaMeasurer::Impl {
    CudaMeasureOptions opts;
    cuda::DeviceInfo device;
    cuda::DeviceLimits limits;
    std::map<std::string, TaskData> tasks;   ///< By workload key.
    std::map<std::string, double> best_secs; ///< Best median known per workload key.
    int64_t next_candidate = 0;              ///< Names kernels uniquely over the Measurer's life.

    TaskData& task_data(const te::Compute& c);
    const HostBuffer& input_data(const te::Compute& c, TaskData& task, size_t i,
                                 const sched::LayoutTransform& layout);
    std::vector<BuiltCandidate> build(const std::vector<MeasureCandidate>& candidates);
    /// Checks and times one built candidate on the device.
    void run(const te::Compute& c, TaskData& task, const BuiltCandidate& built,
             const std::vector<sched::LayoutTransform>& layouts, MeasureResult& r);
};

TaskData& CudaMeasurer::Impl::task_data(const te::Compute& c) {
    const std::string key = te::workload_key(c);
    auto it = tasks.find(key);
    if (it != tasks.end())
        return it->second;
    TaskData task;
    Rng rng(opts.seed);
    for (const ir::Tensor& t : c.inputs) {
        HostBuffer b(t.dtype(), ir::Buffer::make(t.name(), t.dtype(), t.shape())->num_elements());
        fill_random(b, rng);
        task.inputs.push_back(std::move(b));
    }
    task.references = cpu_reference(c, task.inputs);
    return tasks.emplace(key, std::move(task)).first->second;
}

const HostBuffer& CudaMeasurer::Impl::input_data(const te::Compute& c, TaskData& task, size_t i,
                                                 const sched::LayoutTransform& layout) {
    if (layout.is_identity())
        return task.inputs[i];
    const std::string key = layout_key(i, layout);
    auto it = task.packed.find(key);
    if (it == task.packed.end())
        it = task.packed.emplace(key, pack_input(task.inputs[i], c.inputs[i], layout)).first;
    return it->second;
}

std::vector<BuiltCandidate>
CudaMeasurer::Impl::build(const std::vector<MeasureCandidate>& candidates) {
    std::vector<BuiltCandidate> built(candidates.size());
    const int64_t first = next_candidate;
    next_candidate += static_cast<int64_t>(candidates.size());
    const int threads = std::max(
        1, std::min<int>(opts.build_threads > 0 ? opts.build_threads
                                                : runtime::default_num_threads(),
                         static_cast<int>(candidates.size())));
    // Each slot is written by exactly one thread; the result does not depend on the count.
    std::atomic<size_t> next{0};
    auto work = [&] {
        for (size_t i = next++; i < candidates.size(); i = next++)
            built[i] = build_candidate(candidates[i], "cand_" + std::to_string(first + int64_t(i)),
                                       limits, device.arch());
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t)
        pool.emplace_back(work);
    work();
    for (std::thread& t : pool)
        t.join();
    return built;
}

void CudaMeasurer::Impl::run(const te::Compute& c, TaskData& task, const BuiltCandidate& built,
                             const std::vector<sched::LayoutTransform>& layouts,
                             MeasureResult& r) {
    const size_t ni = c.inputs.size(), no = c.outputs.size();
    const std::vector<ir::Buffer>& params = built.source.params;
    if (params.size() != ni + no) {
        r.error = MeasureError::Unknown;
        r.error_message = "the kernel has " + std::to_string(params.size()) +
                          " parameters, the task " + std::to_string(ni + no);
        return;
    }
    // Host data per parameter, checked against the kernel's parameter sizes.
    std::vector<const HostBuffer*> in_data;
    try {
        for (size_t i = 0; i < ni; ++i) {
            const HostBuffer& h = input_data(
                c, task, i, i < layouts.size() ? layouts[i] : sched::LayoutTransform());
            if (h.num_elements() != params[i]->num_elements() || h.dtype() != params[i].dtype())
                throw UserError() << "input parameter " << i << " ('" << params[i].name()
                                  << "') has " << params[i]->num_elements()
                                  << " elements, its data " << h.num_elements();
            in_data.push_back(&h);
        }
        for (size_t o = 0; o < no; ++o) {
            const ir::Buffer& b = params[ni + o];
            const HostBuffer& want = task.references[o];
            if (b.dtype() != want.dtype() || b->num_elements() != want.num_elements())
                throw UserError() << "output parameter " << ni + o << " ('" << b.name()
                                  << "') is " << to_string(b.dtype()) << " x "
                                  << b->num_elements() << ", the output "
                                  << to_string(want.dtype()) << " x " << want.num_elements();
        }
    } catch (const ScheduleError& e) { // a layout check_layout rejects
        r.error = MeasureError::Instantiation;
        r.error_message = e.what();
        return;
    } catch (const UserError& e) {
        r.error = MeasureError::Unknown;
        r.error_message = e.what();
        return;
    }

    std::unique_ptr<cuda::DeviceFunction> fn;
    try {
        fn = std::make_unique<cuda::DeviceFunction>(built.source, built.cubin);
    } catch (const UserError& e) { // the module does not load (resources, architecture)
        r.error = MeasureError::CompileDevice;
        r.error_message = e.what();
        return;
    }
    try {
        for (size_t i = 0; i < ni; ++i)
            fn->copy_in(i, in_data[i]->data());
        for (size_t o = 0; o < no; ++o) { // elements the kernel never writes stay NaN
            HostBuffer poisoned(params[ni + o]);
            poison(poisoned);
            fn->copy_in(ni + o, poisoned.data());
        }
        const Clock::time_point t0 = Clock::now();
        fn->run();
        const double checked_secs = secs_since(t0);
        if (checked_secs > opts.run_timeout_secs) {
            r.error = MeasureError::RunTimeout;
            r.error_message = "the checked run took " + std::to_string(checked_secs) +
                              " s (run_timeout_secs " + std::to_string(opts.run_timeout_secs) + ")";
            return;
        }
        for (size_t o = 0; o < no; ++o) {
            HostBuffer got(params[ni + o]);
            fn->copy_out(ni + o, got.data());
            const Comparison cmp = compare_outputs(got, task.references[o]);
            r.max_rel_error = std::max(r.max_rel_error, cmp.max_error);
            if (!(cmp.max_error <= opts.tolerance)) {
                r.error = MeasureError::WrongAnswer;
                r.error_message = "output " + std::to_string(o) + " element " +
                                  std::to_string(cmp.worst_index) + ": got " +
                                  std::to_string(cmp.got) + ", want " + std::to_string(cmp.want) +
                                  " (error " + std::to_string(cmp.max_error) + " > tolerance " +
                                  std::to_string(opts.tolerance) + ")";
            }
        }
        if (r.error != MeasureError::Ok)
            return;
        const std::string key = te::workload_key(c);
        auto best = best_secs.find(key);
        const bool slow = opts.slow_factor > 0 && best != best_secs.end() &&
                          checked_secs > opts.slow_factor * best->second;
        if (slow) { // its time only has to tell the search that it is slow
            r.run_secs.push_back(fn->time_ms(1) * 1e-3);
            return;
        }
        for (int w = 0; w < opts.warmup; ++w)
            fn->run();
        // DeviceFunction::time_ms(1) brackets one launch of every kernel with events (after
        // one untimed run of its own), so each repeat is one event-timed call.
        double total = 0;
        const Clock::time_point timed_from = Clock::now();
        while (static_cast<int>(r.run_secs.size()) < opts.max_repeats &&
               (static_cast<int>(r.run_secs.size()) < opts.min_repeats ||
                total < opts.min_repeat_secs)) {
            if (!r.run_secs.empty() && secs_since(timed_from) > opts.run_timeout_secs)
                break; // a slow kernel: fewer repeats rather than minutes on one candidate
            const double secs = fn->time_ms(1) * 1e-3;
            r.run_secs.push_back(secs);
            total += secs;
        }
    } catch (const UserError& e) { // a launch or execution failure, reported by the driver
        r.error = MeasureError::RuntimeDevice;
        r.error_message = e.what();
        r.run_secs.clear();
    }
}

CudaMeasurer::CudaMeasurer(const CudaMeasureOptions& opts) : impl_(std::make_unique<Impl>()) {
    validate(opts);
    const cuda::CudaDriver& d = cuda::CudaDriver::get();
    if (!d.available())
        throw UserError() << "CUDA measurer: " << d.unavailable_reason();
    impl_->opts = opts;
    impl_->device = d.device();
    impl_->limits.max_threads_per_block = impl_->device.max_threads_per_block;
    impl_->limits.max_shared_bytes = impl_->device.max_shared_per_block;
}

CudaMeasurer::~CudaMeasurer() = default;

std::vector<MeasureResult> CudaMeasurer::measure(const te::Compute& c,
                                                 const std::vector<sched::State>& states) {
    std::vector<MeasureCandidate> candidates;
    candidates.reserve(states.size());
    for (const sched::State& s : states)
        candidates.push_back(cuda_candidate_from_state(s));
    return measure_candidates(c, candidates);
}

std::vector<MeasureResult>
CudaMeasurer::measure_candidates(const te::Compute& c,
                                 const std::vector<MeasureCandidate>& candidates) {
    if (candidates.empty())
        return {};
    Impl& m = *impl_;
    cuda::CudaDriver::get().require(); // the context current on this thread
    TaskData& task = m.task_data(c);
    // Every build finishes before the first run: compilation never disturbs a timing.
    const std::vector<BuiltCandidate> built = m.build(candidates);
    const std::string key = te::workload_key(c);
    std::vector<MeasureResult> results(candidates.size());
    for (size_t i = 0; i < candidates.size(); ++i) {
        MeasureResult& r = results[i];
        r.build_secs = built[i].build_secs;
        if (built[i].error != MeasureError::Ok) {
            r.error = built[i].error;
            r.error_message = built[i].error_message;
            continue;
        }
        m.run(c, task, built[i], candidates[i].input_layouts, r);
        if (r.error == MeasureError::Ok && !r.run_secs.empty()) {
            std::vector<double> sorted = r.run_secs;
            std::sort(sorted.begin(), sorted.end());
            note_best_secs(key, sorted[sorted.size() / 2]);
        }
    }
    return results;
}

std::string CudaMeasurer::settings_json() const {
    const CudaMeasureOptions& o = impl_->opts;
    nlohmann::ordered_json j;
    j["device"] = impl_->device.name;
    j["arch"] = impl_->device.arch();
    j["timer"] = "cuda_events";
    j["warmup"] = o.warmup;
    j["slow_factor"] = o.slow_factor;
    j["run_timeout_secs"] = o.run_timeout_secs;
    j["min_repeats"] = o.min_repeats;
    j["min_repeat_secs"] = o.min_repeat_secs;
    j["max_repeats"] = o.max_repeats;
    j["tolerance"] = o.tolerance;
    j["seed"] = o.seed;
    return j.dump();
}

void CudaMeasurer::note_best_secs(const std::string& workload_key, double secs) {
    if (!(secs > 0))
        return;
    auto [it, fresh] = impl_->best_secs.emplace(workload_key, secs);
    if (!fresh)
        it->second = std::min(it->second, secs);
}

std::unique_ptr<Measurer> make_cuda_measurer(const CudaMeasureOptions& opts) {
    return std::make_unique<CudaMeasurer>(opts);
}

} // namespace tessera::tune

#endif // TESSERA_HAVE_CUDA
