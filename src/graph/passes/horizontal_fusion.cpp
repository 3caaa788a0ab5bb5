// Horizontal fusion: independent matrix products of one input merged into one.
//
// Attention's Q, K and V projections (and any other fan-out of a value into several MatMuls by
// constant weights) read the same activations and run as separate tasks, each streaming them.
// Merged, one MatMul by the weights side by side ([K, N1 + N2 + ...]) reads them once and gives
// its task more columns to split across cores; a Slice per branch (injective: it fuses into the
// branch's consumers, such as the Reshape and Transpose of a head split) gives each branch its
// columns back. When every branch adds a constant bias along the last axis, the biases merge too.
//
// Convolutions the same way (fuse_convs_horizontally): an Inception block's 1x1 convolutions of
// one input become one convolution with the filters stacked along the output channels and a
// channel Slice per branch.
#include <algorithm>
#include <sstream>

#include "pass_util.h"
#include "tessera/graph/shape_inference.h"

namespace tessera::graph {

using namespace detail;

namespace {

// One MatMul of the fan-out, with its bias Add when it has one.
struct Branch {
    NodeId matmul = kNoNode;
    NodeId add = kNoNode;    // kNoNode when the branch has no bias
    ValueId bias = kNoValue; // the constant [N] (or [1, ..., N]) of `add`
    ValueId out = kNoValue;  // what the branch's consumers read
    const TensorData* weights = nullptr;
};

// The Add after MatMul `m` by a constant bias over the last axis, when it is the MatMul's only
// user.
NodeId bias_add(const Graph& g, const Node& m, const std::vector<std::vector<NodeId>>& users,
                ValueId* bias) {
    const ValueId y = m.outputs[0];
    if (users[y].size() != 1 || is_graph_output(g, y))
        return kNoNode;
    const Node& a = g.node(users[y][0]);
    if (a.op != Op::Add || a.inputs.size() != 2)
        return kNoNode;
    const ValueId other = a.inputs[0] == y ? a.inputs[1] : a.inputs[0];
    if (other == y || !g.value(other).is_constant())
        return kNoNode;
    const Shape& bs = g.value(other).shape;
    const int64_t n = g.value(y).shape.back();
    if (bs.empty() || bs.back() != n || shape_numel(bs) != n ||
        bs.size() > g.value(y).shape.size() || g.value(other).dtype != DType::F32)
        return kNoNode;
    if (g.value(a.outputs[0]).shape != g.value(y).shape)
        return kNoNode;
    *bias = other;
    return users[y][0];
}

// The columns of each tensor side by side: [K, N1] + [K, N2] -> [K, N1 + N2].
TensorData concat_columns(const std::vector<const TensorData*>& parts) {
    const int64_t rows = parts[0]->numel() / parts[0]->shape().back();
    int64_t cols = 0;
    for (const TensorData* p : parts)
        cols += p->shape().back();
    TensorData out(DType::F32, {rows, cols});
    float* po = out.data<float>();
    int64_t at = 0;
    for (const TensorData* p : parts) {
        const int64_t n = p->shape().back();
        const float* pp = p->data<float>();
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < n; ++c)
                po[r * cols + at + c] = pp[r * n + c];
        at += n;
    }
    return out;
}

// One Conv of a convolution fan-out, with its Relu when that is its only user.
struct ConvBranch {
    NodeId conv = kNoNode;
    NodeId relu = kNoNode;
    ValueId out = kNoValue; // what the branch's consumers read
    int64_t channels = 0;   // output channels
};

// The convs of x that may merge: group 1, constant f32 weights and (optional) bias, a result
// that is not a graph output, grouped by their attributes and filter shape (in first-read order).
std::vector<std::vector<ConvBranch>> conv_fan_out(const Graph& g, ValueId x,
                                                  const std::vector<std::vector<NodeId>>& users) {
    std::vector<std::vector<ConvBranch>> groups;
    std::vector<NodeId> firsts; // the first conv of each group, to compare against
    for (NodeId id : users[x]) {
        if (!g.is_live(id))
            continue;
        const Node& c = g.node(id);
        if (c.op != Op::Conv || c.inputs.empty() || c.inputs[0] != x || c.outputs.size() != 1 ||
            c.attr_int("group", 1) != 1)
            continue;
        const Value& w = g.value(c.input(1));
        const ValueId bias = c.input(2);
        if (!w.is_constant() || w.dtype != DType::F32 || w.shape.size() < 3 ||
            (bias != kNoValue &&
             (!g.value(bias).is_constant() || g.value(bias).dtype != DType::F32)))
            continue;
        ConvBranch b;
        b.conv = id;
        b.channels = w.shape[0];
        b.out = c.outputs[0];
        const std::vector<NodeId>& out_users = users[b.out];
        if (out_users.size() == 1 && !is_graph_output(g, b.out) &&
            g.node(out_users[0]).op == Op::Relu) {
            b.relu = out_users[0];
            b.out = g.node(b.relu).outputs[0];
        }
        if (is_graph_output(g, c.outputs[0]) || is_graph_output(g, b.out))
            continue; // the output keeps its name: leave the branch alone
        // Same attributes and the same filter shape but for its output channels.
        auto same_geometry = [&](NodeId other) {
            const Shape& o = g.value(g.node(other).inputs[1]).shape;
            return g.node(other).attrs == c.attrs &&
                   Shape(o.begin() + 1, o.end()) == Shape(w.shape.begin() + 1, w.shape.end());
        };
        size_t k = 0;
        while (k < firsts.size() && !same_geometry(firsts[k]))
            ++k;
        if (k == firsts.size()) {
            firsts.push_back(id);
            groups.emplace_back();
        }
        groups[k].push_back(b);
    }
    return groups;
}

// The branches that merge within the channel blocks: those whose channels fill whole blocks,
// then at most one that does not, last (its slice then ends the merged result).
std::vector<ConvBranch> mergeable(std::vector<ConvBranch> group, int64_t channel_block) {
    std::vector<ConvBranch> out, partial;
    for (const ConvBranch& b : group)
        (b.channels % channel_block == 0 ? out : partial).push_back(b);
    if (!partial.empty())
        out.push_back(partial.front());
    return out;
}

} // namespace

