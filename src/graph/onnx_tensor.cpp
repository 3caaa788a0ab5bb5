#include "onnx_tensor.h"

#include <cstring>
#include <fstream>

namespace tessera::graph::detail {

std::optional<DType> dtype_from_onnx(int32_t elem_type) { return dtype_from_onnx_code(elem_type); }

std::string onnx_type_name(int32_t elem_type) {
    if (onnx::TensorProto_DataType_IsValid(elem_type)) {
        std::string s =
            onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(elem_type));
        for (char& c : s)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return s;
    }
    return "element type " + std::to_string(elem_type);
}

// Bytes of external data: keys location (relative path), offset, length.
static std::string read_external(const onnx::TensorProto& t, const std::string& what,
                                 const std::string& base_dir, size_t want) {
    if (base_dir.empty())
        throw UserError() << what << " uses external data, which needs a model file path";
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : t.external_data()) {
        try {
            if (kv.key() == "location")
                location = kv.value();
            else if (kv.key() == "offset")
                offset = std::stoll(kv.value());
            else if (kv.key() == "length")
                length = std::stoll(kv.value());
        } catch (const std::exception&) {
            throw UserError() << what << ": bad external data " << kv.key() << " '" << kv.value()
                              << "'";
        }
    }
    // Only files beside the model (no absolute paths, no "..") may be read.
    if (location.empty() || location[0] == '/' || location.find("..") != std::string::npos)
        throw UserError() << what << ": external data location '" << location
                          << "' is not a relative path inside the model's folder";
    if (offset < 0 || (length >= 0 && static_cast<size_t>(length) != want))
        throw UserError() << what << ": external data has offset " << offset << " and length "
                          << length << ", expected " << want << " bytes";
    std::string path = base_dir + "/" + location;
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    if (!f)
        throw UserError() << what << ": cannot open external data file '" << path << "'";
    const int64_t file_size = static_cast<int64_t>(f.tellg());
    if (offset > file_size || static_cast<size_t>(file_size - offset) < want)
        throw UserError() << what << ": external data file '" << path << "' is too short";
    f.seekg(offset);
    std::string bytes(want, '\0');
    f.read(bytes.data(), static_cast<std::streamsize>(want));
    if (static_cast<size_t>(f.gcount()) != want)
        throw UserError() << what << ": external data file '" << path << "' is too short";
    return bytes;
}

// Which typed field of a TensorProto holds a dtype's values when raw_data is absent (ONNX puts
// every integer narrower than 32 bits, bool and float16's bit patterns in int32_data).
enum class ProtoField { Float, Double, Int32, Int64, Uint64 };
static ProtoField proto_field(DType dtype) {
    switch (dtype) {
    case DType::F32:
        return ProtoField::Float;
    case DType::F64:
        return ProtoField::Double;
    case DType::I64:
        return ProtoField::Int64;
    case DType::U32:
    case DType::U64:
        return ProtoField::Uint64;
    default:
        return ProtoField::Int32;
    }
}

// Number of values in the typed field that holds `dtype` (without raw_data).
static int64_t field_size(const onnx::TensorProto& t, DType dtype) {
    switch (proto_field(dtype)) {
    case ProtoField::Float:
        return t.float_data_size();
    case ProtoField::Double:
        return t.double_data_size();
    case ProtoField::Int32:
        return t.int32_data_size();
    case ProtoField::Int64:
        return t.int64_data_size();
    case ProtoField::Uint64:
        return t.uint64_data_size();
    }
    TESSERA_UNREACHABLE();
}

// Copies a typed field's values into out's elements (float16, bfloat16 and 8-bit float values
// are bit patterns).
template <typename Field> static void copy_field(const Field& field, TensorData& out) {
    visit_dtype(out.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        T* p = out.data<T>();
        for (int64_t i = 0; i < out.numel(); ++i) {
            if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
                p[i] = T::from_bits(static_cast<uint16_t>(field.Get(static_cast<int>(i))));
            else if constexpr (std::is_class_v<T>) // a narrow type: its codes
                p[i] = T::from_bits(static_cast<uint8_t>(field.Get(static_cast<int>(i))));
            else
                p[i] = static_cast<T>(field.Get(static_cast<int>(i)));
        }
    });
}

