// `tessera op list`.
#include "op_list.h"

#include <fmt/format.h>

#include "tessera/te/op_registry.h"

namespace tessera::cli {

void print_op_list(std::ostream& out) {
    out << "operators (SPEC is NAME:key=value,...; keys without '=' are required)\n";
    for (const auto& name : te::list_ops()) {
        std::string keys;
        for (const auto& k : te::op_keys(name)) {
            keys += " " + k.name;
            if (k.required) continue;
            keys += "=" + (k.default_from.empty() ? std::to_string(k.default_value) : k.default_from);
        }
        out << fmt::format("  {:<18}{}\n", name, keys);
    }
}

} // namespace tessera::cli
