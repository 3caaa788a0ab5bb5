// A one-line live progress display for long-running commands (`tessera tune`).
#pragma once

#include <ostream>
#include <string>

namespace tessera::cli {

/// Shows successive progress texts on one stream. On a terminal each update rewrites the same
/// line (carriage return, then clear to the end of the line), so a long run shows one line that
/// changes; on anything else (a pipe, a log file) each update is a plain line of its own, so
/// logs stay readable. finish() ends a live line with a newline; the destructor calls it.
class ProgressLine {
  public:
    /// `live`: whether `out` is a terminal (the caller decides, e.g. with isatty).
    ProgressLine(std::ostream& out, bool live) : out_(out), live_(live) {}
    ~ProgressLine() { finish(); }
    ProgressLine(const ProgressLine&) = delete;
    ProgressLine& operator=(const ProgressLine&) = delete;

    /// Replaces the shown text (live) or prints it as a new line (not live). Flushes.
    void update(const std::string& text);
    /// Ends the live line so that what follows starts on a fresh line. Idempotent.
    void finish();

  private:
    std::ostream& out_;
    bool live_;
    bool open_ = false; ///< A live line is on screen without its newline.
};

/// A duration for humans: "0.4s", "12s", "3m05s", "2h07m".
std::string format_duration(double secs);

} // namespace tessera::cli
