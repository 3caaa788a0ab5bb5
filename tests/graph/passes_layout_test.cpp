// The layout pass (NCHW -> NCHW[x]c): numerics before/after on random inputs with the reference
// evaluator, and the structure it leaves (blocked convs, conversions only at the edges, no
// cancelling pairs), on built graphs and on the shared ResNet-18.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "passes_util.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/graph/pipeline.h"
#include "tessera/support/error.h"

namespace tessera::graph {
namespace {

namespace fs = std::filesystem;

const std::string kModels = TESSERA_SOURCE_DIR "/../shared/models";

Attributes conv_attrs(int64_t k, int64_t stride, int64_t pad, int64_t group = 1) {
    return {{"kernel_shape", Attribute::of_ints({k, k})},
            {"strides", Attribute::of_ints({stride, stride})},
            {"dilations", Attribute::of_ints({1, 1})},
            {"pads", Attribute::of_ints({pad, pad, pad, pad})},
            {"group", Attribute::of_int(group)}};
}

// Relu(Conv(x)): out x in x k x k random weights of `seed`, stride 1, the output the size of x.
ValueId conv_relu(GraphBuilder& b, ValueId x, int64_t in, int64_t out, int64_t k, uint64_t seed) {
    return b.op(Op::Relu, {b.op(Op::Conv, {x, b.constant_f32({out, in, k, k}, seed)},
                                conv_attrs(k, 1, k / 2))});
}

// No LayoutToBlocked reads a LayoutFromBlocked of the same block, nor the reverse.
void expect_no_cancelling_pairs(const Graph& g) {
    for (NodeId id : g.node_ids()) {
        const Node& n = g.node(id);
        if (n.op != Op::LayoutToBlocked && n.op != Op::LayoutFromBlocked)
            continue;
        const NodeId p = g.value(n.inputs[0]).producer;
        if (p == kNoNode)
            continue;
        const Op inner = n.op == Op::LayoutToBlocked ? Op::LayoutFromBlocked : Op::LayoutToBlocked;
        EXPECT_FALSE(g.node(p).op == inner &&
                     g.node(p).attr_int("block", 0) == n.attr_int("block", 0))
            << describe_node(n, id) << " undoes its producer\n"
            << to_string(g);
    }
}

// Odd channel counts (13 in, 11 and 16 out) so the channel padding is exercised; a depthwise
// conv, a per-channel bias Add and Mul, a residual Add of two convs, and a pool reading a
// blocked value (a conversion back to NCHW in the middle of the graph).
Graph conv_net() {
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 13, 9, 7});
    const ValueId a =
        b.op(Op::Conv, {x, b.constant_f32({11, 13, 3, 3}, 1), b.constant_f32({11}, 2)},
             conv_attrs(3, 1, 1));
    const ValueId r = b.op(Op::Relu, {a});
    const ValueId s = b.op(Op::Add, {r, b.constant_f32({11, 1, 1}, 3)});
    const ValueId d =
        b.op(Op::Conv, {s, b.constant_f32({11, 1, 3, 3}, 4)}, conv_attrs(3, 1, 1, 11));
    const ValueId m = b.op(Op::Mul, {d, b.constant_f32({1, 11, 1, 1}, 5)});
    const ValueId e = b.op(Op::Conv, {m, b.constant_f32({16, 11, 1, 1}, 6)}, conv_attrs(1, 1, 0));
    const ValueId f = b.op(Op::Conv, {x, b.constant_f32({16, 13, 3, 3}, 7)}, conv_attrs(3, 1, 1));
    const ValueId o = b.op(Op::Add, {e, f});
    const ValueId out = b.op(Op::Relu, {o});
    const ValueId pooled = b.op(Op::GlobalAveragePool, {r});
    return b.finish({out, pooled});
}

class LayoutBlockTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(LayoutBlockTest, ConvNetKeepsValuesAndStaysBlocked) {
    const int64_t block = GetParam();
    Graph g = conv_net();
    PassResult r = check_pass(g, [&](Graph& gr) { return convert_layout_nchwc(gr, block); });
    EXPECT_EQ(r.pass, "layout");
    EXPECT_EQ(count_op(g, Op::Conv), 0) << to_string(g);
    EXPECT_EQ(count_op(g, Op::ConvBlocked), 4);
    // One conversion in (x feeds two convs through one LayoutToBlocked), one out per graph
    // output: the conv's and the pooled values (the pool averages the blocked tensor).
    EXPECT_EQ(count_op(g, Op::LayoutToBlocked), 1) << to_string(g);
    EXPECT_EQ(count_op(g, Op::LayoutFromBlocked), 2) << to_string(g);
    EXPECT_EQ(r.changes, 4 + 5 + 1); // 4 convs; Relu, Add, Mul, Add, Relu; the pool
    for (NodeId id : g.node_ids()) {
        const Node& n = g.node(id);
        if (n.op == Op::LayoutToBlocked) {
            EXPECT_EQ(n.inputs[0], g.inputs[0]);
        }
        if (n.op == Op::ConvBlocked) {
            EXPECT_EQ(g.value(n.outputs[0]).shape.size(), 5u);
            EXPECT_EQ(g.value(n.outputs[0]).shape[4], block);
            EXPECT_TRUE(g.value(n.inputs[1]).is_constant()); // weights folded at compile time
        }
    }
    expect_no_cancelling_pairs(g);
    // A second run finds nothing to do.
    EXPECT_EQ(convert_layout_nchwc(g, block).changes, 0);
}

INSTANTIATE_TEST_SUITE_P(Blocks, LayoutBlockTest, ::testing::Values(1, 4, 8));

TEST(LayoutPass, ConvsOnFewerChannelsThanABlockReadThemAsOneBlock) {
    // In blocks of 16, the convs of 13 and 11 input channels read them as one block each, with
    // weights [1, 1, R, S, C, 16], and write NCHW16c: 11 output channels (at least half a
    // block) are padded to 16. The depthwise conv of 11 channels stays NCHW.
    Graph g = conv_net();
    check_pass(g, [](Graph& gr) { return convert_layout_nchwc(gr, 16); });
    EXPECT_EQ(count_op(g, Op::Conv), 1) << to_string(g);
    EXPECT_EQ(count_op(g, Op::ConvBlocked), 3) << to_string(g);
    std::vector<int64_t> in_blocks;
    for (NodeId id : g.node_ids()) {
        const Node& n = g.node(id);
        if (n.op != Op::ConvBlocked)
            continue;
        const Shape& x = g.value(n.inputs[0]).shape;
        const Shape& w = g.value(n.inputs[1]).shape;
        ASSERT_EQ(x.size(), 5u);
        EXPECT_EQ(x[1], 1);
        in_blocks.push_back(x[4]);
        EXPECT_EQ(w[1], 1);
        EXPECT_EQ(w[4], x[4]);
        EXPECT_EQ(w[5], 16);
        EXPECT_EQ(g.value(n.outputs[0]).shape, (Shape{1, 1, 9, 7, 16}));
    }
    std::sort(in_blocks.begin(), in_blocks.end());
    EXPECT_EQ(in_blocks, (std::vector<int64_t>{11, 13, 13}));
    // In blocks of 32, 11 output channels (under half a block) would triple the conv's work:
    // it stays NCHW, and the two 16-channel ones are blocked.
    Graph wide = conv_net();
    check_pass(wide, [](Graph& gr) { return convert_layout_nchwc(gr, 32); });
    EXPECT_EQ(count_op(wide, Op::Conv), 2) << to_string(wide);
    EXPECT_EQ(count_op(wide, Op::ConvBlocked), 2) << to_string(wide);
}

TEST(LayoutPass, PoolsOfBlockedValuesStayBlocked) {
    // conv -> relu -> pool (3x3 stride 2, ceil mode) -> conv: the pool pools the blocked
    // tensor (a max, or an average counting the padding or not); a pool of an input that
    // nothing blocked reads stays NCHW.
    for (auto [op, include_pad] :
         {std::pair<Op, int64_t>{Op::MaxPool, 0}, {Op::AveragePool, 0}, {Op::AveragePool, 1}}) {
        GraphBuilder b;
        const ValueId x = b.input("x", {1, 13, 13, 7});
        const ValueId c = conv_relu(b, x, 13, 13, 3, 1);
        Attributes pool = {{"kernel_shape", Attribute::of_ints({3, 3})},
                           {"strides", Attribute::of_ints({2, 2})},
                           {"pads", Attribute::of_ints({1, 0, 1, 1})},
                           {"ceil_mode", Attribute::of_int(1)}};
        if (op == Op::AveragePool)
            pool["count_include_pad"] = Attribute::of_int(include_pad);
        const ValueId p = b.op(op, {c}, pool);
        const ValueId y =
            b.op(Op::Conv, {p, b.constant_f32({9, 13, 1, 1}, 2)}, conv_attrs(1, 1, 0));
        const ValueId q = b.op(op, {b.input("z", {1, 13, 13, 7})}, pool);
        Graph g = b.finish({y, q});
        check_pass(g, [](Graph& gr) { return convert_layout_nchwc(gr, 8); });
        const Op blocked = op == Op::MaxPool ? Op::MaxPoolBlocked : Op::AveragePoolBlocked;
        EXPECT_EQ(count_op(g, blocked), 1) << to_string(g);
        EXPECT_EQ(count_op(g, op), 1) << to_string(g);
        EXPECT_EQ(count_op(g, Op::ConvBlocked), 2) << to_string(g);
        expect_no_cancelling_pairs(g);
    }
}

