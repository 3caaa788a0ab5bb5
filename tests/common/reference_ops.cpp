// Naive reference operators: direct loops over the definitions, accumulating in double.
#include "common/reference_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace tessera::testing {

static int64_t count(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t e : shape)
        n *= e;
    return n;
}

RefTensor::RefTensor(std::vector<int64_t> s, std::vector<float> d)
    : shape(std::move(s)), data(std::move(d)) {
    if (count(shape) != static_cast<int64_t>(data.size()))
        throw std::invalid_argument("RefTensor: data size does not match shape");
}

RefTensor::RefTensor(std::vector<int64_t> s)
    : shape(std::move(s)), data(static_cast<size_t>(count(shape)), 0.0f) {}

int64_t RefTensor::offset(const std::vector<int64_t>& idx) const {
    int64_t off = 0;
    for (size_t d = 0; d < shape.size(); ++d)
        off = off * shape[d] + idx[d];
    return off;
}

std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& shape) {
    std::vector<int64_t> idx(shape.size());
    for (size_t d = shape.size(); d-- > 0;) {
        idx[d] = flat % shape[d];
        flat /= shape[d];
    }
    return idx;
}

namespace ref {

RefTensor matmul(const RefTensor& a, const RefTensor& b) {
    int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
    RefTensor c({m, n});
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            double acc = 0;
            for (int64_t p = 0; p < k; ++p)
                acc += (double)a.at({i, p}) * b.at({p, j});
            c.at({i, j}) = (float)acc;
        }
    return c;
}

RefTensor batch_matmul(const RefTensor& a, const RefTensor& b) {
    int64_t ba = a.shape[0], bb = b.shape[0], m = a.shape[1], k = a.shape[2], n = b.shape[2];
    int64_t batch = std::max(ba, bb);
    RefTensor c({batch, m, n});
    for (int64_t q = 0; q < batch; ++q)
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
                double acc = 0;
                for (int64_t p = 0; p < k; ++p)
                    acc += (double)a.at({ba == 1 ? 0 : q, i, p}) * b.at({bb == 1 ? 0 : q, p, j});
                c.at({q, i, j}) = (float)acc;
            }
    return c;
}

RefTensor dense(const RefTensor& x, const RefTensor& w, const RefTensor* bias, bool relu_after) {
    int64_t m = x.shape[0], k = x.shape[1], n = w.shape[0];
    RefTensor y({m, n});
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            double acc = 0;
            for (int64_t p = 0; p < k; ++p)
                acc += (double)x.at({i, p}) * w.at({j, p});
            float v = (float)acc;
            if (bias)
                v += bias->data[(size_t)j];
            if (relu_after)
                v = std::max(v, 0.0f);
            y.at({i, j}) = v;
        }
    return y;
}

RefTensor conv2d(const RefTensor& x, const RefTensor& w, const ConvArgs& a, const RefTensor* bias) {
    int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], wd = x.shape[3];
    int64_t k = w.shape[0], cg = w.shape[1], r = w.shape[2], s = w.shape[3];
    int64_t kg = k / a.groups;
    int64_t oh = (h + a.pad_top + a.pad_bottom - a.dilation_h * (r - 1) - 1) / a.stride_h + 1;
    int64_t ow = (wd + a.pad_left + a.pad_right - a.dilation_w * (s - 1) - 1) / a.stride_w + 1;
    (void)c;
    RefTensor y({n, k, oh, ow});
    for (int64_t b = 0; b < n; ++b)
        for (int64_t o = 0; o < k; ++o) {
            int64_t g = o / kg;
            for (int64_t i = 0; i < oh; ++i)
                for (int64_t j = 0; j < ow; ++j) {
                    double acc = 0;
                    for (int64_t ci = 0; ci < cg; ++ci)
                        for (int64_t dy = 0; dy < r; ++dy)
                            for (int64_t dx = 0; dx < s; ++dx) {
                                int64_t yy = i * a.stride_h - a.pad_top + dy * a.dilation_h;
                                int64_t xx = j * a.stride_w - a.pad_left + dx * a.dilation_w;
                                if (yy < 0 || yy >= h || xx < 0 || xx >= wd)
                                    continue;
                                acc +=
                                    (double)x.at({b, g * cg + ci, yy, xx}) * w.at({o, ci, dy, dx});
                            }
                    float v = (float)acc;
                    if (bias)
                        v += bias->data[(size_t)o];
                    y.at({b, o, i, j}) = v;
                }
        }
    return y;
}

