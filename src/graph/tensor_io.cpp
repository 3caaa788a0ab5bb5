#include "tessera/graph/tensor_io.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "onnx_tensor.h"

namespace tessera::graph {

static std::string read_file(const std::string& path, const char* what) {
    std::ifstream f(path, std::ios::binary);
    if (!f)
        throw UserError() << "cannot open " << what << " '" << path << "'";
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// ---- .npy ---------------------------------------------------------------------------------------

static const char kNpyMagic[] = "\x93NUMPY";

// The text after `'key':` in the header dict, with leading spaces skipped.
static std::string header_field(const std::string& header, const std::string& key,
                                const std::string& origin) {
    const std::string k = "'" + key + "'";
    size_t p = header.find(k);
    if (p == std::string::npos)
        throw UserError() << "'" << origin << "': .npy header has no " << k;
    p = header.find(':', p + k.size());
    if (p == std::string::npos)
        throw UserError() << "'" << origin << "': bad .npy header";
    p = header.find_first_not_of(' ', p + 1);
    return p == std::string::npos ? std::string() : header.substr(p);
}

TensorData parse_npy(const std::string& bytes, const std::string& origin) {
    if (bytes.size() < 10 || bytes.compare(0, 6, kNpyMagic, 6) != 0)
        throw UserError() << "'" << origin << "' is not a .npy file";
    const int major = static_cast<unsigned char>(bytes[6]);
    size_t header_len, header_start;
    auto byte = [&](size_t i) { return static_cast<size_t>(static_cast<unsigned char>(bytes[i])); };
    if (major == 1) {
        header_len = byte(8) | byte(9) << 8;
        header_start = 10;
    } else if (major == 2 || major == 3) {
        if (bytes.size() < 12)
            throw UserError() << "'" << origin << "': truncated .npy header";
        header_len = byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24;
        header_start = 12;
    } else {
        throw UserError() << "'" << origin << "': unsupported .npy version " << major;
    }
    if (header_start + header_len > bytes.size())
        throw UserError() << "'" << origin << "': truncated .npy header";
    const std::string header = bytes.substr(header_start, header_len);

    std::string descr = header_field(header, "descr", origin);
    if (descr.size() < 5 || descr[0] != '\'' || descr[4] != '\'')
        throw UserError() << "'" << origin << "': bad .npy descr";
    descr = descr.substr(1, 3);
    if (descr[0] == '=')
        descr[0] = '<'; // native order: our hosts are little-endian
    if (descr[2] == '1' && descr[0] == '<')
        descr[0] = '|'; // one-byte types have no byte order
    if (descr == "|f1")
        descr = "|V1"; // ml_dtypes saves float8_e5m2 as a one-byte float, the others as void
    std::optional<DType> dtype = dtype_from_npy(descr);
    if (!dtype) {
        std::string supported;
        for (const DTypeInfo& d : all_dtypes())
            supported += std::string(supported.empty() ? "" : " ") + d.npy;
        throw UserError() << "'" << origin << "': unsupported .npy dtype '" << descr
                          << "' (supported: " << supported << ")";
    }
    if (header_field(header, "fortran_order", origin).compare(0, 5, "False") != 0)
        throw UserError() << "'" << origin << "': Fortran-order .npy files are not supported";
    std::string shape_text = header_field(header, "shape", origin);
    if (shape_text.empty() || shape_text[0] != '(' || shape_text.find(')') == std::string::npos)
        throw UserError() << "'" << origin << "': bad .npy shape";
    shape_text = shape_text.substr(1, shape_text.find(')') - 1);
    Shape shape;
    std::stringstream ss(shape_text);
    std::string part;
    int64_t numel = 1;
    while (std::getline(ss, part, ',')) {
        size_t b = part.find_first_not_of(' '), e = part.find_last_not_of(' ');
        if (b == std::string::npos)
            continue; // the empty part after "5,"
        part = part.substr(b, e - b + 1);
        if (part.find_first_not_of("0123456789") != std::string::npos || part.size() > 12)
            throw UserError() << "'" << origin << "': bad .npy dim '" << part << "'";
        shape.push_back(std::stoll(part));
        numel *= shape.back();
        if (numel > (int64_t(1) << 40))
            throw UserError() << "'" << origin << "': .npy too large";
    }
    const size_t data_start = header_start + header_len;
    const size_t want = static_cast<size_t>(numel) * dtype_size(*dtype);
    if (bytes.size() - data_start != want)
        throw UserError() << "'" << origin << "': .npy data has " << bytes.size() - data_start
                          << " bytes, shape " << shape_str(shape) << " of " << dtype_name(*dtype)
                          << " needs " << want;
    TensorData t(*dtype, shape);
    if (want)
        std::memcpy(t.raw(), bytes.data() + data_start, want);
    if (*dtype == DType::Bool)
        for (size_t i = 0; i < want; ++i)
            t.raw()[i] = t.raw()[i] ? 1 : 0;
    return t;
}

TensorData read_npy(const std::string& path) {
    return parse_npy(read_file(path, ".npy file"), path);
}

std::string npy_bytes(const TensorData& t) {
    std::string shape = "(";
    for (size_t i = 0; i < t.shape().size(); ++i)
        shape += std::to_string(t.shape()[i]) + (t.shape().size() == 1      ? ","
                                                 : i + 1 < t.shape().size() ? ", "
                                                                            : "");
    shape += ")";
    std::string header = std::string("{'descr': '") + dtype_info(t.dtype()).npy +
                         "', 'fortran_order': False, 'shape': " + shape + ", }";
    // Pad with spaces so that the data starts at a multiple of 64 bytes; end with '\n'.
    const size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header += '\n';
    std::string out(kNpyMagic, 6);
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
    out += header;
    out.append(reinterpret_cast<const char*>(t.raw()), t.nbytes());
    return out;
}

void write_npy(const std::string& path, const TensorData& t) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f)
        throw UserError() << "cannot write .npy file '" << path << "'";
    const std::string bytes = npy_bytes(t);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f)
        throw UserError() << "cannot write .npy file '" << path << "'";
}

// ---- ONNX TensorProto ---------------------------------------------------------------------------

TensorData read_tensor_pb(const std::string& path) {
    std::string bytes = read_file(path, "tensor file");
    onnx::TensorProto t;
    if (!t.ParseFromString(bytes))
        throw UserError() << "cannot parse '" << path << "' as an ONNX TensorProto";
    const size_t slash = path.rfind('/');
    return detail::tensor_from_proto(t, "tensor file '" + path + "'",
                                     slash == std::string::npos ? "." : path.substr(0, slash));
}

TensorData npy_as(TensorData t, DType want) {
    if (t.dtype() != want && std::string(dtype_info(t.dtype()).npy) == dtype_info(want).npy)
        t.reinterpret_as(want);
    return t;
}

TensorData read_tensor_file(const std::string& path) {
    auto ends_with = [&](const char* s) {
        size_t n = std::strlen(s);
        return path.size() >= n && path.compare(path.size() - n, n, s) == 0;
    };
    if (ends_with(".npy"))
        return read_npy(path);
    if (ends_with(".pb"))
        return read_tensor_pb(path);
    throw UserError() << "'" << path << "' is neither a .npy nor a .pb tensor file";
}

} // namespace tessera::graph
