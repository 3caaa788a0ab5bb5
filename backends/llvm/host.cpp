// Host detection: LLVM's view of the CPU plus cores and caches from sysfs.
#include "tessera/backends/host.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>

#include "tessera/runtime/thread_pool.h"

namespace tessera::backend {

namespace {

std::string read_first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

/// Parses sysfs cache sizes such as "48K", "1280K", "32M".
int64_t parse_size(const std::string& s) {
    if (s.empty())
        return 0;
    std::istringstream in(s);
    int64_t v = 0;
    if (!(in >> v))
        return 0;
    char unit = 0;
    in >> unit;
    if (unit == 'K')
        v *= 1024;
    else if (unit == 'M')
        v *= 1024 * 1024;
    else if (unit == 'G')
        v *= int64_t{1024} * 1024 * 1024;
    return v;
}

void read_caches(CpuInfo& h) {
    for (int i = 0; i < 16; ++i) {
        std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
        std::string level = read_first_line(dir + "level");
        if (level.empty())
            break;
        std::string type = read_first_line(dir + "type");
        int64_t size = parse_size(read_first_line(dir + "size"));
        if (level == "1" && type == "Data")
            h.l1d_bytes = size;
        else if (level == "2" && type != "Instruction")
            h.l2_bytes = size;
        else if (level == "3" && type != "Instruction")
            h.l3_bytes = size;
    }
}

std::string read_model_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) != 0)
            continue;
        auto colon = line.find(':');
        if (colon == std::string::npos)
            continue;
        std::string v = line.substr(colon + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        return v;
    }
    return "";
}

CpuInfo detect() {
    CpuInfo h;
    h.triple = llvm::sys::getProcessTriple();
    h.cpu_name = llvm::sys::getHostCPUName().str();
    for (const auto& f : llvm::sys::getHostCPUFeatures())
        if (f.getValue())
            h.features.push_back(f.getKey().str());
    std::sort(h.features.begin(), h.features.end());
    h.cores = runtime::default_num_threads();
    read_caches(h);
    h.cpu_model_name = read_model_name();
    h.vector_bits = vector_bits_of(h.features);
    h.vector_registers = vector_registers_of(h.triple, h.features);
    return h;
}

} // namespace

bool CpuInfo::has_feature(const std::string& name) const {
    return std::binary_search(features.begin(), features.end(), name);
}

const CpuInfo& host_info() {
    static const CpuInfo info = detect();
    return info;
}

} // namespace tessera::backend
