// The measurement runner: built kernels are loaded, checked and timed in a separate worker
// process, so that a kernel that crashes or hangs costs one error record, never the tuner.
//
// Protocol: the worker (`tessera __measure-worker`, measure_worker_main) reads one JSON object
// per line on stdin and answers one JSON object per line on stdout. Right after starting it
// says {"ready":true}. Requests are RunRequest::to_json, replies RunReply::to_json. A request
// may be preceded by files, each a line {"file":"<path>","bytes":N} and N raw bytes (no
// reply): the worker keeps a private copy and reads it wherever a request names that path.
//
// The parent (Runner) talks to the worker over a Unix socket pair (the worker's stdin and
// stdout), and sends with MSG_NOSIGNAL, so a worker that died never raises SIGPIPE in the
// tuner. The worker's stderr goes to a log file; the tail written during a failed request is
// appended to its error message. For each request the parent waits with poll() until
// timeout_secs have passed:
//   - a reply: returned as is;
//   - the deadline: the worker is killed (SIGKILL), reaped, and the request is a RunTimeout;
//   - end of file (the worker died): reaped, and the request is a RuntimeDevice error naming
//     the signal (strsignal) or the exit code.
// After a failed request the next one starts a fresh worker. The worker is started lazily, on
// the first request, and kept across requests.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <sys/types.h>
#include <vector>

#include "tessera/tuner/database.h"
#include "tessera/tuner/measure.h"

namespace tessera::tune {

/// One kernel parameter of a request: an input read from a file, or an output of `bytes`
/// bytes of `dtype`, optionally checked against a reference file.
struct RunParam {
    std::string file;      ///< Input: raw data file (the worker caches it by path, read-only).
    int64_t bytes = 0;     ///< Output: its size in bytes.
    std::string dtype;     ///< Output: element type ("f32", ...; ir::parse_type).
    std::string reference; ///< Output: raw file of the expected values; empty = not checked.
    /// Input: evicted from every cache level before each timed run (MeasureOptions::cold_weights
    /// marks a task's weights so: in a model, the other kernels have evicted them).
    bool cold = false;
};

/// What the worker does with one library.
struct RunRequest {
    std::string library;          ///< Path of the shared library (dlopen RTLD_NOW|RTLD_LOCAL).
    std::string symbol;           ///< `void symbol(void** args)`.
    std::vector<RunParam> params; ///< In argument order.
    // The timing settings default to MeasureOptions', which says why each is what it is.
    /// Max element_error (host_buffer.h) of a correct output.
    double tolerance = MeasureOptions{}.tolerance;
    int threads = 0; ///< runtime::set_num_threads for the kernel (0 = all cores).
    int warmup = MeasureOptions{}.warmup;           ///< Untimed runs after the checked run.
    int min_repeats = MeasureOptions{}.min_repeats; ///< Timed runs: at least this many ...
    /// ... and until their total reaches this ...
    double min_repeat_secs = MeasureOptions{}.min_repeat_secs;
    int max_repeats = MeasureOptions{}.max_repeats; ///< ... but never more than this many.
    /// Overwrite a last-level-cache-sized buffer before each timed run.
    bool flush_cache = MeasureOptions{}.flush_cache;
    /// The best known time of the task (0 = none yet). A candidate whose checked run already
    /// takes more than slow_factor x reference_secs is timed once, without warm-up: its time
    /// only has to tell the search that it is slow, and repeating a slow kernel is where
    /// measuring spends most of its time. With a baseline, one timed run of the baseline just
    /// before stands for reference_secs (the same phase of the host), and a slow candidate's
    /// one run is paired with it.
    double reference_secs = 0;
    double slow_factor = MeasureOptions{}.slow_factor;
    /// With a baseline: the timed pairs end once min_repeats are in and the median of their
    /// ratios (candidate / baseline) exceeds this (MeasureOptions::behind_factor; 0 = never).
    double behind_factor = MeasureOptions{}.behind_factor;
    /// With a baseline: the timed pairs end once 8 are in and the median of their ratios has
    /// a relative standard error below this (MeasureOptions::ratio_precision; 0 = never).
    double ratio_precision = MeasureOptions{}.ratio_precision;
    /// The baseline: another (checked before) library of the same task, timed run for run in
    /// alternation with the candidate (baseline, candidate, baseline, ...; both on the same
    /// outputs), so that a phase of the host that slows both alike cancels out in their ratio.
    /// Empty = the candidate is timed alone. The timed loop's min_repeats and max_repeats count
    /// the candidate's runs, min_repeat_secs both together.
    std::string baseline_library;
    std::string baseline_symbol;
    /// The baseline's input files, one per input parameter (it may store inputs in other
    /// layouts than the candidate); its outputs are the candidate's.
    std::vector<std::string> baseline_inputs;

