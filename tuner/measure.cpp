// The local measurer: per-task data (inputs, reference outputs, packed layouts) as files, the
// parallel builder, and the worker-process runner, glued per candidate (see measure.h).
#include "tessera/tuner/measure.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "measure_work_dir.h"
#include "tessera/backends/llvm.h"
#include "tessera/lower/lower_default.h"
#include "tessera/runtime/thread_pool.h"
#include "tessera/schedule/layout.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/step.h"
#include "tessera/support/error.h"
#include "tessera/te/workload_key.h"
#include "tessera/tuner/host_buffer.h"
#include "tessera/tuner/runner.h"

namespace tessera::tune {

namespace {

namespace fs = std::filesystem;

/// The data files of one task.
struct TaskData {
    std::string dir;
    std::vector<std::string> dense_inputs; ///< One raw file per compute input.
    std::vector<std::string> references;   ///< One raw file per compute output.
    /// Packed inputs by "<input index>:<layout text>".
    std::map<std::string, std::string> packed;
};

std::string layout_text(const sched::LayoutTransform& t) {
    std::string s = "f";
    for (int64_t f : t.factors)
        s += "_" + std::to_string(f);
    s += "_o";
    for (int o : t.order)
        s += "_" + std::to_string(o);
    return s;
}

std::string this_executable() {
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0)
        throw UserError() << "cannot find this executable: " << std::strerror(errno);
    return std::string(buf, static_cast<size_t>(n));
}

void check_options(const MeasureOptions& o) {
    if (o.build_threads < 0)
        throw UserError() << "build_threads must be >= 0, got " << o.build_threads;
    if (!(o.build_timeout_secs > 0))
        throw UserError() << "build_timeout_secs must be positive, got " << o.build_timeout_secs;
    if (!(o.run_timeout_secs > 0))
        throw UserError() << "run_timeout_secs must be positive, got " << o.run_timeout_secs;
    if (!valid_cut_factor(o.slow_factor))
        throw UserError() << "slow_factor must be 0 (off) or at least 1, got " << o.slow_factor;
    if (!valid_ratio_precision(o.ratio_precision))
        throw UserError() << "ratio_precision must be in [0, 1), got " << o.ratio_precision;
    if (!valid_cut_factor(o.behind_factor))
        throw UserError() << "behind_factor must be 0 (off) or at least 1, got " << o.behind_factor;
    if (o.kernel_threads < 0)
        throw UserError() << "kernel_threads must be >= 0, got " << o.kernel_threads;
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
}

} // namespace

bool valid_cut_factor(double factor) {
    return factor == 0 || (factor >= 1 && std::isfinite(factor));
}

bool valid_ratio_precision(double precision) { return precision >= 0 && precision < 1; }

MeasureCandidate candidate_from_state(const sched::State& s) {
    MeasureCandidate c;
    c.lower = [s](const std::string& name) { return sched::lower_state(s, name); };
    for (const ir::Tensor& t : s.compute.inputs) {
        int sid = s.stage_id_of(t);
        c.input_layouts.push_back(sid >= 0 ? s.stages[static_cast<size_t>(sid)].layout
                                           : sched::LayoutTransform());
    }
    return c;
}

struct LocalMeasurer::Impl {
    MeasureOptions opts;
    std::string work_dir;
    bool owns_work_dir = false;
    int kernel_threads = 1;
    std::map<std::string, TaskData> tasks;   ///< By workload key.
    std::map<std::string, double> best_secs; ///< Best median known per workload key.
    /// A task's baseline (set_baseline): built with the next batch, kept until replaced.
    struct Baseline {
        std::string schedule_json;
        MeasureCandidate candidate;
        bool built = false;  ///< Tried: library empty when its build failed.
        std::string library; ///< Its .so in the work directory (removed when replaced).
        std::string symbol;
        std::vector<std::string> inputs; ///< Its input files (in its layouts).
    };
    std::map<std::string, Baseline> baselines; ///< By workload key.
    /// The libraries of the latest measure() call's correct builds, by workload key and
    /// schedule JSON (as measure() joins them): a schedule measured again at once (the tuner
    /// confirms a batch's new best beside the baseline) runs the same library instead of a second
    /// build (about 0.08 s of a resnet18 conv task's candidate). Removed at the next call.
    std::map<std::string, BuildResult> latest_libraries;
    std::unique_ptr<Builder> builder;
    std::unique_ptr<Runner> runner;