TEST(LayoutPass, PerTensorQuantizePairsBetweenConvsStayBlocked) {
    // conv -> Q -> DQ -> conv -> Q (a u8 graph output): the per-tensor pair between the convs
    // runs on the blocked tensor (padding channels quantize to the zero point and back to 0);
    // the per-axis Q of the second conv's output stays NCHW.
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 13, 9, 7});
    const ValueId c = b.op(Op::Conv, {x, b.constant_f32({13, 13, 3, 3}, 1)}, conv_attrs(3, 1, 1));
    const ValueId s = b.constant(TensorData::scalar(0.05f));
    const ValueId zp = b.constant(TensorData::from_vector<uint8_t>({}, {121}, DType::U8));
    const ValueId d = b.op(Op::DequantizeLinear, {b.op(Op::QuantizeLinear, {c, s, zp}), s, zp});
    const ValueId y = b.op(Op::Conv, {d, b.constant_f32({11, 13, 1, 1}, 2)}, conv_attrs(1, 1, 0));
    const ValueId per_axis_s = b.constant(testing::random_tensor({1, 11, 1, 1}, 3, 0.01f, 0.1f));
    const ValueId per_axis_zp = b.constant(TensorData(DType::I8, {1, 11, 1, 1}));
    const ValueId q = b.op(Op::QuantizeLinear, {y, per_axis_s, per_axis_zp});
    Graph g = b.finish({d, q});
    check_pass(g, [](Graph& gr) { return convert_layout_nchwc(gr, 8); });
    EXPECT_EQ(count_op(g, Op::ConvBlocked), 2) << to_string(g);
    for (NodeId id : g.node_ids()) {
        const Node& n = g.node(id);
        if (n.op == Op::QuantizeLinear || n.op == Op::DequantizeLinear) {
            EXPECT_EQ(g.value(n.outputs[0]).shape.size(), n.inputs[1] == per_axis_s ? 4u : 5u)
                << to_string(g);
        }
    }
    expect_no_cancelling_pairs(g);
}

TEST(LayoutPass, GlobalAveragePoolsOfBlockedValuesAverageEachBlock) {
    // conv (13 channels: the last block padded) -> relu -> global average pool: the pool
    // averages the blocked tensor's rows and columns (a ReduceMean over axes 2 and 3) and only
    // the pooled [1, 13, 1, 1] goes back to NCHW; a pool of an input stays NCHW.
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 11, 9, 7});
    const ValueId c = conv_relu(b, x, 11, 13, 3, 1);
    const ValueId p = b.op(Op::GlobalAveragePool, {c});
    const ValueId q = b.op(Op::GlobalAveragePool, {b.input("z", {1, 5, 3, 9})});
    Graph g = b.finish({p, q});
    check_pass(g, [](Graph& gr) { return convert_layout_nchwc(gr, 8); });
    EXPECT_EQ(count_op(g, Op::ReduceMean), 1) << to_string(g);
    EXPECT_EQ(count_op(g, Op::GlobalAveragePool), 1) << to_string(g);
    EXPECT_EQ(count_op(g, Op::LayoutFromBlocked), 1) << to_string(g);
    expect_no_cancelling_pairs(g);
}

// A SqueezeNet Fire module: squeeze 1x1 -> relu -> expand 1x1 (16) and expand 3x3 (13)
// -> channel Concat -> max pool -> conv. With blocks of 8 the 16 channels fill whole blocks:
// the Concat joins the blocked outputs (the 3x3's padding channels end the result) and the pool
// and the next conv read it blocked, with no conversion in between. With a first part of 13
// channels (not whole blocks) it stays NCHW.
Graph fire_module(int64_t first_expand) {
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 11, 9, 7});
    const ValueId sq = conv_relu(b, x, 11, 8, 1, 1);
    const ValueId e1 = conv_relu(b, sq, 8, first_expand, 1, 2);
    const ValueId e3 = conv_relu(b, sq, 8, 13, 3, 3);
    const ValueId cat = b.op(Op::Concat, {e1, e3}, {{"axis", Attribute::of_int(1)}});
    const ValueId pool = b.op(
        Op::MaxPool, {cat},
        {{"kernel_shape", Attribute::of_ints({3, 3})}, {"strides", Attribute::of_ints({2, 2})}});
    const ValueId out = b.op(Op::Conv, {pool, b.constant_f32({8, first_expand + 13, 1, 1}, 4)},
                             conv_attrs(1, 1, 0));
    return b.finish({out});
}

