// The winograd pass (blocked 3x3 convs -> WinogradInput, MatMul, WinogradOutput): numerics
// before/after on random inputs with the reference evaluator, which convs it takes and which
// tile each gets, and the transforms themselves against the direct convolution.
#include <gtest/gtest.h>

#include <filesystem>

#include "passes_util.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/graph/pipeline.h"
#include "tessera/graph/winograd.h"
#include "tessera/support/error.h"

namespace tessera::graph {
namespace {

namespace fs = std::filesystem;

const std::string kModels = TESSERA_SOURCE_DIR "/../shared/models";

Attributes conv_attrs(int64_t k, int64_t stride, std::vector<int64_t> pads, int64_t group = 1) {
    return {{"kernel_shape", Attribute::of_ints({k, k})},
            {"strides", Attribute::of_ints({stride, stride})},
            {"dilations", Attribute::of_ints({1, 1})},
            {"pads", Attribute::of_ints(std::move(pads))},
            {"group", Attribute::of_int(group)}};
}

// Odd sizes throughout: 13 input channels (padded to 16 in blocks of 8), 19 outputs, an 11x9
// image, uneven pads so the last tiles hang over the image. Two Winograd candidates (the second
// with a bias, a ReLU and a residual Add to fuse), and three convs that must stay direct:
// stride 2, depthwise and 1x1.
Graph conv_net() {
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 13, 11, 9});
    const ValueId a =
        b.op(Op::Conv, {x, b.constant_f32({19, 13, 3, 3}, 1)}, conv_attrs(3, 1, {1, 0, 1, 1}));
    const ValueId r = b.op(Op::Relu, {a});
    const ValueId c =
        b.op(Op::Conv, {r, b.constant_f32({19, 19, 3, 3}, 2), b.constant_f32({19}, 3)},
             conv_attrs(3, 1, {1, 1, 1, 1}));
    const ValueId s = b.op(Op::Relu, {b.op(Op::Add, {c, a})});
    const ValueId strided =
        b.op(Op::Conv, {s, b.constant_f32({16, 19, 3, 3}, 4)}, conv_attrs(3, 2, {1, 1, 1, 1}));
    const ValueId dw = b.op(Op::Conv, {strided, b.constant_f32({16, 1, 3, 3}, 5)},
                            conv_attrs(3, 1, {1, 1, 1, 1}, 16));
    const ValueId pw =
        b.op(Op::Conv, {dw, b.constant_f32({16, 16, 1, 1}, 6)}, conv_attrs(1, 1, {0, 0, 0, 0}));
    return b.finish({s, pw});
}

// Winograd rounds relative to the sizes of the terms it sums, not of the result: an output
// that cancels to near 0 keeps an error of ~1e-5 (F(2x2)) to ~1e-4 (F(4x4)) of the outputs'
// magnitude, as in every Winograd implementation.
constexpr double kScaleTol = 2e-4;

// Every threshold at its least: the pass takes every eligible conv of a small graph.
WinogradOptions any_size(int64_t max_tile) {
    WinogradOptions o;
    o.max_tile = max_tile;
    o.min_channels = 1;
    o.min_channels_f4 = 1;
    o.min_tiles = 1;
    return o;
}

std::vector<int64_t> tiles_of(const Graph& g) {
    std::vector<int64_t> tiles;
    for (NodeId id : g.node_ids())
        if (g.node(id).op == Op::WinogradInput)
            tiles.push_back(g.node(id).attr_int("tile", 0));
    return tiles;
}

class WinogradTileTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(WinogradTileTest, ConvNetKeepsValuesAndRewritesOnlyStrideOneDenseThreeByThree) {
    const int64_t m = GetParam();
    Graph g = conv_net();
    check_pass(g, [](Graph& gr) { return convert_layout_nchwc(gr, 8); });
    PassResult r = check_pass(
        g, [&](Graph& gr) { return convert_conv_winograd(gr, any_size(m)); }, 7, kScaleTol);
    EXPECT_EQ(r.pass, "winograd");
    EXPECT_EQ(r.changes, 2);
    EXPECT_EQ(count_op(g, Op::WinogradInput), 2) << to_string(g);
    EXPECT_EQ(count_op(g, Op::WinogradOutput), 2);
    EXPECT_EQ(count_op(g, Op::MatMul), 2);
    EXPECT_EQ(count_op(g, Op::ConvBlocked), 3); // stride 2, depthwise, 1x1
    EXPECT_EQ(tiles_of(g), (std::vector<int64_t>{m, m}));
    // The transformed weights [alpha^2, C, K] cover the padded channels (19 outputs -> 24).
    for (NodeId id : g.node_ids()) {
        const Node& n = g.node(id);
        if (n.op != Op::MatMul)
            continue;
        const Shape& u = g.value(n.inputs[1]).shape;
        EXPECT_EQ(u[0], (m + 2) * (m + 2));
        EXPECT_EQ(u[2], 24);
        EXPECT_TRUE(g.value(n.inputs[1]).is_constant());
    }
}

INSTANTIATE_TEST_SUITE_P(Tiles, WinogradTileTest, ::testing::Values(2, 4));