    TaskData& task_data(const te::Compute& c);
    /// The file holding input i in `layout` (dense when identity), packed on first use.
    std::string input_file(const te::Compute& c, TaskData& task, size_t i,
                           const sched::LayoutTransform& layout);
    /// Builds and measures candidates; keys[i] (empty: none) names candidate i's library in
    /// latest_libraries, which one of the previous call may serve and this call's replace.
    std::vector<MeasureResult> measure_keyed(const te::Compute& c,
                                             const std::vector<MeasureCandidate>& candidates,
                                             const std::vector<std::string>& keys);
    /// Keeps secs as the task's best median when it is the best so far.
    void note_best(const std::string& workload_key, double secs);
    /// Removes the libraries of latest_libraries and forgets them.
    void drop_latest_libraries();
    /// The worker request of a built candidate; throws UserError describing a parameter list
    /// that does not match the task.
    RunRequest make_request(const te::Compute& c, TaskData& task, const BuildResult& built,
                            const std::vector<sched::LayoutTransform>& layouts);
};

TaskData& LocalMeasurer::Impl::task_data(const te::Compute& c) {
    const std::string key = te::workload_key(c);
    auto it = tasks.find(key);
    if (it != tasks.end())
        return it->second;

    TaskData task;
    task.dir = work_dir + "/task_" + key.substr(0, 16);
    std::error_code ec;
    fs::create_directories(task.dir, ec);
    if (ec)
        throw UserError() << "cannot create '" << task.dir << "': " << ec.message();
    std::vector<HostBuffer> buffers;
    Rng rng(opts.seed);
    for (size_t i = 0; i < c.inputs.size(); ++i) {
        const ir::Tensor& t = c.inputs[i];
        HostBuffer b(t.dtype(), ir::Buffer::make(t.name(), t.dtype(), t.shape())->num_elements());
        fill_random(b, rng);
        task.dense_inputs.push_back(task.dir + "/input_" + std::to_string(i) + ".bin");
        write_raw_file(task.dense_inputs.back(), b);
        buffers.push_back(std::move(b));
    }
    // The reference: the unscheduled loop nest, compiled in this process (it is our own,
    // trusted lowering; candidates never run here).
    ir::LoweredFunc ref = lower::lower_default(c, "tessera_reference");
    for (size_t o = c.inputs.size(); o < ref.params.size(); ++o)
        buffers.emplace_back(ref.params[o]);
    std::vector<void*> args;
    for (HostBuffer& b : buffers)
        args.push_back(b.data());
    auto jit = backend::JitModule::compile({ref});
    jit->get("tessera_reference")(args.data());
    for (size_t o = 0; o < c.outputs.size(); ++o) {
        task.references.push_back(task.dir + "/reference_" + std::to_string(o) + ".bin");
        write_raw_file(task.references.back(), buffers[c.inputs.size() + o]);
    }
    return tasks.emplace(key, std::move(task)).first->second;
}

std::string LocalMeasurer::Impl::input_file(const te::Compute& c, TaskData& task, size_t i,
                                            const sched::LayoutTransform& layout) {
    if (layout.is_identity())
        return task.dense_inputs[i];
    const std::string key = std::to_string(i) + ":" + layout_text(layout);
    auto it = task.packed.find(key);
    if (it != task.packed.end())
        return it->second;
    const ir::Tensor& t = c.inputs[i];
    sched::check_layout(layout, t.shape());
    HostBuffer dense = read_raw_file(task.dense_inputs[i], t.dtype());
    std::vector<int64_t> shape = sched::packed_shape(layout, t.shape());
    HostBuffer packed(t.dtype(), ir::Buffer::make(t.name(), t.dtype(), shape)->num_elements());
    sched::pack_layout(layout, t.shape(), static_cast<size_t>(t.dtype().bytes()), dense.data(),
                       packed.data());
    std::string path =
        task.dir + "/input_" + std::to_string(i) + "_" + layout_text(layout) + ".bin";
    write_raw_file(path, packed);
    return task.packed.emplace(key, path).first->second;
}

