// 2-D pooling over the last two dims (or, in NCHW[x]c, the two before the channel block): max,
// average (with or without the padding in the count) and global pools.
#include "op_util.h"

#include <functional>

namespace tessera::te {

using namespace detail;

Pool2dParams Pool2dParams::make(int64_t kernel, int64_t stride, int64_t pad) {
    Pool2dParams p;
    p.kernel_h = p.kernel_w = kernel;
    p.stride_h = p.stride_w = stride;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = pad;
    return p;
}

namespace {
/// The geometry of one spatial dim of a pool.
struct PoolDim {
    int64_t in, kernel, stride, dilation, pad_before, pad_after;
    int64_t out = 0;   ///< Output extent.
    int64_t extra = 0; ///< Padding added behind pad_after so ceil-mode windows stay in bounds.

    void solve(const std::string& op, const char* dim, bool ceil_mode) {
        if (kernel < 1 || stride < 1 || dilation < 1)
            throw UserError() << op << ": kernel, stride and dilation must be positive, got "
                              << kernel << ", " << stride << ", " << dilation << " for " << dim;
        int64_t eff = dilation * (kernel - 1) + 1;
        if (pad_before < 0 || pad_after < 0 || pad_before >= eff || pad_after >= eff)
            throw UserError() << op << ": " << dim << " pads " << pad_before << "," << pad_after
                              << " must be non-negative and smaller than the window " << eff;
        int64_t span = in + pad_before + pad_after - eff;
        if (span < 0)
            throw UserError() << op << ": window " << eff << " larger than the padded " << dim
                              << " " << in + pad_before + pad_after;
        out = ceil_mode ? (span + stride - 1) / stride + 1 : span / stride + 1;
        // A window must start inside the input or the front padding.
        if (ceil_mode && (out - 1) * stride >= in + pad_before)
            --out;
        extra = std::max<int64_t>(0, (out - 1) * stride + eff - (in + pad_before + pad_after));
    }