TEST(WinogradPass, TakesTheLargestTileThatLeavesEnoughTilesAndSkipsSmallConvs) {
    // 11x8 outputs: 3x2 = 6 tiles of 4x4, 6x4 = 24 tiles of 2x2.
    for (const auto& [min_tiles, want] : std::vector<std::pair<int64_t, std::vector<int64_t>>>{
             {6, {4, 4}}, {7, {2, 2}}, {24, {2, 2}}, {25, {}}}) {
        Graph g = conv_net();
        convert_layout_nchwc(g, 8);
        WinogradOptions o = any_size(4);
        o.min_tiles = min_tiles;
        check_pass(
            g, [&](Graph& gr) { return convert_conv_winograd(gr, o); }, 7, kScaleTol);
        EXPECT_EQ(tiles_of(g), want) << "min_tiles " << min_tiles;
    }
    // 16 padded input channels for the first conv, 24 for the second.
    for (const auto& [min_channels, convs] :
         std::vector<std::pair<int64_t, int>>{{16, 2}, {17, 1}, {25, 0}}) {
        Graph g = conv_net();
        convert_layout_nchwc(g, 8);
        WinogradOptions o = any_size(4);
        o.min_channels = o.min_channels_f4 = min_channels;
        EXPECT_EQ(convert_conv_winograd(g, o).changes, convs) << "min_channels " << min_channels;
    }
    // F(4x4) asks for more channels than F(2x2): the 16-channel conv falls back to F(2x2).
    {
        Graph g = conv_net();
        convert_layout_nchwc(g, 8);
        WinogradOptions o = any_size(4);
        o.min_channels_f4 = 17;
        check_pass(
            g, [&](Graph& gr) { return convert_conv_winograd(gr, o); }, 7, kScaleTol);
        std::vector<int64_t> tiles = tiles_of(g);
        std::sort(tiles.begin(), tiles.end());
        EXPECT_EQ(tiles, (std::vector<int64_t>{2, 4}));
        // And at most max_channels_f4: the 24-channel conv falls back to F(2x2).
        Graph h = conv_net();
        convert_layout_nchwc(h, 8);
        o.min_channels_f4 = 1;
        o.max_channels_f4 = 16;
        convert_conv_winograd(h, o);
        tiles = tiles_of(h);
        std::sort(tiles.begin(), tiles.end());
        EXPECT_EQ(tiles, (std::vector<int64_t>{2, 4}));
    }
    Graph off = conv_net();
    convert_layout_nchwc(off, 8);
    EXPECT_EQ(convert_conv_winograd(off, any_size(0)).changes, 0);
}

TEST(WinogradPass, RejectsUnsupportedTiles) {
    Graph g = conv_net();
    EXPECT_THROW(convert_conv_winograd(g, any_size(3)), UserError);
    EXPECT_THROW(winograd_matrices(6), UserError);
}

TEST(WinogradPass, TransformsComposeToTheDirectConvolutionOfOneTile) {
    // Y = At [(G g Gt) . (Bt d B)] A for one tile, through the tables, against the direct
    // correlation of a random 3x3 kernel with a random alpha x alpha tile.
    for (int64_t m : {2, 4}) {
        const int64_t a = m + 2, e = a * a;
        const TensorData w = testing::random_tensor({1, 1, 3, 3}, 11, 0.25f, 1.25f);
        const TensorData d = testing::random_tensor({a, a}, 12, -1.0f, 1.0f);
        const TensorData u = winograd_weight(w, m);
        const TensorData tin = winograd_input_table(m), tout = winograd_output_table(m);
        ASSERT_EQ(tin.shape(), (Shape{a, a}));
        ASSERT_EQ(tout.shape(), (Shape{m, a}));
        const float* bt = tin.data<float>();
        const float* at = tout.data<float>();
        std::vector<double> v(static_cast<size_t>(e));
        for (int64_t r = 0; r < e; ++r)
            for (int64_t q = 0; q < e; ++q)
                v[r] += double(bt[r / a * a + q / a]) * bt[r % a * a + q % a] * d.data<float>()[q];
        for (int64_t pos = 0; pos < m * m; ++pos) {
            double got = 0, want = 0;
            for (int64_t r = 0; r < e; ++r)
                got += double(at[pos / m * a + r / a]) * at[pos % m * a + r % a] *
                       u.data<float>()[r] * v[r];
            for (int64_t i = 0; i < 3; ++i)
                for (int64_t j = 0; j < 3; ++j)
                    want += w.data<float>()[i * 3 + j] *
                            d.data<float>()[(pos / m + i) * a + pos % m + j];
            EXPECT_NEAR(got, want, 1e-5 * (1 + std::abs(want))) << "F(" << m << ") at " << pos;
        }
    }
}

TEST(WinogradPass, Resnet18AtO3TakesEveryStrideOneConv) {
    const std::string path = kModels + "/resnet18/model.onnx";
    if (!fs::exists(path))
        GTEST_SKIP() << "model missing: " << path;
    Graph g = import_onnx(path);
    PipelineOptions o;
    o.level = 3;
    const std::vector<PassResult> log = optimize(g, o);
    ASSERT_EQ(log.back().pass, "winograd");
    // 56x56, 28x28 and 14x14 (4 + 3 + 3 convs; 16 tiles of 4x4 at 14x14) in F(4x4); the 7x7
    // stage (3, 16 tiles of 2x2) in F(2x2); the stem and the strided convs stay direct.
    std::vector<int64_t> tiles = tiles_of(g);
    std::sort(tiles.begin(), tiles.end());
    EXPECT_EQ(tiles, (std::vector<int64_t>{2, 2, 2, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4}));
    EXPECT_EQ(count_op(g, Op::ConvBlocked), 7);
    EXPECT_EQ(log.back().summary, "3 convs to F(2x2, 3x3), 10 convs to F(4x4, 3x3)");
}

} // namespace
} // namespace tessera::graph