RunRequest LocalMeasurer::Impl::make_request(const te::Compute& c, TaskData& task,
                                             const BuildResult& built,
                                             const std::vector<sched::LayoutTransform>& layouts) {
    const size_t ni = c.inputs.size(), no = c.outputs.size();
    if (built.params.size() != ni + no) {
        throw UserError() << "the kernel has " << built.params.size() << " parameters, the task "
                          << ni + no;
    }
    RunRequest req;
    req.library = built.library_path;
    req.symbol = built.symbol;
    for (size_t i = 0; i < ni; ++i) {
        const sched::LayoutTransform layout =
            i < layouts.size() ? layouts[i] : sched::LayoutTransform();
        RunParam p;
        p.file = input_file(c, task, i, layout);
        p.cold = opts.cold_weights && std::find(c.weight_inputs.begin(), c.weight_inputs.end(),
                                                static_cast<int>(i)) != c.weight_inputs.end();
        const ir::Buffer& b = built.params[i];
        const int64_t want = b->num_elements() * b.dtype().bytes();
        const auto have = static_cast<int64_t>(fs::file_size(p.file));
        if (want != have) {
            throw UserError() << "input parameter " << i << " ('" << b.name() << "') holds " << want
                              << " bytes, its data " << have;
        }
        req.params.push_back(p);
    }
    for (size_t o = 0; o < no; ++o) {
        const ir::Buffer& b = built.params[ni + o];
        const ir::Tensor& t = c.outputs[o];
        const int64_t elems = ir::Buffer::make(t.name(), t.dtype(), t.shape())->num_elements();
        if (b.dtype() != t.dtype() || b->num_elements() != elems) {
            throw UserError() << "output parameter " << ni + o << " ('" << b.name() << "') is "
                              << to_string(b.dtype()) << " x " << b->num_elements()
                              << ", the output " << to_string(t.dtype()) << " x " << elems;
        }
        RunParam p;
        p.bytes = b->num_elements() * b.dtype().bytes();
        p.dtype = to_string(b.dtype());
        p.reference = task.references[o];
        req.params.push_back(p);
    }
    req.tolerance = opts.tolerance;
    req.threads = kernel_threads;
    req.warmup = opts.warmup;
    req.min_repeats = opts.min_repeats;
    req.min_repeat_secs = opts.min_repeat_secs;
    req.max_repeats = opts.max_repeats;
    req.flush_cache = opts.flush_cache;
    req.slow_factor = opts.slow_factor;
    req.behind_factor = opts.behind_factor;
    req.ratio_precision = opts.ratio_precision;
    return req;
}

LocalMeasurer::LocalMeasurer(const MeasureOptions& opts) : impl_(std::make_unique<Impl>()) {
    check_options(opts);
    Impl& m = *impl_;
    m.opts = opts;
    m.kernel_threads =
        opts.kernel_threads > 0 ? opts.kernel_threads : runtime::default_num_threads();
    if (opts.work_dir.empty()) {
        const char* tmp = std::getenv("TMPDIR");
        const std::string parent = tmp && *tmp ? tmp : "/tmp";
        remove_abandoned_work_dirs(parent); // of tuners killed before they could
        m.work_dir = create_owned_work_dir(parent);
        m.owns_work_dir = true;
    } else {
        std::error_code ec;
        fs::create_directories(opts.work_dir, ec);
        if (ec || access(opts.work_dir.c_str(), W_OK) != 0)
            throw UserError() << "cannot use the work directory '" << opts.work_dir << "'"
                              << (ec ? ": " + ec.message() : std::string(": not writable"));
        m.work_dir = fs::absolute(opts.work_dir).string();
    }
    BuilderOptions b;
    b.work_dir = m.work_dir;
    b.threads = opts.build_threads > 0 ? opts.build_threads : runtime::default_num_threads();
    b.timeout_secs = opts.build_timeout_secs;
    b.straggler_factor = opts.build_straggler_factor;
    b.compile = opts.compile;
    m.builder = std::make_unique<Builder>(b);
    std::vector<std::string> command = opts.worker_command;
    if (command.empty())
        command = {this_executable(), "__measure-worker"};
    // Priority 10 of 1..99: above every normal process, below the kernel's own real-time threads.
    constexpr int kRealtimePriority = 10;
    m.runner =
        std::make_unique<Runner>(command, opts.run_timeout_secs, m.work_dir + "/worker_stderr.log",
                                 opts.realtime ? kRealtimePriority : 0, opts.stream_files);
}

