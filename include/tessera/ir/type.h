// DataType: the scalar or vector type of an IR expression.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace tessera::ir {

/// A type is (code, bits, lanes). Booleans are UInt(1). lanes > 1 is a vector of that many
/// elements. Index arithmetic is Int(64). BFloat(16) is bfloat16, a storage type: code casts
/// it to and from f32 and does no other arithmetic on it (backends may refuse any).
struct DataType {
    enum class Code : uint8_t { Int, UInt, Float, BFloat };
    Code code = Code::Int;
    uint8_t bits = 64;
    uint16_t lanes = 1;

    constexpr DataType() = default;
    constexpr DataType(Code c, int b, int l = 1)
        : code(c), bits(static_cast<uint8_t>(b)), lanes(static_cast<uint16_t>(l)) {}

    static constexpr DataType i32(int lanes = 1) { return {Code::Int, 32, lanes}; }
    static constexpr DataType i64(int lanes = 1) { return {Code::Int, 64, lanes}; }
    static constexpr DataType f32(int lanes = 1) { return {Code::Float, 32, lanes}; }
    static constexpr DataType f64(int lanes = 1) { return {Code::Float, 64, lanes}; }
    static constexpr DataType f16(int lanes = 1) { return {Code::Float, 16, lanes}; }
    static constexpr DataType bf16(int lanes = 1) { return {Code::BFloat, 16, lanes}; }
    static constexpr DataType boolean(int lanes = 1) { return {Code::UInt, 1, lanes}; }
    static constexpr DataType u8(int lanes = 1) { return {Code::UInt, 8, lanes}; }

    bool is_int() const { return code == Code::Int; }
    bool is_uint() const { return code == Code::UInt && bits != 1; }
    bool is_bool() const { return code == Code::UInt && bits == 1; }
    /// Float and BFloat.
    bool is_float() const { return code == Code::Float || code == Code::BFloat; }
    bool is_bfloat() const { return code == Code::BFloat; }
    bool is_scalar() const { return lanes == 1; }
    bool is_vector() const { return lanes > 1; }
    /// Same code and bits, given lanes.
    DataType with_lanes(int l) const { return {code, bits, l}; }
    DataType element_of() const { return with_lanes(1); }
    /// Size in bytes of one element (booleans take one byte in memory).
    int bytes() const { return bits == 1 ? 1 : bits / 8; }

    bool operator==(const DataType& o) const {
        return code == o.code && bits == o.bits && lanes == o.lanes;
    }
    bool operator!=(const DataType& o) const { return !(*this == o); }
};

/// Text form: "i64", "f32", "bool", "f32x8".
std::string to_string(DataType t);
/// Parses the text form; throws UserError on an unknown type name.
DataType parse_type(const std::string& s);
std::ostream& operator<<(std::ostream& os, DataType t);

} // namespace tessera::ir
