// Text form of DataType.
#include "tessera/ir/type.h"

#include "tessera/support/error.h"

namespace tessera::ir {

std::string to_string(DataType t) {
    std::string s;
    if (t.is_bool()) {
        s = "bool";
    } else {
        switch (t.code) {
        case DataType::Code::Int: s = "i"; break;
        case DataType::Code::UInt: s = "u"; break;
        case DataType::Code::Float: s = "f"; break;
        case DataType::Code::BFloat: s = "bf"; break;
        }
        s += std::to_string(t.bits);
    }
    if (t.lanes > 1) s += "x" + std::to_string(t.lanes);
    return s;
}

DataType parse_type(const std::string& s) {
    std::string base = s;
    int lanes = 1;
    auto x = s.find('x');
    if (x != std::string::npos) {
        base = s.substr(0, x);
        try {
            lanes = std::stoi(s.substr(x + 1));
        } catch (const std::exception&) {
            throw UserError() << "malformed type '" << s << "'";
        }
    }
    static const struct {
        const char* name;
        DataType type;
    } kTypes[] = {{"bool", DataType::boolean()}, {"i8", {DataType::Code::Int, 8}},
                  {"i16", {DataType::Code::Int, 16}}, {"i32", DataType::i32()},
                  {"i64", DataType::i64()}, {"u8", DataType::u8()},
                  {"u16", {DataType::Code::UInt, 16}}, {"u32", {DataType::Code::UInt, 32}},
                  {"u64", {DataType::Code::UInt, 64}}, {"f16", DataType::f16()},
                  {"bf16", DataType::bf16()},
                  {"f32", DataType::f32()}, {"f64", DataType::f64()}};
    for (const auto& k : kTypes)
        if (base == k.name && lanes >= 1) return k.type.with_lanes(lanes);
    throw UserError() << "unknown type '" << s << "'";
}

std::ostream& operator<<(std::ostream& os, DataType t) { return os << to_string(t); }

} // namespace tessera::ir