LocalMeasurer::~LocalMeasurer() {
    for (const auto& [key, b] : impl_->baselines)
        if (!b.library.empty())
            std::remove(b.library.c_str());
    impl_->drop_latest_libraries();
    impl_->runner.reset();
    impl_->builder.reset(); // waits for late builds, which write into the work directory
    if (impl_->owns_work_dir) {
        std::error_code ec;
        fs::remove_all(impl_->work_dir, ec);
    }
}

void LocalMeasurer::Impl::drop_latest_libraries() {
    for (const auto& [key, b] : latest_libraries)
        std::remove(b.library_path.c_str());
    latest_libraries.clear();
}

std::vector<MeasureResult> LocalMeasurer::measure(const te::Compute& c,
                                                  const std::vector<sched::State>& states) {
    const std::string task = te::workload_key(c) + "\n";
    std::vector<MeasureCandidate> candidates;
    std::vector<std::string> keys;
    candidates.reserve(states.size());
    keys.reserve(states.size());
    for (const sched::State& s : states) {
        candidates.push_back(candidate_from_state(s));
        keys.push_back(task + sched::steps_to_json(s.steps));
    }
    return impl_->measure_keyed(c, candidates, keys);
}

std::vector<MeasureResult>
LocalMeasurer::measure_candidates(const te::Compute& c,
                                  const std::vector<MeasureCandidate>& candidates) {
    return impl_->measure_keyed(c, candidates, std::vector<std::string>(candidates.size()));
}

std::vector<MeasureResult>
LocalMeasurer::Impl::measure_keyed(const te::Compute& c,
                                   const std::vector<MeasureCandidate>& candidates,
                                   const std::vector<std::string>& keys) {
    if (candidates.empty()) {
        drop_latest_libraries();
        return {};
    }
    TaskData& task = task_data(c);
    const std::string key = te::workload_key(c);
    // Candidates whose library the previous call kept run it; the others are built.
    std::vector<BuildResult> built(candidates.size());
    std::vector<size_t> to_build;
    std::vector<LowerFn> lowers;
    lowers.reserve(candidates.size() + 1);
    for (size_t i = 0; i < candidates.size(); ++i) {
        auto kept = keys[i].empty() ? latest_libraries.end() : latest_libraries.find(keys[i]);
        if (kept != latest_libraries.end()) {
            built[i] = kept->second;
            built[i].build_secs = 0; // not built again
            latest_libraries.erase(kept);
            continue;
        }
        to_build.push_back(i);
        lowers.push_back(candidates[i].lower);
    }
    drop_latest_libraries();
    // A new baseline is built with the batch (on the same build threads) and kept.
    auto baseline_it = baselines.find(key);
    Baseline* baseline = baseline_it == baselines.end() ? nullptr : &baseline_it->second;
    const bool build_baseline = baseline && !baseline->built;
    if (build_baseline)
        lowers.push_back(baseline->candidate.lower);
    std::vector<BuildResult> fresh = builder->build(lowers);
    if (build_baseline) {
        const BuildResult b = fresh.back();
        fresh.pop_back();
        baseline->built = true;
        if (b.error == MeasureError::Ok) {
            try {
                const RunRequest req = make_request(c, task, b, baseline->candidate.input_layouts);
                baseline->library = b.library_path;
                baseline->symbol = b.symbol;
                for (const RunParam& p : req.params)
                    if (!p.file.empty())
                        baseline->inputs.push_back(p.file);
            } catch (const ScheduleError&) { // a layout check_layout rejects: timed alone
                std::remove(b.library_path.c_str());
            } catch (const UserError&) { // a parameter mismatch: candidates timed alone
                std::remove(b.library_path.c_str());
            }
        }
    }

    for (size_t k = 0; k < to_build.size(); ++k)
        built[to_build[k]] = std::move(fresh[k]);

    std::vector<MeasureResult> results(candidates.size());
    for (size_t i = 0; i < candidates.size(); ++i) {
        MeasureResult& r = results[i];
        const BuildResult& b = built[i];
        r.build_secs = b.build_secs;
        if (b.error != MeasureError::Ok) {
            r.error = b.error;
            r.error_message = b.error_message;
            continue;
        }
        RunRequest req;
        try {
            req = make_request(c, task, b, candidates[i].input_layouts);
        } catch (const ScheduleError& e) { // a layout check_layout rejects
            r.error = MeasureError::Instantiation;
            r.error_message = e.what();
        } catch (const UserError& e) {
            r.error = MeasureError::Unknown;
            r.error_message = e.what();
        }
        if (r.error == MeasureError::Ok) {
            if (baseline && !baseline->library.empty()) {
                req.baseline_library = baseline->library;
                req.baseline_symbol = baseline->symbol;
                req.baseline_inputs = baseline->inputs;
            }
            if (opts.slow_factor > 0 && best_secs.count(key))
                req.reference_secs = best_secs[key];
            RunReply reply = runner->run(req); // UserError: no worker at all, nothing to measure
            if (reply.error == MeasureError::Ok && !reply.run_secs.empty()) {
                std::vector<double> sorted = reply.run_secs;
                std::sort(sorted.begin(), sorted.end());
                note_best(key, sorted[sorted.size() / 2]);
            }
            r.error = reply.error;
            r.error_message = reply.error_message;
            r.run_secs = reply.run_secs;
            r.baseline_run_secs = reply.baseline_run_secs;
            r.max_rel_error = reply.max_rel_error;
        }
        if (r.error == MeasureError::Ok && !keys[i].empty())
            latest_libraries.emplace(keys[i], b);
        else
            std::remove(b.library_path.c_str());
    }
    return results;
}