static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pa,
                        bool ceil_mode) {
    int64_t span = in + pb + pa - (d * (k - 1) + 1);
    int64_t out = ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
    if (ceil_mode && (out - 1) * s >= in + pb)
        --out;
    return out;
}

static RefTensor pool(const RefTensor& x, const PoolArgs& a, bool is_max) {
    int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3];
    int64_t oh =
        pool_out(h, a.kernel_h, a.stride_h, a.dilation_h, a.pad_top, a.pad_bottom, a.ceil_mode);
    int64_t ow =
        pool_out(w, a.kernel_w, a.stride_w, a.dilation_w, a.pad_left, a.pad_right, a.ceil_mode);
    RefTensor y({n, c, oh, ow});
    for (int64_t b = 0; b < n; ++b)
        for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t i = 0; i < oh; ++i)
                for (int64_t j = 0; j < ow; ++j) {
                    double best = -std::numeric_limits<double>::infinity(), total = 0;
                    int64_t inside = 0;
                    for (int64_t dy = 0; dy < a.kernel_h; ++dy)
                        for (int64_t dx = 0; dx < a.kernel_w; ++dx) {
                            int64_t yy = i * a.stride_h - a.pad_top + dy * a.dilation_h;
                            int64_t xx = j * a.stride_w - a.pad_left + dx * a.dilation_w;
                            if (yy < 0 || yy >= h || xx < 0 || xx >= w)
                                continue;
                            double v = x.at({b, ch, yy, xx});
                            best = std::max(best, v);
                            total += v;
                            ++inside;
                        }
                    double divisor = (double)inside;
                    if (a.count_include_pad) {
                        int64_t hs = i * a.stride_h - a.pad_top, ws = j * a.stride_w - a.pad_left;
                        int64_t he = std::min(hs + a.kernel_h, h + a.pad_bottom);
                        int64_t we = std::min(ws + a.kernel_w, w + a.pad_right);
                        divisor = (double)((he - hs) * (we - ws));
                    }
                    y.at({b, ch, i, j}) = (float)(is_max ? best : total / divisor);
                }
    return y;
}

RefTensor max_pool2d(const RefTensor& x, const PoolArgs& a) { return pool(x, a, true); }
RefTensor avg_pool2d(const RefTensor& x, const PoolArgs& a) { return pool(x, a, false); }

RefTensor global_avg_pool2d(const RefTensor& x) { return reduce(x, {2, 3}, true, Reduce::Mean); }
RefTensor global_max_pool2d(const RefTensor& x) { return reduce(x, {2, 3}, true, Reduce::Max); }

RefTensor unary(const RefTensor& x, const std::function<double(double)>& f) {
    RefTensor y(x.shape);
    for (size_t i = 0; i < x.data.size(); ++i)
        y.data[i] = (float)f(x.data[i]);
    return y;
}

RefTensor binary(const RefTensor& a, const RefTensor& b,
                 const std::function<double(double, double)>& f) {
    size_t rank = std::max(a.shape.size(), b.shape.size());
    auto padded = [&](const std::vector<int64_t>& s) {
        std::vector<int64_t> p(rank - s.size(), 1);
        p.insert(p.end(), s.begin(), s.end());
        return p;
    };
    std::vector<int64_t> as = padded(a.shape), bs = padded(b.shape), os(rank);
    for (size_t d = 0; d < rank; ++d)
        os[d] = std::max(as[d], bs[d]);
    RefTensor y(os);
    RefTensor ar(as, a.data), br(bs, b.data);
    for (int64_t f_i = 0; f_i < y.size(); ++f_i) {
        std::vector<int64_t> idx = unravel(f_i, os), ia = idx, ib = idx;
        for (size_t d = 0; d < rank; ++d) {
            if (as[d] == 1)
                ia[d] = 0;
            if (bs[d] == 1)
                ib[d] = 0;
        }
        y.data[(size_t)f_i] = (float)f(ar.at(ia), br.at(ib));
    }
    return y;
}

double relu(double x) { return x > 0 ? x : 0; }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

/// Splits shape at axis into (outer, len, inner) counts.
static void split_at(const std::vector<int64_t>& shape, int64_t axis, int64_t& outer, int64_t& len,
                     int64_t& inner) {
    outer = inner = 1;
    for (int64_t d = 0; d < axis; ++d)
        outer *= shape[(size_t)d];
    len = shape[(size_t)axis];
    for (size_t d = (size_t)axis + 1; d < shape.size(); ++d)
        inner *= shape[d];
}

