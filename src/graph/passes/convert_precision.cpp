// The precision pass. bf16: matrix products and blocked convolutions compute on bf16 operands
// with f32 sums (MatMulBF16, MatMulBF16NT, ConvBF16Blocked). fp16: their constant weights are
// stored in f16 and widened as the kernels read them. passes.h states the patterns.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>

#include "../ops/bf16_conv.h"
#include "../ops/bf16_matmul.h"
#include "../ops/blocked_layout.h"
#include "rewrite.h"
#include "tessera/graph/shape_inference.h"
#include "tessera/support/half.h"

namespace tessera::graph {

using namespace detail;

const char* precision_name(Precision p) {
    switch (p) {
    case Precision::FP32:
        return "fp32";
    case Precision::BF16:
        return "bf16";
    case Precision::TF32:
        return "tf32";
    case Precision::FP16:
        return "fp16";
    }
    return "?";
}

Precision parse_precision(const std::string& text) {
    for (Precision p : {Precision::FP32, Precision::BF16, Precision::TF32, Precision::FP16})
        if (text == precision_name(p))
            return p;
    throw UserError() << "unknown precision '" << text << "' (expected fp32, bf16, fp16 or tf32)";
}

namespace {

class Bf16Products {
  public:
    explicit Bf16Products(Graph& g) : g_(g) {}

    // Rewrites MatMul / Gemm node id when it has the pass's form; true when it did.
    bool convert_matmul(NodeId id) {
        const Node n = g_.node(id);
        const bool gemm = n.op == Op::Gemm;
        if (!is_plain_product(n))
            return false;
        const Value& x = g_.value(n.input(0));
        const Value& w = g_.value(n.input(1));
        // Batched weights [B, K, N] by X [B, M, K]: Winograd's products, one per tile position.
        const bool batched =
            !gemm && w.shape.size() == 3 && x.shape.size() == 3 && x.shape[0] == w.shape[0];
        if (x.dtype != DType::F32 || x.shape.empty() || (gemm && x.shape.size() != 2) ||
            !w.is_constant() || w.dtype != DType::F32 || (w.shape.size() != 2 && !batched))
            return false;
        // F(4x4)'s transformed operands rounded to bf16 are too coarse: the output transform
        // sums their errors with weights up to 8 (resnet18's logits 0.07 from f32's, where
        // bf16 asks 2e-2). Its product stays f32; F(2x2)'s (weights 0 and +-1) converts.
        if (const Node* t = producer_op(g_, n.input(0), Op::WinogradInput))
            if (t->attr_int("tile", 0) > 2)
                return false;
        const bool trans_b = gemm && n.attr_int("transB", 0) != 0;
        const TensorData wkn = trans_b ? transposed_matrix(*w.constant) : *w.constant;
        const int64_t K = wkn.shape()[wkn.rank() - 2];
        if (K != x.shape.back() || K % 2 != 0)
            return false;
        const ValueId words = g_.add_constant(w.name + "_bf16_words", pack_bf16_weight_words(wkn));
        const ValueId xb = bf16_of(n.input(0));
        const bool bias = gemm && n.inputs.size() > 2 && n.input(2) != kNoValue;
        if (!bias) {
            replace_node(g_, id, Op::MatMulBF16, {xb, words}, {});
            return true;
        }
        const Value& y = g_.value(n.outputs[0]);
        const ValueId product = g_.add_value(y.name + "/bf16_matmul", DType::F32, y.shape);
        g_.add_node(Op::MatMulBF16, {xb, words}, {product}, {}, n.name);
        replace_node(g_, id, Op::Add, {product, n.input(2)}, {});
        return true;
    }

