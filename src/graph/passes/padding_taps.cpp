// "padding-taps": a convolution whose padding is wider than the image its taps reach spends
// most of its products on the padding's zeros. DeepLabV3's atrous pyramid runs 3x3 convs at
// dilations 12, 24 and 36 on a 14x14 map: at 24 and 36 every tap but the centre reads padding
// for every output, at 12 the outer taps reach the image only for the outputs within two rows
// or columns of an edge. Along each spatial dim the outputs fall into ranges that read the
// same taps inside the image (tap_ranges); the conv becomes one Conv per pair of a row range
// and a column range, on the slice of the input those outputs read, with the taps they read
// and no padding, and Concats put the parts back in place. The sums are those of the original
// conv without its zero terms.
#include <sstream>

#include "pass_util.h"
#include "rewrite.h"
#include "tessera/graph/shape_inference.h"

namespace tessera::graph {

using namespace detail;

namespace {

/// At most this many parts per conv: each is a kernel call and a copy of its taps' weights (9:
/// the atrous conv at dilation 12 of a 14x14 map, whose parts hold 25 taps' weights against
/// the original 9 while computing 18% of its products).
constexpr int64_t kMaxParts = 9;

/// The outputs [begin, end) of one spatial dim that read the kernel's taps [first, last] inside
/// the image (and no other tap there).
struct TapRange {
    int64_t begin = 0, end = 0, first = 0, last = 0;
};

/// One spatial dim of a conv, as its attributes and shapes give it.
struct ConvDim {
    int64_t in = 0, out = 0, kernel = 0, stride = 1, dilation = 1, pad = 0;
};

/// The ranges of outputs along one dim with the same taps inside the image, in order; empty
/// when some output reads padding only (its value is the bias: left alone). The taps of an
/// output inside the image are contiguous: tap t reads input o * stride - pad + t * dilation.
std::vector<TapRange> tap_ranges(const ConvDim& d) {
    std::vector<TapRange> ranges;
    for (int64_t o = 0; o < d.out; ++o) {
        const int64_t tap0 = o * d.stride - d.pad; // the input index tap 0 reads
        int64_t first = 0, last = d.kernel - 1;
        while (first < d.kernel && tap0 + first * d.dilation < 0)
            ++first;
        while (last >= 0 && tap0 + last * d.dilation >= d.in)
            --last;
        if (first > last)
            return {};
        if (!ranges.empty() && ranges.back().first == first && ranges.back().last == last)
            ranges.back().end = o + 1;
        else
            ranges.push_back({o, o + 1, first, last});
    }
    return ranges;
}

/// Output elements times taps computed along one dim: all taps, or the ranges' own.
int64_t dim_work(const ConvDim& d) { return d.out * d.kernel; }
int64_t dim_work(const std::vector<TapRange>& ranges) {
    int64_t work = 0;
    for (const TapRange& r : ranges)
        work += (r.end - r.begin) * (r.last - r.first + 1);
    return work;
}

/// The first input index and the extent the outputs of r read along d.
std::pair<int64_t, int64_t> input_span(const ConvDim& d, const TapRange& r) {
    const int64_t start = r.begin * d.stride - d.pad + r.first * d.dilation;
    return {start, (r.end - r.begin - 1) * d.stride + (r.last - r.first) * d.dilation + 1};
}

/// w [K, C/g, R, S] restricted to taps rows.first..last, cols.first..last.
TensorData tap_weights(const TensorData& w, const TapRange& rows, const TapRange& cols) {
    const Shape& s = w.shape();
    const int64_t r = rows.last - rows.first + 1, c = cols.last - cols.first + 1;
    TensorData out(DType::F32, {s[0], s[1], r, c});
    const float* src = w.data<float>();
    float* dst = out.data<float>();
    for (int64_t kc = 0; kc < s[0] * s[1]; ++kc)
        for (int64_t y = 0; y < r; ++y)
            for (int64_t x = 0; x < c; ++x)
                *dst++ = src[(kc * s[2] + rows.first + y) * s[3] + cols.first + x];
    return out;
}

class PaddingTaps {
  public:
    explicit PaddingTaps(Graph& g) : g_(g) {}

    PassResult run() {
        PassResult r = begin_pass("padding-taps", g_);
        for (NodeId id : g_.topological_order())
            if (g_.is_live(id) && g_.node(id).op == Op::Conv)
                r.changes += rewrite(id);
        if (r.changes)
            infer_shapes(g_);
        std::ostringstream s;
        s << r.changes << " convs into " << parts_ << " parts";
        if (work_before_ > 0)
            s << " computing " << 100 * work_after_ / work_before_ << "% of their products";
        return end_pass(r, g_, s.str());
    }

