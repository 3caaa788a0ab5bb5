// `tessera hw`.
#include "hw_command.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core_round_trip.h"
#include "tessera/backends/host.h"
#include "tessera/backends/peak_rates.h"
#include "tessera/tuner/fingerprint.h"

namespace tessera::cli {

static std::string kib(int64_t bytes) {
    return bytes > 0 ? fmt::format("{} KiB", bytes / 1024) : std::string("unknown");
}

void print_hw(const HwOptions& opts, std::ostream& out) {
    const backend::CpuInfo& h = backend::host_info();
    const tune::HardwareFingerprint& fp = tune::host_fingerprint();
    const int threads = opts.threads > 0 ? opts.threads : h.cores;
    const std::vector<backend::PeakRate> peaks =
        opts.peak ? backend::measure_peak_rates(threads) : std::vector<backend::PeakRate>();
    const bool round_trip = opts.peak || opts.round_trip;
    // Negative: not measured (one CPU).
    const double round_trip_ns = round_trip ? measure_core_round_trip_ns().value_or(-1.0) : -1.0;
    if (opts.json) {
        nlohmann::ordered_json j;
        j["triple"] = h.triple;
        j["cpu"] = h.cpu_name;
        j["model_name"] = h.cpu_model_name;
        j["vendor"] = fp.cpu_vendor;
        j["family"] = fp.cpu_family;
        j["model"] = fp.cpu_model;
        j["stepping"] = fp.cpu_stepping;
        j["cores"] = h.cores;
        j["vector_bits"] = h.vector_bits;
        j["l1d_bytes"] = h.l1d_bytes;
        j["l2_bytes"] = h.l2_bytes;
        j["l3_bytes"] = h.l3_bytes;
        j["features"] = h.features;
        j["gpu_name"] = fp.gpu_name;
        j["gpu_arch"] = fp.gpu_arch;
        j["gpu_memory_bytes"] = fp.gpu_memory_bytes;
        j["gpu_driver"] = fp.gpu_driver;
        j["cuda_version"] = fp.cuda_version;
        j["fingerprint"] = fp.hash();
        j["fingerprint_text"] = fp.canonical_text();
        j["isa_class"] = fp.isa_class();
        if (opts.peak) {
            nlohmann::ordered_json rates = nlohmann::ordered_json::array();
            for (const backend::PeakRate& r : peaks)
                rates.push_back({{"precision", r.precision},
                                 {"instruction", r.instruction},
                                 {"one_core", r.one_core},
                                 {"all_cores", r.all_cores},
                                 {"threads", r.threads}});
            j["peak_rates"] = std::move(rates);
        }
        if (round_trip) {
            if (round_trip_ns >= 0)
                j["core_round_trip_ns"] = round_trip_ns;
            else
                j["core_round_trip_ns"] = nullptr;
        }
        out << j.dump() << "\n";
        return;
    }
    out << fmt::format("triple       {}\n", h.triple);
    out << fmt::format("cpu          {} ({})\n", h.cpu_name, h.cpu_model_name);
    out << fmt::format("vendor       {} (family {}, model {}, stepping {})\n",
                       fp.cpu_vendor.empty() ? "unknown" : fp.cpu_vendor, fp.cpu_family,
                       fp.cpu_model, fp.cpu_stepping);
    out << fmt::format("cores        {}\n", h.cores);
    out << fmt::format("vector bits  {}\n", h.vector_bits);
    out << fmt::format("caches       L1d {}, L2 {}, L3 {}\n", kib(h.l1d_bytes), kib(h.l2_bytes),
                       kib(h.l3_bytes));
    out << "features    ";
    for (const auto& f : h.features)
        out << " " << f;
    out << "\n";
    out << fmt::format("fingerprint  {} (tuning records are looked up by it)\n", fp.hash());
    out << fmt::format("isa class    {}\n", fp.isa_class());
    out << fmt::format("gpu          {}\n", fp.gpu_name.empty()
                                                ? "none (GPU detection comes with the CUDA backend)"
                                                : fp.gpu_name + " " + fp.gpu_arch);
    if (opts.peak) {
        out << "peak rates   (measured: operands in registers, 2 operations per multiply-add)\n";
        for (const backend::PeakRate& r : peaks)
            out << fmt::format("  {:<5} {:<30} {:8.1f} G{}/s on one core, {:8.1f} on {}\n",
                               r.precision, r.instruction, r.one_core / 1e9,
                               r.precision == "int8" ? "OP" : "FLOP", r.all_cores / 1e9,
                               r.threads == 1 ? std::string("1 thread")
                                              : fmt::format("{} threads", r.threads));
    }
    if (round_trip) {
        if (round_trip_ns >= 0)
            out << fmt::format("core round trip {:.0f} ns (a cache line from one CPU to another "
                               "and back: what threads pay to read each other's writes)\n",
                               round_trip_ns);
        else
            out << "core round trip (not measured: this process may use one CPU)\n";
    }
    out << "fingerprint text (hashed):\n";
    std::string text = fp.canonical_text();
    for (size_t pos = 0; pos < text.size();) {
        size_t end = text.find('\n', pos);
        out << "  " << text.substr(pos, end - pos) << "\n";
        pos = end + 1; // canonical_text ends every line in '\n'
    }
}

} // namespace tessera::cli