TEST(LayoutPass, SpatialMeansOfBlockedValuesAverageEachBlock) {
    // x.mean([2, 3]) as exporters write it (ReduceMean over rows and columns, with and without
    // keepdims, a negative axis) of a blocked value is the blocked ReduceMean; without keepdims
    // a Reshape drops the unit dims of its NCHW result. A mean over the channels stays.
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 11, 9, 7});
    const ValueId c = conv_relu(b, x, 11, 13, 3, 1);
    auto mean = [&](std::vector<int64_t> axes, int64_t keepdims) {
        return b.op(Op::ReduceMean, {c},
                    {{"axes", Attribute::of_ints(std::move(axes))},
                     {"keepdims", Attribute::of_int(keepdims)}});
    };
    const ValueId flat = mean({2, 3}, 0), kept = mean({-1, 2}, 1), channels = mean({1}, 1);
    Graph g = b.finish({flat, kept, channels});
    check_pass(g, [](Graph& gr) { return convert_layout_nchwc(gr, 8); });
    int blocked_means = 0;
    for (NodeId id : g.node_ids()) {
        const Node& n = g.node(id);
        if (n.op == Op::ReduceMean && g.value(n.inputs[0]).shape.size() == 5) {
            EXPECT_EQ(n.attr_ints("axes"), (std::vector<int64_t>{2, 3}));
            EXPECT_EQ(g.value(n.outputs[0]).shape, (Shape{1, 2, 1, 1, 8}));
            ++blocked_means;
        }
    }
    EXPECT_EQ(blocked_means, 2) << to_string(g);
    EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{1, 13}));
    EXPECT_EQ(g.node(g.value(g.outputs[0]).producer).op, Op::Reshape) << to_string(g);
}

TEST(LayoutPass, ChannelConcatsOfBlockedValuesStayBlocked) {
    Graph g = fire_module(16);
    PassResult r = check_pass(g, [](Graph& gr) { return convert_layout_nchwc(gr, 8); });
    const Node& cat = first_node(g, Op::Concat);
    EXPECT_EQ(cat.attr_int("axis", 0), 1);
    EXPECT_EQ(g.value(cat.outputs[0]).shape, (Shape{1, 4, 9, 7, 8})) << to_string(g);
    EXPECT_EQ(count_op(g, Op::MaxPoolBlocked), 1);
    EXPECT_EQ(count_op(g, Op::LayoutToBlocked), 1);   // the graph input
    EXPECT_EQ(count_op(g, Op::LayoutFromBlocked), 1); // the graph output
    EXPECT_NE(r.summary.find("1 concats"), std::string::npos) << r.summary;

    Graph odd = fire_module(13);
    check_pass(odd, [](Graph& gr) { return convert_layout_nchwc(gr, 8); });
    EXPECT_EQ(odd.value(first_node(odd, Op::Concat).outputs[0]).shape.size(), 4u) << to_string(odd);
}

// A ShuffleNet V2 unit on `channels` channels in `groups` groups: the first half of a conv's
// output passes, the second goes through a conv, the two are concatenated and shuffled
// (Reshape to [N, g, C/g, H, W], Transpose [0, 2, 1, 3, 4], Reshape back), and a conv reads
// the shuffle. Without `concat`, the first conv's output is shuffled as it is.
Graph shuffle_unit(int64_t channels, int64_t groups, bool concat = true) {
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 11, 9, 7});
    const int64_t half = channels / 2;
    const ValueId c = conv_relu(b, x, 11, channels, 3, 1);
    ValueId joined = c;
    if (concat) {
        const ValueId kept = b.op(Op::Slice, {c, b.ints({0}), b.ints({half}), b.ints({1})});
        const ValueId rest = b.op(Op::Slice, {c, b.ints({half}), b.ints({channels}), b.ints({1})});
        const ValueId branch = conv_relu(b, rest, half, half, 3, 2);
        joined = b.op(Op::Concat, {kept, branch}, {{"axis", Attribute::of_int(1)}});
    }
    const ValueId grouped =
        b.op(Op::Reshape, {joined, b.ints({1, groups, channels / groups, 9, 7})});
    const ValueId swapped =
        b.op(Op::Transpose, {grouped}, {{"perm", Attribute::of_ints({0, 2, 1, 3, 4})}});
    const ValueId shuffled = b.op(Op::Reshape, {swapped, b.ints({1, channels, 9, 7})});
    return b.finish({conv_relu(b, shuffled, channels, 13, 1, 3)});
}