    // Rewrites MatMul node id of two computed f32 operands (attention's Q K^T and P V) into
    // MatMulBF16NT; true when it did. Its second operand's rows are the right-hand side's
    // columns when a Transpose that swaps the last two axes made that side (K before its
    // transpose: the product reads that Transpose's input); otherwise it takes the right-hand
    // side as it is (kn = 1; V), whose kernel interleaves its rows in pairs (two dense rows
    // per pair, where a transposed copy would be gathered).
    bool convert_activation_product(NodeId id) {
        const Node n = g_.node(id);
        if (n.op != Op::MatMul || !is_plain_product(n))
            return false;
        const Value& x = g_.value(n.input(0));
        const Value& b = g_.value(n.input(1));
        const size_t r = x.shape.size();
        if (x.dtype != DType::F32 || b.dtype != DType::F32 || x.is_constant() || b.is_constant() ||
            r < 2 || b.shape.size() != r || x.shape[r - 1] % 2 != 0 ||
            b.shape[r - 2] != x.shape[r - 1] ||
            !std::equal(x.shape.begin(), x.shape.end() - 2, b.shape.begin()))
            return false;
        // The right-hand side's columns as rows are its Transpose's input permuted by the
        // perm with its last two entries swapped: cheap to make when that keeps the input's
        // innermost axis innermost (K^T from K's heads: the same copy as Q's), else a gather.
        const Node* t = producer_op(g_, n.input(1), Op::Transpose);
        std::vector<int64_t> columns_perm = t ? t->attr_ints("perm", {}) : std::vector<int64_t>{};
        if (columns_perm.size() == r) {
            std::swap(columns_perm[r - 1], columns_perm[r - 2]);
            if (columns_perm[r - 1] == static_cast<int64_t>(r) - 1) {
                const ValueId in = t->input(0);
                ValueId columns = in;
                // A sorted permutation is the identity: the product reads the input itself.
                if (!std::is_sorted(columns_perm.begin(), columns_perm.end())) {
                    const std::string name = g_.value(n.input(1)).name + "/columns";
                    columns = g_.add_value(name);
                    ShapeInferer(g_).infer(g_.add_node(Op::Transpose, {in}, {columns},
                                                       {{"perm", Attribute::of_ints(columns_perm)}},
                                                       name));
                }
                replace_node(g_, id, Op::MatMulBF16NT, {bf16_of(n.input(0)), bf16_of(columns)}, {});
                return true;
            }
        }
        replace_node(g_, id, Op::MatMulBF16NT, {bf16_of(n.input(0)), bf16_of(n.input(1))},
                     {{"kn", Attribute::of_int(1)}});
        return true;
    }

    // Rewrites ConvBlocked node id (not depthwise nor grouped, constant weights and bias) into
    // PackBF16Blocked -> ConvBF16Blocked; true when it did.
    bool convert_conv(NodeId id) {
        const Node n = g_.node(id);
        const Value& x = g_.value(n.input(0));
        const Value& w = g_.value(n.input(1));
        const bool bias = n.inputs.size() > 2 && n.input(2) != kNoValue;
        if (n.attr_int("depthwise", 0) != 0 || n.attr_int("groups", 1) != 1 ||
            x.dtype != DType::F32 || x.shape.size() != 5 || !w.is_constant() ||
            (bias && !g_.value(n.input(2)).is_constant()))
            return false;
        const int64_t channels = x.shape[1] * x.shape[4];
        const int64_t block = n.attr_int("block", 0);
        // Blocks of 32 input channels make one 64-byte row of a matrix tile (16 words of two);
        // fewer channels (an image's) make one block, rounded up to whole words.
        const int64_t in_block = channels % kTileRowChannels == 0 ? kTileRowChannels
                                 : channels < kTileRowChannels    ? (channels + 1) / 2 * 2
                                                                  : (x.shape[4] + 1) / 2 * 2;
        const std::vector<int64_t> pads = n.attr_ints("pads", {0, 0, 0, 0});
        const TensorData oihw = unblock_conv_weight(*w.constant, false);
        const int64_t S = oihw.shape()[3];
        // A few channels (an image's) fold a window row into one run of words, when it fits
        // one tile row: S pixels side by side in the row instead of one word or two per pixel.
        const std::vector<int64_t> dilations = n.attr_ints("dilations", {1, 1});
        const bool fold = channels < kTileRowChannels && S * in_block <= kTileRowChannels &&
                          dilations.size() == 2 && dilations[1] == 1;
        // Folded, an odd number of channels (an RGB image's 3) lie side by side without a zero
        // channel: a 7-wide window row of 21 values in 11 words instead of 28 in 14. That needs
        // every output's run to start on a whole word: column stride x channels even. (One
        // channel keeps its zero: a run of ceil(S / 2) words would not tell S from S + 1.)
        const std::vector<int64_t> strides = n.attr_ints("strides", {1, 1});
        const int64_t pixel_block = fold && channels % 2 != 0 && channels >= 3 &&
                                            strides.size() == 2 && strides[1] * channels % 2 == 0
                                        ? channels
                                        : in_block;
        // x and w are references into the graph's values: done with before packed_input and
        // add_constant add values (and may move them).
        const std::string words_name = w.name + "_bf16_words";
        const ValueId packed = packed_input(n.input(0), pads, pixel_block, fold);
        std::vector<ValueId> ins = {
            packed, g_.add_constant(words_name,
                                    pack_bf16_conv_weight_words(oihw, block, pixel_block, fold))};
        if (bias)
            ins.push_back(n.input(2));
        Attributes attrs;
        for (const char* key : {"strides", "dilations", "block"})
            if (n.has_attr(key))
                attrs[key] = n.attrs.at(key);
        attrs["kernel_shape"] = Attribute::of_ints({oihw.shape()[2], S});
        if (fold)
            attrs["pixel_block"] = Attribute::of_int(pixel_block);
        replace_node(g_, id, Op::ConvBF16Blocked, std::move(ins), std::move(attrs));
        return true;
    }

  private:
    static constexpr int64_t kTileRowChannels = 32;

