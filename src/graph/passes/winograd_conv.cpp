// The winograd pass: blocked 3x3 stride-1 convolutions become Winograd F(m x m, 3 x 3), an
// input transform, a batched MatMul with the weights transformed at compile time, and an
// output transform that the conv's epilogue (bias, activation, residual) fuses into.
//
// A 3x3 conv costs 9 multiply-adds per output and input channel; F(m x m, 3 x 3) costs
// (m + 2)^2 / m^2 in the batched MatMul (4 for m = 2, 2.25 for m = 4), plus transforms that
// grow with C + K instead of C * K. Below min_channels input or output channels the transforms
// cost more than they save; with few tiles the matmul streams the transformed weights for
// little work. On a 2-core Zen 1, ResNet-18's 56x56 convs (64 channels) took 7.3 ms direct,
// 7.5 in F(2x2) and 4.75 in F(4x4); on a Zen 4 core its 7x7 ones (16 tiles of 2x2) take 2.16
// ms direct and 1.48 in F(2x2) (WinogradOptions::min_tiles).
#include <algorithm>
#include <map>
#include <sstream>

#include "../op_util.h"
#include "../ops/blocked_layout.h"
#include "../ops/winograd.h"
#include "pass_util.h"
#include "tessera/graph/passes.h"

namespace tessera::graph {

using namespace detail;

namespace {

class WinogradRewriter {
  public:
    WinogradRewriter(Graph& g, const WinogradOptions& opts) : g_(g), opts_(opts) {}

    PassResult run() {
        PassResult r = begin_pass("winograd", g_);
        std::map<int64_t, int> convs; // by tile
        if (opts_.max_tile > 0)
            for (NodeId id : g_.topological_order())
                if (g_.is_live(id) && g_.node(id).op == Op::ConvBlocked)
                    if (const int64_t m = tile_for(g_.node(id)))
                        convs[m] += rewrite(id, m);
        g_.remove_dead_nodes();
        std::ostringstream os;
        r.changes = 0;
        for (const auto& [m, count] : convs) {
            os << (r.changes ? ", " : "") << count << " convs to F(" << m << "x" << m << ", 3x3)";
            r.changes += count;
        }
        if (r.changes == 0)
            os << "no conv to Winograd";
        return end_pass(r, g_, os.str());
    }

  private:
    static int64_t tiles_of(const Shape& y, int64_t m) {
        return y[0] * ceil_div(y[2], m) * ceil_div(y[3], m);
    }

    // The largest tile m <= max_tile leaving min_tiles tiles with the channels that tile
    // needs, or 0 when the conv stays direct.
    int64_t tile_for(const Node& n) const {
        if (!eligible(n))
            return 0;
        const Shape& y = g_.value(n.outputs[0]).shape;
        const int64_t block = n.attr_int("block", 0);
        const int64_t channels = std::min(g_.value(n.inputs[0]).shape[1] * block,
                                          g_.value(n.inputs[1]).shape[0] * block);
        for (int64_t m : {4, 2})
            if (m <= opts_.max_tile && tiles_of(y, m) >= opts_.min_tiles &&
                channels >= (m == 4 ? opts_.min_channels_f4 : opts_.min_channels) &&
                (m != 4 || channels <= opts_.max_channels_f4))
                return m;
        return 0;
    }

    bool eligible(const Node& n) const {
        if (n.outputs.size() != 1 || n.inputs.size() < 2 || n.attr_int("depthwise", 0) != 0)
            return false;
        const Value& x = g_.value(n.inputs[0]);
        const Value& w = g_.value(n.inputs[1]);
        const int64_t block = n.attr_int("block", 0);
        if (!x.typed || x.shape.size() != 5 || !w.is_constant() || w.shape.size() != 6 ||
            x.shape[4] != block || w.shape[2] != 3 || w.shape[3] != 3 ||
            n.attr_int("groups", 1) != 1)
            return false;
        if (n.input(2) != kNoValue && !g_.value(n.input(2)).is_constant())
            return false;
        for (const char* key : {"strides", "dilations"})
            if (n.has_attr(key))
                for (int64_t v : n.attr_ints(key))
                    if (v != 1)
                        return false;
        return true; // the channels each tile needs: tile_for
    }

    // One table constant per tile and kind for the whole graph.
    ValueId table(int64_t m, bool input) {
        auto [it, added] = tables_.try_emplace({m, input}, kNoValue);
        if (added) {
            const std::string name =
                "winograd_f" + std::to_string(m) + (input ? "_input" : "_output");
            it->second =
                g_.add_constant(name, input ? winograd_input_table(m) : winograd_output_table(m));
        }
        return it->second;
    }

    // Copies, not references: adding values and nodes below may move the graph's storage.
    int rewrite(NodeId id, int64_t m) {
        const Node n = g_.node(id);
        const Value x = g_.value(n.inputs[0]);
        const Value w = g_.value(n.inputs[1]);
        const Value y = g_.value(n.outputs[0]);
        const int64_t block = n.attr_int("block", 0);
        std::vector<int64_t> pads =
            n.has_attr("pads") ? n.attr_ints("pads") : std::vector<int64_t>{0, 0, 0, 0};
        // The transformed weights of every output and input channel, padding ones included
        // (their weights are 0, as the blocked conv's).
        const TensorData u = winograd_weight(unblock_conv_weight(*w.constant, false), m);
        const int64_t e = u.shape()[0], c = u.shape()[1], k = u.shape()[2];
        const int64_t tiles = tiles_of(y.shape, m);

        const ValueId v = g_.add_value(y.name + "_winograd_v", DType::F32, {e, tiles, c});
        g_.add_node(Op::WinogradInput, {n.inputs[0], table(m, true)}, {v},
                    {{"tile", Attribute::of_int(m)}, {"pads", Attribute::of_ints(pads)}},
                    n.name + "_winograd_input");
        const ValueId uv = g_.add_constant(w.name + "_winograd", u);
        const ValueId mv = g_.add_value(y.name + "_winograd_m", DType::F32, {e, tiles, k});
        g_.add_node(Op::MatMul, {v, uv}, {mv}, {}, n.name + "_winograd_gemm");
        std::vector<ValueId> outs_in = {mv, table(m, false)};
        if (n.input(2) != kNoValue)
            outs_in.push_back(n.inputs[2]);
        const ValueId out = n.outputs[0];
        g_.remove_node(id);
        g_.add_node(Op::WinogradOutput, std::move(outs_in), {out},
                    {{"tile", Attribute::of_int(m)},
                     {"block", Attribute::of_int(block)},
                     {"out_h", Attribute::of_int(y.shape[2])},
                     {"out_w", Attribute::of_int(y.shape[3])}},
                    n.name);
        return 1;
    }

    Graph& g_;
    const WinogradOptions opts_;
    std::map<std::pair<int64_t, bool>, ValueId> tables_; // (tile, input) -> constant
};

} // namespace

PassResult convert_conv_winograd(Graph& g, const WinogradOptions& opts) {
    if (opts.max_tile != 0 && opts.max_tile != 2 && opts.max_tile != 4)
        throw UserError() << "Winograd tile " << opts.max_tile << " is not supported (0, 2 or 4)";
    return WinogradRewriter(g, opts).run();
}

} // namespace tessera::graph
