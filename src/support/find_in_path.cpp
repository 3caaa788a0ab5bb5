// find_in_path (find_in_path.h).
#include "tessera/support/find_in_path.h"

#include <cstdlib>
#include <sstream>

#include <unistd.h>

namespace tessera {

std::string find_in_path(const std::string& name) {
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "");
    for (std::string dir; std::getline(dirs, dir, ':');) {
        if (dir.empty())
            continue;
        const std::string candidate = dir + "/" + name;
        if (access(candidate.c_str(), X_OK) == 0)
            return candidate;
    }
    return "";
}

} // namespace tessera