  private:
    // The conv's two spatial dims, when it is a 2-D f32 conv of known shapes with constant
    // weights.
    bool dims_of(const Node& n, ConvDim* rows, ConvDim* cols) const {
        if (n.outputs.size() != 1 || n.inputs.size() < 2)
            return false;
        const Value& x = g_.value(n.inputs[0]);
        const Value& w = g_.value(n.inputs[1]);
        const Value& y = g_.value(n.outputs[0]);
        if (!x.typed || !y.typed || x.dtype != DType::F32 || x.shape.size() != 4 ||
            y.shape.size() != 4 || !w.is_constant() || w.dtype != DType::F32 || w.shape.size() != 4)
            return false;
        auto attr = [&](const char* key, size_t i, int64_t fallback) {
            if (!n.has_attr(key))
                return fallback;
            const std::vector<int64_t> v = n.attr_ints(key);
            return i < v.size() ? v[i] : fallback;
        };
        for (int d = 0; d < 2; ++d) {
            ConvDim& cd = d == 0 ? *rows : *cols;
            cd.in = x.shape[2 + d];
            cd.out = y.shape[2 + d];
            cd.kernel = w.shape[2 + d];
            cd.stride = attr("strides", d, 1);
            cd.dilation = attr("dilations", d, 1);
            cd.pad = attr("pads", d, 0);
        }
        return true;
    }

    // Copies, not references: adding values and nodes below may move the graph's storage.
    int rewrite(NodeId id) {
        const Node n = g_.node(id);
        ConvDim rd, cd;
        if (!dims_of(n, &rd, &cd))
            return 0;
        const std::vector<TapRange> rows = tap_ranges(rd), cols = tap_ranges(cd);
        if (rows.empty() || cols.empty())
            return 0;
        const int64_t parts = static_cast<int64_t>(rows.size() * cols.size());
        const int64_t before = dim_work(rd) * dim_work(cd);
        const int64_t after = dim_work(rows) * dim_work(cols);
        // One part: a smaller conv, whatever it saves. Several: only where they save at least
        // half the products, for their kernel calls and their weights.
        if (after == before || parts > kMaxParts || (parts > 1 && 2 * after > before))
            return 0;

        const std::string base = g_.value(n.outputs[0]).name + "/taps";
        const TensorData& w = *g_.value(n.inputs[1]).constant;
        const int64_t per_tap = w.shape()[0] * w.shape()[1]; // products per output and tap
        count(before * per_tap, after * per_tap, parts);
        std::vector<std::vector<ValueId>> bands(rows.size()); // [row range][column range]
        for (size_t i = 0; i < rows.size(); ++i)
            for (size_t j = 0; j < cols.size(); ++j) {
                const std::string name = base + "/" + std::to_string(rows[i].begin) + "_" +
                                         std::to_string(cols[j].begin);
                Attributes attrs = n.attrs;
                attrs["kernel_shape"] = Attribute::of_ints(
                    {rows[i].last - rows[i].first + 1, cols[j].last - cols[j].first + 1});
                attrs["pads"] = Attribute::of_ints({0, 0, 0, 0});
                std::vector<ValueId> ins = {
                    input_slice(n.inputs[0], rd, cd, rows[i], cols[j], name),
                    g_.add_constant(name + "/weights", tap_weights(w, rows[i], cols[j]))};
                if (n.input(2) != kNoValue)
                    ins.push_back(n.inputs[2]);
                if (parts == 1) { // the conv itself, smaller
                    replace_node(g_, id, Op::Conv, std::move(ins), std::move(attrs));
                    return 1;
                }
                bands[i].push_back(g_.add_value(name));
                g_.add_node(Op::Conv, std::move(ins), {bands[i].back()}, std::move(attrs), name);
            }
        // The parts side by side in each band of rows, the bands one below the other; the last
        // Concat defines the conv's output.
        if (bands.size() == 1) {
            replace_node(g_, id, Op::Concat, bands[0], {{"axis", Attribute::of_int(3)}});
            return 1;
        }
        std::vector<ValueId> stacked;
        for (size_t i = 0; i < bands.size(); ++i)
            stacked.push_back(bands[i].size() == 1
                                  ? bands[i][0]
                                  : concat(bands[i], 3, base + "/rows" + std::to_string(i)));
        replace_node(g_, id, Op::Concat, stacked, {{"axis", Attribute::of_int(2)}});
        return 1;
    }

    // The rows and columns of x the outputs of (r, c) read: x itself when they are all of it.
    ValueId input_slice(ValueId x, const ConvDim& rd, const ConvDim& cd, const TapRange& r,
                        const TapRange& c, const std::string& name) {
        const auto [row0, nrows] = input_span(rd, r);
        const auto [col0, ncols] = input_span(cd, c);
        if (row0 == 0 && nrows == rd.in && col0 == 0 && ncols == cd.in)
            return x;
        return add_slice(g_, x, {row0, col0}, {row0 + nrows, col0 + ncols}, {2, 3},
                         name + "/input");
    }

    ValueId concat(const std::vector<ValueId>& parts, int64_t axis, const std::string& name) {
        const ValueId out = g_.add_value(name);
        g_.add_node(Op::Concat, parts, {out}, {{"axis", Attribute::of_int(axis)}}, name);
        return out;
    }

    void count(int64_t before, int64_t after, int64_t parts) {
        work_before_ += before;
        work_after_ += after;
        parts_ += parts;
    }

    Graph& g_;
    int64_t parts_ = 0, work_before_ = 0, work_after_ = 0;
};

} // namespace

PassResult drop_padding_taps(Graph& g) { return PaddingTaps(g).run(); }

} // namespace tessera::graph
