// Out-of-line parts of the error classes.
#include "tessera/support/error.h"

namespace tessera::detail {

CheckFailure::CheckFailure(const char* file, int line, const char* cond) {
    os_ << "internal error at " << file << ":" << line << ": check failed: " << cond << ": ";
}

CheckFailure::~CheckFailure() noexcept(false) { throw InternalError(os_.str()); }

} // namespace tessera::detail
