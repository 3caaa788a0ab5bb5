// The real models of ../shared/models: import, shape inference, reference evaluation of both
// test data sets against the ONNX Runtime outputs (|out - ref| <= 1e-5 + 1e-4 |ref|).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "graph_test_util.h"
#include "tessera/graph/evaluate.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/graph/shape_inference.h"
#include "tessera/graph/tensor_io.h"

namespace tessera::graph {
namespace {

namespace fs = std::filesystem;

const std::string kModels = TESSERA_SOURCE_DIR "/../shared/models";

struct ModelCase {
    const char* name;
    int outputs;
    std::map<std::string, int> histogram; // nodes after import (Constants become values)
};

void PrintTo(const ModelCase& c, std::ostream* os) { *os << c.name; }

class ModelTest : public ::testing::TestWithParam<ModelCase> {
  protected:
    void SetUp() override {
        if (!fs::is_directory(kModels))
            GTEST_SKIP() << "shared models not found at " << kModels;
        dir_ = kModels + "/" + GetParam().name;
        if (!fs::exists(dir_ + "/model.onnx"))
            GTEST_SKIP() << "model missing: " << dir_;
    }
    std::string dir_;
};

TEST_P(ModelTest, ImportsAndMatchesReferenceOutputs) {
    const ModelCase& mc = GetParam();
    Graph g = import_onnx(dir_ + "/model.onnx");
    g.verify();
    EXPECT_EQ(op_histogram(g), mc.histogram) << to_string(g);
    ASSERT_EQ(g.outputs.size(), static_cast<size_t>(mc.outputs));
    // Shape inference is idempotent on an imported graph.
    EXPECT_EQ(infer_shapes(g), 0);
    for (NodeId id : g.node_ids())
        for (ValueId v : g.node(id).outputs)
            EXPECT_TRUE(g.value(v).typed) << g.value(v).name;

    for (int set = 0; set < 2; ++set) {
        const std::string data = dir_ + "/test_data_set_" + std::to_string(set);
        std::vector<TensorData> inputs;
        for (size_t i = 0; i < g.inputs.size(); ++i) {
            TensorData npy = read_npy(data + "/input_" + std::to_string(i) + ".npy");
            TensorData pb = read_tensor_pb(data + "/input_" + std::to_string(i) + ".pb");
            EXPECT_EQ(npy, pb) << "input " << i << " of set " << set;
            inputs.push_back(npy);
        }
        auto t0 = std::chrono::steady_clock::now();
        std::vector<TensorData> outs = evaluate(g, inputs);
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ASSERT_EQ(outs.size(), g.outputs.size());
        for (size_t i = 0; i < outs.size(); ++i) {
            TensorData ref = read_npy(data + "/output_" + std::to_string(i) + ".npy");
            EXPECT_EQ(read_tensor_pb(data + "/output_" + std::to_string(i) + ".pb"), ref);
            testing::Closeness c = testing::compare(outs[i], ref, 1e-4, 1e-5);
            EXPECT_TRUE(c.ok) << mc.name << " set " << set << " output " << i << ": " << c.message;
            std::cout << "[ model    ] " << mc.name << " set " << set << " output " << i
                      << ": max |out - ref| " << c.max_abs << ", worst ratio to tolerance "
                      << c.worst_ratio << " (evaluated in " << secs << " s)\n";
        }
    }
}

INSTANTIATE_TEST_SUITE_P(
    SharedModels, ModelTest,
    ::testing::Values(
        ModelCase{"resnet18",
                  1,
                  {{"Add", 8},
                   {"Conv", 20},
                   {"Flatten", 1},
                   {"Gemm", 1},
                   {"GlobalAveragePool", 1},
                   {"MaxPool", 1},
                   {"Relu", 17}}},
        ModelCase{"bert_emb_op13",
                  1,
                  {{"Add", 52},
                   {"Div", 16},
                   {"Erf", 4},
                   {"MatMul", 32},
                   {"Mul", 16},
                   {"Pow", 8},
                   {"ReduceMean", 16},
                   {"Reshape", 16},
                   {"Softmax", 4},
                   {"Sqrt", 8},
                   {"Sub", 8},
                   {"Transpose", 16}}},
        ModelCase{"mlp", 2, {{"Gemm", 3}, {"Relu", 2}, {"Softmax", 1}}},
        ModelCase{"small_cnn",
                  1,
                  {{"Conv", 2}, {"Flatten", 1}, {"Gemm", 2}, {"MaxPool", 2}, {"Relu", 3}}},
        ModelCase{
            "conv_bn_relu", 1, {{"Add", 1}, {"BatchNormalization", 3}, {"Conv", 3}, {"Relu", 3}}}),
    [](const ::testing::TestParamInfo<ModelCase>& info) { return std::string(info.param.name); });

} // namespace
} // namespace tessera::graph
