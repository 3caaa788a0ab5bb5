// The parent side of the measurement worker: start it, send requests, wait with a deadline,
// turn crashes and hangs into error replies (see runner.h).
#include "tessera/tuner/runner.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tessera/support/error.h"

extern char** environ;

namespace tessera::tune {

namespace {

using nlohmann::json;

int64_t monotonic_ms() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

MeasureError measure_error_from_string(const std::string& s) {
    for (int i = 0; i <= static_cast<int>(MeasureError::Unknown); ++i) {
        if (s == to_string(static_cast<MeasureError>(i)))
            return static_cast<MeasureError>(i);
    }
    throw UserError() << "unknown measurement error '" << s << "'";
}

/// Sends all of `text`, without SIGPIPE. Returns false when the worker is gone.
bool send_all(int fd, const std::string& text) {
    size_t off = 0;
    while (off < text.size()) {
        ssize_t n = send(fd, text.data() + off, text.size() - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        off += static_cast<size_t>(n);
    }
    return true;
}

int64_t file_size(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

} // namespace

// ---- protocol ---------------------------------------------------------------------------------

std::string RunRequest::to_json() const {
    json j;
    j["library"] = library;
    j["symbol"] = symbol;
    json ps = json::array();
    for (const RunParam& p : params) {
        json jp;
        if (!p.file.empty()) {
            jp["file"] = p.file;
            if (p.cold)
                jp["cold"] = true;
        } else {
            jp["bytes"] = p.bytes;
            jp["dtype"] = p.dtype;
            if (!p.reference.empty())
                jp["reference"] = p.reference;
        }
        ps.push_back(jp);
    }
    j["params"] = ps;
    j["tolerance"] = tolerance;
    j["threads"] = threads;
    j["warmup"] = warmup;
    j["min_repeats"] = min_repeats;
    j["min_repeat_secs"] = min_repeat_secs;
    j["max_repeats"] = max_repeats;
    j["flush_cache"] = flush_cache;
    j["reference_secs"] = reference_secs;
    j["slow_factor"] = slow_factor;
    j["behind_factor"] = behind_factor;
    j["ratio_precision"] = ratio_precision;
    if (!baseline_library.empty()) {
        j["baseline_library"] = baseline_library;
        j["baseline_symbol"] = baseline_symbol;
        j["baseline_inputs"] = baseline_inputs;
    }
    return j.dump();
}

RunRequest RunRequest::from_json(const std::string& line) {
    try {
        json j = json::parse(line);
        RunRequest r;
        r.library = j.at("library").get<std::string>();
        r.symbol = j.at("symbol").get<std::string>();
        for (const json& jp : j.at("params")) {
            RunParam p;
            if (jp.contains("file")) {
                p.file = jp.at("file").get<std::string>();
                p.cold = jp.value("cold", false);
            } else {
                p.bytes = jp.at("bytes").get<int64_t>();
                p.dtype = jp.at("dtype").get<std::string>();
                p.reference = jp.value("reference", std::string());
            }
            r.params.push_back(std::move(p));
        }
        r.tolerance = j.at("tolerance").get<double>();
        r.threads = j.at("threads").get<int>();
        r.warmup = j.at("warmup").get<int>();
        r.min_repeats = j.at("min_repeats").get<int>();
        r.min_repeat_secs = j.at("min_repeat_secs").get<double>();
        r.max_repeats = j.at("max_repeats").get<int>();
        r.flush_cache = j.at("flush_cache").get<bool>();
        r.reference_secs = j.value("reference_secs", 0.0);
        r.slow_factor = j.value("slow_factor", RunRequest{}.slow_factor);
        r.behind_factor = j.value("behind_factor", RunRequest{}.behind_factor);
        r.ratio_precision = j.value("ratio_precision", RunRequest{}.ratio_precision);
        if (j.contains("baseline_library")) {
            r.baseline_library = j.at("baseline_library").get<std::string>();
            r.baseline_symbol = j.at("baseline_symbol").get<std::string>();
            r.baseline_inputs = j.at("baseline_inputs").get<std::vector<std::string>>();
        }
        return r;
    } catch (const json::exception& e) {
        throw UserError() << "bad measurement request: " << e.what();
    }
}

std::string RunReply::to_json() const {
    json j;
    j["error"] = to_string(error);
    if (!error_message.empty())
        j["message"] = error_message;
    j["run_secs"] = run_secs;
    if (!baseline_run_secs.empty())
        j["baseline_run_secs"] = baseline_run_secs;
    // JSON has no infinity: a non-finite error (NaN where a number was expected) is sent as null.
    if (std::isfinite(max_rel_error))
        j["max_rel_error"] = max_rel_error;
    else
        j["max_rel_error"] = nullptr;
    return j.dump();
}

RunReply RunReply::from_json(const std::string& line) {
    try {
        json j = json::parse(line);
        RunReply r;
        r.error = measure_error_from_string(j.at("error").get<std::string>());
        r.error_message = j.value("message", std::string());
        r.run_secs = j.at("run_secs").get<std::vector<double>>();
        r.baseline_run_secs = j.value("baseline_run_secs", std::vector<double>());
        const json& e = j.at("max_rel_error");
        r.max_rel_error = e.is_null() ? INFINITY : e.get<double>();
        return r;
    } catch (const json::exception& e) {
        throw UserError() << "bad measurement reply: " << e.what();
    }
}

// ---- the worker process -----------------------------------------------------------------------

Runner::Runner(std::vector<std::string> worker_command, double timeout_secs, std::string stderr_log,
               int realtime_priority, bool stream_files)
    : command_(std::move(worker_command)), timeout_secs_(timeout_secs),
      stderr_log_(std::move(stderr_log)), realtime_priority_(realtime_priority),
      stream_files_(stream_files) {
    if (command_.empty())
        throw UserError() << "the measurement worker command is empty";
    if (!(timeout_secs_ > 0))
        throw UserError() << "run timeout must be positive, got " << timeout_secs_;
}

Runner::~Runner() { stop_worker(); }

void Runner::start_worker() {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        throw UserError() << "cannot create a socket pair for the measurement worker: "
                          << std::strerror(errno);
    std::vector<char*> argv;
    for (const auto& a : command_)
        argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    // posix_spawn (fork + exec without running any of our code in the child) is safe in a
    // process with other threads; dup2 clears close-on-exec on the worker's ends only.
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, sv[1], 0);
    posix_spawn_file_actions_adddup2(&actions, sv[1], 1);
    posix_spawn_file_actions_addopen(&actions, 2, stderr_log_.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    pid_t pid = -1;
    int rc = -1;
    if (realtime_priority_ > 0 && !realtime_denied_) {
        // SCHED_FIFO from the first instruction: the threads the kernels start inherit it.
        posix_spawnattr_t attr;
        posix_spawnattr_init(&attr);
        sched_param param{};
        param.sched_priority = realtime_priority_;
        posix_spawnattr_setschedpolicy(&attr, SCHED_FIFO);
        posix_spawnattr_setschedparam(&attr, &param);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSCHEDULER);
        rc = posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), environ);
        posix_spawnattr_destroy(&attr);
        if (rc == EPERM || rc == EINVAL) {
            realtime_denied_ = true; // fall through to a normal start
            std::fprintf(stderr,
                         "warning: real-time scheduling of the measurement worker was "
                         "refused (%s; it needs root or CAP_SYS_NICE): timing with "
                         "normal scheduling\n",
                         std::strerror(rc));
        }
    }
    if (realtime_priority_ <= 0 || realtime_denied_)
        rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(sv[1]);
    if (rc != 0) {
        close(sv[0]);
        throw UserError() << "cannot start the measurement worker '" << command_[0]
                          << "': " << std::strerror(rc);
    }
    pid_ = pid;
    fd_ = sv[0];
    pending_.clear();
    sent_.clear();
    ++started_;
    const int64_t log_offset = file_size(stderr_log_);
    std::string line;
    int got = read_line(line, monotonic_ms() + 30000);
    bool ready = false;
    if (got == 1) {
        try {
            ready = json::parse(line).value("ready", false);
        } catch (const json::exception&) {
        }
    }
    if (!ready) {
        std::string how = got == 1   ? "it said '" + line + "'"
                          : got == 0 ? std::string("it did not answer within 30 s")
                                     : "it " + reap_dead_worker();
        stop_worker();
        std::string tail = stderr_tail_since(log_offset);
        throw UserError() << "the measurement worker '" << command_[0] << "' did not start: " << how
                          << (tail.empty() ? "" : ": ") << tail;
    }
}

