// fuse_ops: pattern classification, grouping rules on small built graphs, and partitions of
// the real models (coverage, dependency order, and group-by-group evaluation equal to the
// whole-graph evaluation).
#include <algorithm>

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "passes_util.h"
#include "tessera/graph/fusion.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/graph/pipeline.h"
#include "tessera/graph/tensor_io.h"
#include "tessera/support/rng.h"

namespace tessera::graph {
namespace {

Attributes conv_attrs() {
    return {{"kernel_shape", Attribute::of_ints({3, 3})},
            {"strides", Attribute::of_ints({1, 1})},
            {"dilations", Attribute::of_ints({1, 1})},
            {"pads", Attribute::of_ints({1, 1, 1, 1})},
            {"group", Attribute::of_int(1)}};
}

std::vector<std::string> patterns(const std::vector<FusedGroup>& groups) {
    std::vector<std::string> p;
    for (const FusedGroup& grp : groups)
        p.push_back(grp.pattern);
    return p;
}

/// Checks that `groups` partition g's live nodes, that each group's nodes are in topological
/// order and its inputs are available when it starts, that inputs/outputs are consistent, and
/// that running the groups' nodes group by group reproduces evaluate(g).
void check_partition(const Graph& g, const std::vector<FusedGroup>& groups, uint64_t seed,
                     const std::vector<TensorData>* given_inputs = nullptr) {
    std::vector<int> seen(g.node_capacity(), 0);
    std::vector<uint8_t> available(g.num_values(), 0);
    for (ValueId v : g.inputs)
        available[v] = 1;
    for (size_t v = 0; v < g.num_values(); ++v)
        if (g.value(static_cast<ValueId>(v)).is_constant())
            available[v] = 1;
    std::vector<TensorData> in = given_inputs ? *given_inputs : random_inputs(g, seed);
    std::map<ValueId, TensorData> env;
    for (size_t i = 0; i < g.inputs.size(); ++i)
        env.emplace(g.inputs[i], in[i]);
    for (const FusedGroup& grp : groups) {
        ASSERT_FALSE(grp.nodes.empty());
        for (ValueId v : grp.inputs)
            EXPECT_TRUE(available[v])
                << grp.pattern << " reads " << g.value(v).name << " before it is defined";
        for (NodeId n : grp.nodes) {
            ++seen[n];
            const Node& node = g.node(n);
            std::vector<const TensorData*> args;
            for (ValueId v : node.inputs) {
                if (v == kNoValue) {
                    args.push_back(nullptr);
                    continue;
                }
                ASSERT_TRUE(available[v]) << describe_node(node, n) << " in " << grp.pattern;
                const Value& val = g.value(v);
                args.push_back(val.is_constant() ? val.constant.get() : &env.at(v));
            }
            std::vector<TensorData> outs = evaluate_node(node, args, n);
            for (size_t i = 0; i < node.outputs.size(); ++i)
                if (node.outputs[i] != kNoValue) {
                    available[node.outputs[i]] = 1;
                    env.insert_or_assign(node.outputs[i], outs[i]);
                }
        }
        if (grp.anchor != kNoNode) {
            EXPECT_EQ(grp.kind, OpPattern::OutFusable);
        }
    }
    for (NodeId n : g.node_ids())
        EXPECT_EQ(seen[n], 1) << describe_node(g.node(n), n);
    std::vector<TensorData> want = evaluate(g, in);
    for (size_t i = 0; i < g.outputs.size(); ++i) {
        testing::Closeness c = testing::compare(env.at(g.outputs[i]), want[i], 1e-5, 1e-6);
        EXPECT_TRUE(c.ok) << "output " << i << ": " << c.message;
    }
}

TEST(FusionPattern, ClassifiesOps) {
    GraphBuilder b;
    ValueId x = b.input("x", {2, 3, 5, 5});
    ValueId w = b.constant_f32({4, 3, 3, 3}, 1);
    ValueId c = b.op(Op::Conv, {x, w}, conv_attrs());
    ValueId r = b.op(Op::Relu, {c});
    ValueId a = b.op(Op::Add, {r, b.scalar(1.0f)});
    ValueId s = b.op(Op::Add, {r, a});
    ValueId t = b.op(Op::Transpose, {s}, {{"perm", Attribute::of_ints({0, 2, 3, 1})}});
    ValueId m = b.op(Op::ReduceMean, {t}, {{"axes", Attribute::of_ints({3})}});
    Graph g = b.finish({m});
    std::vector<NodeId> ids = g.topological_order();
    EXPECT_EQ(node_pattern(g, ids[0]), OpPattern::OutFusable);
    EXPECT_EQ(node_pattern(g, ids[1]), OpPattern::Elementwise);
    EXPECT_EQ(node_pattern(g, ids[2]), OpPattern::Broadcast);
    EXPECT_EQ(node_pattern(g, ids[3]), OpPattern::Elementwise);
    EXPECT_EQ(node_pattern(g, ids[4]), OpPattern::Injective);
    EXPECT_EQ(node_pattern(g, ids[5]), OpPattern::Reduction);
    EXPECT_STREQ(op_pattern_name(OpPattern::OutFusable), "out-fusable");
    EXPECT_EQ(fused_op_name(Op::Conv), "conv2d");
    EXPECT_EQ(fused_op_name(Op::Relu), "relu");
    EXPECT_EQ(fused_op_name(Op::GlobalAveragePool), "global_avg_pool2d");
}

TEST(FuseOps, ConvBiasReluChain) {
    GraphBuilder b;
    ValueId x = b.input("x", {1, 3, 7, 7});
    ValueId c = b.op(Op::Conv, {x, b.constant_f32({5, 3, 3, 3}, 2)}, conv_attrs());
    ValueId a = b.op(Op::Add, {c, b.constant_f32({1, 5, 1, 1}, 3)});
    ValueId r = b.op(Op::Relu, {a});
    Graph g = b.finish({r});
    std::vector<FusedGroup> groups = fuse_ops(g);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].pattern, "conv2d+add+relu");
    EXPECT_EQ(groups[0].kind, OpPattern::OutFusable);
    EXPECT_EQ(groups[0].anchor, g.value(c).producer);
    EXPECT_EQ(groups[0].inputs.size(), 3u); // x, weights, bias
    EXPECT_EQ(groups[0].outputs, std::vector<ValueId>{r});
    EXPECT_EQ(group_signature(g, groups[0]), "conv2d+add+relu f32[1,5,7,7]");
    check_partition(g, groups, 11);
}

