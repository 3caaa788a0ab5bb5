// ProgressLine: live (\r-rewritten) or plain-line progress output.
#include "progress_line.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

namespace tessera::cli {

void ProgressLine::update(const std::string& text) {
    std::lock_guard<std::mutex> lock(mu_);
    updated_ = true;
    write(text);
}

void ProgressLine::write(const std::string& text) {
    if (live_) {
        // "\x1b[K" clears what a longer earlier text left to the right of the cursor.
        out_ << '\r' << text << "\x1b[K";
        open_ = true;
    } else {
        out_ << text << '\n';
    }
    out_.flush();
}

void ProgressLine::refresh_every(double period_secs, std::function<std::string()> render) {
    refresher_ = std::thread([this, period_secs, render = std::move(render)] {
        const auto period = std::chrono::duration<double>(period_secs);
        std::unique_lock<std::mutex> lock(mu_);
        while (!stopping_) {
            updated_ = false;
            if (wake_.wait_for(lock, period, [this] { return stopping_; }))
                break;
            if (!updated_)
                write(render());
        }
    });
}

void ProgressLine::finish() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (refresher_.joinable())
        refresher_.join();
    std::lock_guard<std::mutex> lock(mu_);
    if (!open_)
        return;
    out_ << '\n';
    out_.flush();
    open_ = false;
}

std::string format_duration(double secs) {
    if (!std::isfinite(secs) || secs < 0)
        return "?";
    if (secs < 10)
        return fmt::format("{:.1f}s", secs);
    const long total = std::lround(secs);
    if (total < 60)
        return fmt::format("{}s", total);
    if (total < 3600)
        return fmt::format("{}m{:02}s", total / 60, total % 60);
    return fmt::format("{}h{:02}m", total / 3600, total % 3600 / 60);
}

std::string tune_time_split(double elapsed_secs, double measure_secs, double repeat_secs) {
    return fmt::format("measuring {} (timed repeats {}), search and the rest {}",
                       format_duration(measure_secs), format_duration(repeat_secs),
                       format_duration(std::max(0.0, elapsed_secs - measure_secs)));
}

} // namespace tessera::cli
