// TensorData: a dense, C-order tensor with a dtype and a static shape (graph constants, inputs
// and outputs of the reference evaluator, test data files).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "tessera/graph/dtype.h"
#include "tessera/support/error.h"

namespace tessera::graph {

/// Static shape; a scalar has rank 0 (shape {}) and one element.
using Shape = std::vector<int64_t>;

/// Product of the dims (1 for a scalar).
int64_t shape_numel(const Shape& s);
/// "[1,3,224,224]"; "[]" for a scalar.
std::string shape_str(const Shape& s);

/// A dense tensor that owns its elements (C order). Value semantics: copies copy the data.
/// Graph constants hold theirs through shared_ptr<const TensorData> so graph copies stay cheap.
class TensorData {
  public:
    /// An f32 scalar 0.
    TensorData() : TensorData(DType::F32, {}) {}
    /// Zero-filled tensor. Pre: all dims >= 0.
    TensorData(DType dtype, Shape shape);

    /// Copies `values` (size must equal the shape's element count) into a new tensor of dtype
    /// `as` (by default T's; uint8_t values make Bool unless `as` is U8).
    template <typename T>
    static TensorData from_vector(Shape shape, const std::vector<T>& values,
                                  DType as = dtype_of<T>()) {
        TESSERA_CHECK(stored_as<T>(as)) << dtype_name(as) << " tensor from other elements";
        TensorData t(as, std::move(shape));
        TESSERA_CHECK(static_cast<int64_t>(values.size()) == t.numel())
            << values.size() << " values for shape " << shape_str(t.shape_);
        if (!values.empty())
            std::memcpy(t.bytes_.data(), values.data(), t.bytes_.size());
        return t;
    }
    /// Rank-0 tensor holding v.
    template <typename T> static TensorData scalar(T v) { return from_vector<T>({}, {v}); }

    DType dtype() const { return dtype_; }
    const Shape& shape() const { return shape_; }
    int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
    int64_t numel() const { return numel_; }
    size_t nbytes() const { return bytes_.size(); }

    /// Typed element pointer; T must be the C++ type of dtype() (checked: stored_as<T>).
    template <typename T> T* data() {
        check_type(stored_as<T>(dtype_), dtype_of<T>());
        return reinterpret_cast<T*>(bytes_.data());
    }
    template <typename T> const T* data() const {
        check_type(stored_as<T>(dtype_), dtype_of<T>());
        return reinterpret_cast<const T*>(bytes_.data());
    }
    /// Untyped bytes (numel() * dtype_size(dtype())).
    uint8_t* raw() { return bytes_.data(); }
    const uint8_t* raw() const { return bytes_.data(); }

    /// The elements as a vector of T (T must match dtype()).
    template <typename T> std::vector<T> to_vector() const {
        const T* p = data<T>();
        return std::vector<T>(p, p + numel_);
    }
    /// The elements converted to int64 (any integer or bool dtype; floats are truncated).
    std::vector<int64_t> as_i64() const;
    /// The elements converted to double (any dtype).
    std::vector<double> as_f64() const;

    /// Same elements, another shape of equal element count (checked).
    TensorData reshaped(Shape shape) const;
    /// Keeps the bytes and takes dtype `to`, of the same element size (checked): a value read
    /// from a file whose type tag several dtypes share (tensor_io.h's npy_as).
    void reinterpret_as(DType to);
    /// Elementwise conversion to `to` (float -> int truncates toward zero, nonzero -> true).
    TensorData cast(DType to) const;

    /// Same dtype, shape and bytes.
    bool operator==(const TensorData& o) const;
    bool operator!=(const TensorData& o) const { return !(*this == o); }

  private:
    void check_type(bool ok, DType t) const;

    DType dtype_;
    Shape shape_;
    int64_t numel_ = 1;
    std::vector<uint8_t> bytes_;
};

} // namespace tessera::graph
