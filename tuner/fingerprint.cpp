// Hardware fingerprint: host_info() plus the CPU identity from /proc/cpuinfo.
#include "tessera/tuner/fingerprint.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "tessera/backends/host.h"
#include "tessera/support/sha256.h"
#ifdef TESSERA_HAVE_CUDA
#include "tessera/backends/cuda.h"
#include "tessera/backends/cuda_driver.h"
#endif

namespace tessera::tune {

namespace {

std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos)
        return "";
    size_t e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

/// The value of `key` in the first processor block of /proc/cpuinfo text ("" when absent).
std::string cpuinfo_field(const std::string& text, const std::string& key) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (trim(line).empty())
            break; // end of the first processor block
        size_t colon = line.find(':');
        if (colon == std::string::npos)
            continue;
        if (trim(line.substr(0, colon)) == key)
            return trim(line.substr(colon + 1));
    }
    return "";
}

int to_int(const std::string& s) {
    try {
        // Decimal, or hex with a 0x prefix (ARM "CPU implementer"); never octal.
        bool hex = s.rfind("0x", 0) == 0 || s.rfind("0X", 0) == 0;
        return s.empty() ? 0 : std::stoi(s, nullptr, hex ? 16 : 10);
    } catch (const std::exception&) {
        return 0; // a field we cannot read is 0, as documented
    }
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

} // namespace

bool is_codegen_isa_feature(const std::string& f) {
    static const char* kPrefixes[] = {"sse",     "ssse3",   "avx", "fma",    "f16c", "amx",
                                      "neon",    "evex512", "sve", "sme",    "fp16", "bf16",
                                      "dotprod", "i8mm",    "vsx", "altivec"};
    for (const char* p : kPrefixes)
        if (starts_with(f, p))
            return true;
    return false;
}

std::string HardwareFingerprint::canonical_text() const {
    std::ostringstream os;
    auto join = [](const std::vector<std::string>& v) {
        std::string s;
        for (size_t i = 0; i < v.size(); ++i)
            s += (i ? "," : "") + v[i];
        return s;
    };
    std::vector<std::string> sorted = features;
    std::sort(sorted.begin(), sorted.end());
    os << "fingerprint_version=1\n";
    os << "triple=" << triple << "\n";
    os << "cpu_vendor=" << cpu_vendor << "\n";
    os << "cpu_model_name=" << cpu_model_name << "\n";
    os << "cpu_name=" << cpu_name << "\n";
    os << "cpu_family=" << cpu_family << "\n";
    os << "cpu_model=" << cpu_model << "\n";
    os << "cpu_stepping=" << cpu_stepping << "\n";
    os << "features=" << join(sorted) << "\n";
    os << "cores=" << cores << "\n";
    os << "l1d_bytes=" << l1d_bytes << "\n";
    os << "l2_bytes=" << l2_bytes << "\n";
    os << "l3_bytes=" << l3_bytes << "\n";
    os << "gpu_name=" << gpu_name << "\n";
    os << "gpu_arch=" << gpu_arch << "\n";
    os << "gpu_memory_bytes=" << gpu_memory_bytes << "\n";
    os << "gpu_driver=" << gpu_driver << "\n";
    os << "cuda_version=" << cuda_version << "\n";
    return os.str();
}

std::string HardwareFingerprint::hash() const { return sha256_hex(canonical_text()).substr(0, 16); }

std::string HardwareFingerprint::isa_class() const {
    std::vector<std::string> isa;
    for (const std::string& f : features)
        if (is_codegen_isa_feature(f))
            isa.push_back(f);
    std::sort(isa.begin(), isa.end());
    isa.erase(std::unique(isa.begin(), isa.end()), isa.end());
    std::string s = triple + ";";
    for (size_t i = 0; i < isa.size(); ++i)
        s += (i ? "," : "") + isa[i];
    return s;
}

HardwareFingerprint make_fingerprint(const backend::CpuInfo& host, const std::string& cpuinfo) {
    HardwareFingerprint fp;
    fp.triple = host.triple;
    fp.cpu_name = host.cpu_name;
    fp.cpu_model_name = host.cpu_model_name;
    if (fp.cpu_model_name.empty())
        fp.cpu_model_name = cpuinfo_field(cpuinfo, "model name");
    fp.cpu_vendor = cpuinfo_field(cpuinfo, "vendor_id");
    if (fp.cpu_vendor.empty())
        fp.cpu_vendor = cpuinfo_field(cpuinfo, "CPU implementer"); // arm
    fp.cpu_family = to_int(cpuinfo_field(cpuinfo, "cpu family"));
    fp.cpu_model = to_int(cpuinfo_field(cpuinfo, "model"));
    fp.cpu_stepping = to_int(cpuinfo_field(cpuinfo, "stepping"));
    fp.features = host.features;
    std::sort(fp.features.begin(), fp.features.end());
    fp.cores = host.cores;
    fp.l1d_bytes = host.l1d_bytes;
    fp.l2_bytes = host.l2_bytes;
    fp.l3_bytes = host.l3_bytes;
    return fp;
}

const HardwareFingerprint& host_fingerprint() {
    static const HardwareFingerprint fp = [] {
        std::ifstream in("/proc/cpuinfo");
        std::stringstream text;
        if (in)
            text << in.rdbuf();
        HardwareFingerprint f = make_fingerprint(backend::host_info(), text.str());
#ifdef TESSERA_HAVE_CUDA
        // The GPU fields: device 0 when a CUDA driver and device are present (empty otherwise,
        // so machines without a GPU keep their fingerprint).
        if (const backend::cuda::CudaDriver& drv = backend::cuda::CudaDriver::get(); drv.available()) {
            const auto& d = drv.device();
            f.gpu_name = d.name;
            f.gpu_arch = d.arch();
            f.gpu_memory_bytes = d.total_memory_bytes;
            f.gpu_driver = std::to_string(d.driver_version / 1000) + "." +
                           std::to_string(d.driver_version % 1000 / 10);
            f.cuda_version = backend::cuda::nvrtc_version();
        }
#endif
        return f;
    }();
    return fp;
}

} // namespace tessera::tune