    /// Number of window positions of output index o inside [lo, hi) (original coordinates).
    Expr count(const Expr& o, int64_t lo, int64_t hi) const {
        if (dilation == 1) { // this exact expression is in existing tasks' workload keys
            Expr start = o * Expr(stride) - Expr(pad_before);
            return ir::min(Expr(kernel), Expr(hi) - start) - ir::max(Expr(0), Expr(lo) - start);
        }
        const int64_t bound = in + pad_before + pad_after + extra + out * stride;
        return window_taps_inside(o * Expr(stride) - Expr(pad_before), kernel, dilation, lo, hi,
                                  bound);
    }
};

struct Pool {
    std::vector<int64_t> lead;  ///< Dims before H, W.
    std::vector<int64_t> trail; ///< Dims after H, W (the channel block of NCHW[x]c).
    PoolDim h, w;
    Tensor padded; ///< x with the pad stage applied (or x itself).
};

/// Pre: x has at least 2 + `trailing` dims; H and W are the two before the last `trailing`.
Pool plan_pool(const Tensor& x, const Pool2dParams& p, Expr pad_value, const std::string& op,
               size_t trailing = 0) {
    check_defined(x, op, "input");
    if (x.ndim() < 2 + trailing)
        throw UserError() << op << ": input '" << x.name() << "' must have rank >= " << 2 + trailing
                          << ", got " << shape_to_string(x.shape());
    const size_t rank = x.ndim(), hd = rank - 2 - trailing, wd = hd + 1;
    Pool pool;
    pool.lead.assign(x.shape().begin(), x.shape().begin() + static_cast<std::ptrdiff_t>(hd));
    pool.trail.assign(x.shape().begin() + static_cast<std::ptrdiff_t>(wd + 1), x.shape().end());
    pool.h = PoolDim{x.shape()[hd], p.kernel_h, p.stride_h, p.dilation_h, p.pad_top, p.pad_bottom};
    pool.w = PoolDim{x.shape()[wd], p.kernel_w, p.stride_w, p.dilation_w, p.pad_left, p.pad_right};
    pool.h.solve(op, "height", p.ceil_mode);
    pool.w.solve(op, "width", p.ceil_mode);
    std::vector<int64_t> before(rank, 0), after(rank, 0);
    before[hd] = pool.h.pad_before;
    before[wd] = pool.w.pad_before;
    after[hd] = pool.h.pad_after + pool.h.extra;
    after[wd] = pool.w.pad_after + pool.w.extra;
    bool any = false;
    for (size_t d = 0; d < rank; ++d)
        any = any || before[d] || after[d];
    pool.padded = any ? pad_named(x, before, after, pad_value, PadMode::Constant, op + "_pad") : x;
    return pool;
}

std::vector<int64_t> out_shape(const Pool& pool) {
    std::vector<int64_t> s = pool.lead;
    s.push_back(pool.h.out);
    s.push_back(pool.w.out);
    s.insert(s.end(), pool.trail.begin(), pool.trail.end());
    return s;
}

/// Reduction over the pool window of the padded input, each element times weight(output
/// index) when weight is given.
Tensor window_reduce(const Pool& pool, ir::ReduceOp op, const std::string& name,
                     const std::function<Expr(const std::vector<Var>&)>& weight = nullptr) {
    IterVar ry = reduce_axis(pool.h.kernel, "ry"), rx = reduce_axis(pool.w.kernel, "rx");
    size_t nl = pool.lead.size();
    return compute(
        out_shape(pool),
        [&](const std::vector<Var>& i) {
            std::vector<Expr> idx(i.begin(), i.begin() + nl);
            idx.push_back(i[nl] * Expr(pool.h.stride) + ry.var * Expr(pool.h.dilation));
            idx.push_back(i[nl + 1] * Expr(pool.w.stride) + rx.var * Expr(pool.w.dilation));
            idx.insert(idx.end(), i.begin() + static_cast<std::ptrdiff_t>(nl + 2), i.end());
            Expr element = pool.padded(idx);
            if (weight)
                element = element * weight(i);
            return ir::Reduce::make(op, element, {ry, rx});
        },
        name);
}
} // namespace

Tensor max_pool2d(const Tensor& x, const Pool2dParams& p) {
    check_defined(x, "max_pool2d", "input");
    Pool pool = plan_pool(x, p, ir::lowest_value(x.dtype()), "max_pool2d");
    return window_reduce(pool, ir::ReduceOp::Max, "max_pool2d");
}

Tensor max_pool2d_nchwc(const Tensor& x, const Pool2dParams& p) {
    const std::string op = "max_pool2d_nchwc";
    check_defined(x, op, "input");
    check_rank(x, 5, op, "input");
    Pool pool = plan_pool(x, p, ir::lowest_value(x.dtype()), op, /*trailing=*/1);
    return window_reduce(pool, ir::ReduceOp::Max, op);
}

namespace {
/// How many elements output (oh, ow) of an average pool divides by.
Expr window_count(const Pool& pool, const Pool2dParams& p, const Expr& oh, const Expr& ow) {
    if (p.count_include_pad)
        return pool.h.count(oh, -pool.h.pad_before, pool.h.in + pool.h.pad_after) *
               pool.w.count(ow, -pool.w.pad_before, pool.w.in + pool.w.pad_after);
    return pool.h.count(oh, 0, pool.h.in) * pool.w.count(ow, 0, pool.w.in);
}
} // namespace

Tensor avg_pool2d(const Tensor& x, const Pool2dParams& p) {
    const std::string op = "avg_pool2d";
    check_defined(x, op, "input");
    check_float(x, op);
    Pool pool = plan_pool(x, p, constant(x.dtype(), 0.0), op);
    Tensor total = window_reduce(pool, ir::ReduceOp::Sum, op + "_sum");
    size_t nl = pool.lead.size();
    DataType t = x.dtype();
    return compute(
        out_shape(pool),
        [&](const std::vector<Var>& i) {
            return total(as_exprs(i)) / ir::cast(t, window_count(pool, p, i[nl], i[nl + 1]));
        },
        op);
}

Tensor avg_pool2d_nchwc(const Tensor& x, const Pool2dParams& p) {
    const std::string op = "avg_pool2d_nchwc";
    check_defined(x, op, "input");
    check_rank(x, 5, op, "input");
    check_float(x, op);
    // One stage, as max_pool2d_nchwc: each element times the reciprocal of its window's count,
    // summed (one FMA per element read); a sum stage and a division after it wrote and read
    // back the whole sum.
    Pool pool = plan_pool(x, p, constant(x.dtype(), 0.0), op, /*trailing=*/1);
    const DataType t = x.dtype();
    return window_reduce(pool, ir::ReduceOp::Sum, op, [&](const std::vector<Var>& i) {
        return constant(t, 1.0) / ir::cast(t, window_count(pool, p, i[2], i[3]));
    });
}

static Tensor global_pool(const Tensor& x, bool avg, const std::string& op) {
    check_defined(x, op, "input");
    if (x.ndim() < 3)
        throw UserError() << op << ": input '" << x.name() << "' must have rank >= 3, got "
                          << shape_to_string(x.shape());
    std::vector<int64_t> axes;
    for (size_t d = 2; d < x.ndim(); ++d)
        axes.push_back(static_cast<int64_t>(d));
    if (!avg)
        return reduce_stage(x, axes, true, ir::ReduceOp::Max, op);
    check_float(x, op);
    return mean_stages(x, axes, true, op);
}

Tensor global_avg_pool2d(const Tensor& x) { return global_pool(x, true, "global_avg_pool2d"); }
Tensor global_max_pool2d(const Tensor& x) { return global_pool(x, false, "global_max_pool2d"); }

} // namespace tessera::te