TEST(FuseOps, ConvTakesTheLayoutConversionOfItsImageAsPrologue) {
    // The layout pass's stem: LayoutToBlocked(image, block 3) -> ConvBlocked -> Relu is one
    // kernel with the conv as anchor; a conversion that another node also reads stays apart.
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 3, 13, 7});
    const ValueId xb = b.op(Op::LayoutToBlocked, {x}, {{"block", Attribute::of_int(3)}});
    Attributes conv = conv_attrs();
    conv["block"] = Attribute::of_int(4);
    conv["depthwise"] = Attribute::of_int(0);
    const ValueId c = b.op(Op::ConvBlocked, {xb, b.constant_f32({2, 1, 3, 3, 3, 4}, 2)}, conv);
    const ValueId r = b.op(Op::Relu, {c});
    const ValueId y =
        b.op(Op::Relu, {b.op(Op::ConvBlocked, {xb, b.constant_f32({2, 1, 3, 3, 3, 4}, 3)}, conv)});
    Graph shared = b.finish({r, y});
    std::vector<FusedGroup> groups = fuse_ops(shared);
    std::vector<std::string> names = patterns(groups);
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names,
              (std::vector<std::string>{"conv2d_nchwc+relu", "conv2d_nchwc+relu", "to_nchwc"}));
    check_partition(shared, groups, 5);

    GraphBuilder b2;
    const ValueId x2 = b2.input("x", {1, 3, 13, 7});
    const ValueId xb2 = b2.op(Op::LayoutToBlocked, {x2}, {{"block", Attribute::of_int(3)}});
    const ValueId c2 = b2.op(Op::ConvBlocked, {xb2, b2.constant_f32({2, 1, 3, 3, 3, 4}, 2)}, conv);
    const ValueId r2 = b2.op(Op::Relu, {c2});
    Graph g = b2.finish({r2});
    groups = fuse_ops(g);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].pattern, "to_nchwc+conv2d_nchwc+relu");
    EXPECT_EQ(groups[0].kind, OpPattern::OutFusable);
    EXPECT_EQ(groups[0].anchor, g.value(c2).producer);
    EXPECT_EQ(groups[0].inputs.size(), 2u); // the image and the weights
    check_partition(g, groups, 7);
}

