// Layout transforms: validation, packed shape, index mapping and host-side packing.
#include "tessera/schedule/layout.h"

#include <cstring>

#include "internal/error_msg.h"
#include "tessera/ir/op.h"
#include "tessera/te/tensor.h"

namespace tessera::sched {

namespace {
constexpr int64_t kMaxFactor = 4096;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The dimensions after splitting, before the permutation: (extent, source dim, is inner part).
struct SplitDim {
    int64_t extent;
    size_t dim;
    bool inner;
};

std::vector<SplitDim> split_dims(const LayoutTransform& t, const std::vector<int64_t>& shape) {
    std::vector<SplitDim> out;
    for (size_t d = 0; d < shape.size(); ++d) {
        const int64_t f = d < t.factors.size() ? t.factors[d] : 0;
        if (f > 1) {
            out.push_back({ceil_div(shape[d], f), d, false});
            out.push_back({f, d, true});
        } else {
            out.push_back({shape[d], d, false});
        }
    }
    return out;
}

std::vector<int> order_of(const LayoutTransform& t, size_t n) {
    if (!t.order.empty())
        return t.order;
    std::vector<int> o(n);
    for (size_t i = 0; i < n; ++i)
        o[i] = static_cast<int>(i);
    return o;
}
} // namespace

void check_layout(const LayoutTransform& t, const std::vector<int64_t>& shape) {
    if (!t.factors.empty() && t.factors.size() != shape.size())
        throw ScheduleError(Msg() << "layout with " << t.factors.size()
                                  << " factors for a tensor of rank " << shape.size());
    for (int64_t f : t.factors)
        if (f < 0 || f > kMaxFactor)
            throw ScheduleError(Msg() << "layout with an invalid factor " << f << " (0.."
                                      << kMaxFactor << ")");
    const auto dims = split_dims(t, shape);
    const size_t n = dims.size();
    // Padding to the factors may grow the storage, but only by a bounded amount.
    double packed = 1, dense = 1;
    for (const SplitDim& d : dims)
        packed *= static_cast<double>(d.extent);
    for (int64_t e : shape)
        dense *= static_cast<double>(e);
    if (packed > 4 * dense + 65536)
        throw ScheduleError(Msg() << "layout pads " << te::shape_to_string(shape) << " to "
                                  << packed << " elements");
    if (t.order.empty())
        return;
    if (t.order.size() != n)
        throw ScheduleError(Msg() << "layout order lists " << t.order.size() << " dimensions, "
                                  << "the split shape has " << n);
    std::vector<bool> seen(n, false);
    for (int o : t.order) {
        if (o < 0 || o >= static_cast<int>(n) || seen[o])
            throw ScheduleError(Msg() << "layout order is not a permutation of 0.." << n - 1);
        seen[o] = true;
    }
}

std::vector<int64_t> packed_shape(const LayoutTransform& t, const std::vector<int64_t>& shape) {
    const auto dims = split_dims(t, shape);
    std::vector<int64_t> out;
    for (int o : order_of(t, dims.size()))
        out.push_back(dims[o].extent);
    return out;
}

std::vector<ir::Expr> packed_indices(const LayoutTransform& t, const std::vector<int64_t>& shape,
                                     const std::vector<ir::Expr>& indices) {
    const auto dims = split_dims(t, shape);
    std::vector<ir::Expr> split;
    for (const SplitDim& sd : dims) {
        const int64_t f = t.factors.empty() ? 0 : t.factors[sd.dim];
        if (f > 1)
            split.push_back(sd.inner ? indices[sd.dim] % ir::Expr(f)
                                     : indices[sd.dim] / ir::Expr(f));
        else
            split.push_back(indices[sd.dim]);
    }
    std::vector<ir::Expr> out;
    for (int o : order_of(t, dims.size()))
        out.push_back(split[o]);
    return out;
}

void pack_layout(const LayoutTransform& t, const std::vector<int64_t>& shape, size_t elem_bytes,
                 const void* src, void* dst) {
    check_layout(t, shape);
    const auto dims = split_dims(t, shape);
    const auto order = order_of(t, dims.size());
    const auto pshape = packed_shape(t, shape);
    const int64_t total = te::num_elements(pshape);
    std::memset(dst, 0, static_cast<size_t>(total) * elem_bytes);
    // Walk the packed array; map each position back to the source element.
    std::vector<int64_t> pidx(pshape.size(), 0);
    std::vector<int64_t> split(dims.size());
    std::vector<int64_t> sidx(shape.size());
    auto* out = static_cast<unsigned char*>(dst);
    const auto* in = static_cast<const unsigned char*>(src);
    for (int64_t flat = 0; flat < total; ++flat) {
        for (size_t k = 0; k < order.size(); ++k)
            split[order[k]] = pidx[k];
        std::fill(sidx.begin(), sidx.end(), 0);
        for (size_t k = 0; k < dims.size(); ++k) {
            const int64_t f = t.factors.empty() ? 0 : t.factors[dims[k].dim];
            if (f > 1 && !dims[k].inner)
                sidx[dims[k].dim] += split[k] * f;
            else
                sidx[dims[k].dim] += split[k];
        }
        bool inside = true;
        int64_t sflat = 0;
        for (size_t d = 0; d < shape.size(); ++d) {
            inside = inside && sidx[d] < shape[d];
            sflat = sflat * shape[d] + sidx[d];
        }
        if (inside)
            std::memcpy(out + flat * elem_bytes, in + sflat * elem_bytes, elem_bytes);
        for (size_t k = pidx.size(); k-- > 0;) {
            if (++pidx[k] < pshape[k])
                break;
            pidx[k] = 0;
        }
    }
}

std::vector<float> pack_layout(const LayoutTransform& t, const std::vector<int64_t>& shape,
                               const std::vector<float>& src) {
    if (static_cast<int64_t>(src.size()) != te::num_elements(shape))
        throw ScheduleError(Msg() << "pack_layout of " << src.size() << " values for shape "
                                  << te::shape_to_string(shape));
    std::vector<float> out(te::num_elements(packed_shape(t, shape)));
    pack_layout(t, shape, sizeof(float), src.data(), out.data());
    return out;
}

} // namespace tessera::sched