RefTensor softmax(const RefTensor& x, int64_t axis) {
    if (axis < 0)
        axis += (int64_t)x.shape.size();
    int64_t outer, len, inner;
    split_at(x.shape, axis, outer, len, inner);
    RefTensor y(x.shape);
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t in = 0; in < inner; ++in) {
            auto pos = [&](int64_t j) { return (size_t)((o * len + j) * inner + in); };
            double mx = -std::numeric_limits<double>::infinity(), total = 0;
            for (int64_t j = 0; j < len; ++j)
                mx = std::max(mx, (double)x.data[pos(j)]);
            for (int64_t j = 0; j < len; ++j)
                total += std::exp(x.data[pos(j)] - mx);
            for (int64_t j = 0; j < len; ++j)
                y.data[pos(j)] = (float)(std::exp(x.data[pos(j)] - mx) / total);
        }
    return y;
}

RefTensor layer_norm(const RefTensor& x, const RefTensor* gamma, const RefTensor* beta,
                     int64_t axis, double eps) {
    if (axis < 0)
        axis += (int64_t)x.shape.size();
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < x.shape.size(); ++d)
        ((int64_t)d < axis ? outer : inner) *= x.shape[d];
    RefTensor y(x.shape);
    for (int64_t o = 0; o < outer; ++o) {
        const float* row = x.data.data() + o * inner;
        double mean = 0, var = 0;
        for (int64_t j = 0; j < inner; ++j)
            mean += row[j];
        mean /= (double)inner;
        for (int64_t j = 0; j < inner; ++j)
            var += (row[j] - mean) * (row[j] - mean);
        var /= (double)inner;
        for (int64_t j = 0; j < inner; ++j) {
            double v = (row[j] - mean) / std::sqrt(var + eps);
            if (gamma)
                v *= gamma->data[(size_t)j];
            if (beta)
                v += beta->data[(size_t)j];
            y.data[(size_t)(o * inner + j)] = (float)v;
        }
    }
    return y;
}

RefTensor reduce(const RefTensor& x, std::vector<int64_t> axes, bool keepdims, Reduce op) {
    size_t rank = x.shape.size();
    for (auto& a : axes)
        if (a < 0)
            a += (int64_t)rank;
    if (axes.empty())
        for (size_t d = 0; d < rank; ++d)
            axes.push_back((int64_t)d);
    std::vector<bool> red(rank, false);
    for (int64_t a : axes)
        red[(size_t)a] = true;
    std::vector<int64_t> kept_shape; // with reduced dims as 1
    for (size_t d = 0; d < rank; ++d)
        kept_shape.push_back(red[d] ? 1 : x.shape[d]);
    int64_t out_n = count(kept_shape), group = x.size() / out_n;
    double init = op == Reduce::Max   ? -std::numeric_limits<double>::infinity()
                  : op == Reduce::Min ? std::numeric_limits<double>::infinity()
                                      : 0.0;
    std::vector<double> acc((size_t)out_n, init);
    RefTensor kept(kept_shape);
    for (int64_t f = 0; f < x.size(); ++f) {
        std::vector<int64_t> idx = unravel(f, x.shape);
        for (size_t d = 0; d < rank; ++d)
            if (red[d])
                idx[d] = 0;
        double& a = acc[(size_t)kept.offset(idx)];
        double v = x.data[(size_t)f];
        switch (op) {
        case Reduce::Sum:
        case Reduce::Mean:
            a += v;
            break;
        case Reduce::Max:
            a = std::max(a, v);
            break;
        case Reduce::Min:
            a = std::min(a, v);
            break;
        }
    }
    for (size_t i = 0; i < acc.size(); ++i)
        kept.data[i] = (float)(op == Reduce::Mean ? acc[i] / (double)group : acc[i]);
    if (keepdims)
        return kept;
    std::vector<int64_t> shape;
    for (size_t d = 0; d < rank; ++d)
        if (!red[d])
            shape.push_back(x.shape[d]);
    return RefTensor(shape, kept.data);
}

RefTensor transpose(const RefTensor& x, const std::vector<int64_t>& perm) {
    std::vector<int64_t> shape(perm.size());
    for (size_t d = 0; d < perm.size(); ++d)
        shape[d] = x.shape[(size_t)perm[d]];
    RefTensor y(shape);
    for (int64_t f = 0; f < y.size(); ++f) {
        std::vector<int64_t> idx = unravel(f, shape), src(perm.size());
        for (size_t d = 0; d < perm.size(); ++d)
            src[(size_t)perm[d]] = idx[d];
        y.data[(size_t)f] = x.at(src);
    }
    return y;
}