void LocalMeasurer::Impl::note_best(const std::string& workload_key, double secs) {
    if (!(secs > 0))
        return;
    auto [it, fresh] = best_secs.emplace(workload_key, secs);
    if (!fresh)
        it->second = std::min(it->second, secs);
}

void LocalMeasurer::note_best_secs(const std::string& workload_key, double secs) {
    impl_->note_best(workload_key, secs);
}

void LocalMeasurer::set_baseline(const te::Compute& c, const sched::State& baseline) {
    const std::string key = te::workload_key(c);
    std::string json = sched::steps_to_json(baseline.steps);
    Impl::Baseline& b = impl_->baselines[key];
    if (b.schedule_json == json)
        return;
    if (!b.library.empty())
        std::remove(b.library.c_str());
    b = Impl::Baseline();
    b.schedule_json = std::move(json);
    b.candidate = candidate_from_state(baseline);
}

std::string LocalMeasurer::settings_json() const {
    const MeasureOptions& o = impl_->opts;
    nlohmann::ordered_json j;
    j["kernel_threads"] = impl_->kernel_threads;
    j["warmup"] = o.warmup;
    j["slow_factor"] = o.slow_factor;
    j["behind_factor"] = o.behind_factor;
    j["ratio_precision"] = o.ratio_precision;
    j["min_repeats"] = o.min_repeats;
    j["min_repeat_secs"] = o.min_repeat_secs;
    j["max_repeats"] = o.max_repeats;
    j["flush_cache"] = o.flush_cache;
    j["cold_weights"] = o.cold_weights;
    if (o.realtime)
        j["realtime"] = !impl_->runner->realtime_denied();
    j["tolerance"] = o.tolerance;
    j["seed"] = o.seed;
    return j.dump();
}

const std::string& LocalMeasurer::work_dir() const { return impl_->work_dir; }

int LocalMeasurer::workers_started() const { return impl_->runner->workers_started(); }

std::unique_ptr<Measurer> make_local_measurer(const MeasureOptions& opts) {
    return std::make_unique<LocalMeasurer>(opts);
}

} // namespace tessera::tune
