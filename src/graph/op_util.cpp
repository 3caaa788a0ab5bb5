#include "op_util.h"

#include <algorithm>
#include <cmath>

namespace tessera::graph::detail {

int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& where) {
    if (axis < -rank || axis >= rank)
        throw UserError() << where << ": axis " << axis << " is out of range for rank " << rank;
    return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank,
                                    const std::string& where) {
    std::vector<int64_t> out;
    for (int64_t a : axes) {
        int64_t n = normalize_axis(a, rank, where);
        if (std::find(out.begin(), out.end(), n) != out.end())
            throw UserError() << where << ": axis " << a << " is repeated";
        out.push_back(n);
    }
    return out;
}

Shape broadcast_shapes(const std::vector<Shape>& shapes, const std::string& where) {
    size_t rank = 0;
    for (const Shape& s : shapes)
        rank = std::max(rank, s.size());
    Shape out(rank, 1);
    for (const Shape& s : shapes) {
        size_t off = rank - s.size();
        for (size_t i = 0; i < s.size(); ++i) {
            int64_t& o = out[off + i];
            if (s[i] == o || s[i] == 1)
                continue;
            if (o == 1) {
                o = s[i];
                continue;
            }
            std::string all;
            for (const Shape& t : shapes)
                all += (all.empty() ? "" : " and ") + shape_str(t);
            throw UserError() << where << ": shapes " << all << " do not broadcast";
        }
    }
    return out;
}

std::vector<int64_t> contiguous_strides(const Shape& s) {
    std::vector<int64_t> st(s.size(), 1);
    for (int64_t i = static_cast<int64_t>(s.size()) - 2; i >= 0; --i)
        st[i] = st[i + 1] * s[i + 1];
    return st;
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
    std::vector<int64_t> st(out.size(), 0);
    std::vector<int64_t> cs = contiguous_strides(in);
    size_t off = out.size() - in.size();
    for (size_t i = 0; i < in.size(); ++i)
        st[off + i] = in[i] == 1 ? 0 : cs[i];
    return st;
}

Window2d window_of(const Node& n, const std::array<int64_t, 2>& kernel, const std::string& where) {
    Window2d w;
    auto pair = [&](const char* key, std::array<int64_t, 2> def, bool allow_absent) {
        std::vector<int64_t> v = n.attr_ints(key);
        if (v.empty()) {
            if (!allow_absent)
                throw UserError() << where << ": attribute '" << key << "' is missing";
            return def;
        }
        if (v.size() != 2)
            throw UserError() << where << ": attribute '" << key << "' has " << v.size()
                              << " values, expected 2 (2-D only)";
        for (int64_t x : v)
            if (x < 1)
                throw UserError() << where << ": attribute '" << key << "' value " << x
                                  << " is not positive";
        return std::array<int64_t, 2>{v[0], v[1]};
    };
    w.kernel = pair("kernel_shape", kernel, kernel[0] > 0);
    w.stride = pair("strides", {1, 1}, true);
    w.dilation = pair("dilations", {1, 1}, true);
    std::vector<int64_t> pads = n.attr_ints("pads", {0, 0, 0, 0});
    if (pads.size() != 4)
        throw UserError() << where << ": attribute 'pads' has " << pads.size()
                          << " values, expected 4";
    for (size_t i = 0; i < 4; ++i) {
        if (pads[i] < 0)
            throw UserError() << where << ": negative pad " << pads[i];
        w.pads[i] = pads[i];
    }
    int64_t ceil = n.attr_int("ceil_mode", 0);
    if (ceil != 0 && ceil != 1)
        throw UserError() << where << ": ceil_mode " << ceil << " is not 0 or 1";
    w.ceil_mode = ceil == 1;
    return w;
}

