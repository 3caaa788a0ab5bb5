// The --json output of the commands: one flag and one help text for all of them, and the JSON
// values that several commands print the same way.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "tessera/schedule/step.h"

namespace tessera::cli {

/// The help of the --json flag of a command whose output is replaced by one JSON object.
inline constexpr const char* kJsonFlagHelp = "Print one JSON object instead of text";

/// Adds `--json` to cmd, bound to `json`. With it, a command prints exactly one JSON object
/// (one line) on stdout instead of its text; errors stay one "error:" line on stderr.
inline CLI::Option* add_json_flag(CLI::App* cmd, bool& json,
                                  const std::string& help = kJsonFlagHelp) {
    return cmd->add_flag("--json", json, help);
}

/// `j` as one line of JSON text. Strings read from a tuning database may hold bytes that are not
/// UTF-8 (a damaged file): they print as U+FFFD instead of failing the dump, so that a report on
/// a damaged database still comes out (nlohmann's default throws a type_error, an exit 2).
inline std::string json_line(const nlohmann::ordered_json& j) {
    return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

/// A step list as the JSON value steps_to_json writes ({"version": 1, "steps": [...]}), so
/// that it can be embedded in a JSON object and, dumped to a file, replayed by `op run
/// --schedule` and `op lower --schedule`. Key order is steps_to_json's.
inline nlohmann::ordered_json step_list_json(const std::vector<sched::Step>& steps) {
    return nlohmann::ordered_json::parse(sched::steps_to_json(steps));
}

/// Seconds as a JSON number of milliseconds, or null when `secs` is not finite (no time, e.g.
/// a workload without an ok record): JSON has no infinity.
inline nlohmann::ordered_json ms_or_null(double secs) {
    return std::isfinite(secs) ? nlohmann::ordered_json(secs * 1e3) : nlohmann::ordered_json();
}

} // namespace tessera::cli