// The Concat along the last axis of a blocked shuffle's group operands, or nullptr.
const Node* lane_concat(const Graph& g) {
    for (NodeId id : g.node_ids())
        if (g.node(id).op == Op::Concat && g.value(g.node(id).outputs[0]).shape.size() == 6)
            return &g.node(id);
    return nullptr;
}

TEST(LayoutPass, ChannelShufflesOfBlockedValuesStayBlocked) {
    // In blocks of 8, a shuffle of a Concat of its 2 groups reads the groups' sub-blocks of 4
    // channels and concatenates them along a last axis of 2 lanes: 32 channels, and 24 (groups
    // of 12, a block and a half: the second half, [12, 24), feeds a conv that reads blocks
    // [1, 3) with zero weights on channels 8-11, and the first half is read as sub-blocks 0-2
    // of the first conv's output). The whole unit stays blocked: one conversion in and one out.
    for (int64_t channels : {32, 24}) {
        Graph g = shuffle_unit(channels, 2);
        PassResult r = check_pass(g, [](Graph& gr) { return convert_layout_nchwc(gr, 8); });
        EXPECT_NE(r.summary.find("1 channel shuffles"), std::string::npos) << r.summary;
        EXPECT_EQ(count_op(g, Op::LayoutToBlocked), 1) << to_string(g);
        EXPECT_EQ(count_op(g, Op::LayoutFromBlocked), 1) << to_string(g);
        const Node* lanes = lane_concat(g);
        ASSERT_NE(lanes, nullptr) << to_string(g);
        EXPECT_EQ(g.value(lanes->outputs[0]).shape, (Shape{1, channels / 8, 9, 7, 4, 2}));
        expect_no_cancelling_pairs(g);
    }
    // A shuffle of any other blocked value whose groups fill whole blocks (a conv's output; a
    // Concat of 2 parts in 4 groups): [1, 4, 9, 7, 8] through [1, g, 4/g, 9, 7, g, 8/g],
    // transposed.
    for (auto [groups, concat] : {std::pair<int64_t, bool>{2, false}, {4, true}}) {
        Graph g = shuffle_unit(32, groups, concat);
        PassResult r = check_pass(g, [](Graph& gr) { return convert_layout_nchwc(gr, 8); });
        EXPECT_NE(r.summary.find("1 channel shuffles"), std::string::npos) << r.summary;
        const Node& swap = first_node(g, Op::Transpose);
        EXPECT_EQ(swap.attr_ints("perm"), (std::vector<int64_t>{0, 2, 5, 3, 4, 6, 1}));
        EXPECT_EQ(g.value(swap.inputs[0]).shape,
                  (Shape{1, groups, 4 / groups, 9, 7, groups, 8 / groups}));
        EXPECT_EQ(count_op(g, Op::LayoutFromBlocked), 1) << to_string(g);
    }
    // 3 groups (3 does not divide the block), and 24 channels of a conv in 2 groups (12 per
    // group, not whole blocks): in NCHW.
    for (auto [groups, concat] : {std::pair<int64_t, bool>{3, true}, {2, false}}) {
        Graph g = shuffle_unit(24, groups, concat);
        PassResult r = check_pass(g, [](Graph& gr) { return convert_layout_nchwc(gr, 8); });
        EXPECT_NE(r.summary.find("0 channel shuffles"), std::string::npos) << r.summary;
        EXPECT_EQ(g.value(first_node(g, Op::Transpose).outputs[0]).shape.size(), 5u);
    }
}

