// Recognizers of decomposed LayerNorm, GELU and Softmax subgraphs (as exported by frameworks
// that lack the fused op at the model's opset). Each rewrites only the last node of the
// pattern; the rest becomes dead unless something else reads it, so a match that shares an
// intermediate with other code stays correct.
#include <cmath>

#include "rewrite.h"

namespace tessera::graph::detail {

namespace {

// The last axis of v's rank when `axes` names exactly it.
bool is_last_axis(const std::vector<int64_t>& axes, int64_t rank) {
    return axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1);
}

int64_t rank_of(const Graph& g, ValueId v) { return static_cast<int64_t>(g.value(v).shape.size()); }

// ReduceMean(x) over the last axis with keepdims; returns x or kNoValue.
ValueId mean_last_axis(const Graph& g, ValueId v) {
    const Node* n = producer_op(g, v, Op::ReduceMean);
    if (!n || n->attr_int("keepdims", 1) != 1)
        return kNoValue;
    const ValueId x = n->input(0);
    return is_last_axis(n->attr_ints("axes"), rank_of(g, x)) ? x : kNoValue;
}

// The other operand of a commutative binary node `n` whose one operand is `known`.
ValueId other_operand(const Node& n, ValueId known) {
    if (n.inputs.size() != 2)
        return kNoValue;
    if (n.inputs[0] == known)
        return n.inputs[1];
    if (n.inputs[1] == known)
        return n.inputs[0];
    return kNoValue;
}

// A constant that is a vector along the last axis of length d (shape [d] or [1,..,1,d]).
bool is_last_axis_vector(const Graph& g, ValueId v, int64_t d) {
    if (v == kNoValue || !g.value(v).is_constant() || g.value(v).dtype != DType::F32)
        return false;
    const Shape& s = g.value(v).shape;
    if (s.empty() || s.back() != d)
        return false;
    return shape_numel(s) == d;
}

// The single node reading v (v not a graph output), or kNoNode.
NodeId sole_user(const Graph& g, ValueId v) {
    if (is_graph_output(g, v))
        return kNoNode;
    std::vector<NodeId> u = g.users(v);
    return u.size() == 1 ? u[0] : kNoNode;
}

bool near(double a, double b) { return std::fabs(a - b) <= 1e-4 * std::fabs(b); }

} // namespace

// Div(Sub(x, mean(x)), Sqrt(Add(mean(Pow(Sub(..), 2)), eps))) [* gamma] [+ beta].
bool recognize_layer_norm(Graph& g, NodeId id, std::string* what) {
    const Node& div = g.node(id);
    if (div.op != Op::Div)
        return false;
    const ValueId d = div.input(0);
    const Node* sub = producer_op(g, d, Op::Sub);
    if (!sub)
        return false;
    const ValueId x = sub->input(0);
    if (mean_last_axis(g, sub->input(1)) != x || g.value(x).dtype != DType::F32 ||
        g.value(x).shape.empty())
        return false;
    const Node* sqrt = producer_op(g, div.input(1), Op::Sqrt);
    const Node* add = sqrt ? producer_op(g, sqrt->input(0), Op::Add) : nullptr;
    if (!add)
        return false;
    double eps = 0;
    ValueId var = kNoValue;
    if (constant_scalar(g, add->input(1), &eps))
        var = add->input(0);
    else if (constant_scalar(g, add->input(0), &eps))
        var = add->input(1);
    const ValueId sq = var == kNoValue ? kNoValue : mean_last_axis(g, var);
    if (sq == kNoValue)
        return false;
    const Node* pow = producer_of(g, sq);
    double two = 0;
    const bool squared = pow && ((pow->op == Op::Pow && pow->input(0) == d &&
                                  constant_scalar(g, pow->input(1), &two) && two == 2) ||
                                 (pow->op == Op::Mul && pow->input(0) == d && pow->input(1) == d));
    if (!squared)
        return false;

    const Shape xs = g.value(x).shape;
    const int64_t dim = xs.back();
    NodeId last = id;
    ValueId cur = div.outputs[0];
    ValueId gamma = kNoValue, beta = kNoValue;
    NodeId u = sole_user(g, cur);
    if (u != kNoNode && g.node(u).op == Op::Mul) {
        const ValueId c = other_operand(g.node(u), cur);
        if (is_last_axis_vector(g, c, dim) && g.value(g.node(u).outputs[0]).shape == xs) {
            gamma = c;
            last = u;
            cur = g.node(u).outputs[0];
            u = sole_user(g, cur);
        }
    }
    if (u != kNoNode && g.node(u).op == Op::Add) {
        const ValueId c = other_operand(g.node(u), cur);
        if (is_last_axis_vector(g, c, dim) && g.value(g.node(u).outputs[0]).shape == xs) {
            beta = c;
            last = u;
        }
    }
    auto vec = [&](ValueId c, float fill, const char* suffix) {
        std::vector<float> v(static_cast<size_t>(dim), fill);
        if (c != kNoValue)
            v = g.value(c).constant->to_vector<float>();
        return g.add_constant(g.value(x).name + suffix, TensorData::from_vector<float>({dim}, v));
    };
    const ValueId scale = vec(gamma, 1.0f, "_ln_scale");
    const ValueId bias = vec(beta, 0.0f, "_ln_bias");
    replace_node(g, last, Op::LayerNormalization, {x, scale, bias},
                 {{"axis", Attribute::of_int(static_cast<int64_t>(xs.size()) - 1)},
                  {"epsilon", Attribute::of_float(static_cast<float>(eps))}});
    *what = "LayerNorm recognized";
    return true;
}