TEST(FuseOps, MultipleConsumersEndGroup) {
    // The conv output feeds Relu and Sigmoid: the conv stays alone; each consumer chain fuses
    // on its own, the final Add joins the first chain's group, and the second chain, read by
    // that group alone, merges into it (one kernel, no intermediate written).
    GraphBuilder b;
    ValueId x = b.input("x", {1, 2, 13, 13});
    ValueId c = b.op(Op::Conv, {x, b.constant_f32({3, 2, 3, 3}, 4)}, conv_attrs());
    ValueId r = b.op(Op::Relu, {c});
    ValueId s = b.op(Op::Sigmoid, {c});
    ValueId t = b.op(Op::Tanh, {s});
    ValueId a = b.op(Op::Add, {r, t});
    Graph g = b.finish({a});
    std::vector<FusedGroup> groups = fuse_ops(g);
    EXPECT_EQ(patterns(groups), (std::vector<std::string>{"conv2d", "relu+sigmoid+tanh+add"}));
    check_partition(g, groups, 12);
}

TEST(FuseOps, ConvTakesAnElementwiseDiamondOverItsOutput) {
    // SiLU after a conv (EfficientNet): the conv's output is read by Sigmoid and by the Mul
    // that also reads the Sigmoid; both join the conv's group, which writes only the product.
    // When the Sigmoid's result is also a graph output, the diamond has two ends and the conv
    // stays alone.
    for (const bool sigmoid_out : {false, true}) {
        GraphBuilder b;
        ValueId x = b.input("x", {1, 2, 13, 11});
        ValueId c = b.op(Op::Conv, {x, b.constant_f32({3, 2, 3, 3}, 4)}, conv_attrs());
        ValueId sg = b.op(Op::Sigmoid, {c});
        ValueId m = b.op(Op::Mul, {c, sg});
        Graph g = sigmoid_out ? b.finish({m, sg}) : b.finish({m});
        std::vector<FusedGroup> groups = fuse_ops(g);
        if (sigmoid_out) {
            EXPECT_EQ(patterns(groups), (std::vector<std::string>{"conv2d", "sigmoid", "mul"}));
        } else {
            EXPECT_EQ(patterns(groups), (std::vector<std::string>{"conv2d+sigmoid+mul"}));
            ASSERT_EQ(groups.size(), 1u);
            EXPECT_EQ(groups[0].outputs, std::vector<ValueId>{m});
        }
        check_partition(g, groups, 13);
    }
}

TEST(FuseOps, GraphOutputIsNotFusedThrough) {
    GraphBuilder b;
    ValueId x = b.input("x", {7, 13});
    ValueId m = b.op(Op::MatMul, {x, b.constant_f32({13, 1}, 5)});
    ValueId r = b.op(Op::Relu, {m});
    Graph g = b.finish({m, r});
    std::vector<FusedGroup> groups = fuse_ops(g);
    EXPECT_EQ(patterns(groups), (std::vector<std::string>{"matmul", "relu"}));
    check_partition(g, groups, 13);
}

TEST(FuseOps, InjectivePrologueIntoReductionClosesGroup) {
    GraphBuilder b;
    ValueId x = b.input("x", {1, 7, 13});
    ValueId e = b.op(Op::Exp, {x});
    ValueId t = b.op(Op::Transpose, {e}, {{"perm", Attribute::of_ints({0, 2, 1})}});
    ValueId s = b.op(Op::ReduceSum, {t, b.ints({2})}, {{"keepdims", Attribute::of_int(1)}});
    ValueId r = b.op(Op::Relu, {s});
    Graph g = b.finish({r});
    std::vector<FusedGroup> groups = fuse_ops(g);
    ASSERT_EQ(patterns(groups), (std::vector<std::string>{"exp+transpose+reduce_sum", "relu"}));
    EXPECT_EQ(groups[0].kind, OpPattern::Reduction);
    EXPECT_EQ(groups[1].kind, OpPattern::Elementwise);
    check_partition(g, groups, 14);
}