std::string must_be_constant(const Graph& g, ValueId v, const std::string& what) {
    // The graph inputs upstream of v, in the graph's input order.
    std::vector<char> feeds(g.num_values(), 0);
    std::vector<ValueId> stack = {v};
    while (!stack.empty()) {
        const ValueId u = stack.back();
        stack.pop_back();
        if (u == kNoValue || feeds[static_cast<size_t>(u)])
            continue;
        feeds[static_cast<size_t>(u)] = 1;
        if (g.value(u).producer != kNoNode)
            for (ValueId w : g.node(g.value(u).producer).inputs)
                stack.push_back(w);
    }
    std::vector<std::string> names;
    for (ValueId in : g.inputs)
        if (feeds[static_cast<size_t>(in)])
            names.push_back("'" + g.value(in).name + "'");
    std::string msg = what + " '" + g.value(v).name + "' must be a compile-time constant";
    if (names.empty())
        return msg;
    const bool is_input = names.size() == 1 && names[0] == "'" + g.value(v).name + "'";
    if (is_input)
        return msg + " (a graph input: give its value with --bind NAME=FILE.npy)";
    std::string list;
    for (size_t i = 0; i < names.size(); ++i)
        list += (i ? ", " : "") + names[i];
    return msg + " (computed from graph input" + (names.size() > 1 ? "s " : " ") + list +
           ": give " + (names.size() > 1 ? "their values" : "its value") +
           " with --bind NAME=FILE.npy)";
}

int64_t taps_before(int64_t start, int64_t kernel, int64_t dilation, int64_t end) {
    int64_t n = 0;
    for (int64_t k = 0; k < kernel; ++k)
        n += start + k * dilation < end ? 1 : 0;
    return n;
}

int64_t window_output_dim(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                          int64_t pad_begin, int64_t pad_end, bool ceil_mode,
                          const std::string& where) {
    int64_t span = in + pad_begin + pad_end - ((kernel - 1) * dilation + 1);
    if (span < 0)
        throw UserError() << where << ": window of " << kernel << " (dilation " << dilation
                          << ") does not fit input extent " << in << " with pads " << pad_begin
                          << "+" << pad_end;
    int64_t out = (ceil_mode ? ceil_div(span, stride) : span / stride) + 1;
    if (ceil_mode && (out - 1) * stride >= in + pad_begin)
        --out;
    return out;
}

std::vector<SliceAxis> resolve_slice(const Shape& in, const std::vector<int64_t>& starts,
                                     const std::vector<int64_t>& ends,
                                     const std::vector<int64_t>& axes_in,
                                     const std::vector<int64_t>& steps_in,
                                     const std::string& where) {
    const int64_t rank = static_cast<int64_t>(in.size());
    if (starts.size() != ends.size())
        throw UserError() << where << ": " << starts.size() << " starts but " << ends.size()
                          << " ends";
    std::vector<int64_t> axes = axes_in;
    if (axes.empty())
        for (size_t i = 0; i < starts.size(); ++i)
            axes.push_back(static_cast<int64_t>(i));
    std::vector<int64_t> steps =
        steps_in.empty() ? std::vector<int64_t>(starts.size(), 1) : steps_in;
    if (axes.size() != starts.size() || steps.size() != starts.size())
        throw UserError() << where << ": starts, ends, axes and steps differ in length";
    axes = normalize_axes(axes, rank, where);
    std::vector<SliceAxis> out(in.size());
    for (size_t d = 0; d < in.size(); ++d)
        out[d] = {0, 1, in[d]};
    for (size_t i = 0; i < axes.size(); ++i) {
        const int64_t dim = in[axes[i]], step = steps[i];
        if (step == 0)
            throw UserError() << where << ": slice step is 0";
        int64_t start = starts[i], end = ends[i];
        if (start < 0)
            start += dim;
        if (end < 0)
            end += dim;
        int64_t count;
        if (step > 0) {
            start = std::clamp<int64_t>(start, 0, dim);
            end = std::clamp<int64_t>(end, 0, dim);
            count = end > start ? ceil_div(end - start, step) : 0;
        } else {
            start = std::clamp<int64_t>(start, 0, dim - 1);
            end = std::clamp<int64_t>(end, -1, dim - 1);
            count = start > end ? ceil_div(start - end, -step) : 0;
        }
        out[axes[i]] = {count > 0 ? start : 0, step, count};
    }
    return out;
}

