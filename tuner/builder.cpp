// The measurement builder: parallel lowering, then LLVM compilation + linking in compile
// processes, with per-candidate time limits (see builder.h for the contract and what happens
// to a build that times out).
#include "tessera/tuner/builder.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <signal.h>

#include "codegen_process.h"
#include "tessera/lower/lower_for_codegen.h"
#include "tessera/support/error.h"

namespace tessera::tune {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// One candidate's build, shared between the batch loop and its thread (which may outlive
/// the batch when the build times out). Fields are guarded by Builder::Impl::mu.
struct Job {
    bool done = false;      ///< The thread finished (result is set unless abandoned).
    bool abandoned = false; ///< Timed out: the thread's result is discarded.
    pid_t child = 0;        ///< The compile process while it runs (killed on a timeout).
    Clock::time_point start;
    BuildResult result;
};

/// Emits the object file and links the library (the default BuilderOptions::codegen).
void emit_and_link(const ir::LoweredFunc& f, const std::string& obj, const std::string& so,
                   const backend::CompileOptions& compile) {
    backend::emit_object_file({f}, obj, compile);
    backend::link_shared_library({obj}, so);
}

/// Lowers and prepares one candidate on this thread, then compiles and links it in a compile
/// process whose pid `job` holds while it runs. Pure apart from the files it writes; never
/// throws.
BuildResult build_one(const LowerFn& lower, const std::string& base, const std::string& symbol,
                      const BuilderOptions& opts, Job& job, std::mutex& mu) {
    BuildResult r;
    r.symbol = symbol;
    const Clock::time_point t0 = Clock::now();
    ir::LoweredFunc f;
    try {
        f = lower(symbol);
        f.name = symbol; // whatever the lowering called it, the library exports this symbol
    } catch (const ScheduleError& e) {
        r.error = MeasureError::Instantiation;
        r.error_message = e.what();
    } catch (const std::exception& e) {
        r.error = MeasureError::Instantiation;
        r.error_message = std::string("lowering failed: ") + e.what();
    }
    if (r.error == MeasureError::Ok) {
        const std::string obj = base + ".o", so = base + ".so";
        try {
            f = lower::prepare_for_codegen(std::move(f));
            ChildOutcome c = run_in_child_process(
                [&] {
                    if (opts.codegen)
                        opts.codegen(f, obj, so);
                    else
                        emit_and_link(f, obj, so, opts.compile);
                },
                [&](pid_t pid) {
                    std::lock_guard<std::mutex> g(mu);
                    if (job.abandoned)
                        kill(pid, SIGKILL);
                    else
                        job.child = pid;
                },
                [&] {
                    std::lock_guard<std::mutex> g(mu);
                    job.child = 0;
                });
            if (!c.ok)
                throw UserError() << c.message;
            r.library_path = so;
            r.params = f.params;
        } catch (const std::exception& e) {
            r.error = MeasureError::CompileHost;
            r.error_message = e.what();
            std::remove(so.c_str());
        }
        std::remove(obj.c_str());
    }
    r.build_secs = seconds_since(t0);
    return r;
}

/// The straggler limit of a batch (BuilderOptions::straggler_factor).
struct StragglerLimit {
    double secs = 0; ///< max(straggler_min_secs, straggler_factor x median_secs)
    double median_secs = 0;
};

/// The straggler limit of a batch whose successful builds took `ok_secs` (unordered; the
/// function sorts its copy), or nullopt while it has too few of them or the limit is off.
std::optional<StragglerLimit> straggler_limit(std::vector<double> ok_secs,
                                              const BuilderOptions& o) {
    if (!(o.straggler_factor > 0) || ok_secs.empty() ||
        ok_secs.size() < static_cast<size_t>(std::max(1, o.straggler_min_builds)))
        return std::nullopt;
    const auto mid = ok_secs.begin() + static_cast<std::ptrdiff_t>(ok_secs.size() / 2);
    std::nth_element(ok_secs.begin(), mid, ok_secs.end());
    return StragglerLimit{std::max(o.straggler_min_secs, o.straggler_factor * *mid), *mid};
}

} // namespace

struct Builder::Impl {
    BuilderOptions opts;
    std::mutex mu;
    std::condition_variable cv; ///< Signalled when a build finishes.
    uint64_t next_id = 0;       ///< Numbers cand_<N> files over the Builder's life.
    /// Threads of builds that timed out, with their jobs; joined once done (or at destruction).
    std::vector<std::pair<std::thread, std::shared_ptr<Job>>> stragglers;

    /// Joins stragglers whose build has ended. Pre: mu not held.
    void reap_finished_stragglers() {
        std::vector<std::thread> finished;
        {
            std::lock_guard<std::mutex> lk(mu);
            for (size_t i = 0; i < stragglers.size();) {
                if (stragglers[i].second->done) {
                    finished.push_back(std::move(stragglers[i].first));
                    stragglers.erase(stragglers.begin() + static_cast<std::ptrdiff_t>(i));
                } else {
                    ++i;
                }
            }
        }
        for (auto& t : finished)
            t.join();
    }
};