PassResult fuse_convs_horizontally(Graph& g, int64_t channel_block) {
    PassResult r = begin_pass("horizontal-conv-fusion", g);
    const std::vector<std::vector<NodeId>> users = g.all_users();
    int merged_nodes = 0;
    const ValueId values = static_cast<ValueId>(users.size());
    for (ValueId x = 0; x < values; ++x) {
        if (g.value(x).dtype != DType::F32)
            continue;
        for (const std::vector<ConvBranch>& group : conv_fan_out(g, x, users)) {
            const std::vector<ConvBranch> branches =
                mergeable(group, std::max<int64_t>(1, channel_block));
            if (branches.size() < 2)
                continue;
            // Relu merges when every branch has one; else each keeps its own, on its slice.
            bool all_relu = true, any_bias = false;
            for (const ConvBranch& b : branches) {
                all_relu = all_relu && b.relu != kNoNode;
                any_bias = any_bias || g.node(b.conv).input(2) != kNoValue;
            }
            // Filters [K_i, C, ...] stacked along K; biases too (zeros for a branch without).
            const Node first = g.node(branches[0].conv);
            const Shape filter = g.value(first.inputs[1]).shape;
            const int64_t per_channel = shape_numel(filter) / filter[0];
            int64_t channels = 0;
            for (const ConvBranch& b : branches)
                channels += b.channels;
            Shape stacked = filter;
            stacked[0] = channels;
            TensorData w(DType::F32, stacked), bias(DType::F32, {channels});
            int64_t at = 0;
            for (const ConvBranch& b : branches) {
                const Node& c = g.node(b.conv);
                const float* src = g.value(c.inputs[1]).constant->data<float>();
                std::copy(src, src + b.channels * per_channel, w.data<float>() + at * per_channel);
                float* bo = bias.data<float>() + at;
                if (c.input(2) != kNoValue) {
                    const float* bs = g.value(c.input(2)).constant->data<float>();
                    std::copy(bs, bs + b.channels, bo);
                } else {
                    std::fill(bo, bo + b.channels, 0.0f);
                }
                at += b.channels;
            }
            const std::string base = g.value(x).name + "/horizontal_conv";
            std::vector<ValueId> ins = {x, g.add_constant(base + "/weights", std::move(w))};
            if (any_bias)
                ins.push_back(g.add_constant(base + "/bias", std::move(bias)));
            ValueId full = g.add_value(base);
            g.add_node(Op::Conv, ins, {full}, first.attrs, base);
            if (all_relu) {
                const ValueId relu = g.add_value(base + "/relu");
                g.add_node(Op::Relu, {full}, {relu}, {}, base + "/relu");
                full = relu;
            }
            at = 0;
            for (const ConvBranch& b : branches) {
                const std::string name = g.value(b.out).name + "/channels";
                ValueId result = add_slice(g, full, {at}, {at + b.channels}, {1}, name);
                if (!all_relu && b.relu != kNoNode) { // the branch's own Relu, on its channels
                    const ValueId relu = g.add_value(g.value(b.out).name + "/relu");
                    g.add_node(Op::Relu, {result}, {relu}, {}, g.value(b.out).name);
                    result = relu;
                }
                g.replace_all_uses(b.out, result);
                g.remove_node(b.conv);
                if (b.relu != kNoNode)
                    g.remove_node(b.relu);
                at += b.channels;
            }
            merged_nodes += static_cast<int>(branches.size());
            ++r.changes;
        }
    }
    if (r.changes)
        infer_shapes(g);
    std::ostringstream s;
    s << "merged " << merged_nodes << " Convs into " << r.changes;
    return end_pass(r, g, s.str());
}

