// Finding a program the way a shell does: in the directories of PATH.
#pragma once

#include <string>

namespace tessera {

/// The path of the first executable file named `name` in the directories of PATH (in order;
/// empty entries skipped), or "" when there is none. Pre: name contains no '/'. Never throws.
std::string find_in_path(const std::string& name);

} // namespace tessera
