// Fusion partitioning (see fusion.h for the rules).
#include "tessera/graph/fusion.h"

#include <algorithm>
#include <cctype>
#include <queue>
#include <utility>

#include "../op_util.h"
#include "../ops/op_def.h"
#include "pass_util.h"
#include "tessera/support/error.h"

namespace tessera::graph {

const char* op_pattern_name(OpPattern p) {
    switch (p) {
    case OpPattern::Elementwise:
        return "elementwise";
    case OpPattern::Broadcast:
        return "broadcast";
    case OpPattern::Injective:
        return "injective";
    case OpPattern::Reduction:
        return "reduction";
    case OpPattern::OutFusable:
        return "out-fusable";
    case OpPattern::Opaque:
        return "opaque";
    }
    return "?";
}

namespace {

bool fusable_elementwise(OpPattern p) {
    return p == OpPattern::Elementwise || p == OpPattern::Broadcast;
}
bool fusable_injective(OpPattern p) { return fusable_elementwise(p) || p == OpPattern::Injective; }

} // namespace

OpPattern node_pattern(const Graph& g, NodeId id) {
    const Node& n = g.node(id);
    // Nodes with several used outputs would need a kernel with several results; keep them
    // alone (Dropout's mask and LayerNorm's statistics are the usual absent extras).
    int outs = 0;
    for (ValueId v : n.outputs)
        outs += v != kNoValue;
    switch (detail::op_def(n.op).fusion) {
    case detail::FusionKind::OutFusable:
        return outs == 1 ? OpPattern::OutFusable : OpPattern::Opaque;
    case detail::FusionKind::Injective:
        return outs == 1 ? OpPattern::Injective : OpPattern::Opaque;
    case detail::FusionKind::Reduction:
        return outs == 1 ? OpPattern::Reduction : OpPattern::Opaque;
    case detail::FusionKind::Opaque:
        return OpPattern::Opaque;
    case detail::FusionKind::Broadcast:
        return outs == 1 ? OpPattern::Broadcast : OpPattern::Opaque;
    case detail::FusionKind::Elementwise: {
        if (outs != 1)
            return OpPattern::Opaque;
        const Value& out = g.value(n.outputs[0]);
        if (!out.typed)
            return OpPattern::Broadcast;
        // Static operands (Clip's bounds) are scalar parameters, not broadcast tensors.
        const size_t data_inputs =
            std::min(n.inputs.size(), detail::op_def(n.op).static_operands_from);
        for (size_t i = 0; i < data_inputs; ++i) {
            ValueId v = n.inputs[i];
            if (v == kNoValue)
                continue;
            if (!g.value(v).typed || g.value(v).shape != out.shape)
                return OpPattern::Broadcast;
        }
        return OpPattern::Elementwise;
    }
    }
    return OpPattern::Opaque;
}

std::string fused_op_name(Op op) {
    const std::string& name = detail::op_def(op).kernel_name;
    if (!name.empty())
        return name;
    // Every other op: its name in lower case ("Relu" -> "relu").
    std::string s = op_name(op);
    for (char& c : s)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

namespace {

struct Builder {
    const Graph& g;
    std::vector<NodeId> topo;
    std::vector<int> topo_pos;  // by node id
    std::vector<int> group_of;  // by node id; -1 before assignment
    std::vector<OpPattern> pat; // by node id
    std::vector<std::vector<NodeId>> users;
    struct G {
        std::vector<NodeId> nodes;
        NodeId anchor = kNoNode;
        bool closed = false; // ends in a reduction or is opaque
        /// The reduction that closed the group, when its output has its first input's shape
        /// (Softmax, LayerNorm: a normalization, whose last stage is elementwise), else
        /// kNoNode. Such a group still takes an elementwise epilogue over that shape.
        NodeId normalization = kNoNode;
        bool alive = true;
    };
    std::vector<G> groups;

    explicit Builder(const Graph& graph) : g(graph) {
        topo = g.topological_order();
        topo_pos.assign(g.node_capacity(), -1);
        group_of.assign(g.node_capacity(), -1);
        pat.assign(g.node_capacity(), OpPattern::Opaque);
        for (size_t i = 0; i < topo.size(); ++i) {
            topo_pos[topo[i]] = static_cast<int>(i);
            pat[topo[i]] = node_pattern(g, topo[i]);
        }
        users = g.all_users();
    }

    bool is_graph_output(ValueId v) const {
        return std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
    }

    /// Groups (other than `self`) whose outputs group `gi` reads.
    std::vector<int> group_preds(int gi) const {
        std::vector<int> preds;
        for (NodeId n : groups[gi].nodes)
            for (ValueId v : g.node(n).inputs) {
                if (v == kNoValue)
                    continue;
                NodeId p = g.value(v).producer;
                if (p == kNoNode || group_of[p] == gi || group_of[p] < 0)
                    continue;
                preds.push_back(group_of[p]);
            }
        return preds;
    }

    /// True when group `from` (transitively) reads an output of group `target`.
    bool depends_on(int from, int target) const {
        std::vector<uint8_t> seen(groups.size(), 0);
        std::vector<int> stack{from};
        while (!stack.empty()) {
            int x = stack.back();
            stack.pop_back();
            if (x == target)
                return true;
            if (seen[x])
                continue;
            seen[x] = 1;
            for (int p : group_preds(x))
                stack.push_back(p);
        }
        return false;
    }

    /// Whether node n is elementwise over the output shape of anchor group grp's anchor: what
    /// the anchor's epilogue can compute, element by element.
    bool epilogue_node(NodeId n, const G& grp) const {
        if (!fusable_elementwise(pat[n]))
            return false;
        const Value& out = g.value(g.node(n).outputs[0]);
        const Value& a = g.value(g.node(grp.anchor).outputs[0]);
        return out.typed && a.typed && out.shape == a.shape;
    }

    /// Whether node n is elementwise over the output shape of a normalization that closed
    /// grp (a Softmax's or LayerNorm's bf16 cast), computed as that output is stored.
    bool normalization_epilogue_node(NodeId n, const G& grp) const {
        if (grp.normalization == kNoNode || !fusable_elementwise(pat[n]))
            return false;
        const Value& out = g.value(g.node(n).outputs[0]);
        const Value& r = g.value(g.node(grp.normalization).outputs[0]);
        return out.typed && r.typed && out.shape == r.shape;
    }

    /// Whether the reduction node n keeps its first input's shape (a normalization).
    bool is_normalization(NodeId n) const {
        const Node& node = g.node(n);
        if (pat[n] != OpPattern::Reduction || node.inputs.empty() || node.inputs[0] == kNoValue)
            return false;
        const Value& in = g.value(node.inputs[0]);
        const Value& out = g.value(node.outputs[0]);
        return in.typed && out.typed && in.shape == out.shape;
    }

    /// Whether link's readers form one elementwise diamond that ends in a single node: each
    /// reader is elementwise with one output, reads only link and the other readers' results,
    /// and all but one of them are read by the others alone (SiLU, x * sigmoid(x), after each
    /// conv of EfficientNet). Joining one reader then brings the others into the group too,
    /// and link stays inside it.
    bool diamond_readers(ValueId link) const {
        const std::vector<NodeId>& readers = users[link];
        auto is_reader = [&](NodeId q) {
            return std::find(readers.begin(), readers.end(), q) != readers.end();
        };
        int sinks = 0;
        for (NodeId u : readers) {
            const Node& node = g.node(u);
            if (!fusable_elementwise(pat[u]) || node.outputs.size() != 1)
                return false;
            for (ValueId v : node.inputs)
                if (v != link && (v == kNoValue || !is_reader(g.value(v).producer)))
                    return false;
            const ValueId out = node.outputs[0];
            bool inner = !is_graph_output(out) && !users[out].empty();
            for (NodeId r : users[out])
                inner = inner && is_reader(r);
            sinks += inner ? 0 : 1;
        }
        return sinks == 1;
    }

    /// Whether n dequantizes bytes (`link`, u8 or i8) for a reader that also reads a value
    /// computed after them: that reader cannot join link's group, so n's f32 output would
    /// leave it, four times the bytes. Left to a group of its own, n joins the reader's
    /// epilogue (absorb_epilogue_operands) and the bytes cross between the kernels instead.
    bool widens_bytes_for_a_later_reader(NodeId n, ValueId link) const {
        const Node& node = g.node(n);
        const DType t = g.value(link).dtype;
        if (node.op != Op::DequantizeLinear || node.outputs.size() != 1 ||
            (t != DType::U8 && t != DType::I8))
            return false;
        auto position = [&](ValueId v) {
            const NodeId p = g.value(v).producer;
            return p == kNoNode ? -1 : topo_pos[p];
        };
        return detail::read_beside_a_later_value(g, users[node.outputs[0]], node.outputs[0],
                                                 position(link), position);
    }

    /// Whether node n may join group gi, which produces n's input `link`.
    bool can_join(NodeId n, int gi, ValueId link) const {
        const G& grp = groups[gi];
        if (grp.closed && grp.normalization == kNoNode)
            return false;
        const NodeId prod = g.value(link).producer;
        // Several readers only for an anchor's (a conv's, a matmul's) epilogue.
        const bool anchor_epilogue = !grp.closed && grp.anchor != kNoNode;
        if (g.node(prod).outputs.size() != 1 || is_graph_output(link) ||
            (users[link].size() != 1 && !(anchor_epilogue && diamond_readers(link))))
            return false;
        if (widens_bytes_for_a_later_reader(n, link))
            return false;
        const OpPattern p = pat[n];
        if (grp.closed) {
            // Only an elementwise epilogue over the normalization's output.
            if (!normalization_epilogue_node(n, grp))
                return false;
        } else if (grp.anchor != kNoNode) {
            // Only an elementwise epilogue over the anchor's iteration space.
            if (!epilogue_node(n, grp))
                return false;
        } else if (!(fusable_injective(p) || p == OpPattern::Reduction)) {
            return false;
        }
        // n's other inputs must not come from groups that depend on gi (that would be a cycle).
        for (ValueId v : g.node(n).inputs) {
            if (v == kNoValue)
                continue;
            NodeId q = g.value(v).producer;
            if (q == kNoNode || group_of[q] == gi)
                continue;
            if (depends_on(group_of[q], gi))
                return false;
        }
        return true;
    }

    /// The group an anchor (a conv) takes over as its prologue, or -1: the group of its first
    /// input when that group is one LayoutToBlocked or Slice node read only by this anchor (the
    /// image's conversion into a conv that reads its channels as one block; a branch's
    /// channels of a horizontally merged conv). Inside the conv's kernel it inlines into the
    /// conv's padding stage: one pass over the data instead of two, and one kernel less.
    int prologue(NodeId n) const {
        const ValueId link = g.node(n).input(0);
        if (link == kNoValue)
            return -1;
        const NodeId q = g.value(link).producer;
        if (q == kNoNode || group_of[q] < 0)
            return -1;
        const int gi = group_of[q];
        const G& grp = groups[gi];
        if (grp.closed || grp.anchor != kNoNode || users[link].size() != 1 ||
            is_graph_output(link) || g.node(q).outputs.size() != 1)
            return -1;
        for (NodeId m : grp.nodes)
            if ((g.node(m).op != Op::LayoutToBlocked && g.node(m).op != Op::Slice) || m != q)
                return -1;
        return gi;
    }

    void run() {
        for (NodeId n : topo) {
            const OpPattern p = pat[n];
            int joined = -1;
            if (p == OpPattern::OutFusable) {
                joined = prologue(n);
                if (joined >= 0)
                    groups[joined].anchor = n;
            } else if (p != OpPattern::Opaque) {
                for (ValueId v : g.node(n).inputs) {
                    if (v == kNoValue)
                        continue;
                    NodeId q = g.value(v).producer;
                    if (q == kNoNode)
                        continue;
                    if (can_join(n, group_of[q], v)) {
                        joined = group_of[q];
                        break;
                    }
                }
            }
            if (joined < 0) {
                joined = static_cast<int>(groups.size());
                groups.emplace_back();
                if (p == OpPattern::OutFusable)
                    groups.back().anchor = n;
            }
            groups[joined].nodes.push_back(n);
            group_of[n] = joined;
            if (p == OpPattern::Reduction || p == OpPattern::Opaque) {
                groups[joined].closed = true;
                groups[joined].normalization = is_normalization(n) ? n : kNoNode;
            }
        }
    }

    /// Merges into an anchor group each open group of elementwise nodes over the anchor's
    /// output shape whose values are read only by that group's epilogue (not by its anchor):
    /// the residual of an int8 conv, dequantized by a group of its own, is then read by the
    /// conv's epilogue as u8 and dequantized there, instead of being written as f32 by one
    /// kernel and read back by the next. A merge that would make the groups cyclic is refused.
    void absorb_epilogue_operands() {
        for (int si = 0; si < static_cast<int>(groups.size()); ++si)
            if (const int into = epilogue_reader(si); into >= 0)
                merge_into(si, into);
    }

    /// Merges into an open group without an anchor each open group of injective and
    /// elementwise nodes whose results only that group reads: the greedy pass joins a node to
    /// the group of one input, so a Concat of two such chains (the two operands of a blocked
    /// channel shuffle, each a view of a branch's sub-blocks) left all but one chain as
    /// kernels of their own, each writing what the next kernel reads once. Merges that would
    /// make the groups cyclic are refused.
    void merge_injective_operands() {
        for (int si = static_cast<int>(groups.size()); si-- > 0;)
            if (const int into = injective_reader(si); into >= 0)
                merge_into(si, into);
    }

    /// Moves group si's nodes into group `into` (kept in topological order); si dies.
    void merge_into(int si, int into) {
        G& target = groups[static_cast<size_t>(into)];
        for (NodeId n : groups[static_cast<size_t>(si)].nodes) {
            target.nodes.push_back(n);
            group_of[n] = into;
        }
        std::sort(target.nodes.begin(), target.nodes.end(),
                  [&](NodeId a, NodeId b) { return topo_pos[a] < topo_pos[b]; });
        groups[static_cast<size_t>(si)].nodes.clear();
        groups[static_cast<size_t>(si)].alive = false;
    }

    /// The one group other than si that reads si's results, when si is alive, open, without
    /// an anchor, of single-output nodes none of whose results is a graph output, and
    /// user_ok(reader node, its group) holds for every reader; else -1.
    template <typename UserOk> int sole_reader(int si, UserOk user_ok) const {
        const G& src = groups[static_cast<size_t>(si)];
        if (!src.alive || src.closed || src.anchor != kNoNode || src.nodes.empty())
            return -1;
        int into = -1;
        for (NodeId n : src.nodes) {
            if (g.node(n).outputs.size() != 1)
                return -1;
            const ValueId v = g.node(n).outputs[0];
            if (is_graph_output(v))
                return -1;
            for (NodeId u : users[v]) {
                const int gu = group_of[u];
                if (gu == si)
                    continue;
                if (gu < 0 || (into >= 0 && gu != into) || !user_ok(u, gu))
                    return -1;
                into = gu;
            }
        }
        return into;
    }

    /// Whether merging group si into group `into` keeps the groups acyclic: si reading into's
    /// results, or a path si -> other group -> into, would become a cycle through the merged
    /// group.
    bool merge_is_acyclic(int si, int into) const {
        if (depends_on(si, into))
            return false;
        for (int p : group_preds(into))
            if (p != si && depends_on(p, si))
                return false;
        return true;
    }

    /// Whether node u is a Concat along an axis other than its last. Its kernel evaluates
    /// every part for each element (a chain of selects), so a part computed inline is computed
    /// as many times as there are parts (SSDLite's concat of twelve heads' transposes, merged,
    /// took 14.5 -> 18.5 ms); along the last axis (the lanes of a blocked channel shuffle)
    /// each vector of the result needs every part anyway.
    bool part_of_outer_concat(NodeId u) const {
        const Node& n = g.node(u);
        if (n.op != Op::Concat || n.outputs.empty() || !g.value(n.outputs[0]).typed)
            return false;
        const int64_t rank = static_cast<int64_t>(g.value(n.outputs[0]).shape.size());
        return detail::normalize_axis(n.attr_int("axis", 0), rank, "fusion") != rank - 1;
    }

    /// The group that alone reads group si's results when si holds only injective and
    /// elementwise nodes, the reader is open, without an anchor and no Concat along an outer
    /// axis, and the merge keeps the groups acyclic (merge_injective_operands); else -1.
    int injective_reader(int si) const {
        for (NodeId n : groups[static_cast<size_t>(si)].nodes)
            if (!fusable_injective(pat[n]))
                return -1;
        const int into = sole_reader(si, [&](NodeId u, int) { return !part_of_outer_concat(u); });
        if (into < 0)
            return -1;
        const G& t = groups[static_cast<size_t>(into)];
        if (!t.alive || t.closed || t.anchor != kNoNode || !merge_is_acyclic(si, into))
            return -1;
        return into;
    }

    /// The anchor group whose epilogue alone reads group si's results, when si may merge into
    /// it (absorb_epilogue_operands), else -1.
    int epilogue_reader(int si) const {
        const int into = sole_reader(si, [&](NodeId u, int gu) {
            const G& t = groups[static_cast<size_t>(gu)];
            return t.anchor != kNoNode && u != t.anchor;
        });
        if (into < 0)
            return -1;
        for (NodeId n : groups[static_cast<size_t>(si)].nodes)
            if (!epilogue_node(n, groups[static_cast<size_t>(into)]))
                return -1;
        return merge_is_acyclic(si, into) ? into : -1;
    }

    /// Groups in a topological order, ties broken by the position of their first node.
    std::vector<int> group_order() const {
        const int ng = static_cast<int>(groups.size());
        std::vector<int> indeg(ng, 0);
        std::vector<std::vector<int>> succ(ng);
        for (int gi = 0; gi < ng; ++gi) {
            std::vector<int> preds = group_preds(gi);
            std::sort(preds.begin(), preds.end());
            preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
            for (int p : preds) {
                succ[p].push_back(gi);
                ++indeg[gi];
            }
        }
        // Groups are created in topological order of their first node, so the index is the tie
        // break.
        std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
        for (int gi = 0; gi < ng; ++gi)
            if (indeg[gi] == 0)
                ready.push(gi);
        std::vector<int> order;
        while (!ready.empty()) {
            int x = ready.top();
            ready.pop();
            order.push_back(x);
            for (int s : succ[x])
                if (--indeg[s] == 0)
                    ready.push(s);
        }
        TESSERA_CHECK(static_cast<int>(order.size()) == ng) << "fused groups form a cycle";
        return order;
    }

    FusedGroup finish(int gi) const {
        FusedGroup out;
        const G& grp = groups[gi];
        out.nodes = grp.nodes;
        out.anchor = grp.anchor;
        std::vector<uint8_t> inside(g.node_capacity(), 0);
        for (NodeId n : grp.nodes)
            inside[n] = 1;
        OpPattern kind = OpPattern::Elementwise;
        for (NodeId n : grp.nodes) {
            const Node& node = g.node(n);
            kind = std::max(kind, pat[n]);
            if (!out.pattern.empty())
                out.pattern += '+';
            out.pattern += fused_op_name(node.op);
            for (ValueId v : node.inputs) {
                if (v == kNoValue)
                    continue;
                NodeId q = g.value(v).producer;
                if (q != kNoNode && inside[q])
                    continue;
                if (std::find(out.inputs.begin(), out.inputs.end(), v) == out.inputs.end())
                    out.inputs.push_back(v);
            }
            for (ValueId v : node.outputs) {
                if (v == kNoValue)
                    continue;
                bool external = is_graph_output(v);
                for (NodeId u : users[v])
                    external = external || !inside[u];
                if (external)
                    out.outputs.push_back(v);
            }
        }
        out.kind = kind;
        return out;
    }
};

} // namespace

std::vector<FusedGroup> fuse_ops(const Graph& g) {
    Builder b(g);
    b.run();
    b.merge_injective_operands();
    b.absorb_epilogue_operands();
    std::vector<FusedGroup> out;
    for (int gi : b.group_order()) {
        FusedGroup group = b.finish(gi);
        // A group nothing reads (nodes left dead at -O0, such as a shape computation that
        // import replaced by its constant value) computes nothing anyone needs.
        if (!group.outputs.empty())
            out.push_back(std::move(group));
    }
    mark_in_place_operands(g, out);
    return out;
}

std::string group_signature(const Graph& g, const FusedGroup& group) {
    std::string s = group.pattern;
    if (!group.outputs.empty()) {
        const Value& v = g.value(group.outputs[0]);
        s += ' ';
        s += dtype_name(v.dtype);
        s += shape_str(v.shape);
    }
    return s;
}

} // namespace tessera::graph
