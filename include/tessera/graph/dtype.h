// DType: the element types of graph values, and one table that says, for each, its name, size,
// loop-IR type and its codes in ONNX, .npy files and the model library's C API. Everything that
// maps a dtype to something else reads this table instead of switching on DType.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "tessera/ir/type.h"
#include "tessera/support/bfloat16.h"
#include "tessera/support/half.h"
#include "tessera/support/narrow_types.h"

namespace tessera::graph {

/// Element types of graph values. Bool is stored as one byte (0 or 1) per element, F16 as IEEE
/// binary16, BF16 as bfloat16 (the top half of an f32), the narrow types (ONNX's 8- and 4-bit
/// floats, 4- and 2-bit integers; support/narrow_types.h) as one code per byte. New dtypes go
/// at the end: the enum's values are not stored anywhere, but tests and the table list them in
/// this order.
enum class DType : uint8_t {
    F32,
    F64,
    I32,
    I64,
    Bool,
    F16,
    I8,
    U8,
    I16,
    U16,
    U32,
    U64,
    BF16,
    F8E4M3FN,
    F8E4M3FNUZ,
    F8E5M2,
    F8E5M2FNUZ,
    F4E2M1,
    I4,
    U4,
    I2,
    U2,
};

/// What the table knows of one dtype.
struct DTypeInfo {
    DType dtype;
    const char* name; ///< "f32", "u8", "bool" (tessera's own spelling, in messages and files)
    uint8_t bytes;    ///< bytes of one element
    ir::DataType ir;  ///< the loop-IR scalar type (Bool is ir::DataType::boolean())
    int32_t onnx;     ///< ONNX TensorProto::DataType code
    const char* npy;  ///< numpy's descr ("<f4", "|u1")
    int32_t abi;      ///< TesseraDType value of the model library's C API (tessera_model.h)
    bool is_float;    ///< F32, F64, F16, BF16 and the narrow floats
    bool is_signed;   ///< floats and signed integers
    /// F16, BF16 and the narrow floats: floats that are only stored; ops that compute read them
    /// through Casts to f32 (the importer places them) and their results are cast back.
    bool storage_float;
    /// The narrow types: the format of their one-byte codes (loop-IR type u8); Cast converts
    /// with te/narrow_cast.h. Other ops only move them (or refuse them).
    std::optional<NarrowFormat> narrow;
};

/// Every dtype, in enum order.
const std::vector<DTypeInfo>& all_dtypes();
/// The table's row for t.
const DTypeInfo& dtype_info(DType t);

/// dtype_info(t).name.
const char* dtype_name(DType t);
/// The dtype named by dtype_name(), or nullopt.
std::optional<DType> parse_dtype(const std::string& name);
/// Bytes of one element.
size_t dtype_size(DType t);
bool is_float(DType t);
/// dtype_info(t).storage_float.
bool is_storage_float(DType t);
/// dtype_info(t).narrow.
std::optional<NarrowFormat> narrow_format(DType t);
/// An integer dtype (signed or not; Bool is not one).
bool is_integer(DType t);
/// The loop-IR scalar type of t (Bool is ir::DataType::boolean()).
ir::DataType to_ir_type(DType t);
/// The dtype whose ONNX code / npy descr / C API code is the given one, or nullopt. Several
/// dtypes share numpy's void descrs ('<V2' bf16, '|V1' the narrow types: numpy has none of
/// them, ml_dtypes saves them so): dtype_from_npy gives the first; npy_as picks by context.
std::optional<DType> dtype_from_onnx_code(int32_t code);
std::optional<DType> dtype_from_npy(const std::string& descr);
std::optional<DType> dtype_from_abi(int32_t code);

/// The C++ element type of each dtype: float, double, int32_t, int64_t, uint8_t (Bool), Half,
/// int8_t, int16_t, uint16_t, uint32_t, uint64_t, BFloat16, NarrowValue<format>. U8 is also stored
/// as uint8_t: element access accepts uint8_t for Bool and U8 alike (dtype_of<uint8_t>() names
/// Bool).
template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::F32; }
template <> constexpr DType dtype_of<double>() { return DType::F64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::I32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::I64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::Bool; }
template <> constexpr DType dtype_of<Half>() { return DType::F16; }
template <> constexpr DType dtype_of<BFloat16>() { return DType::BF16; }
template <> constexpr DType dtype_of<int8_t>() { return DType::I8; }
template <> constexpr DType dtype_of<int16_t>() { return DType::I16; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::U16; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::U32; }
template <> constexpr DType dtype_of<uint64_t>() { return DType::U64; }
template <> constexpr DType dtype_of<Float8E4M3FN>() { return DType::F8E4M3FN; }
template <> constexpr DType dtype_of<Float8E4M3FNUZ>() { return DType::F8E4M3FNUZ; }
template <> constexpr DType dtype_of<Float8E5M2>() { return DType::F8E5M2; }
template <> constexpr DType dtype_of<Float8E5M2FNUZ>() { return DType::F8E5M2FNUZ; }
template <> constexpr DType dtype_of<Float4E2M1>() { return DType::F4E2M1; }
template <> constexpr DType dtype_of<Int4>() { return DType::I4; }
template <> constexpr DType dtype_of<UInt4>() { return DType::U4; }
template <> constexpr DType dtype_of<Int2>() { return DType::I2; }
template <> constexpr DType dtype_of<UInt2>() { return DType::U2; }

