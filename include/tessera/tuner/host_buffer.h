// Host memory for the parameters of a compiled kernel: allocation, seeded random filling,
// poisoning, raw files, and the element-wise comparison every measured output goes through.
//
// Used by the measurement worker (measure_worker.cpp) and the per-task data of the measurer;
// written so that any code that runs a kernel on host data (`tessera op run`, tests) can use it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tessera/ir/expr.h"
#include "tessera/ir/type.h"
#include "tessera/support/rng.h"

namespace tessera::tune {

/// Buffers of at least this many bytes are mapped on 2 MiB boundaries and advised onto
/// transparent huge pages (the constructor says why).
constexpr size_t kHugeBufferBytes = size_t(1) << 20;
constexpr size_t kHugePageBytes = size_t(2) << 20;

/// A dense array of `num_elements` scalars of one dtype, in page-aligned anonymous memory (so
/// it is at least 64-byte aligned, and can be made read-only); from kHugeBufferBytes on,
/// 2 MiB-aligned and advised onto huge pages. Move-only. Contents start zeroed.
class HostBuffer {
  public:
    HostBuffer() = default;
    /// Pre: dtype is scalar, num_elements >= 0. Throws UserError when the memory cannot be
    /// mapped (naming the size).
    HostBuffer(ir::DataType dtype, int64_t num_elements);
    /// Room for the parameter `b` (its dtype and element count).
    explicit HostBuffer(const ir::Buffer& b) : HostBuffer(b.dtype(), b->num_elements()) {}
    ~HostBuffer();
    HostBuffer(HostBuffer&& o) noexcept;
    HostBuffer& operator=(HostBuffer&& o) noexcept;
    HostBuffer(const HostBuffer&) = delete;
    HostBuffer& operator=(const HostBuffer&) = delete;

    ir::DataType dtype() const { return dtype_; }
    int64_t num_elements() const { return num_elements_; }
    /// num_elements * bytes per element.
    int64_t bytes() const { return num_elements_ * dtype_.bytes(); }
    /// The memory it holds: bytes() rounded up to whole pages (huge pages from
    /// kHugeBufferBytes on).
    int64_t mapped_bytes() const { return static_cast<int64_t>(mapped_); }
    void* data() { return data_; }
    const void* data() const { return data_; }

    /// Makes the memory read-only: a kernel that writes into it gets SIGSEGV instead of
    /// silently corrupting data shared between runs. Irreversible.
    void make_read_only();

  private:
    ir::DataType dtype_ = ir::DataType::f32();
    int64_t num_elements_ = 0;
    void* data_ = nullptr;
    size_t mapped_ = 0; ///< Bytes mapped (a whole number of pages; 0 when nothing is).
};

/// Fills b with seeded values that are never all zero: floats (bf16, f16 too) uniform in [-1, 1),
/// integers in [-8, 8], 1-byte types (bool, u8) in {0, 1}. Throws UserError naming the dtype
/// for others.
void fill_random(HostBuffer& b, Rng& rng);

/// Fills b so that elements a kernel never writes are caught by compare_outputs: quiet NaN for
/// f32/f64, the byte pattern 0x5a otherwise.
void poison(HostBuffer& b);

/// Element i as a double. Pre: 0 <= i < num_elements, dtype is one fill_random supports.
double element_as_double(const HostBuffer& b, int64_t i);

/// The error of one element: |got - want| / max(1, |want|); 0 when both are NaN or both are
/// the same infinity, +infinity when only one side is NaN or infinite.
double element_error(double got, double want);

/// The result of comparing a whole output.
struct Comparison {
    double max_error = 0;     ///< Largest element_error over all elements.
    int64_t worst_index = -1; ///< The flat index where it occurs (-1 for empty outputs).
    double got = 0, want = 0; ///< The two values at worst_index.
};

/// Compares every element of got with want (element_error; for u8 and i8, quantized values, a
/// difference of one step counts 0). Throws UserError when their dtypes or element counts
/// differ (naming both).
Comparison compare_outputs(const HostBuffer& got, const HostBuffer& want);

/// Writes b's bytes to `path` (created or truncated). Throws UserError naming the path.
void write_raw_file(const std::string& path, const HostBuffer& b);

/// Reads a raw file of `dtype` elements written by write_raw_file. Throws UserError naming the
/// path when it cannot be read or its size is not a multiple of the element size.
HostBuffer read_raw_file(const std::string& path, ir::DataType dtype);

} // namespace tessera::tune
