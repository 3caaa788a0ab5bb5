// Code generation in a child process: the builder's protection against a crash of the code
// generator (an LLVM assertion, a segmentation fault, a fatal error that calls exit). Runs in
// the child cost one candidate each; in the tuner's own process they would end the tuning.
#pragma once

#include <functional>
#include <string>
#include <sys/types.h>

namespace tessera::tune {

/// What a child process reported.
struct ChildOutcome {
    bool ok = false;     ///< The child ran `work` to completion and exited 0.
    std::string message; ///< When !ok: what went wrong (the exception, the signal, stderr).
};

/// Runs `work` in a forked child and waits for it. The child writes what `work` throws, and
/// anything written to its stderr, back through a pipe (the first 16 KiB); it dies with this
/// process (PR_SET_PDEATHSIG) and never runs this process's exit handlers or flushes its
/// stdio buffers. `on_started(pid)` runs in this process once the child exists, and
/// `on_ending()` once it has ended but before it is reaped, so that a watchdog may send the
/// pid a signal only while the pid still names this child (it is not reused before the reap).
/// Pre: the caller has done the one-time setup `work` needs (backend::initialize_codegen), so
/// the child never waits on a lock another thread of this process held at the fork.
/// Throws UserError when the pipe or the process cannot be created.
ChildOutcome run_in_child_process(const std::function<void()>& work,
                                  const std::function<void(pid_t)>& on_started,
                                  const std::function<void()>& on_ending);

} // namespace tessera::tune