RefTensor reshape(const RefTensor& x, const std::vector<int64_t>& shape) {
    return RefTensor(shape, x.data);
}

RefTensor concat(const std::vector<RefTensor>& xs, int64_t axis) {
    if (axis < 0)
        axis += (int64_t)xs[0].shape.size();
    std::vector<int64_t> shape = xs[0].shape;
    shape[(size_t)axis] = 0;
    for (const auto& t : xs)
        shape[(size_t)axis] += t.shape[(size_t)axis];
    RefTensor y(shape);
    for (int64_t f = 0; f < y.size(); ++f) {
        std::vector<int64_t> idx = unravel(f, shape);
        int64_t pos = idx[(size_t)axis];
        for (const auto& t : xs) {
            if (pos < t.shape[(size_t)axis]) {
                idx[(size_t)axis] = pos;
                y.data[(size_t)f] = t.at(idx);
                break;
            }
            pos -= t.shape[(size_t)axis];
        }
    }
    return y;
}

RefTensor pad(const RefTensor& x, const std::vector<int64_t>& before,
              const std::vector<int64_t>& after, float value, PadMode mode) {
    std::vector<int64_t> shape(x.shape.size());
    for (size_t d = 0; d < shape.size(); ++d)
        shape[d] = x.shape[d] + before[d] + after[d];
    RefTensor y(shape);
    for (int64_t f = 0; f < y.size(); ++f) {
        std::vector<int64_t> idx = unravel(f, shape);
        bool outside = false;
        for (size_t d = 0; d < shape.size(); ++d) {
            int64_t s = idx[d] - before[d], n = x.shape[d];
            if (s >= 0 && s < n) {
                idx[d] = s;
                continue;
            }
            switch (mode) {
            case PadMode::Constant:
                outside = true;
                break;
            case PadMode::Edge:
                idx[d] = s < 0 ? 0 : n - 1;
                break;
            case PadMode::Reflect:
                idx[d] = s < 0 ? -s : 2 * (n - 1) - s;
                break;
            }
        }
        y.data[(size_t)f] = outside ? value : x.at(idx);
    }
    return y;
}

RefTensor slice(const RefTensor& x, const std::vector<int64_t>& starts,
                const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                const std::vector<int64_t>& steps) {
    size_t rank = x.shape.size();
    // Per dim, the list of source indices.
    std::vector<std::vector<int64_t>> pick(rank);
    for (size_t d = 0; d < rank; ++d)
        for (int64_t i = 0; i < x.shape[d]; ++i)
            pick[d].push_back(i);
    for (size_t j = 0; j < starts.size(); ++j) {
        int64_t a = axes.empty() ? (int64_t)j : axes[j];
        if (a < 0)
            a += (int64_t)rank;
        int64_t n = x.shape[(size_t)a], step = steps.empty() ? 1 : steps[j];
        int64_t b = starts[j] < 0 ? starts[j] + n : starts[j];
        int64_t e = ends[j] < 0 ? ends[j] + n : ends[j];
        std::vector<int64_t> p;
        if (step > 0) {
            b = std::clamp<int64_t>(b, 0, n);
            e = std::clamp<int64_t>(e, 0, n);
            for (int64_t i = b; i < e; i += step)
                p.push_back(i);
        } else {
            b = std::clamp<int64_t>(b, -1, n - 1);
            e = std::clamp<int64_t>(e, -1, n - 1);
            for (int64_t i = b; i > e; i += step)
                p.push_back(i);
        }
        pick[(size_t)a] = p;
    }
    std::vector<int64_t> shape(rank);
    for (size_t d = 0; d < rank; ++d)
        shape[d] = (int64_t)pick[d].size();
    RefTensor y(shape);
    for (int64_t f = 0; f < y.size(); ++f) {
        std::vector<int64_t> idx = unravel(f, shape);
        for (size_t d = 0; d < rank; ++d)
            idx[d] = pick[d][(size_t)idx[d]];
        y.data[(size_t)f] = x.at(idx);
    }
    return y;
}

int32_t dot4_u8s8(int32_t a, int32_t b) {
    uint8_t ua[4];
    int8_t sb[4];
    std::memcpy(ua, &a, 4); // byte j of the word is bits 8j..8j+7 on little-endian hosts
    std::memcpy(sb, &b, 4);
    int64_t sum = 0;
    for (int j = 0; j < 4; ++j)
        sum += int64_t(ua[j]) * int64_t(sb[j]);
    return static_cast<int32_t>(sum);
}

} // namespace ref

} // namespace tessera::testing
