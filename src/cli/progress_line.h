// A one-line live progress display for long-running commands (`tessera tune`).
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

namespace tessera::cli {

/// Shows successive progress texts on one stream. On a terminal each update rewrites the same
/// line (carriage return, then clear to the end of the line), so a long run shows one line that
/// changes; on anything else (a pipe, a log file) each update is a plain line of its own, so
/// logs stay readable. finish() ends a live line with a newline; the destructor calls it.
/// update() and the refresher may run on different threads: output is serialized.
class ProgressLine {
  public:
    /// `live`: whether `out` is a terminal (the caller decides, e.g. with isatty).
    ProgressLine(std::ostream& out, bool live) : out_(out), live_(live) {}
    ~ProgressLine() { finish(); }
    ProgressLine(const ProgressLine&) = delete;
    ProgressLine& operator=(const ProgressLine&) = delete;

    /// Replaces the shown text (live) or prints it as a new line (not live). Flushes.
    void update(const std::string& text);
    /// Starts a thread that shows render() again whenever no update came for `period_secs`
    /// (so the elapsed time keeps moving during a long round), until finish(). render is
    /// called on that thread and must be thread-safe. Pre: period_secs > 0; called once.
    void refresh_every(double period_secs, std::function<std::string()> render);
    /// Stops the refresher and ends the live line so that what follows starts on a fresh line.
    /// Idempotent.
    void finish();

  private:
    void write(const std::string& text); ///< Pre: mu_ held.

    std::ostream& out_;
    bool live_;
    bool open_ = false; ///< A live line is on screen without its newline.
    std::mutex mu_;
    std::condition_variable wake_;
    bool stopping_ = false;
    bool updated_ = false; ///< An update() came since the refresher last looked.
    std::thread refresher_;
};

/// The latest progress report of a long call and when it came, so that a refresher can show
/// the time moving on between reports. `Progress` has elapsed_secs and eta_secs (0: unknown).
/// Thread-safe.
template <class Progress> class LatestProgress {
  public:
    void set(const Progress& p) {
        std::lock_guard<std::mutex> lock(mu_);
        latest_ = p;
        at_ = std::chrono::steady_clock::now();
    }
    /// The latest report, its elapsed time advanced (and its eta reduced) by the time since.
    Progress now() const {
        std::lock_guard<std::mutex> lock(mu_);
        Progress p = latest_;
        const double since =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - at_).count();
        p.elapsed_secs += since;
        if (p.eta_secs > 0)
            p.eta_secs = std::max(0.0, p.eta_secs - since);
        return p;
    }

  private:
    mutable std::mutex mu_;
    Progress latest_{};
    std::chrono::steady_clock::time_point at_ = std::chrono::steady_clock::now();
};

/// How often a progress line is shown again without news: every second on a terminal, every
/// 30 seconds in a log (one line each).
inline double progress_refresh_secs(bool live) { return live ? 1.0 : 30.0; }

/// A duration for humans: "0.4s", "12s", "3m05s", "2h07m".
std::string format_duration(double secs);

/// Where a tune's time went, for its summary: "measuring 4m10s (timed repeats 2m01s), search
/// and the rest 50s", from the elapsed time, the time measuring candidates and the timed
/// repeats within it (tune::TuneResult's measure_secs and repeat_secs, summed over tasks).
std::string tune_time_split(double elapsed_secs, double measure_secs, double repeat_secs);

} // namespace tessera::cli