// How many elements ONNX packs into one byte: 2 for the 4-bit types, 4 for the 2-bit ones (the
// first element in the low bits), 1 otherwise.
static int64_t elements_per_byte(DType dtype) {
    const std::optional<NarrowFormat> f = narrow_format(dtype);
    return f ? 8 / narrow_format_info(*f).bits : 1;
}

// Spreads packed codes (elements_per_byte of them in each byte of `packed`) one per byte.
static void unpack_codes(const uint8_t* packed, TensorData& out) {
    const int64_t per = elements_per_byte(out.dtype()), bits = 8 / per;
    uint8_t* dst = out.raw();
    for (int64_t i = 0; i < out.numel(); ++i)
        dst[i] = static_cast<uint8_t>((packed[i / per] >> (bits * (i % per))) & ((1 << bits) - 1));
}

TensorData tensor_from_proto(const onnx::TensorProto& t, const std::string& what,
                             const std::string& base_dir) {
    std::optional<DType> dtype = dtype_from_onnx(t.data_type());
    if (!dtype)
        throw UserError() << what << " has unsupported element type "
                          << onnx_type_name(t.data_type());
    if (t.has_segment())
        throw UserError() << what << " is segmented, which is not supported";
    // Sizes are validated before anything is allocated: a corrupted file must not make us
    // allocate what its dims claim.
    Shape shape;
    int64_t numel = 1;
    for (int64_t d : t.dims()) {
        if (d < 0)
            throw UserError() << what << " has negative dim " << d;
        if (d > 0 && numel > (int64_t(1) << 40) / d)
            throw UserError() << what << " is too large (dims beyond " << shape_str(shape) << ")";
        numel *= d;
        shape.push_back(d);
    }
    // The 4- and 2-bit types are packed, in raw data and typed fields alike (a byte per value).
    const int64_t per_byte = elements_per_byte(*dtype);
    const int64_t stored = (numel + per_byte - 1) / per_byte;
    const size_t want = static_cast<size_t>(stored) * dtype_size(*dtype);
    const bool external = t.data_location() == onnx::TensorProto::EXTERNAL;
    if (!external && t.has_raw_data() && t.raw_data().size() != want)
        throw UserError() << what << ": raw_data has " << t.raw_data().size() << " bytes, shape "
                          << shape_str(shape) << " of " << dtype_name(*dtype) << " needs " << want;
    if (!external && !t.has_raw_data() && field_size(t, *dtype) != stored)
        throw UserError() << what << " has " << field_size(t, *dtype) << " values, its shape "
                          << shape_str(shape) << " needs " << stored;
    std::string ext_bytes;
    if (external)
        ext_bytes = read_external(t, what, base_dir, want);
    TensorData out(*dtype, shape);
    if (per_byte > 1) {
        std::string packed = external ? ext_bytes : t.raw_data();
        if (!external && !t.has_raw_data())
            for (int i = 0; i < t.int32_data_size(); ++i)
                packed.push_back(static_cast<char>(t.int32_data(i)));
        unpack_codes(reinterpret_cast<const uint8_t*>(packed.data()), out);
    } else if (external) {
        if (want)
            std::memcpy(out.raw(), ext_bytes.data(), want);
    } else if (t.has_raw_data()) {
        // ONNX raw_data is little-endian, as is every host we build for.
        if (want)
            std::memcpy(out.raw(), t.raw_data().data(), want);
    } else {
        switch (proto_field(*dtype)) {
        case ProtoField::Float:
            copy_field(t.float_data(), out);
            break;
        case ProtoField::Double:
            copy_field(t.double_data(), out);
            break;
        case ProtoField::Int32:
            copy_field(t.int32_data(), out);
            break;
        case ProtoField::Int64:
            copy_field(t.int64_data(), out);
            break;
        case ProtoField::Uint64:
            copy_field(t.uint64_data(), out);
            break;
        }
    }
    if (*dtype == DType::Bool)
        for (size_t i = 0; i < want; ++i)
            out.raw()[i] = out.raw()[i] ? 1 : 0;
    return out;
}

} // namespace tessera::graph::detail