    // PackBF16Blocked(v) with these pads, output block and width merging, one per such value.
    ValueId packed_input(ValueId v, const std::vector<int64_t>& pads, int64_t out_block,
                         bool merge_width) {
        const auto key = std::make_tuple(v, pads, out_block, merge_width);
        auto it = packs_.find(key);
        if (it != packs_.end())
            return it->second;
        const std::string name = g_.value(v).name + "/bf16_" + std::to_string(packs_.size());
        const ValueId p = g_.add_value(name);
        Attributes attrs = {{"pads", Attribute::of_ints(pads)},
                            {"out_block", Attribute::of_int(out_block)}};
        if (merge_width)
            attrs["merge_width"] = Attribute::of_int(1);
        // Its type from the op's own type function: one definition of the packed shape.
        ShapeInferer(g_).infer(g_.add_node(Op::PackBF16Blocked, {v}, {p}, std::move(attrs), name));
        packs_.emplace(key, p);
        return p;
    }

    // Cast(v to bf16), one per value.
    ValueId bf16_of(ValueId v) {
        auto it = casts_.find(v);
        if (it != casts_.end())
            return it->second;
        // A copy: add_value may move the values.
        const std::string name = g_.value(v).name + "/bf16";
        const ValueId b = g_.add_value(name, DType::BF16, g_.value(v).shape);
        Attributes a;
        a["to"] = Attribute::of_string(dtype_name(DType::BF16));
        g_.add_node(Op::Cast, {v}, {b}, std::move(a), name);
        casts_.emplace(v, b);
        return b;
    }

    Graph& g_;
    std::map<ValueId, ValueId> casts_;
    std::map<std::tuple<ValueId, std::vector<int64_t>, int64_t, bool>, ValueId> packs_;
};

} // namespace

PassResult convert_precision_bf16(Graph& g) {
    PassResult r = begin_pass("precision", g);
    Bf16Products products(g);
    int matmuls = 0, convs = 0;
    for (NodeId id : g.topological_order()) {
        if (!g.is_live(id))
            continue;
        const Op op = g.node(id).op;
        if (op == Op::MatMul || op == Op::Gemm)
            matmuls += products.convert_matmul(id) || products.convert_activation_product(id);
        else if (op == Op::ConvBlocked)
            convs += products.convert_conv(id);
    }
    r.changes = matmuls + convs;
    std::ostringstream os;
    os << matmuls << " matmuls and " << convs << " convs to bf16";
    return end_pass(r, g, os.str());
}

namespace {

/// Whether every reader of constant v (users: its readers) takes it as its weights (input 1
/// of a product).
bool read_as_weights_only(const Graph& g, ValueId v, const std::vector<NodeId>& users) {
    if (users.empty())
        return false;
    for (NodeId id : users) {
        const Node& n = g.node(id);
        const bool product =
            n.op == Op::MatMul || n.op == Op::Gemm || n.op == Op::Conv || n.op == Op::ConvBlocked;
        if (!product || n.input(1) != v)
            return false;
        for (size_t i = 0; i < n.inputs.size(); ++i)
            if (i != 1 && n.inputs[i] == v)
                return false;
    }
    return true;
}

/// The f32 values of t rounded to f16 (to nearest, ties to even), or nothing when one lies
/// beyond f16's range (65504).
std::optional<TensorData> rounded_to_f16(const TensorData& t) {
    TensorData out(DType::F32, t.shape());
    const float* src = t.data<float>();
    float* dst = out.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) {
        if (std::isfinite(src[i]) && std::fabs(src[i]) > 65504.0f)
            return std::nullopt;
        dst[i] = f16_bits_to_f32(f32_to_f16_bits(src[i]));
    }
    return out;
}

} // namespace

PassResult convert_precision_fp16(Graph& g, int64_t min_bytes) {
    PassResult r = begin_pass("precision", g);
    int stored = 0, kept = 0;
    const std::vector<std::vector<NodeId>> users = g.all_users();
    for (ValueId v = 0; v < static_cast<ValueId>(g.num_values()); ++v) {
        Value& val = g.value(v);
        if (!val.is_constant() || val.dtype != DType::F32 || val.stored_f16 ||
            val.constant->nbytes() < static_cast<size_t>(std::max<int64_t>(min_bytes, 0)) ||
            !read_as_weights_only(g, v, users[static_cast<size_t>(v)]))
            continue;
        std::optional<TensorData> f16 = rounded_to_f16(*val.constant);
        if (!f16) {
            ++kept;
            continue;
        }
        val.constant = std::make_shared<const TensorData>(std::move(*f16));
        val.stored_f16 = true;
        ++stored;
    }
    r.changes = stored;
    std::ostringstream os;
    os << stored << " weights stored in f16";
    if (kept > 0)
        os << ", " << kept << " kept f32 (values beyond f16's range)";
    return end_pass(r, g, os.str());
}

} // namespace tessera::graph
