// The measurement worker process (`tessera __measure-worker`): loads each requested library,
// runs its kernel once on the given inputs, compares every output element with the reference,
// and only then times it. Everything that can crash or hang runs here, not in the tuner.
//
// Robustness:
//   - inputs and references are cached by path in read-only memory, so a kernel that writes
//     into its inputs dies of SIGSEGV (an error record) instead of corrupting the data the
//     following candidates are checked with;
//   - the protocol goes to a private copy of the original stdout; fd 1 is pointed at stderr so
//     anything a library prints cannot corrupt the replies;
//   - a watchdog thread exits the process when its parent dies (the tuner may be killed while
//     a kernel here hangs, and nothing else would ever stop it).
#include "tessera/tuner/measure.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>
#include <vector>

#include <dlfcn.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tessera/runtime/thread_pool.h"
#include "tessera/support/error.h"
#include "tessera/tuner/host_buffer.h"
#include "tessera/tuner/pair_ratios.h"
#include "tessera/tuner/runner.h"

namespace tessera::tune {

namespace {

using Clock = std::chrono::steady_clock;
using KernelFn = void (*)(void**);

/// Read-only file contents by (path, dtype), dropped wholesale when they outgrow the budget.
class FileCache {
  public:
    /// Pre: no pointer into the cache is in use (call between requests).
    void trim() {
        if (bytes_ > kBudgetBytes) {
            files_.clear();
            bytes_ = 0;
        }
    }
    const HostBuffer& get(const std::string& path, ir::DataType dtype) {
        const std::string key = to_string(dtype) + ":" + path;
        auto it = files_.find(key);
        if (it == files_.end()) {
            HostBuffer b = read_raw_file(path, dtype);
            b.make_read_only();
            bytes_ += b.mapped_bytes(); // with huge pages, up to twice bytes()
            it = files_.emplace(key, std::move(b)).first;
        }
        return it->second;
    }

  private:
    static constexpr int64_t kBudgetBytes = int64_t(2) << 30;
    std::map<std::string, HostBuffer> files_;
    int64_t bytes_ = 0;
};

/// A loaded library, closed when it goes out of scope.
struct Library {
    void* handle = nullptr;
    ~Library() {
        if (handle)
            dlclose(handle);
    }
};

/// A last-level-cache-sized buffer overwritten before each timed run when flushing is on.
void flush_caches() {
    static std::vector<uint8_t> buffer = [] {
        long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
        if (llc <= 0)
            llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
        // Twice the cache, in case the size reported is per slice or the policy is not LRU.
        return std::vector<uint8_t>(static_cast<size_t>(llc > 0 ? llc : 32 << 20) * 2);
    }();
    static uint8_t value = 0;
    std::memset(buffer.data(), ++value, buffer.size());
}

#if defined(__x86_64__)
__attribute__((target("clflushopt"))) void flush_lines_unordered(const uint8_t* p, size_t bytes) {
    for (size_t off = 0; off < bytes; off += 64)
        _mm_clflushopt(const_cast<uint8_t*>(p + off)); // reads nothing, writes nothing
}

bool has_clflushopt() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 23)) != 0;
}
#endif

/// Writes back and invalidates every cache line of [p, p + bytes) in every cache level, so
/// that the next run reads it from memory (a model's weights, evicted there by the other
/// kernels' data). Costs about what reading it once does, unlike overwriting a whole-LLC buffer.
void evict_from_caches(const void* p, size_t bytes) {
    const auto* b = static_cast<const uint8_t*>(p);
#if defined(__x86_64__)
    static const bool unordered = has_clflushopt();
    if (unordered) {
        flush_lines_unordered(b, bytes);
    } else {
        for (size_t off = 0; off < bytes; off += 64)
            _mm_clflush(b + off);
    }
    _mm_mfence();
#elif defined(__aarch64__)
    for (size_t off = 0; off < bytes; off += 64)
        asm volatile("dc civac, %0" : : "r"(b + off) : "memory");
    asm volatile("dsb ish" : : : "memory");
#else
    (void)b;
    (void)bytes; // no portable eviction: the run reads warm data
#endif
}

