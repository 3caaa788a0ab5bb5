// The measurement builder: candidate loop programs compiled to shared libraries, several at
// once, each against a time limit (the first half of measure.h's pipeline).
//
// Per candidate, on a build thread: lower (the candidate's own function, normally
// sched::lower_state) -> lower::prepare_for_codegen, then in a child process of its own
// (codegen_process.h) backend::emit_object_file -> backend::link_shared_library into
// work_dir/cand_<N>.so (N counts up over the Builder's life, so paths are never reused); the
// object file is removed after linking. A code generator that crashes, aborts or exits costs
// its candidate a CompileHost error naming the signal, not the tuner. Builds run in parallel.
//
// Time limit: a build still running build_timeout_secs after it started becomes a
// BuildTimeout result at once, and its slot goes to the next candidate, so one slow compile
// never blocks a batch. A compile process is killed then; lowering, which runs on the thread,
// cannot be killed safely, so a late lowering is left to finish in the background: its result
// is discarded and its files are deleted when it ends. The Builder's destructor waits for such
// builds (lowering is finite; it may take a while).
//
// Stragglers: once a batch has straggler_min_builds successful builds, a build running
// longer than max(straggler_min_secs, straggler_factor x their median) is given up the same
// way (a BuildTimeout that says so). Such compiles come from huge unrolled bodies, whose code
// is slow too: in a 150 s resnet18 tune every build over 4x its batch's median and 0.5 s ran
// 6.8-62x slower than its task's best, and the longest (8.7 s) left the other core idle.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tessera/backends/llvm.h"
#include "tessera/ir/stmt.h"
#include "tessera/tuner/database.h"

namespace tessera::tune {

/// How to produce one candidate's loop IR as a function called `name`. Runs on a build thread,
/// so it must not touch unsynchronized shared state. A ScheduleError (or any other exception)
/// makes the candidate an Instantiation error.
using LowerFn = std::function<ir::LoweredFunc(const std::string& name)>;

struct BuilderOptions {
    std::string work_dir;            ///< Existing, writable directory for .o/.so files.
    int threads = 1;                 ///< Builds at once (>= 1).
    double timeout_secs = 60;        ///< Per candidate, from its start (> 0).
    double straggler_factor = 5;     ///< x the batch's median build; 0: no straggler limit.
    double straggler_min_secs = 1;   ///< The straggler limit is never below this.
    int straggler_min_builds = 8;    ///< Successful builds of the batch before the limit holds.
    backend::CompileOptions compile; ///< Passed to emit_object_file.
    /// Compiles one prepared function into the object file `obj` and links `so`; runs in the
    /// compile process. Empty: backend::emit_object_file then backend::link_shared_library.
    /// (Tests put faults here.)
    std::function<void(const ir::LoweredFunc&, const std::string& obj, const std::string& so)>
        codegen;
};

/// One built candidate.
struct BuildResult {
    /// Ok, Instantiation (lowering failed), CompileHost (prepare, codegen or link failed, or
    /// the compile process died) or BuildTimeout.
    MeasureError error = MeasureError::Ok;
    std::string error_message;
    double build_secs = 0;    ///< Wall time from the start of its build (the limit for timeouts).
    std::string library_path; ///< The .so (Ok only); the caller removes it when done.
    std::string symbol;       ///< The kernel's C symbol, `void symbol(void** args)`.
    std::vector<ir::Buffer> params; ///< The kernel's parameters, in argument order (Ok only).
};

class Builder {
  public:
    /// Throws UserError on options out of range (naming the option and value).
    explicit Builder(BuilderOptions opts);
    /// Waits for builds that timed out and are still running, then deletes their files.
    ~Builder();
    Builder(const Builder&) = delete;
    Builder& operator=(const Builder&) = delete;

    /// Builds every candidate, at most opts.threads at once, and returns one result each, in
    /// order. Never throws for a failing candidate. Results do not depend on the thread count.
    std::vector<BuildResult> build(const std::vector<LowerFn>& candidates);

    /// The symbol every built kernel gets.
    static const char* kernel_symbol();

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace tessera::tune
