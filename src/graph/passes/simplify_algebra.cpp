// Algebraic simplification: local rewrites to a fixpoint (identities, transpose and reshape
// chains, BatchNorm folding, MatMul+Add into Gemm, small powers, zero pads into average pools) and
// the recognizers of decomposed LayerNorm, GELU and Softmax (recognize_patterns.cpp).
#include <cmath>
#include <map>
#include <sstream>

#include "rewrite.h"
#include "tessera/graph/shape_inference.h"

namespace tessera::graph {

using namespace detail;

namespace {

bool is_reshape_like(Op op) {
    return op == Op::Reshape || op == Op::Flatten || op == Op::Squeeze || op == Op::Unsqueeze;
}

ValueId shape_constant(Graph& g, const std::string& name, const Shape& s) {
    return g.add_constant(name, TensorData::from_vector<int64_t>({static_cast<int64_t>(s.size())},
                                                                 std::vector<int64_t>(s)));
}

// x op c == x when c is the splat `neutral` and does not broadcast x to a larger shape.
bool try_identity_operand(Graph& g, NodeId id, std::string* what) {
    const Node& n = g.node(id);
    if (n.inputs.size() != 2)
        return false;
    const ValueId a = n.inputs[0], b = n.inputs[1];
    const Op op = n.op;
    auto fwd = [&](ValueId c, double neutral, ValueId x, const char* name) {
        if (!is_constant_splat(g, c, neutral) || !forward_output(g, id, x))
            return false;
        *what = name;
        return true;
    };
    if (op == Op::Add)
        return fwd(b, 0, a, "x+0") || fwd(a, 0, b, "0+x");
    if (op == Op::Sub)
        return fwd(b, 0, a, "x-0");
    if (op == Op::Mul)
        return fwd(b, 1, a, "x*1") || fwd(a, 1, b, "1*x");
    if (op == Op::Div)
        return fwd(b, 1, a, "x/1");
    if (op == Op::Pow)
        return fwd(b, 1, a, "x^1");
    return false;
}

// Ops that compute their input unchanged: Identity, Dropout (inference), Cast to the same
// dtype, shape ops to the same shape, Pad by zeros, the identity Transpose.
bool try_noop(Graph& g, NodeId id, std::string* what) {
    const Node& n = g.node(id);
    const ValueId x = n.input(0);
    const Op op = n.op;
    bool noop = op == Op::Identity || op == Op::Dropout || op == Op::Cast || op == Op::Expand ||
                is_reshape_like(op);
    if (op == Op::Pad)
        noop = is_constant_splat(g, n.input(1), 0);
    if (op == Op::Transpose) {
        const std::vector<int64_t> perm = n.attr_ints("perm");
        noop = true;
        for (size_t i = 0; i < perm.size(); ++i)
            noop = noop && perm[i] == static_cast<int64_t>(i);
    }
    if (!noop || !forward_output(g, id, x))
        return false;
    *what =
        op == Op::Identity || op == Op::Dropout ? op_name(op) : std::string("no-op ") + op_name(op);
    return true;
}

// Transpose(Transpose(x, p1), p2) = Transpose(x, p1[p2[i]]).
bool try_transpose_pair(Graph& g, NodeId id, std::string* what) {
    const Node& n = g.node(id);
    if (n.op != Op::Transpose)
        return false;
    const Node* inner = producer_op(g, n.input(0), Op::Transpose);
    if (!inner)
        return false;
    const std::vector<int64_t> p1 = inner->attr_ints("perm"), p2 = n.attr_ints("perm");
    if (p1.size() != p2.size())
        return false;
    std::vector<int64_t> perm(p2.size());
    for (size_t i = 0; i < p2.size(); ++i)
        perm[i] = p1.at(static_cast<size_t>(p2[i]));
    const ValueId x = inner->input(0);
    Attributes attrs = n.attrs;
    attrs["perm"] = Attribute::of_ints(perm);
    replace_node(g, id, Op::Transpose, {x}, attrs);
    *what = "Transpose pair";
    return true;
}

// A reshape-like op of a reshape-like op: one Reshape to the final shape.
bool try_reshape_chain(Graph& g, NodeId id, std::string* what) {
    const Node& n = g.node(id);
    if (!is_reshape_like(n.op))
        return false;
    const Node* inner = producer_of(g, n.input(0));
    if (!inner || !is_reshape_like(inner->op) || !g.value(n.outputs[0]).typed)
        return false;
    const ValueId x = inner->input(0);
    const Shape out = g.value(n.outputs[0]).shape;
    bool zero = false;
    for (int64_t d : out)
        zero = zero || d == 0;
    const ValueId shape = shape_constant(g, g.value(n.outputs[0]).name + "_shape", out);
    replace_node(g, id, Op::Reshape, {x, shape}, {{"allowzero", Attribute::of_int(zero ? 1 : 0)}});
    *what = "reshape chain";
    return true;
}

// Per-channel BN scale s = gamma / sqrt(var + eps) and shift t = beta - mean * s (double).
bool bn_affine(const Graph& g, const Node& bn, std::vector<double>* s, std::vector<double>* t) {
    for (size_t i = 1; i < 5; ++i)
        if (!g.value(bn.input(i)).is_constant() ||
            g.value(bn.input(i)).constant->dtype() != DType::F32)
            return false;
    const double eps = bn.attr_float("epsilon", 1e-5f);
    std::vector<double> gamma = g.value(bn.input(1)).constant->as_f64();
    std::vector<double> beta = g.value(bn.input(2)).constant->as_f64();
    std::vector<double> mean = g.value(bn.input(3)).constant->as_f64();
    std::vector<double> var = g.value(bn.input(4)).constant->as_f64();
    if (beta.size() != gamma.size() || mean.size() != gamma.size() || var.size() != gamma.size())
        return false;
    s->resize(gamma.size());
    t->resize(gamma.size());
    for (size_t c = 0; c < gamma.size(); ++c) {
        (*s)[c] = gamma[c] / std::sqrt(var[c] + eps);
        (*t)[c] = beta[c] - mean[c] * (*s)[c];
    }
    return true;
}

std::vector<float> to_f32(const std::vector<double>& v) {
    return std::vector<float>(v.begin(), v.end());
}

bool try_fold_batch_norm(Graph& g, NodeId id, std::string* what) {
    const Node& bn = g.node(id);
    if (bn.op != Op::BatchNormalization)
        return false;
    std::vector<double> s, t;
    if (!bn_affine(g, bn, &s, &t))
        return false;
    const ValueId x = bn.input(0);
    const Value xv = g.value(x); // a copy: add_constant below may move the values
    if (!xv.typed || xv.dtype != DType::F32 || xv.shape.size() < 2)
        return false;
    const int64_t channels = static_cast<int64_t>(s.size());
    const Node* prod = producer_of(g, x);
    const bool single_use = use_count(g, x) == 1;
    if (prod && single_use && prod->op == Op::Conv && g.value(prod->input(1)).is_constant() &&
        (prod->input(2) == kNoValue || g.value(prod->input(2)).is_constant())) {
        const TensorData& w = *g.value(prod->input(1)).constant;
        if (w.dtype() == DType::F32 && w.shape().at(0) == channels) {
            TensorData nw = w;
            float* pw = nw.data<float>();
            const int64_t per = w.numel() / channels;
            for (int64_t c = 0; c < channels; ++c)
                for (int64_t k = 0; k < per; ++k)
                    pw[c * per + k] = static_cast<float>(pw[c * per + k] * s[c]);
            std::vector<double> b(channels, 0.0);
            if (prod->input(2) != kNoValue)
                b = g.value(prod->input(2)).constant->as_f64();
            std::vector<float> nb(channels);
            for (int64_t c = 0; c < channels; ++c)
                nb[c] = static_cast<float>(b[c] * s[c] + t[c]);
            const NodeId conv_id = xv.producer;
            const Node conv = *prod;
            const ValueId out = bn.outputs[0];
            const ValueId wc = g.add_constant(g.value(conv.inputs[1]).name + "_bn", std::move(nw));
            const ValueId bc = g.add_constant(g.value(out).name + "_bias",
                                              TensorData::from_vector<float>({channels}, nb));
            g.remove_node(id);
            g.remove_node(conv_id);
            g.add_node(Op::Conv, {conv.inputs[0], wc, bc}, {out}, conv.attrs, conv.name);
            *what = "BatchNormalization into Conv";
            return true;
        }
    }
    if (prod && single_use && prod->op == Op::Gemm && xv.shape.size() == 2 &&
        g.value(prod->input(1)).is_constant() &&
        g.value(prod->input(1)).constant->dtype() == DType::F32) {
        const Node gemm = *prod;
        const ValueId cin = gemm.input(2);
        bool c_ok = cin == kNoValue;
        if (!c_ok && g.value(cin).is_constant() && g.value(cin).constant->dtype() == DType::F32) {
            const Shape& cs = g.value(cin).shape;
            c_ok = (cs == Shape{channels} || cs == Shape{1, channels});
        }
        if (c_ok) {
            const bool trans_b = gemm.attr_int("transB", 0) != 0;
            TensorData nbm = *g.value(gemm.inputs[1]).constant; // [K,N] or [N,K] when transB
            float* pb = nbm.data<float>();
            const int64_t rows = nbm.shape().at(0), cols = nbm.shape().at(1);
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t c = 0; c < cols; ++c)
                    pb[r * cols + c] = static_cast<float>(pb[r * cols + c] * s[trans_b ? r : c]);
            const double beta = gemm.attr_float("beta", 1.0f);
            std::vector<double> cv(channels, 0.0);
            if (cin != kNoValue)
                cv = g.value(cin).constant->as_f64();
            std::vector<float> nc(channels);
            for (int64_t c = 0; c < channels; ++c)
                nc[c] = static_cast<float>(beta * cv[c] * s[c] + t[c]);
            const NodeId gemm_id = xv.producer;
            const ValueId out = bn.outputs[0];
            const ValueId bc = g.add_constant(g.value(gemm.inputs[1]).name + "_bn", std::move(nbm));
            const ValueId cc = g.add_constant(g.value(out).name + "_bias",
                                              TensorData::from_vector<float>({channels}, nc));
            Attributes attrs = gemm.attrs;
            attrs["beta"] = Attribute::of_float(1.0f);
            g.remove_node(id);
            g.remove_node(gemm_id);
            g.add_node(Op::Gemm, {gemm.inputs[0], bc, cc}, {out}, attrs, gemm.name);
            *what = "BatchNormalization into Gemm";
            return true;
        }
    }
    // A lone BN: x * s + t with s, t shaped [C, 1, ..., 1] to broadcast over the channel dim.
    Shape cshape(xv.shape.size() - 1, 1);
    cshape[0] = channels;
    const ValueId out = bn.outputs[0];
    const std::string base = g.value(out).name;
    const ValueId sc =
        g.add_constant(base + "_scale", TensorData::from_vector<float>(cshape, to_f32(s)));
    const ValueId tc =
        g.add_constant(base + "_shift", TensorData::from_vector<float>(cshape, to_f32(t)));
    const ValueId mid = g.add_value(base + "_scaled", DType::F32, xv.shape);
    const std::string name = bn.name;
    replace_node(g, id, Op::Add, {mid, tc}, {});
    g.add_node(Op::Mul, {x, sc}, {mid}, {}, name + "_scale");
    *what = "BatchNormalization into Mul+Add";
    return true;
}

// Add(MatMul(A[M,K], B[K,N]), bias[N] or [1,N]) = Gemm(A, B, bias).
bool try_matmul_add(Graph& g, NodeId id, std::string* what) {
    const Node& add = g.node(id);
    if (add.op != Op::Add || add.inputs.size() != 2)
        return false;
    for (int side = 0; side < 2; ++side) {
        const ValueId mm_out = add.inputs[side], bias = add.inputs[1 - side];
        const Node* mm = producer_op(g, mm_out, Op::MatMul);
        if (!mm || use_count(g, mm_out) != 1)
            continue;
        const Value& a = g.value(mm->input(0));
        const Value& b = g.value(mm->input(1));
        const Value& bv = g.value(bias);
        const Value& o = g.value(add.outputs[0]);
        if (!a.typed || !b.typed || !bv.typed || !o.typed || a.shape.size() != 2 ||
            b.shape.size() != 2 || a.dtype != DType::F32 || bv.dtype != DType::F32)
            continue;
        const int64_t n = b.shape[1];
        if (!(bv.shape == Shape{n} || bv.shape == Shape{1, n}) || o.shape != g.value(mm_out).shape)
            continue;
        const ValueId av = mm->input(0), bw = mm->input(1);
        replace_node(g, id, Op::Gemm, {av, bw, bias},
                     {{"alpha", Attribute::of_float(1.0f)},
                      {"beta", Attribute::of_float(1.0f)},
                      {"transA", Attribute::of_int(0)},
                      {"transB", Attribute::of_int(0)}});
        *what = "MatMul+Add into Gemm";
        return true;
    }
    return false;
}

// Pow(x, 2) -> Mul(x, x) and Pow(x, 3) -> Mul(Mul(x, x), x) for f32 x and a splat exponent
// of x's shape or a broadcast one that does not widen x: multiplies instead of a libm call per
// element, lane by lane (a normalization's variance that is not recognized as a whole, e.g.
// between the QuantizeLinear/DequantizeLinear pairs of a QDQ model; the tanh form of GELU in
// T5's feed-forward blocks, whose x^3 took 80% of its kernel). The square is the correctly
// rounded one; the cube rounds twice (within 1.5 ulp of pow's).
bool try_small_power(Graph& g, NodeId id, std::string* what) {
    const Node& n = g.node(id);
    if (n.op != Op::Pow || n.inputs.size() != 2 || n.outputs.size() != 1)
        return false;
    const Value& x = g.value(n.inputs[0]);
    const Value& out = g.value(n.outputs[0]);
    if (!x.typed || !out.typed || x.dtype != DType::F32 || x.shape != out.shape)
        return false;
    const ValueId xv = n.inputs[0];
    if (is_constant_splat(g, n.inputs[1], 2.0)) {
        replace_node(g, id, Op::Mul, {xv, xv}, {});
        *what = "x^2 into x*x";
        return true;
    }
    if (!is_constant_splat(g, n.inputs[1], 3.0))
        return false;
    const ValueId square = g.add_value(out.name + "_square");
    g.add_node(Op::Mul, {xv, xv}, {square}, {}, n.name + "_square");
    replace_node(g, id, Op::Mul, {square, xv}, {});
    *what = "x^3 into x*x*x";
    return true;
}

// AveragePool(Pad(x, zeros around the rows and columns)) without pads of its own -> an
// AveragePool of x with those pads and count_include_pad 1 (its windows count the padding, as
// they counted the padded copy's zeros): exporters write PyTorch's avg_pool2d(padding=1) so
// (Inception v3's branch pools), and the Pad was a pass over memory of its own that also kept
// the pool from the blocked layout.
bool try_pad_into_average_pool(Graph& g, NodeId id, std::string* what) {
    const Node& n = g.node(id);
    if (n.op != Op::AveragePool || n.inputs.size() != 1 || n.outputs.size() != 1 ||
        n.attr_int("ceil_mode", 0) != 0 || n.attr_string("auto_pad", "NOTSET") != "NOTSET")
        return false;
    for (int64_t p : n.attr_ints("pads", {}))
        if (p != 0)
            return false;
    for (int64_t d : n.attr_ints("dilations", {}))
        if (d != 1)
            return false;
    const Node* pad = producer_op(g, n.inputs[0], Op::Pad);
    if (!pad || use_count(g, n.inputs[0]) != 1 || is_graph_output(g, n.inputs[0]) ||
        pad->attr_string("mode", "constant") != "constant" || pad->inputs.size() < 2 ||
        pad->input(3) != kNoValue || !g.value(pad->inputs[1]).is_constant() ||
        (pad->input(2) != kNoValue && !is_constant_splat(g, pad->input(2), 0)))
        return false;
    const Value& x = g.value(pad->inputs[0]);
    const std::vector<int64_t> kernel = n.attr_ints("kernel_shape", {});
    const std::vector<int64_t> p = g.value(pad->inputs[1]).constant->as_i64();
    if (!x.typed || x.shape.size() != 4 || kernel.size() != 2 || p.size() != 8 || p[0] != 0 ||
        p[1] != 0 || p[4] != 0 || p[5] != 0)
        return false;
    const std::vector<int64_t> pads = {p[2], p[3], p[6], p[7]};
    for (size_t i = 0; i < pads.size(); ++i)
        if (pads[i] < 0 || pads[i] >= kernel[i % 2])
            return false;
    Attributes attrs = n.attrs;
    attrs["pads"] = Attribute::of_ints(pads);
    attrs["count_include_pad"] = Attribute::of_int(1);
    replace_node(g, id, Op::AveragePool, {pad->inputs[0]}, std::move(attrs));
    *what = "Pad into AveragePool";
    return true;
}

bool rewrite_one(Graph& g, NodeId id, std::string* what) {
    return try_noop(g, id, what) || try_identity_operand(g, id, what) ||
           try_transpose_pair(g, id, what) || try_reshape_chain(g, id, what) ||
           try_fold_batch_norm(g, id, what) || recognize_layer_norm(g, id, what) ||
           recognize_gelu(g, id, what) || recognize_softmax(g, id, what) ||
           try_matmul_add(g, id, what) || try_small_power(g, id, what) ||
           try_pad_into_average_pool(g, id, what);
}

} // namespace

PassResult simplify_algebra(Graph& g) {
    PassResult r = begin_pass("algebraic-simplification", g);
    std::map<std::string, int> counts;
    for (int round = 0; round < 16; ++round) {
        int changed = 0;
        for (NodeId id : g.topological_order()) {
            if (!g.is_live(id))
                continue;
            std::string what;
            if (rewrite_one(g, id, &what)) {
                ++changed;
                ++counts[what];
            }
        }
        if (changed == 0)
            break;
        r.changes += changed;
        g.remove_dead_nodes(); // so single-use checks see the rewritten graph
        infer_shapes(g);
    }
    std::ostringstream s;
    s << r.changes << " rewrites";
    const char* sep = ": ";
    for (const auto& [what, count] : counts) {
        s << sep << what << " x" << count;
        sep = ", ";
    }
    return end_pass(r, g, s.str());
}

} // namespace tessera::graph