    std::string to_json() const;
    /// Throws UserError when the text is not a valid request.
    static RunRequest from_json(const std::string& line);
};

/// The worker's answer.
struct RunReply {
    MeasureError error = MeasureError::Ok; ///< Ok, WrongAnswer, RuntimeDevice, RunTimeout, Unknown.
    std::string error_message;
    std::vector<double> run_secs; ///< Every timed run (Ok only).
    /// The baseline's timed runs, alternated with run_secs (Ok with a baseline only).
    std::vector<double> baseline_run_secs;
    double max_rel_error = 0; ///< Over all checked outputs (Ok and WrongAnswer).

    std::string to_json() const;
    /// Throws UserError when the text is not a valid reply.
    static RunReply from_json(const std::string& line);
};

class Runner {
  public:
    /// worker_command: the program and its arguments (argv[0] is a path; not searched in PATH).
    /// stderr_log: file the worker's stderr is appended to. realtime_priority > 0 starts the
    /// worker under SCHED_FIFO at that priority (its kernel threads inherit it), so that other
    /// processes cannot preempt a timed run; where that is not permitted (no root or
    /// CAP_SYS_NICE) the worker runs with normal scheduling and realtime_denied() says so.
    /// stream_files sends the library, inputs and references of each request through the
    /// connection before it (each input and reference once per worker) instead of leaving the
    /// worker to read them by path: a worker on another machine needs no shared folder.
    /// Throws UserError when the command is empty or timeout_secs is not positive.
    Runner(std::vector<std::string> worker_command, double timeout_secs, std::string stderr_log,
           int realtime_priority = 0, bool stream_files = false);
    /// Stops the worker (closes its input, kills it, reaps it).
    ~Runner();
    Runner(const Runner&) = delete;
    Runner& operator=(const Runner&) = delete;

    /// Runs one request on the worker (starting one if none is alive) and returns its reply,
    /// or the RunTimeout / RuntimeDevice reply described in the file comment. Throws
    /// UserError only when no worker can be started at all (bad command, no ready line within
    /// 30 s).
    RunReply run(const RunRequest& req);

    /// The pid of the live worker, or -1.
    pid_t worker_pid() const { return pid_; }
    /// How many workers were started so far.
    int workers_started() const { return started_; }
    /// True when real-time scheduling was asked for and refused by the system.
    bool realtime_denied() const { return realtime_denied_; }

  private:
    void start_worker();
    void stop_worker();
    /// With stream_files: sends the request's files the worker does not have. Returns false
    /// when the worker is gone. Throws UserError when a file cannot be read here.
    bool send_files(const RunRequest& req);
    /// Reads one line before `deadline_ms` (CLOCK_MONOTONIC milliseconds). Returns 1 on a
    /// line, 0 on timeout, -1 on end of file or error.
    int read_line(std::string& line, int64_t deadline_ms);
    /// Reaps the dead worker and describes how it ended ("killed by signal 11 (Segmentation
    /// fault)", "exited with code 3").
    std::string reap_dead_worker();
    std::string stderr_tail_since(int64_t offset) const;

    std::vector<std::string> command_;
    double timeout_secs_;
    std::string stderr_log_;
    int realtime_priority_ = 0;
    bool realtime_denied_ = false;
    pid_t pid_ = -1;
    int fd_ = -1;         ///< Parent's end of the socket pair.
    std::string pending_; ///< Bytes read past the last line.
    bool stream_files_ = false;
    std::set<std::string> sent_; ///< Inputs, references and baselines the live worker has.
    int started_ = 0;
};

} // namespace tessera::tune
