// `tessera bench`: warm up, time runs one by one, report the distribution.
#include "bench_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <sys/resource.h>
#include <unistd.h>

#include "core_round_trip.h"
#include "model_library.h"
#include "tessera/backends/host.h"
#include "tessera/backends/peak_rates.h"
#include "tessera/support/error.h"
#include "tessera/support/rng.h"
#include "threads_option.h"

namespace tessera::cli {

namespace {

/// A buffer of random values of t's dtype. f16 and bf16 get the bits of values in [-1, 1).
std::vector<unsigned char> random_input(const ModelTensorInfo& t, Rng& rng) {
    const int64_t bytes = dense_bytes(t);
    const int64_t elem = model_dtype_bytes(t.dtype);
    if (elem == 0)
        throw UserError() << "input '" << t.name << "' has an unknown "
                          << model_dtype_name(t.dtype);
    std::vector<unsigned char> buf(static_cast<size_t>(bytes));
    const int64_t n = bytes / elem;
    for (int64_t i = 0; i < n; ++i) {
        unsigned char* p = buf.data() + i * elem;
        switch (t.dtype) {
        case TESSERA_F32: {
            const float v = rng.uniform_float(-1.0f, 1.0f);
            std::memcpy(p, &v, 4);
            break;
        }
        case TESSERA_F64: {
            const double v = rng.uniform01() * 2.0 - 1.0;
            std::memcpy(p, &v, 8);
            break;
        }
        case TESSERA_F16: {
            // sign, exponent 14 (0.5..1) and 10 random mantissa bits: |v| in [0.5, 1).
            const uint16_t v = static_cast<uint16_t>((rng.uniform_int(0, 1) << 15) | (14 << 10) |
                                                     rng.uniform_int(0, 1023));
            std::memcpy(p, &v, 2);
            break;
        }
        case TESSERA_BF16: {
            // sign, exponent 126 (0.5..1) and 7 random mantissa bits.
            const uint16_t v = static_cast<uint16_t>((rng.uniform_int(0, 1) << 15) | (126 << 7) |
                                                     rng.uniform_int(0, 127));
            std::memcpy(p, &v, 2);
            break;
        }
        case TESSERA_I32: {
            const int32_t v = static_cast<int32_t>(rng.uniform_int(0, 1));
            std::memcpy(p, &v, 4);
            break;
        }
        case TESSERA_I64: {
            const int64_t v = rng.uniform_int(0, 1);
            std::memcpy(p, &v, 8);
            break;
        }
        default: // bool, i8, u8: one byte
            *p = static_cast<unsigned char>(rng.uniform_int(0, 1));
            break;
        }
    }
    return buf;
}

/// Resident memory now (/proc/self/statm), 0 when unreadable.
int64_t current_rss_bytes() {
    std::ifstream statm("/proc/self/statm");
    int64_t total_pages = 0, resident_pages = 0;
    if (!(statm >> total_pages >> resident_pages))
        return 0;
    return resident_pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

int64_t peak_rss_bytes() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<int64_t>(u.ru_maxrss) * 1024; // Linux reports kilobytes
}

void print_text(const BenchResult& r, std::ostream& out) {
    auto mib = [](int64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); };
    char line[256];
    out << "model   " << r.model_name << " ("
        << (r.threads > 0 ? std::to_string(r.threads) : std::string("default")) << " threads, "
        << r.runs << " runs)\n";
    std::snprintf(line, sizeof line,
                  "median  %.4f ms\np10     %.4f ms\np90     %.4f ms\n"
                  "spread  %.3f (p90/p10)\n",
                  r.median_ms, r.p10_ms, r.p90_ms, r.spread);
    out << line;
    std::snprintf(line, sizeof line, "peak RSS %.1f MiB (the model's share: %.1f MiB)\n",
                  mib(r.peak_rss_bytes), mib(r.model_rss_bytes));
    out << line;
    if (r.arena_bytes >= 0) {
        std::snprintf(line, sizeof line, "arena   %.3f MiB (%lld bytes)\n", mib(r.arena_bytes),
                      static_cast<long long>(r.arena_bytes));
        out << line;
    } else {
        out << "arena   (not reported by this model library)\n";
    }
    if (r.core_round_trip_ns >= 0) {
        std::snprintf(line, sizeof line,
                      "cores   %.0f ns round trip of a cache line between two CPUs (after the "
                      "runs)\n",
                      r.core_round_trip_ns);
        out << line;
    }
}

/// Per call of the sequence: its median time in sequence and hot over `runs` runs each (the
/// profile is cleared before every run, so each run gives one sample per call; medians keep one
/// preempted call from skewing its row).
std::vector<CallTiming> profile_calls(ModelInstance& model, const void* const* inputs,
                                      void* const* outputs, int runs) {
    std::vector<CallTiming> calls;
    for (int mode : {1, 2}) {
        std::vector<std::vector<double>> samples;
        for (int i = 0; i < runs; ++i) {
            model.set_profiling(mode);
            model.run(inputs, outputs);
            const std::vector<ModelInstance::CallProfile> profiles = model.call_profiles();
            samples.resize(profiles.size());
            calls.resize(profiles.size());
            for (size_t c = 0; c < profiles.size(); ++c) {
                samples[c].push_back(profiles[c].seconds * 1e3);
                calls[c].kernel = profiles[c].kernel;
                calls[c].label = profiles[c].label;
                calls[c].flops = profiles[c].flops;
                calls[c].precision = profiles[c].precision;
            }
        }
        for (size_t c = 0; c < samples.size(); ++c) {
            std::sort(samples[c].begin(), samples[c].end());
            (mode == 1 ? calls[c].ms : calls[c].hot_ms) = quantile(samples[c], 0.5);
        }
    }
    model.set_profiling(0);
    return calls;
}

/// The peak-rate precision of a call's products: int8 and bf16 as they are, f32 otherwise.
std::string peak_precision(const CallTiming& c) {
    return c.precision == "int8" || c.precision == "bf16" ? c.precision : "f32";
}

/// Sets each call's peak_fraction from the CPU's peak rates at `threads` threads (measured
/// here, for the precisions the calls compute in) and returns the milliseconds of all calls'
/// operations at those rates.
double compare_with_peak(std::vector<CallTiming>& calls, int threads) {
    std::vector<std::string> used;
    for (const CallTiming& c : calls)
        if (c.flops > 0 && std::find(used.begin(), used.end(), peak_precision(c)) == used.end())
            used.push_back(peak_precision(c));
    if (used.empty())
        return 0;
    const std::vector<backend::PeakRate> rates = backend::measure_peak_rates(threads, 0.05, used);
    double peak_ms = 0;
    for (CallTiming& c : calls) {
        const backend::PeakRate* r = backend::find_peak_rate(rates, peak_precision(c));
        const double rate = r ? (threads == 1 ? r->one_core : r->all_cores) : 0;
        if (c.flops <= 0 || !(rate > 0))
            continue;
        const double at_peak_ms = static_cast<double>(c.flops) / rate * 1e3;
        peak_ms += at_peak_ms;
        c.peak_fraction = c.ms > 0 ? at_peak_ms / c.ms : 0;
    }
    return peak_ms;
}

void print_profile(const std::vector<CallTiming>& calls, double peak_ms, std::ostream& out) {
    double total = 0, total_hot = 0;
    for (const CallTiming& c : calls) {
        total += c.ms;
        total_hot += c.hot_ms;
    }
    char line[256];
    out << "\nper call (median ms over the profiled runs; hot: the call repeated at once, with "
           "warm caches)\n";
    std::snprintf(line, sizeof line, "%5s  %-22s %10s %7s %10s %9s %9s %6s  %s\n", "call", "kernel",
                  "ms", "share", "hot ms", "ms/hot", "GOP/s", "peak", "computes");
    out << line;
    for (size_t c = 0; c < calls.size(); ++c) {
        const CallTiming& t = calls[c];
        std::snprintf(line, sizeof line, "%5zu  %-22s %10.4f %6.1f%% %10.4f %9.2f ", c,
                      t.kernel.c_str(), t.ms, total > 0 ? 100.0 * t.ms / total : 0.0, t.hot_ms,
                      t.hot_ms > 0 ? t.ms / t.hot_ms : 0.0);
        out << line;
        if (t.flops > 0 && t.ms > 0)
            std::snprintf(line, sizeof line, "%9.1f ", static_cast<double>(t.flops) / t.ms / 1e6);
        else
            std::snprintf(line, sizeof line, "%9s ", "-");
        out << line;
        if (t.peak_fraction > 0)
            std::snprintf(line, sizeof line, "%5.0f%%  ", 100.0 * t.peak_fraction);
        else
            std::snprintf(line, sizeof line, "%6s  ", "-");
        out << line << t.label << "\n";
    }
    std::snprintf(line, sizeof line, "%5s  %-22s %10.4f %6.1f%% %10.4f %9.2f\n", "sum", "", total,
                  100.0, total_hot, total_hot > 0 ? total / total_hot : 0.0);
    out << line;
    if (peak_ms > 0) {
        std::snprintf(line, sizeof line,
                      "at peak  %.4f ms: the calls' operations at this CPU's measured peak rates "
                      "of their precisions (`tessera hw --peak`), %.0f%% of the sum\n",
                      peak_ms, total > 0 ? 100.0 * peak_ms / total : 0.0);
        out << line;
    }
}

} // namespace

