// The padding-taps pass (drop_padding_taps): numerics before/after on random inputs with the
// reference evaluator, the parts it makes (their kernels, pads and input slices), and the convs
// it leaves alone.
#include <gtest/gtest.h>

#include "passes_util.h"

namespace tessera::graph {
namespace {

Attributes atrous(int64_t k, int64_t dilation, int64_t pad, int64_t stride = 1, int64_t group = 1) {
    return {{"kernel_shape", Attribute::of_ints({k, k})},
            {"strides", Attribute::of_ints({stride, stride})},
            {"dilations", Attribute::of_ints({dilation, dilation})},
            {"pads", Attribute::of_ints({pad, pad, pad, pad})},
            {"group", Attribute::of_int(group)}};
}

std::vector<const Node*> nodes_of(const Graph& g, Op op) {
    std::vector<const Node*> out;
    for (NodeId id : g.node_ids())
        if (g.node(id).op == op)
            out.push_back(&g.node(id));
    return out;
}

TEST(PaddingTaps, AtrousConvsBeyondTheImageBecomeTheirCentreTap) {
    // DeepLabV3's pyramid on an odd 13x11 map: at dilations 24 and 36 only the centre tap
    // reaches the image, for every output: 1x1 convs of the input itself (bias kept); so does
    // a depthwise one and a 3x3 conv of a 1x1 map.
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 13, 13, 11});
    const ValueId a = b.op(Op::Conv, {x, b.constant_f32({7, 13, 3, 3}, 1), b.constant_f32({7}, 2)},
                           atrous(3, 24, 24));
    const ValueId c = b.op(Op::Conv, {x, b.constant_f32({7, 13, 3, 3}, 3)}, atrous(3, 36, 36));
    const ValueId d =
        b.op(Op::Conv, {x, b.constant_f32({13, 1, 3, 3}, 4)}, atrous(3, 24, 24, 1, 13));
    const ValueId one = b.input("one", {1, 5, 1, 1});
    const ValueId e = b.op(Op::Conv, {one, b.constant_f32({6, 5, 3, 3}, 5)}, atrous(3, 1, 1));
    Graph g = b.finish({a, c, d, e});
    PassResult r = check_pass(g, drop_padding_taps);
    EXPECT_EQ(r.changes, 4) << r.summary;
    const std::vector<const Node*> convs = nodes_of(g, Op::Conv);
    ASSERT_EQ(convs.size(), 4u) << to_string(g);
    for (const Node* n : convs) {
        EXPECT_EQ(n->attr_ints("kernel_shape"), (std::vector<int64_t>{1, 1})) << to_string(g);
        EXPECT_EQ(n->attr_ints("pads"), (std::vector<int64_t>{0, 0, 0, 0}));
        EXPECT_EQ(g.value(n->inputs[0]).producer, kNoNode) << "no slice: all of x is read";
    }
    EXPECT_EQ(count_op(g, Op::Slice), 0);
    EXPECT_EQ(count_op(g, Op::Concat), 0);
    // Products: 9 taps per output before, 1 after.
    EXPECT_NE(r.summary.find("11%"), std::string::npos) << r.summary;
}

TEST(PaddingTaps, AtrousConvNearTheImageSizeSplitsIntoParts) {
    // Dilation 12 on 14x14 (and on 15x13, odd): the outer taps reach the image only for
    // outputs within 2 rows (columns) of an edge. 3 row ranges x 3 column ranges: 9 parts, each
    // the taps its outputs read on the slice of x they read, side by side along the columns
    // and stacked along the rows; with a stride of 2 as well.
    for (const auto& [h, w, stride] :
         std::vector<std::array<int64_t, 3>>{{14, 14, 1}, {15, 13, 1}, {15, 15, 2}}) {
        SCOPED_TRACE(std::to_string(h) + "x" + std::to_string(w) + " stride " +
                     std::to_string(stride));
        GraphBuilder b;
        const ValueId x = b.input("x", {1, 9, h, w});
        const ValueId y =
            b.op(Op::Conv, {x, b.constant_f32({11, 9, 3, 3}, 1), b.constant_f32({11}, 2)},
                 atrous(3, 12, 12, stride));
        Graph g = b.finish({b.op(Op::Relu, {y})});
        PassResult r = check_pass(g, drop_padding_taps);
        EXPECT_EQ(r.changes, 1) << r.summary;
        EXPECT_EQ(count_op(g, Op::Conv), 9) << to_string(g);
        EXPECT_EQ(count_op(g, Op::Concat), 4) << to_string(g); // 3 bands of 3, then the bands
        int64_t taps = 0;
        for (const Node* n : nodes_of(g, Op::Conv)) {
            EXPECT_EQ(n->attr_ints("pads"), (std::vector<int64_t>{0, 0, 0, 0}));
            const std::vector<int64_t> k = n->attr_ints("kernel_shape");
            taps += k[0] * k[1];
        }
        EXPECT_EQ(taps, 4 * 4 + 4 * 2 + 1); // corners 2x2 taps, edges 2, the centre 1
        // The Relu reads the stacked bands, the graph output is unchanged.
        EXPECT_EQ(g.node(g.value(g.outputs[0]).producer).op, Op::Relu);
    }
}

TEST(PaddingTaps, LeavesConvsThatReadTheImageOrOnlyPadding) {
    // A 3x3 conv with pad 1 on 14x14 (the taps miss only the border: 91% of its products
    // stay), a 3x3 at dilation 4 on 28x28 (FCN-ResNet50's: 82%), a 1x1 conv with pad 2 (its
    // border outputs read padding only), a conv of runtime weights.
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 5, 14, 14});
    const ValueId plain = b.op(Op::Conv, {x, b.constant_f32({4, 5, 3, 3}, 1)}, atrous(3, 1, 1));
    const ValueId x28 = b.input("x28", {1, 5, 28, 28});
    const ValueId fcn = b.op(Op::Conv, {x28, b.constant_f32({4, 5, 3, 3}, 2)}, atrous(3, 4, 4));
    const ValueId border = b.op(Op::Conv, {x, b.constant_f32({4, 5, 1, 1}, 3)}, atrous(1, 1, 2));
    const ValueId runtime = b.op(Op::Conv, {x, b.input("w", {4, 5, 3, 3})}, atrous(3, 12, 12));
    Graph g = b.finish({plain, fcn, border, runtime});
    const std::string before = to_string(g);
    PassResult r = check_pass(g, drop_padding_taps);
    EXPECT_EQ(r.changes, 0) << r.summary;
    EXPECT_EQ(to_string(g), before);
}

} // namespace
} // namespace tessera::graph