TEST(FuseOps, NormalizationTakesAnElementwiseEpilogue) {
    // A Softmax keeps its input's shape: the elementwise nodes over its output (a bf16
    // build's cast) join its group instead of making a kernel of their own. A second reader
    // of the result ends the group as anywhere else.
    GraphBuilder b;
    ValueId x = b.input("x", {2, 5, 13});
    ValueId s = b.op(Op::Softmax, {x}, {{"axis", Attribute::of_int(-1)}});
    ValueId m = b.op(Op::Mul, {s, b.constant_f32({1}, 3)});
    ValueId r = b.op(Op::Relu, {m});
    ValueId s2 = b.op(Op::Softmax, {r}, {{"axis", Attribute::of_int(1)}});
    ValueId t = b.op(Op::Tanh, {s2});
    ValueId a = b.op(Op::Add, {s2, t});
    Graph g = b.finish({a});
    std::vector<FusedGroup> groups = fuse_ops(g);
    ASSERT_EQ(patterns(groups),
              (std::vector<std::string>{"softmax+mul+relu", "softmax", "tanh+add"}));
    EXPECT_EQ(groups[0].kind, OpPattern::Reduction);
    check_partition(g, groups, 17);
}

TEST(FuseOps, AnchorDoesNotAbsorbInjectiveOrWiderBroadcast) {
    GraphBuilder b;
    ValueId x = b.input("x", {1, 13});
    ValueId y = b.input("y", {7, 13});
    ValueId gm = b.op(Op::Gemm, {x, b.constant_f32({13, 13}, 6)});
    ValueId wide = b.op(Op::Add, {gm, y}); // [7,13]: wider than the anchor's output
    ValueId gm2 = b.op(Op::Gemm, {wide, b.constant_f32({13, 1}, 7)});
    ValueId fl = b.op(Op::Flatten, {gm2}, {{"axis", Attribute::of_int(0)}});
    Graph g = b.finish({fl});
    std::vector<FusedGroup> groups = fuse_ops(g);
    EXPECT_EQ(patterns(groups), (std::vector<std::string>{"gemm", "add", "gemm", "flatten"}));
    check_partition(g, groups, 15);
}

TEST(FuseOps, DiamondDoesNotCreateCycle) {
    // a = relu(x); b = opaque(Shape-free) path through a Gemm anchor; c = a + gemm(a) would
    // fuse the Add into a's group only if that did not make the groups cyclic: a has two
    // users, so it ends its group anyway; the Add joins the Gemm's epilogue.
    GraphBuilder b;
    ValueId x = b.input("x", {7, 7});
    ValueId a = b.op(Op::Relu, {x});
    ValueId m = b.op(Op::Gemm, {a, b.constant_f32({7, 7}, 8)});
    ValueId c = b.op(Op::Add, {a, m});
    Graph g = b.finish({c});
    std::vector<FusedGroup> groups = fuse_ops(g);
    EXPECT_EQ(patterns(groups), (std::vector<std::string>{"relu", "gemm+add"}));
    check_partition(g, groups, 16);
}

TEST(FuseOps, InjectiveChainsJoinTheGroupThatAloneReadsThem) {
    // Two transposed and reshaped inputs concatenated along the last axis (a blocked channel
    // shuffle's lanes): the chain the greedy pass did not join merges into the Concat's group,
    // one kernel. Along the first axis, where each element reads one part but the kernel
    // evaluates them all, the second chain stays a kernel of its own.
    for (int64_t axis : {2, 0}) {
        GraphBuilder b;
        auto part = [&](const std::string& name) {
            ValueId x = b.input(name, {5, 3});
            ValueId t = b.op(Op::Transpose, {x}, {{"perm", Attribute::of_ints({1, 0})}});
            return b.op(Op::Reshape, {t, b.ints({3, 5, 1})});
        };
        ValueId p = part("x"), q = part("y");
        ValueId c = b.op(Op::Concat, {p, q}, {{"axis", Attribute::of_int(axis)}});
        Graph g = b.finish({b.op(Op::Relu, {c})});
        std::vector<FusedGroup> groups = fuse_ops(g);
        if (axis == 2)
            EXPECT_EQ(patterns(groups), (std::vector<std::string>{
                                            "transpose+reshape+transpose+reshape+concat+relu"}));
        else
            EXPECT_EQ(patterns(groups), (std::vector<std::string>{
                                            "transpose+reshape", "transpose+reshape+concat+relu"}));
        check_partition(g, groups, 17);
    }
}