void Runner::stop_worker() {
    if (fd_ >= 0)
        close(fd_);
    fd_ = -1;
    if (pid_ > 0) {
        kill(pid_, SIGKILL);
        while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
        }
    }
    pid_ = -1;
    pending_.clear();
}

int Runner::read_line(std::string& line, int64_t deadline_ms) {
    for (;;) {
        size_t nl = pending_.find('\n');
        if (nl != std::string::npos) {
            line = pending_.substr(0, nl);
            pending_.erase(0, nl + 1);
            return 1;
        }
        int64_t left = deadline_ms - monotonic_ms();
        if (left <= 0)
            return 0;
        pollfd p{fd_, POLLIN, 0};
        int rc = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1 << 30)));
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0)
            return -1;
        if (rc == 0)
            return 0;
        char buf[4096];
        ssize_t n = read(fd_, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        pending_.append(buf, static_cast<size_t>(n));
    }
}

std::string Runner::reap_dead_worker() {
    // End of file normally means the worker is dead or dying; give it 2 s to be reaped, then
    // kill it (a worker that closed its output but lives on is of no use either).
    int status = 0;
    pid_t r = 0;
    for (int waited_ms = 0; r == 0; waited_ms += 10) {
        r = waitpid(pid_, &status, WNOHANG);
        if (r < 0 && errno == EINTR)
            r = 0;
        if (r == 0 && waited_ms >= 2000) {
            kill(pid_, SIGKILL);
            do {
                r = waitpid(pid_, &status, 0);
            } while (r < 0 && errno == EINTR);
        } else if (r == 0) {
            usleep(10000);
        }
    }
    pid_ = -1;
    if (r < 0)
        return "ended (status unknown)";
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        return "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
    }
    if (WIFEXITED(status))
        return "exited with code " + std::to_string(WEXITSTATUS(status));
    return "ended";
}