TEST(LayoutPass, SpatialSlicesAndConcatsOfBlockedValuesStayBlocked) {
    // The parts of a conv split by drop_padding_taps: slices of a blocked value along rows and
    // columns (a negative axis too) feed convs whose outputs are joined along the columns and
    // the rows; all of it stays blocked, with one conversion in and one out.
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 11, 9, 7});
    const ValueId c = conv_relu(b, x, 11, 13, 3, 1);
    auto slice = [&](std::vector<int64_t> starts, std::vector<int64_t> ends,
                     std::vector<int64_t> axes) {
        return b.op(Op::Slice, {c, b.ints(std::move(starts)), b.ints(std::move(ends)),
                                b.ints(std::move(axes))});
    };
    auto conv1x1 = [&](ValueId v, uint64_t seed) {
        return b.op(Op::Conv, {v, b.constant_f32({10, 13, 1, 1}, seed)}, conv_attrs(1, 1, 0));
    };
    const ValueId left = conv1x1(slice({0, 0}, {4, 3}, {2, 3}), 2);
    const ValueId right = conv1x1(slice({0, 3}, {4, 7}, {2, -1}), 3);
    const ValueId top = b.op(Op::Concat, {left, right}, {{"axis", Attribute::of_int(3)}});
    const ValueId bottom = conv1x1(slice({4}, {9}, {-2}), 4);
    const ValueId y = b.op(Op::Concat, {top, bottom}, {{"axis", Attribute::of_int(-2)}});
    Graph g = b.finish({y});
    PassResult r = check_pass(g, [](Graph& gr) { return convert_layout_nchwc(gr, 8); });
    EXPECT_NE(r.summary.find("3 slices"), std::string::npos) << r.summary;
    EXPECT_EQ(count_op(g, Op::LayoutToBlocked), 1) << to_string(g);
    EXPECT_EQ(count_op(g, Op::LayoutFromBlocked), 1) << to_string(g);
    for (NodeId id : g.node_ids()) {
        const Node& n = g.node(id);
        if (n.op == Op::Slice || n.op == Op::Concat) {
            EXPECT_EQ(g.value(n.outputs[0]).shape.size(), 5u) << to_string(g);
        }
    }
    expect_no_cancelling_pairs(g);
}

TEST(LayoutPass, LeavesUnblockableConvsAndOpsInNchw) {
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 12, 7, 7});
    const ValueId w = b.input("w", {8, 12, 3, 3}); // runtime weights: not blocked
    const ValueId a = b.op(Op::Conv, {x, w}, conv_attrs(3, 1, 1));
    // Groups of 3 input channels (not dividing a block of 8) and 2 output channels.
    const ValueId grouped =
        b.op(Op::Conv, {x, b.constant_f32({8, 3, 3, 3}, 1)}, conv_attrs(3, 1, 1, 4));
    const ValueId c = b.op(Op::Conv, {x, b.constant_f32({8, 12, 1, 1}, 2)}, conv_attrs(1, 1, 0));
    // Div could turn padding channels into inf: it stays NCHW.
    const ValueId d = b.op(Op::Div, {c, b.constant_f32({1, 8, 1, 1}, 3, 1.0f, 2.0f)});
    const ValueId sum = b.op(Op::Add, {b.op(Op::Add, {a, grouped}), d});
    Graph g = b.finish({sum});
    check_pass(g, [](Graph& gr) { return convert_layout_nchwc(gr, 8); });
    EXPECT_EQ(count_op(g, Op::Conv), 2);
    EXPECT_EQ(count_op(g, Op::ConvBlocked), 1);
    EXPECT_EQ(count_op(g, Op::Div), 1);
    EXPECT_EQ(g.value(first_node(g, Op::Div).inputs[0]).shape.size(), 4u);
}

TEST(LayoutPass, GroupedConvsBecomeGroupsOfWholeBlocks) {
    // Groups of 16 channels in blocks of 8 stay 2 groups of 2 blocks; RegNet-like groups of 4
    // channels (20 of them: a padded last block) become one group per block with
    // block-diagonal weights, and so do groups of 2 (4x the products in blocks of 8, the most
    // allowed); with bias, strides and padding channels, evaluated before and after.
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 32, 9, 7});
    const ValueId wide =
        b.op(Op::Conv, {x, b.constant_f32({32, 16, 3, 3}, 1), b.constant_f32({32}, 2)},
             conv_attrs(3, 1, 1, 2));
    const ValueId narrow_in = b.op(
        Op::Conv, {b.op(Op::Relu, {wide}), b.constant_f32({20, 32, 1, 1}, 3)}, conv_attrs(1, 1, 0));
    const ValueId narrow =
        b.op(Op::Conv, {narrow_in, b.constant_f32({20, 4, 3, 3}, 4), b.constant_f32({20}, 5)},
             conv_attrs(3, 2, 1, 5));
    const ValueId pairs =
        b.op(Op::Conv, {narrow, b.constant_f32({20, 2, 3, 3}, 6)}, conv_attrs(3, 1, 1, 10));
    Graph g = b.finish({pairs});
    check_pass(g, [](Graph& gr) { return convert_layout_nchwc(gr, 8); });
    EXPECT_EQ(count_op(g, Op::Conv), 0) << to_string(g);
    std::vector<int64_t> groups;
    for (NodeId id : g.node_ids())
        if (g.node(id).op == Op::ConvBlocked)
            groups.push_back(g.node(id).attr_int("groups", 1));
    std::sort(groups.begin(), groups.end());
    EXPECT_EQ(groups, (std::vector<int64_t>{1, 2, 3, 3})) << to_string(g);
}

