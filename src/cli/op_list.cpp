// `tessera op list`.
#include "op_list.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tessera/te/op_registry.h"

namespace tessera::cli {

namespace {

nlohmann::ordered_json op_list_json() {
    nlohmann::ordered_json ops = nlohmann::ordered_json::array();
    for (const auto& name : te::list_ops()) {
        nlohmann::ordered_json keys = nlohmann::ordered_json::array();
        for (const auto& k : te::op_keys(name)) {
            const bool has_value = !k.required && k.default_from.empty();
            keys.push_back(
                {{"name", k.name},
                 {"required", k.required},
                 {"default",
                  has_value ? nlohmann::ordered_json(k.default_value) : nlohmann::ordered_json()},
                 {"default_from", k.default_from.empty() ? nlohmann::ordered_json()
                                                         : nlohmann::ordered_json(k.default_from)},
                 {"doc", k.doc}});
        }
        ops.push_back({{"name", name}, {"keys", keys}});
    }
    return {{"ops", ops}};
}

} // namespace

void print_op_list(std::ostream& out, bool json) {
    if (json) {
        out << op_list_json().dump() << "\n";
        return;
    }
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
