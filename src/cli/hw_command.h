// `tessera hw`: what this machine is, as the compiler sees it.
#pragma once

#include <ostream>

namespace tessera::cli {

/// Prints the target triple, CPU, ISA features, cores and cache sizes (as one JSON object
/// when json is set).
void print_hw(bool json, std::ostream& out);

} // namespace tessera::cli