Builder::Builder(BuilderOptions opts) : impl_(std::make_unique<Impl>()) {
    if (opts.threads < 1)
        throw UserError() << "build threads must be at least 1, got " << opts.threads;
    if (!(opts.timeout_secs > 0))
        throw UserError() << "build timeout must be positive, got " << opts.timeout_secs;
    if (!(opts.straggler_factor >= 0))
        throw UserError() << "build straggler factor must be 0 or more, got "
                          << opts.straggler_factor;
    if (opts.work_dir.empty())
        throw UserError() << "the builder needs a work directory";
    impl_->opts = std::move(opts);
    backend::initialize_codegen(); // before the first fork (see run_in_child_process)
}

Builder::~Builder() {
    for (auto& s : impl_->stragglers)
        s.first.join();
}

const char* Builder::kernel_symbol() { return "tessera_measured_kernel"; }

std::vector<BuildResult> Builder::build(const std::vector<LowerFn>& candidates) {
    impl_->reap_finished_stragglers();
    const size_t n = candidates.size();
    std::vector<std::shared_ptr<Job>> jobs(n);
    std::vector<std::thread> threads(n);
    const auto timeout = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(impl_->opts.timeout_secs));

    std::unique_lock<std::mutex> lk(impl_->mu);
    size_t next = 0;
    std::vector<size_t> running;
    std::vector<double> ok_secs; // build times of this batch's successful builds
    while (next < n || !running.empty()) {
        while (next < n && running.size() < static_cast<size_t>(impl_->opts.threads)) {
            auto job = std::make_shared<Job>();
            job->start = Clock::now();
            jobs[next] = job;
            const std::string base =
                impl_->opts.work_dir + "/cand_" + std::to_string(impl_->next_id++);
            Impl* impl = impl_.get();
            threads[next] = std::thread([impl, job, base, lower = candidates[next]] {
                BuildResult r =
                    build_one(lower, base, Builder::kernel_symbol(), impl->opts, *job, impl->mu);
                std::lock_guard<std::mutex> g(impl->mu);
                if (job->abandoned) {
                    if (!r.library_path.empty())
                        std::remove(r.library_path.c_str());
                } else {
                    job->result = std::move(r);
                }
                job->done = true;
                impl->cv.notify_all();
            });
            running.push_back(next++);
        }
        // Retire finished and overdue builds; wait for the next event otherwise.
        for (size_t k = 0; k < running.size();) {
            const Job& job = *jobs[running[k]];
            if (job.done) {
                if (job.result.error == MeasureError::Ok)
                    ok_secs.push_back(job.result.build_secs);
                running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
            } else {
                ++k;
            }
        }
        const std::optional<StragglerLimit> straggler = straggler_limit(ok_secs, impl_->opts);
        const bool straggler_binds = straggler && straggler->secs < impl_->opts.timeout_secs;
        const auto limit = straggler_binds ? std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(straggler->secs))
                                           : timeout;
        Clock::time_point earliest_deadline = Clock::time_point::max();
        const Clock::time_point now = Clock::now();
        for (size_t k = 0; k < running.size();) {
            Job& job = *jobs[running[k]];
            if (now - job.start >= limit) {
                job.abandoned = true;
                if (job.child > 0)
                    kill(job.child, SIGKILL); // its thread reaps it and ends soon
                job.result.error = MeasureError::BuildTimeout;
                job.result.build_secs = std::chrono::duration<double>(now - job.start).count();
                job.result.error_message =
                    straggler_binds
                        ? fmt::format("build ran {:.2f} s, past the straggler limit {:.2f} s "
                                      "(the larger of {:g} s and {:g}x the median {:.3f} s of "
                                      "the batch's {} builds): given up",
                                      job.result.build_secs, straggler->secs,
                                      impl_->opts.straggler_min_secs, impl_->opts.straggler_factor,
                                      straggler->median_secs, ok_secs.size())
                        : fmt::format("build exceeded the time limit of {:g} s (left to finish, "
                                      "result discarded)",
                                      impl_->opts.timeout_secs);
                job.result.symbol = Builder::kernel_symbol();
                running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
            } else {
                earliest_deadline = std::min(earliest_deadline, job.start + limit);
                ++k;
            }
        }
        if (!running.empty() &&
            (next == n || running.size() >= static_cast<size_t>(impl_->opts.threads)))
            impl_->cv.wait_until(lk, earliest_deadline);
    }

    std::vector<BuildResult> results(n);
    for (size_t i = 0; i < n; ++i) {
        results[i] = jobs[i]->result;
        if (jobs[i]->abandoned && !jobs[i]->done)
            impl_->stragglers.emplace_back(std::move(threads[i]), jobs[i]);
    }
    lk.unlock();
    for (auto& t : threads)
        if (t.joinable())
            t.join();
    return results;
}

} // namespace tessera::tune
