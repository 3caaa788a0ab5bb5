// The current time as tessera writes it into files and databases.
#pragma once

#include <string>

namespace tessera {

/// The current time as ISO 8601 UTC, to the second ("2026-01-02T03:04:05Z").
std::string utc_now();

} // namespace tessera