PassResult fuse_horizontally(Graph& g) {
    PassResult r = begin_pass("horizontal-fusion", g);
    const std::vector<std::vector<NodeId>> users = g.all_users();
    int merged_nodes = 0;
    // Values made by the rewrites come after these and need no visit.
    const ValueId values = static_cast<ValueId>(users.size());
    for (ValueId x = 0; x < values; ++x) {
        // The MatMuls reading x as A with constant f32 weights [K, N], K = x's last dim.
        std::vector<Branch> branches;
        for (NodeId id : users[x]) {
            if (!g.is_live(id))
                continue;
            const Node& m = g.node(id);
            if (m.op != Op::MatMul || m.inputs.size() != 2 || m.inputs[0] != x || m.inputs[1] == x)
                continue;
            const Value& w = g.value(m.inputs[1]);
            const Value& xv = g.value(x);
            if (!w.is_constant() || w.dtype != DType::F32 || w.shape.size() != 2 ||
                xv.shape.empty() || xv.dtype != DType::F32 || w.shape[0] != xv.shape.back())
                continue;
            if (is_graph_output(g, m.outputs[0]) && users[m.outputs[0]].empty())
                continue;
            Branch b;
            b.matmul = id;
            b.weights = w.constant.get();
            b.add = bias_add(g, m, users, &b.bias);
            b.out = b.add != kNoNode ? g.node(b.add).outputs[0] : m.outputs[0];
            if (is_graph_output(g, b.out))
                continue; // the output keeps its name: leave the branch alone
            branches.push_back(b);
        }
        if (branches.size() < 2)
            continue;
        // Biases merge only when every branch has one; otherwise the Adds stay on the slices.
        bool all_bias = true;
        for (const Branch& b : branches)
            all_bias = all_bias && b.add != kNoNode;
        std::vector<const TensorData*> ws, bs;
        for (const Branch& b : branches) {
            ws.push_back(b.weights);
            if (all_bias)
                bs.push_back(g.value(b.bias).constant.get());
        }
        const std::string base = g.value(x).name + "/horizontal";
        const ValueId w = g.add_constant(base + "/weights", concat_columns(ws));
        const ValueId y = g.add_value(base + "/matmul");
        g.add_node(Op::MatMul, {x, w}, {y}, {}, base);
        ValueId full = y;
        if (all_bias) {
            TensorData b = concat_columns(bs);
            const int64_t cols = b.numel();
            const ValueId bias = g.add_constant(base + "/bias", b.reshaped({cols}));
            full = g.add_value(base + "/add");
            g.add_node(Op::Add, {y, bias}, {full}, {}, base + "/bias");
        }
        int64_t at = 0;
        for (const Branch& b : branches) {
            const int64_t n = b.weights->shape().back();
            const std::string name = g.value(b.out).name + "/columns";
            const ValueId part_out = add_slice(g, full, {at}, {at + n}, {-1}, name);
            ValueId result = part_out;
            if (!all_bias && b.add != kNoNode) {
                // The branch's own Add stays, now on its columns.
                result = g.add_value(g.value(b.out).name + "/biased");
                g.add_node(Op::Add, {part_out, b.bias}, {result}, {}, g.value(b.out).name);
            }
            g.replace_all_uses(b.out, result);
            g.remove_node(b.matmul);
            if (b.add != kNoNode)
                g.remove_node(b.add);
            at += n;
        }
        merged_nodes += static_cast<int>(branches.size());
        ++r.changes;
    }
    if (r.changes)
        infer_shapes(g);
    std::ostringstream s;
    s << "merged " << merged_nodes << " MatMuls into " << r.changes;
    return end_pass(r, g, s.str());
}

} // namespace tessera::graph