/// Whether elements of dtype t may be accessed as T.
template <typename T> constexpr bool stored_as(DType t) {
    return t == dtype_of<T>() || (std::is_same_v<T, uint8_t> && t == DType::U8);
}

/// Calls f with a null pointer of t's C++ element type and returns its result (U8 and Bool both
/// pass uint8_t*): `visit_dtype(t, [&](auto tag) { using T = std::remove_pointer_t<decltype(tag)>;
/// ... })`. f is instantiated for every element type, so its body must compile for each.
template <typename F> decltype(auto) visit_dtype(DType t, F&& f) {
    switch (t) {
    case DType::F32:
        return f(static_cast<float*>(nullptr));
    case DType::F64:
        return f(static_cast<double*>(nullptr));
    case DType::I32:
        return f(static_cast<int32_t*>(nullptr));
    case DType::I64:
        return f(static_cast<int64_t*>(nullptr));
    case DType::Bool:
    case DType::U8:
        return f(static_cast<uint8_t*>(nullptr));
    case DType::F16:
        return f(static_cast<Half*>(nullptr));
    case DType::BF16:
        return f(static_cast<BFloat16*>(nullptr));
    case DType::I8:
        return f(static_cast<int8_t*>(nullptr));
    case DType::I16:
        return f(static_cast<int16_t*>(nullptr));
    case DType::U16:
        return f(static_cast<uint16_t*>(nullptr));
    case DType::U32:
        return f(static_cast<uint32_t*>(nullptr));
    case DType::U64:
        return f(static_cast<uint64_t*>(nullptr));
    case DType::F8E4M3FN:
        return f(static_cast<Float8E4M3FN*>(nullptr));
    case DType::F8E4M3FNUZ:
        return f(static_cast<Float8E4M3FNUZ*>(nullptr));
    case DType::F8E5M2:
        return f(static_cast<Float8E5M2*>(nullptr));
    case DType::F8E5M2FNUZ:
        return f(static_cast<Float8E5M2FNUZ*>(nullptr));
    case DType::F4E2M1:
        return f(static_cast<Float4E2M1*>(nullptr));
    case DType::I4:
        return f(static_cast<Int4*>(nullptr));
    case DType::U4:
        return f(static_cast<UInt4*>(nullptr));
    case DType::I2:
        return f(static_cast<Int2*>(nullptr));
    case DType::U2:
        return f(static_cast<UInt2*>(nullptr));
    }
    return f(static_cast<float*>(nullptr)); // unreachable: every enumerator is handled above
}

} // namespace tessera::graph
