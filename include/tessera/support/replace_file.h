// Writing an output file all or nothing: into a temporary name beside it, then renamed over it.
// Readers of the output see its old content or the whole new one, and a failed write leaves
// no half file under the output's name.
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace tessera {

/// Throws UserError naming `path` when it exists and is not a regular file (a folder, a device
/// such as /dev/null, a pipe): a rename over it would replace that node, not write into it.
void check_replaceable(const std::string& path);

/// Runs `write` on a stream to `path`.partial, then renames that over `path`. Throws UserError
/// naming `path` (and removes the partial file) when it is not replaceable (check_replaceable),
/// the file cannot be written or renamed; what `write` throws propagates after the same
/// cleanup.
void replace_file(const std::string& path, const std::function<void(std::ostream&)>& write);

} // namespace tessera
