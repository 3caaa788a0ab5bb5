// Host buffers of kernel parameters: page-aligned memory, seeded data, comparison, raw files.
#include "tessera/tuner/host_buffer.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tessera/support/bfloat16.h"
#include "tessera/support/half.h"
#include "tessera/support/error.h"

namespace tessera::tune {

using ir::DataType;

HostBuffer::HostBuffer(DataType dtype, int64_t num_elements)
    : dtype_(dtype), num_elements_(num_elements) {
    TESSERA_CHECK(dtype.is_scalar() && num_elements >= 0)
        << "bad host buffer " << to_string(dtype) << " x " << num_elements;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t n = static_cast<size_t>(bytes());
    // Large buffers on transparent huge pages (where the system allows them: it may still
    // back them with small pages, as it may any): on small pages, a buffer's speed depends on
    // which physical pages it got, and stays so for the buffer's life. The weights of
    // bert_emb_op13's 1024 x 256 product (1 MiB) ran its kernels 8% slower in one worker's
    // copy than in a fresh one, time after time, and the tuner took that for a faster
    // candidate beside it; on huge pages every copy ran as fast as the fast ones.
    const bool huge = n >= kHugeBufferBytes;
    const size_t granule = huge ? kHugePageBytes : page;
    // At least one page, so data() is never null even for an empty parameter.
    mapped_ = std::max<size_t>(1, (n + granule - 1) / granule) * granule;
    // A huge-page buffer is mapped one huge page longer and trimmed to an aligned start.
    const size_t reserve = mapped_ + (huge ? kHugePageBytes : 0);
    void* p = mmap(nullptr, reserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        mapped_ = 0;
        throw UserError() << "cannot allocate a host buffer of " << bytes()
                          << " bytes: " << std::strerror(errno);
    }
    if (huge) {
        const uintptr_t start = reinterpret_cast<uintptr_t>(p);
        const uintptr_t aligned = (start + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
        if (aligned > start)
            munmap(p, aligned - start);
        const uintptr_t end = start + reserve;
        if (end > aligned + mapped_)
            munmap(reinterpret_cast<void*>(aligned + mapped_), end - (aligned + mapped_));
        p = reinterpret_cast<void*>(aligned);
        madvise(p, mapped_, MADV_HUGEPAGE); // advice: without it, small pages as before
    }
    data_ = p;
}

HostBuffer::~HostBuffer() {
    if (mapped_)
        munmap(data_, mapped_);
}

HostBuffer::HostBuffer(HostBuffer&& o) noexcept
    : dtype_(o.dtype_), num_elements_(o.num_elements_), data_(o.data_), mapped_(o.mapped_) {
    o.data_ = nullptr;
    o.mapped_ = 0;
    o.num_elements_ = 0;
}

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
    if (this != &o) {
        if (mapped_)
            munmap(data_, mapped_);
        dtype_ = o.dtype_;
        num_elements_ = o.num_elements_;
        data_ = o.data_;
        mapped_ = o.mapped_;
        o.data_ = nullptr;
        o.mapped_ = 0;
        o.num_elements_ = 0;
    }
    return *this;
}

void HostBuffer::make_read_only() {
    if (mapped_ == 0)
        return;
    TESSERA_CHECK(mprotect(data_, mapped_, PROT_READ) == 0)
        << "mprotect failed: " << std::strerror(errno);
}

void fill_random(HostBuffer& b, Rng& rng) {
    const DataType t = b.dtype();
    const int64_t n = b.num_elements();
    auto* p = static_cast<uint8_t*>(b.data());
    if (t == DataType::f32()) {
        for (int64_t i = 0; i < n; ++i)
            reinterpret_cast<float*>(p)[i] = rng.uniform_float(-1, 1);
    } else if (t == DataType::f64()) {
        for (int64_t i = 0; i < n; ++i)
            reinterpret_cast<double*>(p)[i] = rng.uniform01() * 2 - 1;
    } else if (t == DataType::i32()) {
        for (int64_t i = 0; i < n; ++i)
            reinterpret_cast<int32_t*>(p)[i] = static_cast<int32_t>(rng.uniform_int(-8, 8));
    } else if (t == DataType::i64()) {
        for (int64_t i = 0; i < n; ++i)
            reinterpret_cast<int64_t*>(p)[i] = rng.uniform_int(-8, 8);
    } else if (t == DataType::bf16()) {
        // The top half of each float: truncated toward zero, so still in [-1, 1).
        for (int64_t i = 0; i < n; ++i) {
            const float f = rng.uniform_float(-1, 1);
            uint32_t x;
            std::memcpy(&x, &f, 4);
            reinterpret_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(x >> 16);
        }
    } else if (t == DataType::f16()) {
        for (int64_t i = 0; i < n; ++i)
            reinterpret_cast<uint16_t*>(p)[i] = f32_to_f16_bits(rng.uniform_float(-1, 1));
    } else if (t.bytes() == 1) {
        for (int64_t i = 0; i < n; ++i)
            p[i] = static_cast<uint8_t>(rng.uniform_int(0, 1));
    } else {
        throw UserError() << "host data of type " << to_string(t) << " is not supported";
    }
}

void poison(HostBuffer& b) {
    if (b.dtype() == DataType::f32()) {
        std::fill_n(static_cast<float*>(b.data()), b.num_elements(),
                    std::numeric_limits<float>::quiet_NaN());
    } else if (b.dtype() == DataType::f64()) {
        std::fill_n(static_cast<double*>(b.data()), b.num_elements(),
                    std::numeric_limits<double>::quiet_NaN());
    } else {
        std::memset(b.data(), 0x5a, static_cast<size_t>(b.bytes()));
    }
}

double element_as_double(const HostBuffer& b, int64_t i) {
    const DataType t = b.dtype();
    const auto* p = static_cast<const uint8_t*>(b.data());
    if (t == DataType::f32())
        return reinterpret_cast<const float*>(p)[i];
    if (t == DataType::f64())
        return reinterpret_cast<const double*>(p)[i];
    if (t == DataType::i32())
        return reinterpret_cast<const int32_t*>(p)[i];
    if (t == DataType::i64())
        return static_cast<double>(reinterpret_cast<const int64_t*>(p)[i]);
    if (t == DataType::bf16())
        return bf16_bits_to_f32(reinterpret_cast<const uint16_t*>(p)[i]);
    if (t == DataType::f16())
        return f16_bits_to_f32(reinterpret_cast<const uint16_t*>(p)[i]);
    TESSERA_CHECK(t.bytes() == 1) << "no host representation of " << to_string(t);
    return p[i];
}

double element_error(double got, double want) {
    if (std::isnan(want) || std::isnan(got))
        return std::isnan(want) && std::isnan(got) ? 0 : INFINITY;
    if (std::isinf(want) || std::isinf(got))
        return want == got ? 0 : INFINITY;
    return std::fabs(got - want) / std::max(1.0, std::fabs(want));
}

Comparison compare_outputs(const HostBuffer& got, const HostBuffer& want) {
    if (got.dtype() != want.dtype() || got.num_elements() != want.num_elements()) {
        throw UserError() << "cannot compare " << to_string(got.dtype()) << " x "
                          << got.num_elements() << " with " << to_string(want.dtype()) << " x "
                          << want.num_elements();
    }
    // 8-bit integers are quantized values, a float rounded to a step: a kernel whose float
    // arithmetic is contracted or ordered otherwise than the reference's rounds a value near a
    // half step the other way (int8 resnet18's residual conv: 186 for 185 in a few of 100352
    // elements), so one step is no error.
    const DataType t = got.dtype();
    const bool quantized = (t.is_int() || t.is_uint()) && t.bits == 8;
    Comparison c;
    for (int64_t i = 0; i < got.num_elements(); ++i) {
        const double g = element_as_double(got, i), w = element_as_double(want, i);
        const double e = quantized && std::fabs(g - w) <= 1 ? 0 : element_error(g, w);
        // The first element always counts, so worst_index names a real element.
        if (c.worst_index < 0 || e > c.max_error) {
            c.max_error = e;
            c.worst_index = i;
            c.got = g;
            c.want = w;
        }
    }
    return c;
}

void write_raw_file(const std::string& path, const HostBuffer& b) {
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        throw UserError() << "cannot write '" << path << "': " << std::strerror(errno);
    const auto* p = static_cast<const uint8_t*>(b.data());
    size_t left = static_cast<size_t>(b.bytes());
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int err = errno;
            close(fd);
            throw UserError() << "cannot write '" << path << "': " << std::strerror(err);
        }
        p += w;
        left -= static_cast<size_t>(w);
    }
    if (close(fd) != 0)
        throw UserError() << "cannot write '" << path << "': " << std::strerror(errno);
}

HostBuffer read_raw_file(const std::string& path, DataType dtype) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw UserError() << "cannot read '" << path << "': " << std::strerror(errno);
    struct stat st {};
    if (fstat(fd, &st) != 0 || st.st_size % dtype.bytes() != 0) {
        close(fd);
        throw UserError() << "'" << path << "' does not hold whole " << to_string(dtype)
                          << " elements (" << st.st_size << " bytes)";
    }
    HostBuffer b(dtype, st.st_size / dtype.bytes());
    auto* p = static_cast<uint8_t*>(b.data());
    size_t left = static_cast<size_t>(st.st_size);
    while (left > 0) {
        ssize_t r = read(fd, p, left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int err = r < 0 ? errno : EIO;
            close(fd);
            throw UserError() << "cannot read '" << path << "': " << std::strerror(err);
        }
        p += r;
        left -= static_cast<size_t>(r);
    }
    close(fd);
    return b;
}

} // namespace tessera::tune
