// The pipeline: options, levels, and the five shared models through -O3 against their
// reference outputs (|out - ref| <= 1e-5 + 1e-4 |ref|).
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "passes_util.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/graph/pipeline.h"
#include "tessera/graph/tensor_io.h"

namespace tessera::graph {
namespace {

namespace fs = std::filesystem;

const std::string kModels = TESSERA_SOURCE_DIR "/../shared/models";

PipelineOptions level(int l) {
    PipelineOptions o;
    o.level = l;
    return o;
}

// Relu(x * 1) with a dead branch and a foldable constant chain.
Graph small_graph() {
    GraphBuilder b;
    ValueId x = b.input("x", {7, 13});
    ValueId k = b.op(Op::Neg, {b.constant_f32({13}, 1)});
    ValueId v = b.op(Op::Mul, {x, b.scalar(1.0f)});
    ValueId y = b.op(Op::Relu, {b.op(Op::Add, {v, k})});
    b.op(Op::Exp, {x});
    return b.finish({y});
}

TEST(Pipeline, LevelsRunTheirPasses) {
    auto names = [](const std::vector<PassResult>& log) {
        std::vector<std::string> n;
        for (const PassResult& r : log)
            n.push_back(r.pass);
        return n;
    };
    Graph g0 = small_graph();
    EXPECT_EQ(names(optimize(g0, level(0))), (std::vector<std::string>{"shape-inference"}));
    EXPECT_EQ(g0.num_nodes(), 5u);
    Graph g1 = small_graph();
    EXPECT_EQ(
        names(optimize(g1, level(1))),
        (std::vector<std::string>{"shape-inference", "quantized-ops", "constant-folding", "dce"}));
    EXPECT_EQ(op_histogram(g1), (std::map<std::string, int>{{"Add", 1}, {"Mul", 1}, {"Relu", 1}}));
    Graph g2 = small_graph();
    EXPECT_EQ(
        names(optimize(g2, level(2))),
        (std::vector<std::string>{"shape-inference", "quantized-ops", "constant-folding", "dce",
                                  "algebraic-simplification", "cse", "dce", "padding-taps"}));
    EXPECT_EQ(op_histogram(g2), (std::map<std::string, int>{{"Add", 1}, {"Relu", 1}}));
    Graph g3 = small_graph();
    std::vector<PassResult> log = optimize(g3, level(3));
    EXPECT_EQ(op_histogram(g3), (std::map<std::string, int>{{"Add", 1}, {"Relu", 1}}));
    ASSERT_GE(log.size(), 2u);
    ASSERT_GE(log.size(), 3u);
    // O3 ends with the layout and winograd passes (no conv here).
    EXPECT_EQ(log[log.size() - 2].pass, "layout");
    EXPECT_EQ(log.back().pass, "winograd");
    EXPECT_EQ(log[log.size() - 2].changes, 0);
    EXPECT_EQ(log.back().changes, 0);
    EXPECT_EQ(log[log.size() - 3].changes, 0); // the sweeps stop at one that changes nothing
    EXPECT_EQ(pipeline_pass_names().size(), 13u);
}

TEST(Pipeline, PrintAfterTimeAndDisable) {
    Graph g = small_graph();
    std::ostringstream os;
    PipelineOptions o;
    o.level = 2;
    o.print_after = "constant-folding";
    o.time_passes = true;
    o.disabled_passes = {"algebraic-simplification"};
    o.out = &os;
    std::vector<PassResult> log = optimize(g, o);
    const std::string text = os.str();
    EXPECT_NE(text.find("// after constant-folding"), std::string::npos) << text;
    EXPECT_EQ(text.find("// after dce"), std::string::npos) << text;
    EXPECT_NE(text.find("time "), std::string::npos) << text;
    for (const PassResult& r : log)
        EXPECT_NE(r.pass, "algebraic-simplification");
    EXPECT_EQ(count_op(g, Op::Mul), 1); // x * 1 stays: simplification was disabled
    std::ostringstream all;
    Graph g2 = small_graph();
    o.print_after = "all";
    o.disabled_passes.clear();
    o.out = &all;
    optimize(g2, o);
    EXPECT_NE(all.str().find("// after algebraic-simplification"), std::string::npos);
    std::ostringstream lines;
    print_pass_log(lines, log, true);
    EXPECT_NE(lines.str().find("constant-folding: 1 changes, 5 -> 4 nodes"), std::string::npos)
        << lines.str();
}

TEST(Pipeline, RejectsBadOptions) {
    Graph g = small_graph();
    EXPECT_THROW(optimize(g, level(4)), UserError);
    PipelineOptions o;
    o.print_after = "no-such-pass";
    EXPECT_THROW(optimize(g, o), UserError);
    o.print_after.clear();
    o.disabled_passes = {"fusion"};
    EXPECT_THROW(optimize(g, o), UserError);
}

struct ModelCase {
    const char* name;
    std::map<std::string, int> after; // op histogram after -O3
};
void PrintTo(const ModelCase& c, std::ostream* os) { *os << c.name; }

class PipelineModelTest : public ::testing::TestWithParam<ModelCase> {};

TEST_P(PipelineModelTest, O3ReproducesReferenceOutputs) {
    const ModelCase& mc = GetParam();
    const std::string dir = kModels + "/" + mc.name;
    if (!fs::exists(dir + "/model.onnx"))
        GTEST_SKIP() << "model missing: " << dir;
    Graph g = import_onnx(dir + "/model.onnx");
    const Graph original = g;
    const size_t nodes_in = g.num_nodes();
    PipelineOptions o;
    o.level = 3;
    std::vector<PassResult> log = optimize(g, o);
    g.verify();
    EXPECT_EQ(infer_shapes(g), 0);
    EXPECT_EQ(op_histogram(g), mc.after) << to_string(g);
    std::cout << "[ pipeline ] " << mc.name << ": nodes " << nodes_in << " -> " << g.num_nodes()
              << " after -O3\n";
    print_pass_log(std::cout, log, true);
    for (int set = 0; set < 2; ++set) {
        const std::string data = dir + "/test_data_set_" + std::to_string(set);
        std::vector<TensorData> inputs;
        for (size_t i = 0; i < g.inputs.size(); ++i)
            inputs.push_back(read_npy(data + "/input_" + std::to_string(i) + ".npy"));
        std::vector<TensorData> outs = evaluate(g, inputs);
        ASSERT_EQ(outs.size(), g.outputs.size());
        for (size_t i = 0; i < outs.size(); ++i) {
            TensorData ref = read_npy(data + "/output_" + std::to_string(i) + ".npy");
            testing::Closeness c = testing::compare(outs[i], ref, 1e-4, 1e-5);
            EXPECT_TRUE(c.ok) << mc.name << " set " << set << " output " << i << ": " << c.message;
        }
    }
    // -O3 reached a fixpoint: running it again changes nothing.
    for (const PassResult& r : optimize(g, o))
        EXPECT_EQ(r.changes, 0) << mc.name << " " << r.pass << ": " << r.summary;
    // The interface is unchanged.
    ASSERT_EQ(g.outputs.size(), original.outputs.size());
    for (size_t i = 0; i < g.outputs.size(); ++i) {
        EXPECT_EQ(g.value(g.outputs[i]).name, original.value(original.outputs[i]).name);
        EXPECT_EQ(g.value(g.outputs[i]).shape, original.value(original.outputs[i]).shape);
    }
}

INSTANTIATE_TEST_SUITE_P(
    SharedModels, PipelineModelTest,
    // -O3 ends with the layout pass: convs with at least 8 output channels become ConvBlocked
    // (NCHW8c; the first convs of resnet18 and small_cnn read their 3 and 1 input channels as
    // one block), max pools of blocked values MaxPoolBlocked, global pools ReduceMean over the
    // blocked rows and columns, with conversions only where blocked values meet NCHW ops
    // (Flatten, the graph input and outputs);
    // then the winograd pass takes resnet18's 13 stride-1 3x3 convs.
    ::testing::Values(ModelCase{"resnet18",
                                {{"Add", 8},
                                 {"ConvBlocked", 7},
                                 {"Flatten", 1},
                                 {"Gemm", 1},
                                 {"LayoutFromBlocked", 1},
                                 {"LayoutToBlocked", 1},
                                 {"MatMul", 13},
                                 {"MaxPoolBlocked", 1},
                                 {"ReduceMean", 1},
                                 {"Relu", 17},
                                 {"WinogradInput", 13},
                                 {"WinogradOutput", 13}}},
                      ModelCase{"bert_emb_op13",
                                {{"Add", 32},
                                 {"Div", 4},
                                 {"Gelu", 4},
                                 {"LayerNormalization", 8},
                                 {"MatMul", 32},
                                 {"Reshape", 16},
                                 {"Softmax", 4},
                                 {"Transpose", 16}}},
                      ModelCase{"mlp", {{"Gemm", 3}, {"Relu", 2}, {"Softmax", 1}}},
                      ModelCase{"small_cnn",
                                {{"ConvBlocked", 2},
                                 {"Flatten", 1},
                                 {"Gemm", 2},
                                 {"LayoutFromBlocked", 1},
                                 {"LayoutToBlocked", 1},
                                 {"MaxPoolBlocked", 2},
                                 {"Relu", 3}}},
                      // Its two 3x3 convs (16 and 32 channels) in F(2x2).
                      ModelCase{"conv_bn_relu",
                                {{"Add", 1},
                                 {"ConvBlocked", 1},
                                 {"LayoutFromBlocked", 1},
                                 {"LayoutToBlocked", 1},
                                 {"MatMul", 2},
                                 {"Relu", 3},
                                 {"WinogradInput", 2},
                                 {"WinogradOutput", 2}}}),
    [](const ::testing::TestParamInfo<ModelCase>& info) { return std::string(info.param.name); });

} // namespace
} // namespace tessera::graph
