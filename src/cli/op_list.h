// `tessera op list`: the registry's operators and their keys.
#pragma once

#include <ostream>

namespace tessera::cli {

/// Prints each registry op with its keys: required ones bare, others with their defaults. With
/// json, one JSON object instead: {"ops": [{"name", "keys": [{"name", "required", "default",
/// "default_from", "doc"}]}]}, "default" null for a required key or one that defaults to
/// another key ("default_from" names it, else null).
void print_op_list(std::ostream& out, bool json = false);

} // namespace tessera::cli