Shape resolve_reshape(const Shape& in, const std::vector<int64_t>& spec, bool allowzero,
                      const std::string& where) {
    Shape out(spec.size());
    int64_t infer = -1, known = 1;
    for (size_t i = 0; i < spec.size(); ++i) {
        int64_t d = spec[i];
        if (d == -1) {
            if (infer >= 0)
                throw UserError() << where << ": reshape to " << shape_str(spec)
                                  << " has more than one -1";
            infer = static_cast<int64_t>(i);
            continue;
        }
        if (d == 0 && !allowzero) {
            if (i >= in.size())
                throw UserError() << where << ": reshape " << shape_str(in) << " to "
                                  << shape_str(spec) << ": 0 at dim " << i << " has no input dim";
            d = in[i];
        } else if (d < 0) {
            throw UserError() << where << ": reshape to " << shape_str(spec) << " has dim " << d;
        }
        out[i] = d;
        known *= d;
    }
    const int64_t total = shape_numel(in);
    if (infer >= 0) {
        if (known == 0 || total % known != 0)
            throw UserError() << where << ": cannot reshape " << shape_str(in) << " to "
                              << shape_str(spec);
        out[infer] = total / known;
    } else if (known != total) {
        throw UserError() << where << ": cannot reshape " << shape_str(in) << " (" << total
                          << " elements) to " << shape_str(out);
    }
    return out;
}

Shape reduced_shape(const Shape& in, const std::vector<int64_t>& axes, bool keepdims) {
    Shape out;
    for (size_t d = 0; d < in.size(); ++d) {
        bool reduced = axes.empty() ||
                       std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
        if (!reduced)
            out.push_back(in[d]);
        else if (keepdims)
            out.push_back(1);
    }
    return out;
}

Shape flatten_shape(const Shape& in, int64_t axis, const std::string& where) {
    const int64_t rank = static_cast<int64_t>(in.size());
    if (axis < -rank || axis > rank)
        throw UserError() << where << ": flatten axis " << axis << " is out of range for rank "
                          << rank;
    if (axis < 0)
        axis += rank;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d)
        (d < axis ? outer : inner) *= in[d];
    return {outer, inner};
}

Shape squeeze_shape(const Shape& in, const std::vector<int64_t>& axes_in,
                    const std::string& where) {
    const int64_t rank = static_cast<int64_t>(in.size());
    std::vector<int64_t> axes = normalize_axes(axes_in, rank, where);
    Shape out;
    for (int64_t d = 0; d < rank; ++d) {
        bool listed = std::find(axes.begin(), axes.end(), d) != axes.end();
        if (listed && in[d] != 1)
            throw UserError() << where << ": cannot squeeze dim " << d << " of extent " << in[d]
                              << " in " << shape_str(in);
        if (listed || (axes.empty() && in[d] == 1))
            continue;
        out.push_back(in[d]);
    }
    return out;
}

Shape unsqueeze_shape(const Shape& in, const std::vector<int64_t>& axes_in,
                      const std::string& where) {
    const int64_t out_rank = static_cast<int64_t>(in.size() + axes_in.size());
    std::vector<int64_t> axes = normalize_axes(axes_in, out_rank, where);
    Shape out;
    size_t next = 0;
    for (int64_t d = 0; d < out_rank; ++d) {
        if (std::find(axes.begin(), axes.end(), d) != axes.end())
            out.push_back(1);
        else
            out.push_back(in[next++]);
    }
    return out;
}

std::vector<int64_t> transpose_perm(const std::vector<int64_t>& perm, int64_t rank,
                                    const std::string& where) {
    std::vector<int64_t> p = perm;
    if (p.empty())
        for (int64_t d = rank - 1; d >= 0; --d)
            p.push_back(d);
    if (static_cast<int64_t>(p.size()) != rank)
        throw UserError() << where << ": perm " << shape_str(perm) << " does not fit rank " << rank;
    std::vector<bool> seen(rank, false);
    for (int64_t d : p) {
        if (d < 0 || d >= rank || seen[d])
            throw UserError() << where << ": perm " << shape_str(perm) << " is not a permutation";
        seen[d] = true;
    }
    return p;
}