/// Pairs a candidate needs before its ratio's spread may end its timing
/// (RunRequest::ratio_precision): with fewer, the quartiles rest on one or two ratios each.
constexpr int kMinPrecisePairs = 8;

RunReply serve(const RunRequest& req, FileCache& cache) {
    RunReply reply;
    runtime::set_num_threads(req.threads);

    std::vector<void*> args;
    std::vector<HostBuffer> outputs; // reserved below: args point into them
    struct Check {
        size_t output;
        const HostBuffer* reference;
        size_t param;
    };
    std::vector<Check> checks;
    std::vector<std::pair<const void*, size_t>> cold; // inputs evicted before each timed run
    size_t num_outputs = 0;
    for (const RunParam& p : req.params)
        num_outputs += p.file.empty() ? 1 : 0;
    outputs.reserve(num_outputs);
    for (size_t i = 0; i < req.params.size(); ++i) {
        const RunParam& p = req.params[i];
        if (!p.file.empty()) {
            // The kernel gets a non-const pointer; the memory itself is read-only.
            const HostBuffer& in = cache.get(p.file, ir::DataType::u8());
            args.push_back(const_cast<void*>(in.data()));
            if (p.cold)
                cold.emplace_back(in.data(), static_cast<size_t>(in.num_elements()));
            continue;
        }
        const ir::DataType t = ir::parse_type(p.dtype);
        if (p.bytes % t.bytes() != 0)
            throw UserError() << "output " << i << ": " << p.bytes
                              << " bytes is not a whole number of " << p.dtype;
        outputs.emplace_back(t, p.bytes / t.bytes());
        poison(outputs.back());
        args.push_back(outputs.back().data());
        if (!p.reference.empty())
            checks.push_back({outputs.size() - 1, &cache.get(p.reference, t), i});
    }

    Library lib;
    lib.handle = dlopen(req.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib.handle) {
        reply.error = MeasureError::RuntimeDevice;
        reply.error_message = std::string("cannot load the library: ") + dlerror();
        return reply;
    }
    auto kernel = reinterpret_cast<KernelFn>(dlsym(lib.handle, req.symbol.c_str()));
    if (!kernel) {
        reply.error = MeasureError::RuntimeDevice;
        reply.error_message = "the library has no symbol '" + req.symbol + "'";
        return reply;
    }

    // The checked run: every element of every output against its reference.
    const Clock::time_point check_start = Clock::now();
    kernel(args.data());
    const double check_secs = std::chrono::duration<double>(Clock::now() - check_start).count();
    for (const Check& c : checks) {
        Comparison cmp = compare_outputs(outputs[c.output], *c.reference);
        if (!(cmp.max_error <= reply.max_rel_error)) {
            reply.max_rel_error = cmp.max_error;
            if (!(cmp.max_error <= req.tolerance)) {
                reply.error = MeasureError::WrongAnswer;
                reply.error_message = fmt::format(
                    "parameter {} element {}: got {:.9g}, want {:.9g} (error {:.3g} > tolerance "
                    "{:.3g})",
                    c.param, cmp.worst_index, cmp.got, cmp.want, cmp.max_error, req.tolerance);
            }
        }
    }
    if (reply.error != MeasureError::Ok)
        return reply;

    // The baseline (RunRequest::baseline_library): its inputs, the candidate's outputs. One that
    // cannot be loaded leaves the candidate timed alone (it is no fault of the candidate's).
    Library baseline_lib;
    KernelFn baseline = nullptr;
    std::vector<void*> baseline_args;
    std::vector<std::pair<const void*, size_t>> baseline_cold;
    if (!req.baseline_library.empty()) {
        baseline_lib.handle = dlopen(req.baseline_library.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (baseline_lib.handle)
            baseline =
                reinterpret_cast<KernelFn>(dlsym(baseline_lib.handle, req.baseline_symbol.c_str()));
        if (!baseline)
            std::cerr << "measure worker: the baseline " << req.baseline_library
                      << " cannot be loaded; timing the candidate alone\n";
        size_t input = 0;
        for (size_t i = 0; baseline && i < req.params.size(); ++i) {
            if (req.params[i].file.empty()) {
                baseline_args.push_back(args[i]);
                continue;
            }
            if (input >= req.baseline_inputs.size())
                throw UserError() << "the baseline has " << req.baseline_inputs.size()
                                  << " inputs, the candidate more";
            const HostBuffer& in = cache.get(req.baseline_inputs[input++], ir::DataType::u8());
            baseline_args.push_back(const_cast<void*>(in.data()));
            if (req.params[i].cold)
                baseline_cold.emplace_back(in.data(), static_cast<size_t>(in.num_elements()));
        }
    }

    double total = 0;
    auto timed_run = [&](KernelFn fn, std::vector<void*>& fn_args,
                         const std::vector<std::pair<const void*, size_t>>& fn_cold) {
        if (req.flush_cache)
            flush_caches();
        for (const auto& [data, bytes] : fn_cold)
            evict_from_caches(data, bytes);
        const Clock::time_point t0 = Clock::now();
        fn(fn_args.data());
        const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
        total += secs;
        return secs;
    };

    // Far slower than the best known: one timed run is enough (see RunRequest::reference_secs).
    // Beside a baseline, "the best known" is the baseline's time now, in this phase of the
    // host, not a time measured minutes ago: a candidate checked in a slow phase would be
    // cut to one run, and one run each of two kernels ranks by luck. The baseline is warmed
    // up first (its first run after loading pays for page faults and first-touch allocations:
    // 16x its time on a 256^3 sgemm here).
    bool slow = false;
    if (baseline) {
        for (int i = 0; i < std::max(req.warmup, 1); ++i)
            baseline(baseline_args.data());
        const double baseline_now = timed_run(baseline, baseline_args, baseline_cold);
        slow = req.slow_factor > 0 && check_secs > req.slow_factor * baseline_now;
        if (slow)
            reply.baseline_run_secs.push_back(baseline_now);
        total = 0;
    } else {
        slow = req.reference_secs > 0 && check_secs > req.slow_factor * req.reference_secs;
    }
    for (int i = 0; i < req.warmup && !slow; ++i)
        kernel(args.data());
    const int max_repeats = slow ? 1 : req.max_repeats;
    while (static_cast<int>(reply.run_secs.size()) < max_repeats &&
           (static_cast<int>(reply.run_secs.size()) < req.min_repeats ||
            total < req.min_repeat_secs)) {
        if (baseline && !slow)
            reply.baseline_run_secs.push_back(timed_run(baseline, baseline_args, baseline_cold));
        reply.run_secs.push_back(timed_run(kernel, args, cold));
        const int pairs = static_cast<int>(reply.run_secs.size());
        if (baseline && !slow && pairs >= req.min_repeats &&
            (req.behind_factor > 0 || req.ratio_precision > 0)) {
            const PairRatios ratios(reply.run_secs, reply.baseline_run_secs);
            if (req.behind_factor > 0 && ratios.median() > req.behind_factor)
                break; // clearly behind the baseline (RunRequest::behind_factor)
            if (req.ratio_precision > 0 && pairs >= kMinPrecisePairs &&
                ratios.relative_error() < req.ratio_precision)
                break; // the ratio is known precisely enough (RunRequest::ratio_precision)
        }
    }
    return reply;
}

/// Files the tuner sent through the connection (Runner::stream_files): each stored in a
/// private folder under the tuner's path for it, so that requests name them as the tuner does.
class StreamedFiles {
  public:
    ~StreamedFiles() {
        std::error_code ec;
        if (!dir_.empty())
            std::filesystem::remove_all(dir_, ec);
    }
    /// Reads `bytes` bytes of the file the tuner calls `path` from `in`. Throws UserError when
    /// the stream ends early or the copy cannot be written.
    void receive(const std::string& path, int64_t bytes, std::istream& in) {
        if (dir_.empty()) {
            const char* tmp = std::getenv("TMPDIR");
            std::string pattern =
                std::string(tmp && *tmp ? tmp : "/tmp") + "/tessera-worker-XXXXXX";
            if (!mkdtemp(pattern.data()))
                throw UserError() << "cannot create a folder for streamed files: "
                                  << std::strerror(errno);
            dir_ = pattern;
        }
        const std::string local = dir_ + "/f" + std::to_string(next_++);
        std::ofstream out(local, std::ios::binary);
        std::vector<char> buf(1 << 20);
        for (int64_t left = bytes; left > 0;) {
            const auto n = static_cast<std::streamsize>(std::min<int64_t>(left, buf.size()));
            if (!in.read(buf.data(), n))
                throw UserError() << "the stream ended inside file '" << path << "'";
            out.write(buf.data(), n);
            left -= n;
        }
        if (!out.flush())
            throw UserError() << "cannot store the streamed file '" << path << "'";
        forget(path);
        local_[path] = local;
    }
    /// The local copy of `path`; `path` itself when it was not streamed (or "" when only
    /// streamed files may be read).
    std::string resolve(const std::string& path, bool streamed_only) const {
        auto it = local_.find(path);
        if (it != local_.end())
            return it->second;
        return streamed_only ? "" : path;
    }
    /// Drops the copy of `path` (a candidate library, used once).
    void forget(const std::string& path) {
        auto it = local_.find(path);
        if (it == local_.end())
            return;
        std::remove(it->second.c_str());
        local_.erase(it);
    }

  private:
    std::string dir_;
    std::map<std::string, std::string> local_;
    int64_t next_ = 0;
};

/// `req` with every file named by its local copy. Throws UserError for a file that was not
/// streamed when only streamed files may be read.
RunRequest with_local_files(RunRequest req, const StreamedFiles& files, bool streamed_only) {
    auto local = [&](std::string& path) {
        if (path.empty())
            return;
        const std::string l = files.resolve(path, streamed_only);
        if (l.empty())
            throw UserError() << "'" << path << "' was not sent to this worker";
        path = l;
    };
    local(req.library);
    for (RunParam& p : req.params) {
        local(p.file);
        local(p.reference);
    }
    local(req.baseline_library);
    for (std::string& f : req.baseline_inputs)
        local(f);
    return req;
}

void write_all(int fd, const std::string& text) {
    size_t off = 0;
    while (off < text.size()) {
        ssize_t n = write(fd, text.data() + off, text.size() - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            _exit(3); // the tuner is gone: nobody to measure for
        off += static_cast<size_t>(n);
    }
}

} // namespace

int measure_worker_main(bool streamed_only) {
    // A terminal's Ctrl-C reaches the whole process group: the tuner finishes its round and then
    // closes our stdin; the candidate being timed must not die of it (a false error record).
    std::signal(SIGINT, SIG_IGN);
    const int protocol_fd = dup(1);
    if (protocol_fd < 0 || dup2(2, 1) < 0) {
        std::cerr << "measure worker: cannot set up its output: " << std::strerror(errno) << "\n";
        return 2;
    }
    const pid_t parent = getppid();
    std::thread([parent] {
        for (;;) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            if (getppid() != parent)
                _exit(4);
        }
    }).detach();

    // Each kernel thread on a core of its own: unbound, the pool's worker, woken on this
    // thread's CPU, shared it with this thread for the first ~50 ms of a candidate's timing
    // while the other core idled (resnet18's strided convs timed 1.45 instead of 0.56 ms).
    runtime::bind_threads(true);
    std::ios::sync_with_stdio(false); // streamed files are read in large blocks
    write_all(protocol_fd, "{\"ready\":true}\n");
    FileCache cache;
    StreamedFiles files;
    std::string line;
    while (std::getline(std::cin, line)) {
        if (line.empty())
            continue;
        cache.trim();
        if (line.rfind("{\"file\":", 0) == 0) { // a file sent ahead of the requests naming it
            try {
                const nlohmann::json j = nlohmann::json::parse(line);
                files.receive(j.at("file").get<std::string>(), j.at("bytes").get<int64_t>(),
                              std::cin);
            } catch (const std::exception& e) {
                // The stream is out of step with the tuner: end, and let it start a new worker.
                std::cerr << "measure worker: " << e.what() << "\n";
                return 3;
            }
            continue;
        }
        RunReply reply;
        try {
            const RunRequest req = RunRequest::from_json(line);
            reply = serve(with_local_files(req, files, streamed_only), cache);
            files.forget(req.library);
        } catch (const std::exception& e) {
            reply = RunReply();
            reply.error = MeasureError::Unknown;
            reply.error_message = e.what();
        }
        write_all(protocol_fd, reply.to_json() + "\n");
    }
    return 0;
}

} // namespace tessera::tune
