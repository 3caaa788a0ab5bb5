#include "tessera/graph/dtype.h"

#include <iterator>

#include "tessera/support/error.h"

namespace tessera::graph {

using Code = ir::DataType::Code;

// ONNX codes are TensorProto::DataType's; C API codes are TesseraDType's (tessera_model.h).
// constexpr: constant-initialized, so that static initializers elsewhere may read it.
static constexpr DTypeInfo kTable[] = {
    // dtype        name    bytes ir                   onnx npy    abi float  signed  storage
    {DType::F32, "f32", 4, ir::DataType::f32(), 1, "<f4", 1, true, true, false, {}},
    {DType::F64, "f64", 8, ir::DataType::f64(), 11, "<f8", 2, true, true, false, {}},
    {DType::I32, "i32", 4, ir::DataType::i32(), 6, "<i4", 3, false, true, false, {}},
    {DType::I64, "i64", 8, ir::DataType::i64(), 7, "<i8", 4, false, true, false, {}},
    {DType::Bool, "bool", 1, ir::DataType::boolean(), 9, "|b1", 5, false, false, false, {}},
    {DType::F16, "f16", 2, ir::DataType::f16(), 10, "<f2", 6, true, true, true, {}},
    {DType::I8, "i8", 1, ir::DataType(Code::Int, 8), 3, "|i1", 7, false, true, false, {}},
    {DType::U8, "u8", 1, ir::DataType::u8(), 2, "|u1", 8, false, false, false, {}},
    {DType::I16, "i16", 2, ir::DataType(Code::Int, 16), 5, "<i2", 9, false, true, false, {}},
    {DType::U16, "u16", 2, ir::DataType(Code::UInt, 16), 4, "<u2", 10, false, false, false, {}},
    {DType::U32, "u32", 4, ir::DataType(Code::UInt, 32), 12, "<u4", 11, false, false, false, {}},
    {DType::U64, "u64", 8, ir::DataType(Code::UInt, 64), 13, "<u8", 12, false, false, false, {}},
    // numpy has no bf16: ml_dtypes' bfloat16 arrays save as 2-byte void ('<V2').
    {DType::BF16, "bf16", 2, ir::DataType::bf16(), 16, "<V2", 13, true, true, true, {}},
    // The narrow types: one code per byte, as ml_dtypes holds them (and saves them: '|V1').
    {DType::F8E4M3FN, "f8e4m3fn", 1, ir::DataType::u8(), 17, "|V1", 14, true, true, true,
     NarrowFormat::F8E4M3FN},
    {DType::F8E4M3FNUZ, "f8e4m3fnuz", 1, ir::DataType::u8(), 18, "|V1", 15, true, true, true,
     NarrowFormat::F8E4M3FNUZ},
    {DType::F8E5M2, "f8e5m2", 1, ir::DataType::u8(), 19, "|V1", 16, true, true, true,
     NarrowFormat::F8E5M2},
    {DType::F8E5M2FNUZ, "f8e5m2fnuz", 1, ir::DataType::u8(), 20, "|V1", 17, true, true, true,
     NarrowFormat::F8E5M2FNUZ},
    {DType::F4E2M1, "f4e2m1", 1, ir::DataType::u8(), 23, "|V1", 18, true, true, true,
     NarrowFormat::F4E2M1},
    {DType::I4, "i4", 1, ir::DataType::u8(), 22, "|V1", 19, false, true, false, NarrowFormat::I4},
    {DType::U4, "u4", 1, ir::DataType::u8(), 21, "|V1", 20, false, false, false, NarrowFormat::U4},
    {DType::I2, "i2", 1, ir::DataType::u8(), 26, "|V1", 21, false, true, false, NarrowFormat::I2},
    {DType::U2, "u2", 1, ir::DataType::u8(), 25, "|V1", 22, false, false, false, NarrowFormat::U2},
};

const std::vector<DTypeInfo>& all_dtypes() {
    static const std::vector<DTypeInfo> all(std::begin(kTable), std::end(kTable));
    return all;
}

const DTypeInfo& dtype_info(DType t) {
    const size_t i = static_cast<size_t>(t);
    TESSERA_CHECK(i < std::size(kTable) && kTable[i].dtype == t)
        << "dtype " << i << " not in table";
    return kTable[i];
}

const char* dtype_name(DType t) { return dtype_info(t).name; }
size_t dtype_size(DType t) { return dtype_info(t).bytes; }
bool is_storage_float(DType t) { return dtype_info(t).storage_float; }
std::optional<NarrowFormat> narrow_format(DType t) { return dtype_info(t).narrow; }

bool is_float(DType t) { return dtype_info(t).is_float; }
bool is_integer(DType t) { return t != DType::Bool && !is_float(t); }
ir::DataType to_ir_type(DType t) { return dtype_info(t).ir; }

template <typename Pred> static std::optional<DType> find_dtype(Pred&& match) {
    for (const DTypeInfo& d : kTable)
        if (match(d))
            return d.dtype;
    return std::nullopt;
}

std::optional<DType> parse_dtype(const std::string& name) {
    return find_dtype([&](const DTypeInfo& d) { return name == d.name; });
}
std::optional<DType> dtype_from_onnx_code(int32_t code) {
    return find_dtype([&](const DTypeInfo& d) { return d.onnx == code; });
}
std::optional<DType> dtype_from_npy(const std::string& descr) {
    return find_dtype([&](const DTypeInfo& d) { return descr == d.npy; });
}
std::optional<DType> dtype_from_abi(int32_t code) {
    return find_dtype([&](const DTypeInfo& d) { return d.abi == code; });
}

} // namespace tessera::graph
