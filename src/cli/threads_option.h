// The --threads option of the commands that run kernels (run, bench, op run, tune): one range
// and one message for all of them.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace tessera::cli {

/// The most threads --threads accepts: more than the cores of any machine tessera runs on, few
/// enough that a typo (99999999) is an error rather than a request for that many threads.
constexpr int kMaxThreads = 1024;

/// Adds `--threads` to cmd, bound to `threads` (its default shown in --help); a value outside
/// 0..kMaxThreads is a parse error: "--threads: Value -1 not in range 0 to 1024".
inline CLI::Option* add_threads_option(CLI::App* cmd, int& threads, const std::string& help) {
    return cmd->add_option("--threads", threads, help)
        ->check(CLI::Range(0, kMaxThreads))
        ->capture_default_str();
}

} // namespace tessera::cli
