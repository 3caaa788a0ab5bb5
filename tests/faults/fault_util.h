// Shared by the fault tests (tests/faults): their mode and the figures they report.
// ctest runs them in fast mode; scripts/fault_suite.sh --long sets TESSERA_FAULT_MODE=long for
// more kills and longer soaks, and collects every figure into one table.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace tessera::testing {

/// Whether the fault tests run in long mode (TESSERA_FAULT_MODE=long).
inline bool fault_long_mode() {
    const char* mode = std::getenv("TESSERA_FAULT_MODE");
    return mode && std::string(mode) == "long";
}

/// `fast` in fast mode, `slow` in long mode.
template <typename T> T fault_scale(T fast, T slow) { return fault_long_mode() ? slow : fast; }

/// Reports one figure of the fault suite as the line "FAULT-FIGURE <name>: <value>" on stdout
/// (flushed at once, so a later crash does not lose it). Names are stable: the suite script
/// prints them as a table.
inline void print_figure(const std::string& name, const std::string& value) {
    std::printf("FAULT-FIGURE %s: %s\n", name.c_str(), value.c_str());
    std::fflush(stdout);
}

} // namespace tessera::testing
