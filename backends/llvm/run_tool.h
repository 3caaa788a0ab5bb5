// Running an external tool (the linker) from the backend, its output captured in a log file.
#pragma once

#include <string>
#include <vector>

namespace tessera::backend {

/// Runs argv (argv[0] searched in PATH) with stdout and stderr into the file `log`; returns the
/// exit status, or -1 when it could not be started or was killed by a signal.
int run_tool_logged(const std::vector<std::string>& argv, const std::string& log);

/// The whole content of a text file ("" when it cannot be read).
std::string read_text_file(const std::string& path);

/// A tool's output made fit for a one-line error message: its non-blank lines, trimmed, joined
/// by "; " ("" when it printed nothing). An error is one line on stderr, and a linker's
/// complaint spans several ("ld: final link failed: ...", "collect2: error: ...").
std::string one_line(const std::string& output);

} // namespace tessera::backend
