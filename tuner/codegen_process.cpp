// Code generation in a child process (codegen_process.h).
#include "codegen_process.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include <fcntl.h>
#include <stdio_ext.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "tessera/support/error.h"

namespace tessera::tune {

namespace {

/// What the parent keeps of the child's report: enough for an error line, never enough to
/// fill the pipe (64 KiB on Linux) and block the child before it exits.
constexpr size_t kMaxReport = 16 * 1024;

/// Writes all of `text` (up to kMaxReport) to fd, retrying short writes.
void write_report(int fd, const std::string& text) {
    const char* p = text.data();
    size_t left = std::min(text.size(), kMaxReport);
    while (left > 0) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        p += n;
        left -= static_cast<size_t>(n);
    }
}

// exit() in the child (LLVM's report_fatal_error calls it when no handler is installed) must
// not run the parent's atexit handlers and static destructors: they take locks that other
// threads of the parent held at fork (the leak checker of a sanitizer build stops the world
// there and hung). Registered last, this handler runs first and ends the process.
void exit_without_cleanup() { _exit(1); }

[[noreturn]] void child_main(int report_fd, pid_t parent, const std::function<void()>& work) {
    // Buffered output of the parent was copied by fork: drop it so it is not written twice.
    __fpurge(stdout);
    __fpurge(stderr);
    // Die with the parent: a killed tuner must not leave compilers writing into its folder.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) // the parent died before the line above took effect
        _exit(125);
    // What the code generator prints before it dies (LLVM ERROR lines) reaches the report.
    dup2(report_fd, STDERR_FILENO);
    std::atexit(exit_without_cleanup);
    int code = 0;
    try {
        work();
    } catch (const std::exception& e) {
        write_report(report_fd, e.what());
        code = 1;
    } catch (...) {
        write_report(report_fd, "unknown exception");
        code = 1;
    }
    _exit(code); // never the parent's atexit handlers or static destructors
}

std::string read_available(int fd) {
    std::string text;
    char buf[4096];
    while (text.size() < kMaxReport) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) // 0: every writer closed; -1 EAGAIN: another child still holds a copy
            break;
        text.append(buf, static_cast<size_t>(n));
    }
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.pop_back();
    for (char& c : text)
        if (c == '\n')
            c = ' ';
    return text;
}

} // namespace

ChildOutcome run_in_child_process(const std::function<void()>& work,
                                  const std::function<void(pid_t)>& on_started,
                                  const std::function<void()>& on_ending) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        throw UserError() << "cannot create a pipe for a compile process: " << std::strerror(errno);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
        const int err = errno;
        close(fds[0]);
        close(fds[1]);
        throw UserError() << "cannot start a compile process: " << std::strerror(err);
    }
    if (pid == 0) {
        close(fds[0]);
        child_main(fds[1], parent, work);
    }
    close(fds[1]);
    on_started(pid);
    // Wait without reaping, so the pid stays this child's while on_ending runs.
    siginfo_t info{};
    while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
    }
    on_ending();
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    // Other children forked meanwhile hold copies of the write end: read without blocking.
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    std::string report = read_available(fds[0]);
    close(fds[0]);

    ChildOutcome out;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        out.ok = true;
    } else if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        out.message = fmt::format("the compile process died of signal {} ({}){}{}", sig,
                                  strsignal(sig), report.empty() ? "" : ": ", report);
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 1 && !report.empty()) {
        out.message = report; // an exception of the work: its message alone
    } else {
        out.message = fmt::format("the compile process exited with status {}{}{}",
                                  WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                                  report.empty() ? "" : ": ", report);
    }
    return out;
}

} // namespace tessera::tune