Shape concat_shape(const std::vector<Shape>& in, int64_t axis_in, const std::string& where) {
    if (in.empty())
        throw UserError() << where << ": no inputs";
    const int64_t rank = static_cast<int64_t>(in[0].size());
    const int64_t axis = normalize_axis(axis_in, rank, where);
    Shape out = in[0];
    for (size_t i = 1; i < in.size(); ++i) {
        bool ok = static_cast<int64_t>(in[i].size()) == rank;
        for (int64_t d = 0; ok && d < rank; ++d)
            ok = d == axis || in[i][d] == out[d];
        if (!ok)
            throw UserError() << where << ": cannot concatenate " << shape_str(in[0]) << " and "
                              << shape_str(in[i]) << " along axis " << axis;
        out[axis] += in[i][axis];
    }
    return out;
}

std::vector<int64_t> split_sizes(const Shape& in, int64_t axis, const std::vector<int64_t>& split,
                                 bool has_split, size_t num_outputs, const std::string& where) {
    const int64_t dim = in[axis];
    if (has_split) {
        if (split.size() != num_outputs)
            throw UserError() << where << ": " << split.size() << " split sizes for " << num_outputs
                              << " outputs";
        int64_t sum = 0;
        for (int64_t s : split) {
            if (s < 0)
                throw UserError() << where << ": negative split size " << s;
            sum += s;
        }
        if (sum != dim)
            throw UserError() << where << ": split sizes " << shape_str(split) << " do not sum to "
                              << dim;
        return split;
    }
    const int64_t parts = static_cast<int64_t>(num_outputs);
    if (parts == 0 || dim % parts != 0)
        throw UserError() << where << ": extent " << dim << " does not split into " << parts
                          << " equal parts";
    return std::vector<int64_t>(num_outputs, dim / parts);
}

Shape gather_shape(const Shape& data, const Shape& indices, int64_t axis) {
    Shape out(data.begin(), data.begin() + axis);
    out.insert(out.end(), indices.begin(), indices.end());
    out.insert(out.end(), data.begin() + axis + 1, data.end());
    return out;
}

std::pair<int64_t, int64_t> shape_range(const Node& n, int64_t rank) {
    int64_t start = n.attr_int("start", 0), end = n.attr_int("end", rank);
    if (start < 0)
        start += rank;
    if (end < 0)
        end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, 0, rank);
    return {start, std::max(start, end)};
}

Shape pad_shape(const Shape& in, const std::vector<int64_t>& pads, const std::string& where) {
    const size_t rank = in.size();
    if (pads.size() != 2 * rank)
        throw UserError() << where << ": " << pads.size() << " pads for rank " << rank
                          << ", expected " << 2 * rank;
    Shape out(rank);
    for (size_t d = 0; d < rank; ++d) {
        out[d] = in[d] + pads[d] + pads[d + rank];
        if (out[d] < 0)
            throw UserError() << where << ": pads " << shape_str(pads) << " crop " << shape_str(in)
                              << " below zero";
    }
    return out;
}

int64_t range_count(double start, double limit, double delta, const std::string& where) {
    if (delta == 0)
        throw UserError() << where << ": range delta is 0";
    double c = std::ceil((limit - start) / delta);
    if (!(c < 1e12))
        throw UserError() << where << ": range has too many elements";
    return c > 0 ? static_cast<int64_t>(c) : 0;
}

Shape matmul_shape(const Shape& a_in, const Shape& b_in, const std::string& where) {
    if (a_in.empty() || b_in.empty())
        throw UserError() << where << ": matmul of a scalar (shapes " << shape_str(a_in) << " and "
                          << shape_str(b_in) << ")";
    Shape a = a_in, b = b_in;
    if (a.size() == 1)
        a.insert(a.begin(), 1);
    if (b.size() == 1)
        b.push_back(1);
    const int64_t k = a.back(), k2 = b[b.size() - 2];
    if (k != k2)
        throw UserError() << where << ": matmul inner dims differ: " << shape_str(a_in) << " x "
                          << shape_str(b_in);
    Shape batch =
        broadcast_shapes({Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2)}, where);
    Shape out = batch;
    if (a_in.size() > 1)
        out.push_back(a[a.size() - 2]);
    if (b_in.size() > 1)
        out.push_back(b.back());
    return out;
}

} // namespace tessera::graph::detail