double quantile(const std::vector<double>& sorted, double q) {
    const double pos = q * static_cast<double>(sorted.size() - 1);
    const size_t lo = static_cast<size_t>(pos);
    const size_t hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

BenchResult bench_model(const BenchOptions& opts, std::ostream& out) {
    if (opts.warmup < 0)
        throw UserError() << "--warmup " << opts.warmup << " is negative";
    if (opts.repeat < 0)
        throw UserError() << "--repeat " << opts.repeat << " is negative";
    if (opts.repeat == 0 && !(opts.min_secs > 0))
        throw UserError() << "--min-secs " << opts.min_secs << " must be positive";
    const int64_t rss_before_load = current_rss_bytes();
    ModelLibrary lib(opts.model);
    ModelInstance model(lib);
    model.set_num_threads(opts.threads);

    Rng rng(opts.seed);
    std::vector<std::vector<unsigned char>> inputs;
    for (const ModelTensorInfo& t : model.inputs())
        inputs.push_back(random_input(t, rng));
    std::vector<std::vector<unsigned char>> outputs;
    for (const ModelTensorInfo& t : model.outputs())
        outputs.emplace_back(static_cast<size_t>(dense_bytes(t)));
    std::vector<const void*> in_ptrs;
    for (const auto& b : inputs)
        in_ptrs.push_back(b.data());
    std::vector<void*> out_ptrs;
    for (auto& b : outputs)
        out_ptrs.push_back(b.data());

    for (int i = 0; i < opts.warmup; ++i)
        model.run(in_ptrs.data(), out_ptrs.data());

    using Clock = std::chrono::steady_clock;
    std::vector<double> times_ms;
    const Clock::time_point start = Clock::now();
    constexpr int kMinRunsByTime = 5;
    for (;;) {
        if (opts.repeat > 0 && static_cast<int>(times_ms.size()) >= opts.repeat)
            break;
        if (opts.repeat == 0 && static_cast<int>(times_ms.size()) >= kMinRunsByTime &&
            std::chrono::duration<double>(Clock::now() - start).count() >= opts.min_secs)
            break;
        const Clock::time_point t0 = Clock::now();
        model.run(in_ptrs.data(), out_ptrs.data());
        times_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    std::sort(times_ms.begin(), times_ms.end());

    BenchResult r;
    r.model_name = model.name();
    r.threads = opts.threads > 0 ? opts.threads : 0;
    r.runs = static_cast<int>(times_ms.size());
    r.median_ms = quantile(times_ms, 0.5);
    r.p10_ms = quantile(times_ms, 0.1);
    r.p90_ms = quantile(times_ms, 0.9);
    r.spread = r.p10_ms > 0 ? r.p90_ms / r.p10_ms : 1.0;
    r.peak_rss_bytes = peak_rss_bytes();
    r.model_rss_bytes = std::max<int64_t>(0, r.peak_rss_bytes - rss_before_load);
    r.arena_bytes = model.arena_bytes();
    if (opts.threads != 1)
        r.core_round_trip_ns = measure_core_round_trip_ns().value_or(-1.0);
    if (opts.profile) {
        // After the timed runs, so that the latency above reads no clock per call.
        const int runs = std::max(kMinRunsByTime, r.runs / 2);
        r.calls = profile_calls(model, in_ptrs.data(), out_ptrs.data(), runs);
        const char* target = lib.api().target ? lib.api().target() : nullptr;
        if (!target || std::strcmp(target, "cuda") != 0)
            r.peak_ms = compare_with_peak(r.calls, opts.threads > 0 ? opts.threads
                                                                    : backend::host_info().cores);
    }

    if (opts.json) {
        nlohmann::ordered_json j;
        j["model"] = r.model_name;
        j["path"] = opts.model;
        j["threads"] = r.threads;
        j["warmup"] = opts.warmup;
        j["runs"] = r.runs;
        j["median_ms"] = r.median_ms;
        j["p10_ms"] = r.p10_ms;
        j["p90_ms"] = r.p90_ms;
        j["spread"] = r.spread;
        j["peak_rss_bytes"] = r.peak_rss_bytes;
        j["model_rss_bytes"] = r.model_rss_bytes;
        if (r.arena_bytes >= 0)
            j["arena_bytes"] = r.arena_bytes;
        else
            j["arena_bytes"] = nullptr;
        if (r.core_round_trip_ns >= 0)
            j["core_round_trip_ns"] = r.core_round_trip_ns;
        if (opts.profile) {
            nlohmann::ordered_json calls = nlohmann::ordered_json::array();
            for (const CallTiming& c : r.calls)
                calls.push_back({{"kernel", c.kernel},
                                 {"label", c.label},
                                 {"ms", c.ms},
                                 {"hot_ms", c.hot_ms},
                                 {"flops", c.flops},
                                 {"precision", c.precision},
                                 {"peak_fraction", c.peak_fraction}});
            j["calls"] = calls;
            j["peak_ms"] = r.peak_ms;
        }
        out << j.dump() << "\n";
    } else {
        print_text(r, out);
        if (opts.profile)
            print_profile(r.calls, r.peak_ms, out);
    }
    return r;
}

CLI::App* add_bench_command(CLI::App& app, BenchOptions& opts) {
    CLI::App* cmd = app.add_subcommand(
        "bench", "Time a model library built by `tessera build` on seeded random inputs: "
                 "median, p10, p90 and spread of the run time, peak memory, arena size");
    cmd->add_option("model", opts.model, "Path of the model library (.so)")->required();
    add_threads_option(cmd, opts.threads, "Threads of the model (0 = one per core)");
    cmd->add_option("--warmup", opts.warmup, "Untimed runs before timing")->capture_default_str();
    CLI::Option* repeat =
        cmd->add_option("--repeat", opts.repeat, "Timed runs (instead of --min-secs)");
    cmd->add_option("--min-secs", opts.min_secs,
                    "Time runs for at least this many seconds (and at least 5 runs)")
        ->capture_default_str()
        ->excludes(repeat);
    cmd->add_option("--seed", opts.seed, "Seed of the random inputs")->capture_default_str();
    cmd->add_flag("--json", opts.json, "Print one JSON object instead of text");
    cmd->add_flag("--profile", opts.profile,
                  "After timing, time every call of the model's sequence: as it runs in the "
                  "model and hot (repeated at once, as a kernel benchmark with warm caches "
                  "would time it); their ratio is the price of cold data. Each call's "
                  "operations per second are set against this CPU's measured peak rate of its "
                  "precision (`tessera hw --peak`), and their sum at those rates bounds the run");
    return cmd;
}

} // namespace tessera::cli
