// `tessera op list`: the registry's operators and their keys.
#pragma once

#include <ostream>

namespace tessera::cli {

/// Prints each registry op with its keys: required ones bare, others with their defaults.
void print_op_list(std::ostream& out);

} // namespace tessera::cli
