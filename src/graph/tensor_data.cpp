#include "tessera/graph/tensor_data.h"

#include <limits>
#include <sstream>

namespace tessera::graph {

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

void TensorData::check_type(bool ok, DType t) const {
    TESSERA_CHECK(ok) << "tensor of " << dtype_name(dtype_) << " accessed as " << dtype_name(t);
}

// Applies f to the typed element pointer of t.
template <typename F> static auto visit_elements(const TensorData& t, F&& f) {
    return visit_dtype(t.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        return f(t.data<T>());
    });
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

template <typename T> struct IsNarrow : std::false_type {};
template <NarrowFormat F> struct IsNarrow<NarrowValue<F>> : std::true_type {};

void TensorData::reinterpret_as(DType to) {
    TESSERA_CHECK(dtype_size(to) == dtype_size(dtype_))
        << "reinterpret " << dtype_name(dtype_) << " as " << dtype_name(to);
    dtype_ = to;
}

// Converts one element; float -> int casts of out-of-range values are clamped rather than UB.
// Narrow types convert as NarrowValue defines (support/narrow_types.h).
template <typename To, typename From> static To convert(From v) {
    if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16> ||
                  IsNarrow<From>::value) {
        return convert<To>(static_cast<float>(v));
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

TensorData TensorData::cast(DType to) const {
    TensorData out(to, shape_);
    visit_elements(*this, [&](const auto* p) {
        if (to == DType::Bool) {
            uint8_t* dst = out.data<uint8_t>();
            for (int64_t i = 0; i < numel_; ++i)
                dst[i] = static_cast<double>(p[i]) != 0.0 ? 1 : 0;
            return 0;
        }
        visit_dtype(to, [&](auto tag) {
            using To = std::remove_pointer_t<decltype(tag)>;
            To* dst = out.data<To>();
            for (int64_t i = 0; i < numel_; ++i)
                dst[i] = convert<To>(p[i]);
        });
        return 0;
    });
    return out;
}

bool TensorData::operator==(const TensorData& o) const {
    return dtype_ == o.dtype_ && shape_ == o.shape_ && bytes_ == o.bytes_;
}

} // namespace tessera::graph