bool Runner::send_files(const RunRequest& req) {
    if (!stream_files_)
        return true;
    std::vector<std::string> paths = {req.library}; // a new library each time, used once
    std::vector<std::string> kept; // sent once per worker: inputs, references, the baseline
    for (const RunParam& p : req.params)
        for (const std::string& f : {p.file, p.reference})
            kept.push_back(f);
    kept.push_back(req.baseline_library);
    kept.insert(kept.end(), req.baseline_inputs.begin(), req.baseline_inputs.end());
    for (const std::string& f : kept)
        if (!f.empty() && sent_.insert(f).second)
            paths.push_back(f);
    for (const std::string& path : paths) {
        std::ifstream in(path, std::ios::binary);
        if (!in)
            throw UserError() << "cannot read '" << path << "' to send it to the worker";
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        // Keys in this order: the worker recognises a file by the line's start.
        const std::string header =
            "{\"file\":" + json(path).dump() + ",\"bytes\":" + std::to_string(bytes.size()) + "}\n";
        if (!send_all(fd_, header) || !send_all(fd_, bytes))
            return false;
    }
    return true;
}

std::string Runner::stderr_tail_since(int64_t offset) const {
    std::ifstream in(stderr_log_);
    if (!in)
        return "";
    in.seekg(offset);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string s = ss.str();
    while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
        s.pop_back();
    constexpr size_t kMax = 400;
    if (s.size() > kMax)
        s = "..." + s.substr(s.size() - kMax);
    for (char& c : s)
        if (c == '\n')
            c = ' ';
    return s;
}

RunReply Runner::run(const RunRequest& req) {
    // A worker that died between requests (killed from outside) is replaced silently: the
    // candidate about to run is not to blame.
    if (pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        stop_worker();
    }
    if (pid_ < 0)
        start_worker();
    const int64_t log_offset = file_size(stderr_log_);
    const bool sent = send_files(req);
    const int64_t deadline = monotonic_ms() + static_cast<int64_t>(timeout_secs_ * 1000);
    RunReply reply;
    std::string line;
    int got = sent && send_all(fd_, req.to_json() + "\n") ? read_line(line, deadline) : -1;
    if (got == 1) {
        try {
            return RunReply::from_json(line);
        } catch (const UserError& e) {
            reply.error = MeasureError::Unknown;
            reply.error_message = e.what();
            stop_worker();
            return reply;
        }
    }
    if (got == 0) {
        stop_worker();
        reply.error = MeasureError::RunTimeout;
        reply.error_message =
            fmt::format("no result within the time limit of {:g} s (worker killed)", timeout_secs_);
    } else {
        reply.error = MeasureError::RuntimeDevice;
        reply.error_message = "the measurement worker " + reap_dead_worker();
        stop_worker();
    }
    std::string tail = stderr_tail_since(log_offset);
    if (!tail.empty())
        reply.error_message += ": " + tail;
    return reply;
}

} // namespace tessera::tune