TEST(LayoutPass, SqueezeExcitationScalesStayBlocked) {
    // A squeeze-and-excitation block (EfficientNet, MobileNetV3, RegNetY): a conv's output
    // times per-image, per-channel scales computed from it ([1, C, 1, 1]: pool, 1x1 convs,
    // sigmoid). The Mul broadcasts the blocked scales over rows and columns instead of taking
    // both operands back to NCHW and the product to blocks again; 20 channels in blocks of 8
    // leave padding channels (sigmoid(0) scales, times 0).
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 12, 9, 7});
    const ValueId c = conv_relu(b, x, 12, 20, 3, 1);
    const ValueId pooled = b.op(Op::GlobalAveragePool, {c});
    const ValueId squeezed = conv_relu(b, pooled, 20, 8, 1, 2);
    const ValueId scales =
        b.op(Op::Sigmoid,
             {b.op(Op::Conv, {squeezed, b.constant_f32({20, 8, 1, 1}, 3), b.constant_f32({20}, 4)},
                   conv_attrs(1, 1, 0))});
    const ValueId scaled = b.op(Op::Mul, {c, scales});
    const ValueId y =
        b.op(Op::Conv, {scaled, b.constant_f32({16, 20, 1, 1}, 5)}, conv_attrs(1, 1, 0));
    Graph g = b.finish({y});
    check_pass(g, [](Graph& gr) { return convert_layout_nchwc(gr, 8); });
    ASSERT_EQ(count_op(g, Op::Mul), 1) << to_string(g);
    EXPECT_EQ(g.value(first_node(g, Op::Mul).outputs[0]).shape.size(), 5u) << to_string(g);
    EXPECT_EQ(count_op(g, Op::LayoutFromBlocked), 1) << to_string(g); // the output's
}

TEST(LayoutPass, UnaryOpsBetweenConvsStayBlockedWhenTheyKeepValuesFinite) {
    // conv -> op -> conv: an op whose table entry keeps finite values finite stays blocked
    // (its input and output NCHW[8]c); one that makes inf out of the padding's 0 runs in NCHW
    // between two conversions. Values as before either way.
    for (const auto& [op, blocked] : std::vector<std::pair<Op, bool>>{{Op::Relu, true},
                                                                      {Op::Tanh, true},
                                                                      {Op::Round, true},
                                                                      {Op::Neg, true},
                                                                      {Op::HardSwish, true},
                                                                      {Op::Log, false},
                                                                      {Op::Sqrt, false},
                                                                      {Op::Reciprocal, false}}) {
        SCOPED_TRACE(op_name(op));
        GraphBuilder b;
        const ValueId x = b.input("x", {1, 13, 7, 9});
        const ValueId c1 =
            b.op(Op::Conv, {x, b.constant_f32({11, 13, 3, 3}, 1)}, conv_attrs(3, 1, 1));
        // Positive values, so that Log and Sqrt compute numbers in the check.
        const ValueId pos = b.op(Op::Add, {b.op(Op::Relu, {c1}), b.constant_f32({1}, 2, 1.f, 2.f)});
        const ValueId c2 = b.op(Op::Conv, {b.op(op, {pos}), b.constant_f32({16, 11, 1, 1}, 3)},
                                conv_attrs(1, 1, 0));
        Graph g = b.finish({c2});
        check_pass(g, [](Graph& gr) { return convert_layout_nchwc(gr, 8); });
        const Node* u_node = nullptr;
        for (NodeId id : g.topological_order()) // the last one: the op after the Add
            if (g.node(id).op == op)
                u_node = &g.node(id);
        ASSERT_NE(u_node, nullptr) << to_string(g);
        EXPECT_EQ(g.value(u_node->inputs[0]).shape.size(), blocked ? 5u : 4u) << to_string(g);
    }
}

TEST(LayoutPass, CancelsConversionPairs) {
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 16, 5, 3});
    const ValueId to = b.op(Op::LayoutToBlocked, {x}, {{"block", Attribute::of_int(8)}});
    const ValueId back =
        b.op(Op::LayoutFromBlocked, {to},
             {{"block", Attribute::of_int(8)}, {"channels", Attribute::of_int(16)}});
    const ValueId y = b.op(Op::Exp, {back}); // not a blocked op: reads NCHW
    Graph g = b.finish({y});
    PassResult r = check_pass(g, [](Graph& gr) { return convert_layout_nchwc(gr, 8); });
    EXPECT_EQ(r.changes, 1);
    EXPECT_EQ(count_op(g, Op::LayoutToBlocked), 0);
    EXPECT_EQ(count_op(g, Op::LayoutFromBlocked), 0);
    EXPECT_EQ(first_node(g, Op::Exp).inputs[0], x);
}