// Mul(Mul(x, Add(Erf(x / sqrt 2), 1)), 0.5) or Mul(Mul(x, 0.5), Add(Erf(..), 1)), any operand
// order; x / sqrt 2 may be x * (1 / sqrt 2).
bool recognize_gelu(Graph& g, NodeId id, std::string* what) {
    const Node& erf = g.node(id);
    if (erf.op != Op::Erf)
        return false;
    const Node* scaled = producer_of(g, erf.input(0));
    if (!scaled || scaled->inputs.size() != 2)
        return false;
    ValueId x = kNoValue;
    double c = 0;
    if (scaled->op == Op::Div && constant_scalar(g, scaled->input(1), &c) &&
        near(c, std::sqrt(2.0)))
        x = scaled->input(0);
    if (scaled->op == Op::Mul) {
        for (int side = 0; side < 2; ++side)
            if (constant_scalar(g, scaled->inputs[side], &c) && near(c, std::sqrt(0.5)))
                x = scaled->inputs[1 - side];
    }
    if (x == kNoValue || g.value(x).dtype != DType::F32)
        return false;
    const Shape xs = g.value(x).shape;
    // Add(erf, 1)
    const NodeId add = sole_user(g, erf.outputs[0]);
    if (add == kNoNode || g.node(add).op != Op::Add)
        return false;
    double one = 0;
    const ValueId oc = other_operand(g.node(add), erf.outputs[0]);
    if (!constant_scalar(g, oc, &one) || one != 1)
        return false;
    const ValueId sum = g.node(add).outputs[0];
    const NodeId m1 = sole_user(g, sum);
    if (m1 == kNoNode || g.node(m1).op != Op::Mul)
        return false;
    const ValueId other = other_operand(g.node(m1), sum);
    NodeId last = kNoNode;
    double half = 0;
    if (other == x) { // (x * (1 + erf)) * 0.5
        const ValueId p = g.node(m1).outputs[0];
        const NodeId m2 = sole_user(g, p);
        if (m2 != kNoNode && g.node(m2).op == Op::Mul &&
            constant_scalar(g, other_operand(g.node(m2), p), &half) && half == 0.5)
            last = m2;
    } else if (const Node* h = producer_op(g, other, Op::Mul)) { // (x * 0.5) * (1 + erf)
        if ((h->input(0) == x && constant_scalar(g, h->input(1), &half) && half == 0.5) ||
            (h->input(1) == x && constant_scalar(g, h->input(0), &half) && half == 0.5))
            last = m1;
    }
    if (last == kNoNode || g.value(g.node(last).outputs[0]).shape != xs)
        return false;
    replace_node(g, last, Op::Gelu, {x}, {});
    *what = "GELU recognized";
    return true;
}

// Div(Exp(x - ReduceMax(x, a)), ReduceSum(Exp(..), a)) (the max is optional) = Softmax(x, a).
bool recognize_softmax(Graph& g, NodeId id, std::string* what) {
    const Node& div = g.node(id);
    if (div.op != Op::Div)
        return false;
    const ValueId e = div.input(0);
    const Node* exp = producer_op(g, e, Op::Exp);
    const Node* sum = producer_op(g, div.input(1), Op::ReduceSum);
    if (!exp || !sum || sum->input(0) != e || sum->attr_int("keepdims", 1) != 1 ||
        sum->input(1) == kNoValue || !g.value(sum->input(1)).is_constant())
        return false;
    const std::vector<int64_t> axes = g.value(sum->input(1)).constant->as_i64();
    const ValueId t = exp->input(0);
    const int64_t rank = rank_of(g, t);
    if (axes.size() != 1 || axes[0] < -rank || axes[0] >= rank)
        return false;
    const int64_t axis = axes[0] < 0 ? axes[0] + rank : axes[0];
    ValueId x = t;
    if (const Node* sub = producer_op(g, t, Op::Sub)) {
        const Node* mx = producer_op(g, sub->input(1), Op::ReduceMax);
        if (mx && mx->input(0) == sub->input(0) && mx->attr_int("keepdims", 1) == 1) {
            const std::vector<int64_t> ma = mx->attr_ints("axes");
            if (ma.size() == 1 && (ma[0] == axis || ma[0] + rank == axis))
                x = sub->input(0);
        }
    }
    if (g.value(x).dtype != DType::F32 || g.value(x).shape != g.value(div.outputs[0]).shape)
        return false;
    replace_node(g, id, Op::Softmax, {x}, {{"axis", Attribute::of_int(axis)}});
    *what = "Softmax recognized";
    return true;
}

} // namespace tessera::graph::detail
