// Whole ONNX models of the index ops and of the opset 18-21 data-movement forms built into a
// library (`tessera build`'s path) at -O0 and -O2 and run against the graph evaluator, each op
// also fed constants only, where it folds.
#include <gtest/gtest.h>

#include "graph_test_util.h"
#include "op_case.h"

namespace tessera::graph {
namespace {

using testing::ModelBuilder;

/// Attention through Einsum, block rearrangements, index selection, prefix sums and arg
/// reductions on runtime data; TopK and ScatterND on runtime data and on constants (folded, the
/// results then combined with runtime inputs).
std::string index_ops_model() {
    ModelBuilder mb(17);
    mb.input("x", DType::F32, {1, 8, 3, 5})
        .input("q", DType::F32, {1, 2, 7, 5})
        .input("k", DType::F32, {1, 2, 6, 5})
        .input("v", DType::F32, {1, 2, 6, 5})
        .input("ids", DType::I64, {1, 8, 3, 2})
        .input("y", DType::F32, {4, 3})
        .input("z", DType::F32, {3, 2})
        .input("w", DType::I64, {3, 2})
        .input("sc_upd_rt", DType::F32, {3, 3});
    mb.initializer("reps", i64s({1, 1, 2, 1}))
        .initializer("axis_last", TensorData::scalar<int64_t>(-1))
        .initializer("nd_idx", ints({1, 4, 2}, 1, -3, 2))
        .initializer("top_x", floats({3, 6}, 2))
        .initializer("top_k", i64s({2}))
        .initializer("sc_data", floats({4, 3}, 3))
        .initializer("sc_idx", testing::i64s({1, 3, 1}).reshaped({3, 1}))
        .initializer("sc_upd", floats({3, 3}, 4));
    mb.node("DepthToSpace", {"x"}, {"d2s"}).i("blocksize", 2).s("mode", "CRD");
    mb.node("SpaceToDepth", {"d2s"}, {"s2d"}).i("blocksize", 2);
    mb.node("Tile", {"s2d", "reps"}, {"tiled"});
    mb.node("CumSum", {"tiled", "axis_last"}, {"cs"}).i("exclusive", 1);
    mb.node("ArgMax", {"cs"}, {"am"}).i("axis", 1).i("keepdims", 0);
    mb.node("ArgMin", {"x"}, {"an"}).i("axis", -1).i("select_last_index", 1);
    mb.node("GatherElements", {"x", "ids"}, {"ge"}).i("axis", 3);
    mb.node("GatherND", {"x", "nd_idx"}, {"gnd"}).i("batch_dims", 1);
    mb.node("Size", {"x"}, {"size"});
    mb.node("Add", {"am", "size"}, {"am_size"});
    mb.node("Einsum", {"q", "k"}, {"scores"}).s("equation", "bhid,bhjd->bhij");
    mb.node("Softmax", {"scores"}, {"probs"}).i("axis", -1);
    mb.node("Einsum", {"probs", "v"}, {"attn"}).s("equation", "bhij,bhjd->bhid");
    mb.node("TopK", {"top_x", "top_k"}, {"top_v", "top_i"}).i("axis", 1);
    mb.node("Add", {"top_v", "z"}, {"top_vz"});
    mb.node("Add", {"top_i", "w"}, {"top_iw"});
    mb.node("TopK", {"y", "top_k"}, {"top_rt", "top_rt_i"}).i("axis", 0).i("largest", 0);
    mb.node("ScatterND", {"sc_data", "sc_idx", "sc_upd"}, {"sc"}).s("reduction", "add");
    mb.node("Mul", {"sc", "y"}, {"sc_y"});
    mb.node("ScatterND", {"y", "sc_idx", "sc_upd_rt"}, {"sc_rt"});
    mb.output("am_size", DType::I64)
        .output("an", DType::I64)
        .output("ge")
        .output("gnd")
        .output("attn")
        .output("top_vz")
        .output("top_iw", DType::I64)
        .output("sc_y")
        .output("cs")
        .output("sc_rt")
        .output("top_rt")
        .output("top_rt_i", DType::I64);
    return mb.bytes();
}

/// The opset 18-21 forms: Split by num_outputs with an uneven last chunk, Pad with axes and
/// with wrap, and the reshaping ops at opset 21.
std::string opset21_model() {
    ModelBuilder mb(21, 10);
    mb.input("p", DType::F32, {7, 13});
    mb.initializer("pads", i64s({2, 15}))
        .initializer("pad_axes", i64s({-1}))
        .initializer("shape", i64s({13, 3}))
        .initializer("ax0", i64s({0}))
        .initializer("idx", i64s({2, -1}))
        .initializer("starts", i64s({1}))
        .initializer("ends", i64s({3}))
        .initializer("eshape", i64s({2, 1, 1}));
    mb.node("Split", {"p"}, {"s0", "s1", "s2"}).i("axis", 0).i("num_outputs", 3);
    mb.node("Pad", {"s0", "pads", "", "pad_axes"}, {"wrapped"}).s("mode", "wrap");
    mb.node("Reshape", {"s1", "shape"}, {"r"});
    mb.node("Transpose", {"r"}, {"t"}).ints("perm", {1, 0});
    mb.node("Unsqueeze", {"t", "ax0"}, {"u"});
    mb.node("Squeeze", {"u", "ax0"}, {"sq"});
    mb.node("Flatten", {"sq"}, {"f"}).i("axis", 1);
    mb.node("Gather", {"f", "idx"}, {"g"}).i("axis", 0);
    mb.node("Slice", {"g", "starts", "ends", "ax0"}, {"sl"});
    mb.node("Concat", {"sl", "s2"}, {"c"}).i("axis", 0);
    mb.node("Expand", {"c", "eshape"}, {"e"});
    mb.node("Identity", {"e"}, {"out"});
    mb.output("wrapped").output("out");
    return mb.bytes();
}

class IndexingModelTest : public ::testing::TestWithParam<int> {};

TEST_P(IndexingModelTest, IndexOpsLibraryMatchesEvaluator) {
    const Graph built = expect_library_matches_evaluator(
        index_ops_model(),
        {floats({1, 8, 3, 5}, 11), floats({1, 2, 7, 5}, 12), floats({1, 2, 6, 5}, 13),
         floats({1, 2, 6, 5}, 14), ints({1, 8, 3, 2}, 15, -5, 4), floats({4, 3}, 16),
         floats({3, 2}, 17), ints({3, 2}, 18, -9, 9), floats({3, 3}, 19)},
        GetParam(), 1e-5, 1e-5);
    const std::map<std::string, int> ops = op_histogram(built);
    for (const char* op : {"DepthToSpace", "SpaceToDepth", "Tile", "CumSum", "ArgMax", "ArgMin",
                           "GatherElements", "GatherND", "Einsum"})
        EXPECT_TRUE(ops.count(op)) << op << " is not in the built graph";
    // The ones on constants fold at -O2 (-O0 folds only for ops without a kernel); the ones
    // on runtime data stay.
    const int want = GetParam() == 0 ? 2 : 1;
    // Size only reads its input's static shape: -O2 folds it like Shape.
    EXPECT_EQ(ops.count("Size"), GetParam() == 0 ? 1u : 0u);
    EXPECT_EQ(ops.count("TopK") ? ops.at("TopK") : 0, want);
    EXPECT_EQ(ops.count("ScatterND") ? ops.at("ScatterND") : 0, want);
}

TEST_P(IndexingModelTest, Opset21FormsLibraryMatchesEvaluator) {
    const Graph built =
        expect_library_matches_evaluator(opset21_model(), {floats({7, 13}, 21)}, GetParam());
    const std::map<std::string, int> ops = op_histogram(built);
    EXPECT_TRUE(ops.count("Split"));
    EXPECT_TRUE(ops.count("Pad"));
}

INSTANTIATE_TEST_SUITE_P(OptLevels, IndexingModelTest, ::testing::Values(0, 2),
                         [](const ::testing::TestParamInfo<int>& info) {
                             return "O" + std::to_string(info.param);
                         });

} // namespace
} // namespace tessera::graph