TEST(FuseOps, EpilogueOperandsJoinTheAnchorGroup) {
    // The residual of a conv's epilogue comes from an elementwise group of its own (an int8
    // model's DequantizeLinear): it merges into the conv's group, whose epilogue computes it.
    GraphBuilder b;
    ValueId x = b.input("x", {1, 3, 7, 7});
    ValueId y = b.input("y", {1, 5, 7, 7});
    ValueId s = b.op(Op::Sigmoid, {y});
    ValueId t = b.op(Op::Mul, {s, b.scalar(0.5f)});
    ValueId c = b.op(Op::Conv, {x, b.constant_f32({5, 3, 3, 3}, 2)}, conv_attrs());
    ValueId a = b.op(Op::Add, {c, t});
    ValueId r = b.op(Op::Relu, {a});
    Graph g = b.finish({r});
    std::vector<FusedGroup> groups = fuse_ops(g);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].anchor, g.value(c).producer);
    EXPECT_EQ(groups[0].kind, OpPattern::OutFusable);
    EXPECT_EQ(groups[0].outputs, std::vector<ValueId>{r});
    check_partition(g, groups, 17);
}

TEST(FuseOps, BytesForALaterKernelCrossAsBytes) {
    // A conv's quantized bytes, dequantized for an Add that also reads a conv computed later
    // (an int8 bottleneck's shortcut): the Add cannot join the first conv's kernel, so that
    // kernel ends at the bytes and the dequantization joins the Add's epilogue, instead of
    // writing four times the bytes as f32. A dequantization whose reader reads nothing later
    // stays in its producer's kernel.
    for (bool later : {true, false}) {
        SCOPED_TRACE(later ? "the Add reads a later conv" : "the Add reads only earlier values");
        GraphBuilder b;
        ValueId x = b.input("x", {1, 3, 7, 7});
        ValueId y = b.input("y", {1, 5, 7, 7});
        ValueId zp = b.constant(TensorData::from_vector<uint8_t>({}, {uint8_t(120)}, DType::U8));
        ValueId d = b.op(Op::Conv, {x, b.constant_f32({5, 3, 3, 3}, 2)}, conv_attrs());
        ValueId q = b.op(Op::QuantizeLinear, {d, b.scalar(1.0f), zp});
        ValueId dq = b.op(Op::DequantizeLinear, {q, b.scalar(0.05f), zp});
        ValueId other =
            later ? b.op(Op::Conv, {x, b.constant_f32({5, 3, 3, 3}, 3)}, conv_attrs()) : y;
        ValueId r = b.op(Op::Relu, {b.op(Op::Add, {other, dq})});
        Graph g = b.finish({r});
        std::vector<FusedGroup> groups = fuse_ops(g);
        if (later) {
            EXPECT_EQ(patterns(groups),
                      (std::vector<std::string>{"conv2d+quantize_linear",
                                                "dequantize_linear+conv2d+add+relu"}));
            EXPECT_EQ(groups[0].outputs, std::vector<ValueId>{q});
        } else {
            EXPECT_EQ(patterns(groups), (std::vector<std::string>{
                                            "conv2d+quantize_linear+dequantize_linear+add+relu"}));
        }
        check_partition(g, groups, 19);
    }
}

TEST(FuseOps, EpilogueOperandsStayApartWhenOthersReadThemOrTheShapeDiffers) {
    // The sigmoid's value is also a graph output, and the second operand's group computes over
    // a bias shape (broadcast into the epilogue): neither merges.
    GraphBuilder b;
    ValueId x = b.input("x", {1, 3, 7, 7});
    ValueId y = b.input("y", {1, 5, 7, 7});
    ValueId z = b.input("z", {1, 5, 1, 1});
    ValueId s = b.op(Op::Sigmoid, {y});
    ValueId bias = b.op(Op::Tanh, {z});
    ValueId c = b.op(Op::Conv, {x, b.constant_f32({5, 3, 3, 3}, 2)}, conv_attrs());
    ValueId a = b.op(Op::Add, {c, s});
    ValueId m = b.op(Op::Add, {a, bias});
    Graph g = b.finish({m, s});
    std::vector<FusedGroup> groups = fuse_ops(g);
    EXPECT_EQ(patterns(groups), (std::vector<std::string>{"sigmoid", "tanh", "conv2d+add+add"}));
    check_partition(g, groups, 18);
}

