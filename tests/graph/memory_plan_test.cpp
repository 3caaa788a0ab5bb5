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
    // The first group that defines and the last that reads each value.
    auto live_range = [&](ValueId v) {
        int def = -1, last = -1;
        for (size_t s = 0; s < groups.size(); ++s) {
            if (def < 0 && std::find(groups[s].outputs.begin(), groups[s].outputs.end(), v) !=
                               groups[s].outputs.end())
                def = static_cast<int>(s);
            if (std::find(groups[s].inputs.begin(), groups[s].inputs.end(), v) !=
                groups[s].inputs.end())
                last = static_cast<int>(s);
        }
        return std::make_pair(def, std::max(def, last));
    };
    int64_t naive = 0;
    for (const BufferAssignment& a : plan.assignments) {
        ASSERT_GE(a.buffer, 0);
        ASSERT_LT(a.buffer, static_cast<int>(plan.buffer_bytes.size()));
        EXPECT_LE(a.bytes, plan.buffer_bytes[a.buffer]) << g.value(a.value).name;
        EXPECT_LE(a.def, a.last_use);
        naive += a.view_of < 0 ? a.bytes : 0;
        auto [def, last] = live_range(a.value);
        // An in-place concat's output lives from its first operand to the last read of it or
        // of an operand; its operands lie inside it.
        for (const BufferAssignment& view : plan.assignments)
            if (view.view_of >= 0 && plan.assignments[view.view_of].value == a.value) {
                const auto [vdef, vlast] = live_range(view.value);
                def = std::min(def, vdef);
                last = std::max(last, vlast);
            }
        EXPECT_EQ(a.def, def) << g.value(a.value).name;
        EXPECT_EQ(a.last_use, last) << g.value(a.value).name;
        if (a.view_of >= 0) {
            const BufferAssignment& whole = plan.assignments[a.view_of];
            EXPECT_EQ(a.buffer, whole.buffer) << g.value(a.value).name;
            EXPECT_GE(a.offset, 0);
            EXPECT_LE(a.offset + a.bytes, whole.bytes) << g.value(a.value).name;
            EXPECT_EQ(a.offset % 64, 0);
            EXPECT_FALSE(a.in_place);
        }
    }
    // Pairwise: values sharing a buffer have disjoint live intervals, except an in-place value
    // defined exactly at the other's last use, by an elementwise group that reads it, and a
    // concat's output and its operands (whose bytes do not overlap each other).
    for (size_t i = 0; i < plan.assignments.size(); ++i)
        for (size_t j = i + 1; j < plan.assignments.size(); ++j) {
            const BufferAssignment& a = plan.assignments[i];
            const BufferAssignment& b = plan.assignments[j];
            if (a.buffer != b.buffer)
                continue;
            const bool disjoint = a.last_use < b.def || b.last_use < a.def;
            if (disjoint)
                continue;
            if (a.view_of == static_cast<int>(j) || b.view_of == static_cast<int>(i))
                continue;
            if (a.view_of >= 0 && a.view_of == b.view_of) {
                EXPECT_TRUE(a.offset + a.bytes <= b.offset || b.offset + b.bytes <= a.offset)
                    << g.value(a.value).name << " and " << g.value(b.value).name;
                continue;
            }
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

Attributes conv_1x1() {
    return {{"kernel_shape", Attribute::of_ints({1, 1})},
            {"pads", Attribute::of_ints({0, 0, 0, 0})},
            {"strides", Attribute::of_ints({1, 1})},
            {"dilations", Attribute::of_ints({1, 1})},
            {"group", Attribute::of_int(1)}};
}

TEST(MemoryPlan, ConcatOperandsAreWrittenInsideItsOutput) {
    // Two convs concatenated along the channels of a batch of 1, read by a third: the concat
    // runs nothing, its operands are views at byte offsets 0 and 8 x 5 x 8 x 4 of its output,
    // which is live from the first conv on. With a batch of 2 the operands are not contiguous
    // slices: a copy. A graph input is not the memory plan's to place: a copy too.
    for (int64_t batch : {1, 2}) {
        GraphBuilder b;
        const ValueId x = b.input("x", {batch, 8, 5, 8});
        const ValueId p = b.op(Op::Conv, {x, b.constant_f32({8, 8, 1, 1}, 1)}, conv_1x1());
        const ValueId q = b.op(Op::Conv, {x, b.constant_f32({12, 8, 1, 1}, 2)}, conv_1x1());
        const ValueId c = b.op(Op::Concat, {p, q}, {{"axis", Attribute::of_int(1)}});
        const ValueId r = b.op(Op::Conv, {c, b.constant_f32({3, 20, 1, 1}, 3)}, conv_1x1());
        const ValueId y = b.op(Op::Concat, {x, r}, {{"axis", Attribute::of_int(1)}});
        Graph g = b.finish({y});
        std::vector<FusedGroup> groups = fuse_ops(g);
        MemoryPlan plan = plan_memory(g, groups);
        SCOPED_TRACE("batch " + std::to_string(batch));
        check_plan(g, groups, plan);
        int in_place = 0, views = 0;
        for (const FusedGroup& grp : groups)
            in_place += grp.operands_in_place;
        for (const BufferAssignment& a : plan.assignments)
            if (a.view_of >= 0) {
                ++views;
                EXPECT_EQ(a.offset, a.value == p ? 0 : 8 * 5 * 8 * 4);
                EXPECT_EQ(plan.assignments[a.view_of].value, c);
            }
        EXPECT_EQ(in_place, batch == 1 ? 1 : 0);
        EXPECT_EQ(views, batch == 1 ? 2 : 0);
    }
}

TEST(MemoryPlan, RandomGraphsKeepInvariants) {
    int in_place_concats = 0;
    for (uint64_t seed = 1; seed <= 30; ++seed) {
        Rng rng(seed);
        GraphBuilder b;
        std::vector<ValueId> pool{b.input("x", {8, 8})};
        for (int i = 0; i < 16; ++i) {
            ValueId p = pool[rng.uniform_int(0, static_cast<int64_t>(pool.size()) - 1)];
            ValueId q = pool[rng.uniform_int(0, static_cast<int64_t>(pool.size()) - 1)];
            switch (rng.uniform_int(0, 4)) {
            case 0:
                pool.push_back(b.op(Op::Relu, {p}));
                break;
            case 4: {
                // Two Gemms one above the other, [16, 8] (contiguous slices), back to [8, 8]
                // by a third: an in-place concat (it runs alone: an anchor absorbs no
                // producer).
                const ValueId l = b.op(Op::Gemm, {p, b.constant_f32({8, 8}, 40 + i)});
                const ValueId r = b.op(Op::Gemm, {q, b.constant_f32({8, 8}, 60 + i)});
                pool.push_back(b.op(
                    Op::Gemm, {b.constant_f32({8, 16}, 80 + i),
                               b.op(Op::Concat, {l, r}, {{"axis", Attribute::of_int(0)}})}));
                break;
            }
            default:
                // A different size: a [1,8] row broadcast back.
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
        for (const FusedGroup& grp : groups)
            in_place_concats += grp.operands_in_place;
    }
    EXPECT_GT(in_place_concats, 0); // the graphs exercise the views
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
