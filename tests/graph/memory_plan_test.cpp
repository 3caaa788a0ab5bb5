// plan_memory: buffers never hold two simultaneously live values, sizes fit, in-place reuse
// only where legal, and the totals obey live bound <= planned <= naive, on built graphs and
// the real models.
#include <gtest/gtest.h>

#include <filesystem>

#include "passes_util.h"
#include "tessera/graph/fusion.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/graph/memory_plan.h"
#include "tessera/graph/pipeline.h"
#include "tessera/support/rng.h"

namespace tessera::graph {
namespace {

/// Checks every invariant of a plan against the groups it was made for.
void check_plan(const Graph& g, const std::vector<FusedGroup>& groups, const MemoryPlan& plan) {
    int64_t naive = 0;
    for (const BufferAssignment& a : plan.assignments) {
        ASSERT_GE(a.buffer, 0);
        ASSERT_LT(a.buffer, static_cast<int>(plan.buffer_bytes.size()));
        EXPECT_LE(a.bytes, plan.buffer_bytes[a.buffer]) << g.value(a.value).name;
        EXPECT_LE(a.def, a.last_use);
        naive += a.bytes;
        // def is the group defining the value, last_use the last group reading it.
        const FusedGroup& d = groups[a.def];
        EXPECT_NE(std::find(d.outputs.begin(), d.outputs.end(), a.value), d.outputs.end());
        int last = a.def;
        for (size_t s = 0; s < groups.size(); ++s)
            if (std::find(groups[s].inputs.begin(), groups[s].inputs.end(), a.value) !=
                groups[s].inputs.end())
                last = static_cast<int>(s);
        EXPECT_EQ(a.last_use, last) << g.value(a.value).name;
    }
    // Pairwise: values sharing a buffer have disjoint live intervals, except an in-place value
    // defined exactly at the other's last use, by an elementwise group that reads it.
    for (size_t i = 0; i < plan.assignments.size(); ++i)
        for (size_t j = i + 1; j < plan.assignments.size(); ++j) {
            const BufferAssignment& a = plan.assignments[i];
            const BufferAssignment& b = plan.assignments[j];
            if (a.buffer != b.buffer)
                continue;
            const bool disjoint = a.last_use < b.def || b.last_use < a.def;
            if (disjoint)
                continue;
            const BufferAssignment& later = a.def < b.def ? b : a;
            const BufferAssignment& earlier = a.def < b.def ? a : b;
            EXPECT_TRUE(later.in_place && earlier.last_use == later.def &&
                        groups[later.def].kind == OpPattern::Elementwise)
                << g.value(a.value).name << " and " << g.value(b.value).name
                << " overlap in buffer " << a.buffer;
            const FusedGroup& grp = groups[later.def];
            EXPECT_NE(std::find(grp.inputs.begin(), grp.inputs.end(), earlier.value),
                      grp.inputs.end());
        }
    EXPECT_EQ(plan.naive_bytes, naive);
    int64_t planned = 0;
    for (int64_t b : plan.buffer_bytes)
        planned += b;
    EXPECT_EQ(plan.planned_bytes, planned);
    EXPECT_LE(plan.planned_bytes, plan.naive_bytes);
    EXPECT_LE(plan.live_lower_bound, plan.planned_bytes);
}

TEST(MemoryPlan, ChainReusesBuffers) {
    // x -> gemm -> sigmoid(ends: two users) ... a chain of anchors: each intermediate dies at
    // the next group, so two buffers suffice for any length.
    GraphBuilder b;
    ValueId v = b.input("x", {7, 13});
    for (int i = 0; i < 6; ++i)
        v = b.op(Op::Gemm, {v, b.constant_f32({13, 13}, 20 + i)});
    Graph g = b.finish({v});
    std::vector<FusedGroup> groups = fuse_ops(g);
    ASSERT_EQ(groups.size(), 6u);
    MemoryPlan plan = plan_memory(g, groups);
    check_plan(g, groups, plan);
    EXPECT_EQ(plan.assignments.size(), 5u); // the last gemm writes the graph output
    EXPECT_EQ(plan.buffer_bytes.size(), 2u);
    EXPECT_EQ(plan.naive_bytes, 5 * 7 * 13 * 4);
    EXPECT_EQ(plan.planned_bytes, 2 * 7 * 13 * 4);
    EXPECT_EQ(plan.in_place_count, 0);
}

TEST(MemoryPlan, ElementwiseGroupRunsInPlace) {
    // gemm -> (tanh, sigmoid chains) -> add: the add group is elementwise and its inputs die
    // there, so its output takes one of their buffers.
    GraphBuilder b;
    ValueId x = b.input("x", {7, 13});
    ValueId m = b.op(Op::Gemm, {x, b.constant_f32({13, 13}, 30)});
    ValueId t = b.op(Op::Tanh, {m});
    ValueId s = b.op(Op::Sigmoid, {m});
    ValueId a = b.op(Op::Add, {t, s});
    ValueId out = b.op(Op::Gemm, {a, b.constant_f32({13, 1}, 31)});
    Graph g = b.finish({out});
    std::vector<FusedGroup> groups = fuse_ops(g);
    MemoryPlan plan = plan_memory(g, groups);
    check_plan(g, groups, plan);
    EXPECT_EQ(plan.in_place_count, 1);
    EXPECT_LT(plan.planned_bytes, plan.naive_bytes);
}

TEST(MemoryPlan, RandomGraphsKeepInvariants) {
    for (uint64_t seed = 1; seed <= 30; ++seed) {
        Rng rng(seed);
        GraphBuilder b;
        std::vector<ValueId> pool{b.input("x", {5, 5})};
        for (int i = 0; i < 16; ++i) {
            ValueId p = pool[rng.uniform_int(0, static_cast<int64_t>(pool.size()) - 1)];
            ValueId q = pool[rng.uniform_int(0, static_cast<int64_t>(pool.size()) - 1)];
            switch (rng.uniform_int(0, 3)) {
            case 0:
                pool.push_back(b.op(Op::Relu, {p}));
                break;
            case 1:
                pool.push_back(b.op(Op::Mul, {p, q}));
                break;
            case 2:
                pool.push_back(b.op(Op::Gemm, {p, q}));
                break;
            default:
                // A different size: a [1,5] row broadcast back.
                pool.push_back(b.op(Op::Add, {b.op(Op::ReduceSum, {p, b.ints({0})},
                                                   {{"keepdims", Attribute::of_int(1)}}),
                                              q}));
                break;
            }
        }
        Graph g = b.finish({pool.back()});
        g.remove_dead_nodes();
        SCOPED_TRACE("seed " + std::to_string(seed));
        std::vector<FusedGroup> groups = fuse_ops(g);
        check_plan(g, groups, plan_memory(g, groups));
    }
}

namespace fs = std::filesystem;

TEST(MemoryPlan, ModelsPlanBelowNaive) {
    const std::string models = TESSERA_SOURCE_DIR "/../shared/models";
    if (!fs::is_directory(models))
        GTEST_SKIP() << "shared models not found at " << models;
    for (const char* name : {"resnet18", "bert_emb_op13", "mlp", "small_cnn", "conv_bn_relu"}) {
        const std::string path = models + "/" + name + "/model.onnx";
        if (!fs::exists(path))
            continue;
        SCOPED_TRACE(name);
        Graph g = import_onnx(path);
        std::ostringstream log;
        PipelineOptions opt;
        opt.out = &log;
        optimize(g, opt);
        std::vector<FusedGroup> groups = fuse_ops(g);
        MemoryPlan plan = plan_memory(g, groups);
        check_plan(g, groups, plan);
        std::cout << "[ memplan  ] " << name << ": " << groups.size() << " groups, "
                  << plan.assignments.size() << " intermediates, planned " << plan.planned_bytes
                  << " B in " << plan.buffer_bytes.size() << " buffers, naive " << plan.naive_bytes
                  << " B, live bound " << plan.live_lower_bound << " B, " << plan.in_place_count
                  << " in place\n";
        if (plan.assignments.size() > 2) {
            EXPECT_LT(plan.planned_bytes, plan.naive_bytes);
        }
    }
}

} // namespace
} // namespace tessera::graph