TEST(FuseOps, RandomChainsPartitionCorrectly) {
    // Random DAGs of unary/binary elementwise ops, transposes and reductions over one shape.
    for (uint64_t seed = 1; seed <= 25; ++seed) {
        Rng rng(seed);
        GraphBuilder b;
        std::vector<ValueId> pool{b.input("x", {3, 3}), b.input("y", {3, 3})};
        for (int i = 0; i < 12; ++i) {
            ValueId p = pool[rng.uniform_int(0, static_cast<int64_t>(pool.size()) - 1)];
            ValueId q = pool[rng.uniform_int(0, static_cast<int64_t>(pool.size()) - 1)];
            switch (rng.uniform_int(0, 4)) {
            case 0:
                pool.push_back(b.op(Op::Tanh, {p}));
                break;
            case 1:
                pool.push_back(b.op(Op::Add, {p, q}));
                break;
            case 2:
                pool.push_back(b.op(Op::Transpose, {p}, {{"perm", Attribute::of_ints({1, 0})}}));
                break;
            case 3:
                pool.push_back(b.op(Op::Mul, {b.op(Op::ReduceMax, {p},
                                                   {{"axes", Attribute::of_ints({1})},
                                                    {"keepdims", Attribute::of_int(1)}}),
                                              q}));
                break;
            default:
                pool.push_back(b.op(Op::Gemm, {p, q}));
                break;
            }
        }
        Graph g = b.finish({pool.back(), pool[pool.size() / 2]});
        g.remove_dead_nodes();
        SCOPED_TRACE("seed " + std::to_string(seed));
        check_partition(g, fuse_ops(g), seed);
    }
}

// ---- the real models, after the default (-O2) pipeline ----

namespace fs = std::filesystem;
const std::string kModels = TESSERA_SOURCE_DIR "/../shared/models";

struct FusionCase {
    const char* name;
    size_t groups;
    std::map<std::string, int> patterns; // pattern -> count (only those listed are checked)
};
void PrintTo(const FusionCase& c, std::ostream* os) { *os << c.name; }

class FusionModelTest : public ::testing::TestWithParam<FusionCase> {};

TEST_P(FusionModelTest, PartitionsAndEvaluates) {
    const FusionCase& fc = GetParam();
    const std::string path = kModels + "/" + fc.name + "/model.onnx";
    if (!fs::exists(path))
        GTEST_SKIP() << "model missing: " << path;
    Graph g = import_onnx(path);
    PipelineOptions opt;
    opt.level = 2;
    std::ostringstream log;
    opt.out = &log;
    optimize(g, opt);
    std::vector<FusedGroup> groups = fuse_ops(g);
    std::map<std::string, int> counts;
    for (const FusedGroup& grp : groups)
        ++counts[grp.pattern];
    std::string all;
    for (const auto& [p, n] : counts)
        all += p + " x" + std::to_string(n) + "\n";
    EXPECT_EQ(groups.size(), fc.groups) << all;
    for (const auto& [p, n] : fc.patterns)
        EXPECT_EQ(counts[p], n) << p << "\n" << all;
    // Group-by-group evaluation on the model's own test data.
    const std::string data = kModels + "/" + fc.name + "/test_data_set_0";
    std::vector<TensorData> inputs;
    for (size_t i = 0; i < g.inputs.size(); ++i)
        inputs.push_back(read_npy(data + "/input_" + std::to_string(i) + ".npy"));
    check_partition(g, groups, 0, &inputs);
}

INSTANTIATE_TEST_SUITE_P(
    Models, FusionModelTest,
    ::testing::Values(
        FusionCase{"resnet18",
                   24,
                   {{"conv2d+relu", 9},
                    {"conv2d+add+relu", 8},
                    {"conv2d", 3},
                    {"max_pool2d", 1},
                    {"global_avg_pool2d", 1},
                    {"flatten", 1},
                    {"gemm", 1}}},
        FusionCase{"bert_emb_op13",
                   60,
                   {{"matmul+add", 12},
                    {"matmul+add+add", 8},
                    {"matmul+add+gelu", 4},
                    {"matmul+div", 4},
                    {"reshape+transpose", 12},
                    {"layer_norm", 8},
                    {"softmax", 4}}},
        FusionCase{"mlp", 4, {{"gemm+relu", 2}, {"gemm", 1}, {"softmax", 1}}},
        FusionCase{"small_cnn", 7, {{"conv2d+relu", 2}, {"max_pool2d", 2}, {"gemm+relu", 1}}},
        FusionCase{"conv_bn_relu", 3, {{"conv2d+relu", 2}, {"conv2d+add+relu", 1}}}),
    [](const auto& info) { return std::string(info.param.name); });

} // namespace
} // namespace tessera::graph