TEST(LayoutPass, ConversionOpsRoundTripWithPadding) {
    // 13 channels in blocks of 8: 3 zero channels of padding, dropped on the way back.
    GraphBuilder b;
    const ValueId x = b.input("x", {2, 13, 3, 5});
    const ValueId to = b.op(Op::LayoutToBlocked, {x}, {{"block", Attribute::of_int(8)}});
    Graph g = b.finish({to});
    EXPECT_EQ(g.value(to).shape, (Shape{2, 2, 3, 5, 8}));
    const TensorData in = testing::random_tensor({2, 13, 3, 5}, 11);
    const TensorData blocked = evaluate(g, {in})[0];
    const float* pb = blocked.data<float>();
    const float* pi = in.data<float>();
    for (int64_t n = 0; n < 2; ++n)
        for (int64_t c = 0; c < 16; ++c)
            for (int64_t p = 0; p < 15; ++p) {
                const float want = c < 13 ? pi[(n * 13 + c) * 15 + p] : 0.0f;
                EXPECT_EQ(pb[((n * 2 + c / 8) * 15 + p) * 8 + c % 8], want);
            }
    GraphBuilder b2;
    const ValueId xb = b2.input("xb", {2, 2, 3, 5, 8});
    const ValueId back =
        b2.op(Op::LayoutFromBlocked, {xb},
              {{"block", Attribute::of_int(8)}, {"channels", Attribute::of_int(13)}});
    Graph g2 = b2.finish({back});
    EXPECT_EQ(evaluate(g2, {blocked})[0], in);
}

TEST(LayoutPass, RejectsBadBlocksAndShapes) {
    Graph g = conv_net();
    EXPECT_THROW(convert_layout_nchwc(g, 0), UserError);
    PipelineOptions o;
    o.level = 3;
    o.layout_block = -2;
    EXPECT_THROW(optimize(g, o), UserError);
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 16, 5, 3, 8});
    b.op(Op::LayoutFromBlocked, {x},
         {{"block", Attribute::of_int(8)}, {"channels", Attribute::of_int(7)}}); // needs 1 block
    EXPECT_THROW(infer_shapes(b.g), UserError);
}

TEST(LayoutPass, Resnet18AtO3IsBlockedWithConversionsAtTheEdges) {
    const std::string path = kModels + "/resnet18/model.onnx";
    if (!fs::exists(path))
        GTEST_SKIP() << "model missing: " << path;
    Graph g = import_onnx(path);
    PipelineOptions o;
    o.level = 3;
    o.disabled_passes.insert("winograd"); // passes_winograd_test.cpp covers what follows it
    optimize(g, o);
    // Every conv is blocked (conv1 reads its 3 channels as one block), and so is the max pool.
    EXPECT_EQ(count_op(g, Op::Conv), 0);
    EXPECT_EQ(count_op(g, Op::ConvBlocked), 20);
    EXPECT_EQ(count_op(g, Op::MaxPoolBlocked), 1);
    expect_no_cancelling_pairs(g);
    // Conversions only where NCHW data meets blocked ops: into blocked ops from the graph
    // input or a non-blocked op, out of them into non-blocked ops.
    auto blocked_op = [](Op op) {
        return op == Op::ConvBlocked || op == Op::Relu || op == Op::Add || op == Op::MaxPoolBlocked;
    };
    for (NodeId id : g.node_ids()) {
        const Node& n = g.node(id);
        if (n.op == Op::LayoutToBlocked) {
            const NodeId p = g.value(n.inputs[0]).producer;
            EXPECT_TRUE(p == kNoNode || !blocked_op(g.node(p).op)) << describe_node(n, id);
            for (NodeId u : g.users(n.outputs[0]))
                EXPECT_TRUE(blocked_op(g.node(u).op)) << describe_node(g.node(u), u);
        }
        if (n.op == Op::LayoutFromBlocked) {
            for (NodeId u : g.users(n.outputs[0]))
                EXPECT_FALSE(blocked_op(g.node(u).op)) << describe_node(g.node(u), u);
        }
    }
    // The image into conv1 (one block of 3 channels) -> the blocked stages ->
    // GlobalAveragePool (NCHW).
    EXPECT_EQ(count_op(g, Op::LayoutToBlocked), 1) << to_string(g);
    EXPECT_EQ(count_op(g, Op::LayoutFromBlocked), 1) << to_string(g);
}

} // namespace
} // namespace tessera::graph
