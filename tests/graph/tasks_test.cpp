// Task extraction: every fused group's Compute, evaluated by te::ReferenceEvaluator on the
// group's input values from the graph reference evaluator, reproduces the group's output
// values; identical groups share a task; keys and order are deterministic.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <optional>

#include "passes_util.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/graph/pipeline.h"
#include "tessera/graph/tasks.h"
#include "tessera/graph/tensor_io.h"
#include "tessera/support/error.h"
#include "tessera/support/rng.h"
#include "tessera/te/flops.h"
#include "tessera/te/op_library.h"
#include "tessera/te/reference_eval.h"
#include "tessera/te/workload_key.h"

namespace tessera::graph {
namespace {

namespace fs = std::filesystem;

const std::string kModels = TESSERA_SOURCE_DIR "/../shared/models";

/// Checks `max_samples` elements (all when the output is smaller; else random ones plus the
/// first and last) of each output of the group's Compute against the graph's values.
void check_group(const Graph& g, const FusedGroup& group,
                 const std::vector<std::shared_ptr<const TensorData>>& vals, int64_t max_samples,
                 uint64_t seed) {
    const GroupCompute gc = group_compute(g, group);
    ASSERT_EQ(gc.compute.inputs.size(), gc.inputs.size());
    ASSERT_EQ(gc.outputs, group.outputs);
    te::ReferenceEvaluator ev;
    for (size_t i = 0; i < gc.inputs.size(); ++i) {
        const Value& v = g.value(gc.inputs[i]);
        EXPECT_EQ(gc.compute.inputs[i].shape(), v.shape) << v.name;
        ev.bind(gc.compute.inputs[i], vals[gc.inputs[i]]->raw());
    }
    Rng rng(seed);
    for (size_t o = 0; o < gc.outputs.size(); ++o) {
        const TensorData& want = *vals[gc.outputs[o]];
        const te::Tensor& t = gc.compute.outputs[o];
        ASSERT_EQ(t.shape(), want.shape()) << group.pattern;
        const std::vector<double> w = want.as_f64();
        const int64_t n = want.numel();
        std::vector<int64_t> picks;
        if (n <= max_samples) {
            for (int64_t i = 0; i < n; ++i)
                picks.push_back(i);
        } else {
            picks = {0, n - 1};
            while (static_cast<int64_t>(picks.size()) < max_samples)
                picks.push_back(rng.uniform_int(0, n - 1));
        }
        int bad = 0;
        for (int64_t flat : picks) {
            std::vector<int64_t> idx(want.shape().size());
            int64_t rest = flat;
            for (size_t d = idx.size(); d-- > 0;) {
                idx[d] = rest % want.shape()[d];
                rest /= want.shape()[d];
            }
            const double got = ev.at(t, idx);
            if (!(std::fabs(got - w[flat]) <= 1e-5 + 1e-4 * std::fabs(w[flat])) && bad++ < 3)
                ADD_FAILURE() << group.pattern << " output " << o << " element " << flat
                              << ": compute " << got << ", graph " << w[flat];
        }
    }
}

Graph optimized_model(const std::string& name, int level = 3) {
    Graph g = import_onnx(kModels + "/" + name + "/model.onnx");
    PipelineOptions o;
    o.level = level;
    optimize(g, o);
    return g;
}

std::vector<TensorData> model_inputs(const Graph& g, const std::string& name) {
    std::vector<TensorData> in;
    for (size_t i = 0; i < g.inputs.size(); ++i)
        in.push_back(read_npy(kModels + "/" + name + "/test_data_set_0/input_" + std::to_string(i) +
                              ".npy"));
    return in;
}

struct ModelCase {
    const char* name;
    int64_t samples; ///< elements checked per group output
    int tasks;       ///< unique tasks after -O3 (measured; the docs table quotes them)
};
void PrintTo(const ModelCase& c, std::ostream* os) { *os << c.name; }

class TaskModelTest : public ::testing::TestWithParam<ModelCase> {};

TEST_P(TaskModelTest, GroupComputesReproduceGraphValues) {
    const ModelCase& mc = GetParam();
    if (!fs::exists(kModels + "/" + mc.name + "/model.onnx"))
        GTEST_SKIP() << "model missing: " << mc.name;
    const Graph g = optimized_model(mc.name);
    const std::vector<FusedGroup> groups = fuse_ops(g);
    const auto vals = evaluate_all_values(g, model_inputs(g, mc.name));
    for (size_t i = 0; i < groups.size(); ++i) {
        SCOPED_TRACE(groups[i].pattern);
        check_group(g, groups[i], vals, mc.samples, 1000 + i);
    }
    const std::vector<Task> tasks = extract_tasks(g, groups);
    EXPECT_EQ(static_cast<int>(tasks.size()), mc.tasks);
    int covered = 0;
    for (const Task& t : tasks) {
        covered += t.count();
        EXPECT_EQ(t.workload_key.size(), 64u);
        EXPECT_EQ(t.pattern, groups[t.groups[0]].pattern);
        EXPECT_EQ(t.flops, te::count_flops(t.compute.compute));
        for (int gi : t.groups)
            EXPECT_EQ(te::workload_key(group_compute(g, groups[gi]).compute), t.workload_key);
    }
    EXPECT_EQ(covered, static_cast<int>(groups.size()));
    // First-occurrence order: each task's first group comes after the previous task's.
    for (size_t i = 1; i < tasks.size(); ++i)
        EXPECT_LT(tasks[i - 1].groups[0], tasks[i].groups[0]);
}

INSTANTIATE_TEST_SUITE_P(SharedModels, TaskModelTest,
                         ::testing::Values(ModelCase{"conv_bn_relu", 1500, 8},
                                           ModelCase{"small_cnn", 4096, 7},
                                           ModelCase{"mlp", 4096, 4}, ModelCase{"resnet18", 12, 27},
                                           ModelCase{"bert_emb_op13", 12, 11}),
                         [](const ::testing::TestParamInfo<ModelCase>& info) {
                             return std::string(info.param.name);
                         });

TEST(Tasks, Resnet18DeduplicatesIdenticalConvs) {
    if (!fs::exists(kModels + "/resnet18/model.onnx"))
        GTEST_SKIP() << "resnet18 missing";
    const Graph g = optimized_model("resnet18");
    const std::vector<FusedGroup> groups = fuse_ops(g);
    const std::vector<Task> tasks = extract_tasks(g, groups);
    int shared = 0, products_7x7 = 0;
    for (const Task& t : tasks) {
        shared += t.count() > 1;
        // The three stride-1 3x3 convs of 512 channels on 7x7, in F(2x2): one batched product
        // of 16 transformed positions x 16 tiles x 512 x 512 multiply-adds, their epilogues
        // (bias, residual, relu) in the output transforms.
        const Shape out = g.value(t.compute.outputs[0]).shape;
        if (t.pattern == "matmul" && out == Shape{16, 16, 512}) {
            EXPECT_EQ(t.flops, 2 * int64_t(16) * 16 * 512 * 512);
            EXPECT_EQ(t.count(), 3);
            ++products_7x7;
        }
    }
    EXPECT_EQ(products_7x7, 1);
    EXPECT_GE(shared, 3);
    // Extraction is deterministic.
    const std::vector<Task> again = extract_tasks(g, groups);
    ASSERT_EQ(again.size(), tasks.size());
    for (size_t i = 0; i < tasks.size(); ++i) {
        EXPECT_EQ(again[i].workload_key, tasks[i].workload_key);
        EXPECT_EQ(again[i].groups, tasks[i].groups);
    }
}

TEST(Tasks, BuiltGraphWithBroadcastsAndDataMovement) {
    GraphBuilder b;
    const ValueId x = b.input("x", {1, 7, 13});
    const ValueId y = b.input("y", {13});
    const ValueId t = b.op(Op::Transpose, {x}, {{"perm", Attribute::of_ints({0, 2, 1})}});
    const ValueId r = b.op(Op::Reshape, {t, b.ints({13, 7})});
    const ValueId s = b.op(Op::Slice, {r, b.ints({1}), b.ints({12}), b.ints({0})});
    const ValueId c = b.op(Op::Concat, {s, s}, {{"axis", Attribute::of_int(1)}});
    const ValueId m = b.op(Op::ReduceMean, {c},
                           {{"axes", Attribute::of_ints({1})}, {"keepdims", Attribute::of_int(0)}});
    const ValueId a = b.op(Op::Add, {b.op(Op::Sigmoid, {y}), b.scalar(0.5f)});
    const ValueId p = b.op(Op::Pad, {a, b.ints({1, 0})});
    const ValueId q =
        b.op(Op::Mul, {b.op(Op::Slice, {p, b.ints({0}), b.ints({11}), b.ints({0})}), m});
    const ValueId cl = b.op(Op::Clip, {q, b.scalar(-0.1f), b.scalar(0.3f)});
    // Gather rows of x's transpose by runtime indices (in [0, 3]) and by constant negative ones.
    const ValueId idx = b.input("idx", {2, 3}, DType::I64);
    const ValueId gi = b.op(Op::Gather, {r, idx}, {{"axis", Attribute::of_int(0)}});
    const ValueId gc =
        b.op(Op::Gather, {x, b.ints({-1, 0, -13})}, {{"axis", Attribute::of_int(2)}});
    Graph g = b.finish({cl, m, gi, gc});
    const std::vector<FusedGroup> groups = fuse_ops(g);
    const auto vals = evaluate_all_values(g, random_inputs(g, 5));
    for (size_t i = 0; i < groups.size(); ++i) {
        SCOPED_TRACE(groups[i].pattern);
        check_group(g, groups[i], vals, 1000, i);
    }
    // Shape operands (Reshape's shape, Slice's starts, Pad's pads, Clip's bounds) are baked in;
    // the only integer inputs left are Gather's indices.
    for (const FusedGroup& grp : groups)
        for (ValueId v : group_compute(g, grp).inputs) {
            if (g.value(v).dtype != DType::F32) {
                EXPECT_EQ(g.users(v).size(), 1u) << g.value(v).name;
            }
        }
}

TEST(Tasks, RuntimeClipBoundIsAKernelInput) {
    // Clip's bounds are scalar parameters: a bound fed at run time is read by the kernel (one
    // more Compute input), a constant one is baked into the expression (none).
    GraphBuilder b;
    const ValueId x = b.input("x", {3, 5});
    const ValueId lo = b.input("lo", {});
    const ValueId hi = b.scalar(0.5f);
    const ValueId y = b.op(Op::Clip, {x, lo, hi});
    Graph g = b.finish({y});
    const std::vector<Task> tasks = extract_tasks(g, fuse_ops(g));
    ASSERT_EQ(tasks.size(), 1u);
    const std::vector<ValueId>& ins = tasks[0].compute.inputs;
    ASSERT_EQ(ins.size(), 2u);
    EXPECT_EQ(g.value(ins[0]).name, "x");
    EXPECT_EQ(g.value(ins[1]).name, "lo");
}

TEST(Tasks, CountFlopsOfMatmulAndConv) {
    const te::Tensor a = te::placeholder({7, 13}, ir::DataType::f32(), "a");
    const te::Tensor bm = te::placeholder({13, 5}, ir::DataType::f32(), "b");
    EXPECT_EQ(te::count_flops(te::make_compute({a, bm}, {te::matmul(a, bm)})), 2 * 7 * 13 * 5);
    // relu(matmul): one max per output element on top.
    EXPECT_EQ(te::count_flops(te::make_compute({a, bm}, {te::relu(te::matmul(a, bm))})),
              2 * 7 * 13 * 5 + 7 * 5);
    const te::Tensor x = te::placeholder({1, 3, 9, 9}, ir::DataType::f32(), "x");
    const te::Tensor w = te::placeholder({4, 3, 3, 3}, ir::DataType::f32(), "w");
    // Padding and layout stages are data movement: 0 flops.
    const te::Tensor y = te::conv2d(x, w, te::Conv2dParams::make(1, 1));
    EXPECT_EQ(te::count_flops(te::make_compute({x, w}, {y})), 2 * 4 * 81 * 27);
    const te::Tensor xb = te::layout_to_nchwc(x, 8);
    EXPECT_EQ(te::count_flops(te::make_compute({x}, {xb})), 0);
    // bf16 products count as f32 ones: two flops per multiply-add (the words stages move data).
    const te::Tensor ab = te::placeholder({7, 14}, ir::DataType::bf16(), "ab");
    const te::Tensor bw = te::placeholder({7, 5}, ir::DataType::i32(), "bw");
    EXPECT_EQ(te::count_flops(te::make_compute({ab, bw}, {te::bf16_matmul(ab, bw)})),
              2 * 7 * 14 * 5);
    const te::Tensor yb = te::placeholder({9, 14}, ir::DataType::bf16(), "yb");
    EXPECT_EQ(te::count_flops(te::make_compute({ab, yb}, {te::bf16_matmul_nt(ab, yb)})),
              2 * 7 * 14 * 9);
    // 8-bit products too (a word's dot4_u8s8 is four multiply-adds), plus the dequantizing
    // scale's one float multiply per output; the integer offset add is no float operation.
    const te::Tensor xq = te::placeholder({7, 12}, ir::DataType::u8(), "xq");
    const te::Tensor wq = te::placeholder({3, 5}, ir::DataType::i32(), "wq");
    const te::Tensor off = te::placeholder({5}, ir::DataType::i32(), "off");
    const te::Tensor sc = te::placeholder({5}, ir::DataType::f32(), "sc");
    EXPECT_EQ(te::count_flops(te::make_compute({xq, wq, off, sc}, {te::qmatmul(xq, wq, off, sc)})),
              2 * 7 * 12 * 5 + 7 * 5);
}

} // namespace
} // namespace tessera::graph
