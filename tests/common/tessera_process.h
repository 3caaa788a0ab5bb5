// Running the tessera executable from a test: its exit code, stdout and stderr through files,
// started in the background (to signal it) or waited for. Header-only because it uses the
// TESSERA_BINARY path that each test program is compiled with.
#pragma once

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#ifndef TESSERA_BINARY
#error "tessera_process.h needs the TESSERA_BINARY define of the test programs"
#endif

namespace tessera::testing {

struct ProcessOutput {
    int code = -1;   ///< Exit code; -1 when killed by a signal.
    std::string out; ///< stdout
    std::string err; ///< stderr
};

/// The whole content of a file ("" when it cannot be read).
inline std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

/// Starts `tessera ARGS` through the shell, stdout and stderr into files; returns its pid (the
/// shell execs tessera, so signals sent to the pid reach tessera itself).
inline pid_t start_tessera(const std::string& args, const std::string& out_file,
                           const std::string& err_file) {
    const std::string cmd =
        "exec " + std::string(TESSERA_BINARY) + " " + args + " >" + out_file + " 2>" + err_file;
    const pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    return pid;
}

/// Waits for a start_tessera process and reads its output files.
inline ProcessOutput wait_tessera(pid_t pid, const std::string& out_file,
                                  const std::string& err_file) {
    int status = 0;
    waitpid(pid, &status, 0);
    ProcessOutput o;
    o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    o.out = read_text(out_file);
    o.err = read_text(err_file);
    return o;
}

/// Runs `tessera ARGS` to completion; its output goes through scratch.out and scratch.err.
inline ProcessOutput run_tessera(const std::string& args, const std::string& scratch) {
    const std::string out = scratch + ".out", err = scratch + ".err";
    return wait_tessera(start_tessera(args, out, err), out, err);
}

/// Runs `tessera ARGS 2>STDERR_TO` through a pipe: `out` holds stdout (and stderr with the
/// default "&1"); `err` stays empty.
inline ProcessOutput capture_tessera(const std::string& args, const std::string& stderr_to = "&1") {
    const std::string cmd = std::string(TESSERA_BINARY) + " " + args + " 2>" + stderr_to;
    ProcessOutput o;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p)
        return o;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0)
        o.out.append(buf.data(), n);
    const int status = pclose(p);
    o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return o;
}

/// The lines of s, without their '\n'.
inline std::vector<std::string> lines_of(const std::string& s) {
    std::vector<std::string> lines;
    std::istringstream in(s);
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    return lines;
}

} // namespace tessera::testing
