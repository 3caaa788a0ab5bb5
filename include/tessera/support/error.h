// Error classes of tessera: bad user input, internal invariant failures, and schedule errors.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace tessera {

/// Bad user input (unknown op, malformed spec, bad file). The CLI prints "error: <what()>"
/// and exits 1. Messages start lower-case, carry the offending value, and have no trailing
/// period. Build one with streaming: `throw UserError() << "unknown op '" << name << "'";`
class UserError : public std::exception {
public:
    UserError() = default;
    explicit UserError(std::string msg) : msg_(std::move(msg)) {}
    template <typename T> UserError&& operator<<(const T& x) && {
        std::ostringstream os;
        os << x;
        msg_ += os.str();
        return std::move(*this);
    }
    const char* what() const noexcept override { return msg_.c_str(); }

private:
    std::string msg_;
};

/// An illegal schedule step met during search or replay: expected, cheap, counted and skipped.
class ScheduleError : public std::exception {
public:
    explicit ScheduleError(std::string msg) : msg_(std::move(msg)) {}
    const char* what() const noexcept override { return msg_.c_str(); }

private:
    std::string msg_;
};

/// A broken internal invariant: a bug in tessera, never the user's fault. Carries file:line.
class InternalError : public std::exception {
public:
    explicit InternalError(std::string msg) : msg_(std::move(msg)) {}
    const char* what() const noexcept override { return msg_.c_str(); }

private:
    std::string msg_;
};

namespace detail {
/// Collects a streamed message and throws InternalError when destroyed (end of the full
/// expression in TESSERA_CHECK).
class CheckFailure {
public:
    CheckFailure(const char* file, int line, const char* cond);
    [[noreturn]] ~CheckFailure() noexcept(false);
    template <typename T> CheckFailure& operator<<(const T& x) {
        os_ << x;
        return *this;
    }

private:
    std::ostringstream os_;
};
} // namespace detail

} // namespace tessera

/// Always-on invariant check: `TESSERA_CHECK(x > 0) << "bad x " << x;` throws InternalError
/// with file:line, the condition text and the streamed message.
#define TESSERA_CHECK(cond)                                                                    \
    if (cond) {                                                                                \
    } else                                                                                     \
        ::tessera::detail::CheckFailure(__FILE__, __LINE__, #cond)

/// Unconditional internal failure with a message.
#define TESSERA_UNREACHABLE() ::tessera::detail::CheckFailure(__FILE__, __LINE__, "unreachable")
