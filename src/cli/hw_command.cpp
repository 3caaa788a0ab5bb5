// `tessera hw`.
#include "hw_command.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tessera/backends/host.h"
#include "tessera/tuner/fingerprint.h"

namespace tessera::cli {

static std::string kib(int64_t bytes) {
    return bytes > 0 ? fmt::format("{} KiB", bytes / 1024) : std::string("unknown");
}

void print_hw(bool json, std::ostream& out) {
    const backend::HostInfo& h = backend::host_info();
    const tune::HardwareFingerprint& fp = tune::host_fingerprint();
    if (json) {
        nlohmann::ordered_json j;
        j["triple"] = h.triple;
        j["cpu"] = h.cpu_name;
        j["model_name"] = h.cpu_model_name;
        j["cores"] = h.cores;
        j["vector_bits"] = h.vector_bits;
        j["l1d_bytes"] = h.l1d_bytes;
        j["l2_bytes"] = h.l2_bytes;
        j["l3_bytes"] = h.l3_bytes;
        j["features"] = h.features;
        j["fingerprint"] = fp.hash();
        j["fingerprint_text"] = fp.canonical_text();
        j["isa_class"] = fp.isa_class();
        out << j.dump() << "\n";
        return;
    }
    out << fmt::format("triple       {}\n", h.triple);
    out << fmt::format("cpu          {} ({})\n", h.cpu_name, h.cpu_model_name);
    out << fmt::format("cores        {}\n", h.cores);
    out << fmt::format("vector bits  {}\n", h.vector_bits);
    out << fmt::format("caches       L1d {}, L2 {}, L3 {}\n", kib(h.l1d_bytes), kib(h.l2_bytes),
                       kib(h.l3_bytes));
    out << "features    ";
    for (const auto& f : h.features) out << " " << f;
    out << "\n";
    out << fmt::format("fingerprint  {} (tuning records are looked up by it)\n", fp.hash());
    out << fmt::format("isa class    {}\n", fp.isa_class());
}

} // namespace tessera::cli
