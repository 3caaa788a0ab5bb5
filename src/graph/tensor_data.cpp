#include "tessera/graph/tensor_data.h"

#include <limits>
#include <sstream>

namespace tessera::graph {

const char* dtype_name(DType t) {
    switch (t) {
    case DType::F32:
        return "f32";
    case DType::F64:
        return "f64";
    case DType::I32:
        return "i32";
    case DType::I64:
        return "i64";
    case DType::Bool:
        return "bool";
    }
    TESSERA_UNREACHABLE();
}

std::optional<DType> parse_dtype(const std::string& name) {
    for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool})
        if (name == dtype_name(t))
            return t;
    return std::nullopt;
}

size_t dtype_size(DType t) {
    switch (t) {
    case DType::F32:
        return 4;
    case DType::F64:
        return 8;
    case DType::I32:
        return 4;
    case DType::I64:
        return 8;
    case DType::Bool:
        return 1;
    }
    TESSERA_UNREACHABLE();
}

bool is_float(DType t) { return t == DType::F32 || t == DType::F64; }

ir::DataType to_ir_type(DType t) {
    switch (t) {
    case DType::F32:
        return ir::DataType::f32();
    case DType::F64:
        return ir::DataType::f64();
    case DType::I32:
        return ir::DataType::i32();
    case DType::I64:
        return ir::DataType::i64();
    case DType::Bool:
        return ir::DataType::boolean();
    }
    TESSERA_UNREACHABLE();
}

int64_t shape_numel(const Shape& s) {
    int64_t n = 1;
    for (int64_t d : s)
        n *= d;
    return n;
}

std::string shape_str(const Shape& s) {
    std::ostringstream os;
    os << "[";
    for (size_t i = 0; i < s.size(); ++i)
        os << (i ? "," : "") << s[i];
    os << "]";
    return os.str();
}

TensorData::TensorData(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
    for (int64_t d : shape_)
        TESSERA_CHECK(d >= 0) << "negative dim in " << shape_str(shape_);
    numel_ = shape_numel(shape_);
    bytes_.assign(static_cast<size_t>(numel_) * dtype_size(dtype_), 0);
}

void TensorData::check_type(DType t) const {
    TESSERA_CHECK(t == dtype_) << "tensor of " << dtype_name(dtype_) << " accessed as "
                               << dtype_name(t);
}

// Applies f to the typed element pointer of t.
template <typename F> static auto visit_elements(const TensorData& t, F&& f) {
    switch (t.dtype()) {
    case DType::F32:
        return f(t.data<float>());
    case DType::F64:
        return f(t.data<double>());
    case DType::I32:
        return f(t.data<int32_t>());
    case DType::I64:
        return f(t.data<int64_t>());
    case DType::Bool:
        return f(t.data<uint8_t>());
    }
    TESSERA_UNREACHABLE();
}

std::vector<int64_t> TensorData::as_i64() const {
    return visit_elements(*this, [&](const auto* p) {
        std::vector<int64_t> out(static_cast<size_t>(numel_));
        for (int64_t i = 0; i < numel_; ++i)
            out[i] = static_cast<int64_t>(p[i]);
        return out;
    });
}

std::vector<double> TensorData::as_f64() const {
    return visit_elements(*this, [&](const auto* p) {
        std::vector<double> out(static_cast<size_t>(numel_));
        for (int64_t i = 0; i < numel_; ++i)
            out[i] = static_cast<double>(p[i]);
        return out;
    });
}

TensorData TensorData::reshaped(Shape shape) const {
    TESSERA_CHECK(shape_numel(shape) == numel_)
        << "reshape " << shape_str(shape_) << " to " << shape_str(shape);
    TensorData t = *this;
    t.shape_ = std::move(shape);
    return t;
}

// Converts one element; float -> int casts of out-of-range values are clamped rather than UB.
template <typename To, typename From> static To convert(From v) {
    if constexpr (std::is_same_v<To, uint8_t>) {
        return v != From(0) ? 1 : 0;
    } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
        if (!(v == v))
            return 0; // NaN
        const double lo = static_cast<double>(std::numeric_limits<To>::min());
        const double hi = static_cast<double>(std::numeric_limits<To>::max());
        double d = static_cast<double>(v);
        if (d <= lo)
            return std::numeric_limits<To>::min();
        if (d >= hi)
            return std::numeric_limits<To>::max();
        return static_cast<To>(d);
    } else {
        return static_cast<To>(v);
    }
}

template <typename To> static void cast_into(const TensorData& src, To* dst) {
    visit_elements(src, [&](const auto* p) {
        for (int64_t i = 0; i < src.numel(); ++i)
            dst[i] = convert<To>(p[i]);
        return 0;
    });
}

TensorData TensorData::cast(DType to) const {
    TensorData out(to, shape_);
    switch (to) {
    case DType::F32:
        cast_into(*this, out.data<float>());
        break;
    case DType::F64:
        cast_into(*this, out.data<double>());
        break;
    case DType::I32:
        cast_into(*this, out.data<int32_t>());
        break;
    case DType::I64:
        cast_into(*this, out.data<int64_t>());
        break;
    case DType::Bool:
        cast_into(*this, out.data<uint8_t>());
        break;
    }
    return out;
}

bool TensorData::operator==(const TensorData& o) const {
    return dtype_ == o.dtype_ && shape_ == o.shape_ && bytes_ == o.bytes_;
}

} // namespace tessera::graph
