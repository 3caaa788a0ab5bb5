// The measurer's work directory and the sweep of abandoned ones (measure_work_dir.h).
#include "measure_work_dir.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <unistd.h>

#include "tessera/support/error.h"

namespace tessera::tune {

namespace {

namespace fs = std::filesystem;

constexpr const char* kPrefix = "tessera_measure_";
constexpr const char* kOwnerFile = "owner";

/// A process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or nullopt
/// when no such process runs.
std::optional<unsigned long long> start_ticks(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat;
    if (!std::getline(in, stat))
        return std::nullopt;
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos)
        return std::nullopt;
    std::istringstream fields(stat.substr(close + 1));
    std::string field;
    for (int i = 3; i < 22; ++i) // fields 3..21
        fields >> field;
    unsigned long long ticks = 0;
    if (!(fields >> ticks))
        return std::nullopt;
    return ticks;
}

/// This process's pid namespace ("pid:[4026531836]"), "" when unknown.
std::string pid_namespace() {
    std::error_code ec;
    fs::path ns = fs::read_symlink("/proc/self/ns/pid", ec);
    return ec ? std::string() : ns.string();
}

} // namespace

std::string create_owned_work_dir(const std::string& parent) {
    std::string templ = parent + "/" + kPrefix + "XXXXXX";
    if (!mkdtemp(templ.data()))
        throw UserError() << "cannot create a work directory '" << templ
                          << "': " << std::strerror(errno);
    const pid_t self = getpid();
    // Written whole to a temporary name first: a sweeping tuner never reads half an owner.
    const std::string tmp = templ + "/" + kOwnerFile + ".tmp";
    {
        std::ofstream out(tmp);
        out << self << " " << start_ticks(self).value_or(0) << " " << pid_namespace() << "\n";
    }
    std::error_code ec;
    fs::rename(tmp, templ + "/" + kOwnerFile, ec); // without it the folder is never swept
    return templ;
}

int remove_abandoned_work_dirs(const std::string& parent) {
    const std::string ns = pid_namespace();
    int removed = 0;
    std::error_code ec;
    for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.rfind(kPrefix, 0) != 0 || !it->is_directory(ec))
            continue;
        std::ifstream in(it->path() / kOwnerFile);
        long long pid = 0;
        unsigned long long ticks = 0;
        std::string owner_ns;
        if (!(in >> pid >> ticks >> owner_ns) || pid <= 0 || ns.empty() || owner_ns != ns)
            continue;
        const std::optional<unsigned long long> now = start_ticks(static_cast<pid_t>(pid));
        if (now && *now == ticks)
            continue; // the owner still runs
        std::error_code rm;
        fs::remove_all(it->path(), rm);
        removed += rm ? 0 : 1;
    }
    return removed;
}

} // namespace tessera::tune
