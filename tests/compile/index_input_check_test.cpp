// A model input that indexes a tensor (token ids into an embedding) is checked before a run: a
// compiled gather clamps a bad index into range, which would be a silent wrong answer; the run
// fails instead, naming the input, the element, its value and the node. Built from a small
// ModelProto with odd sizes; valid runs are checked against the graph's reference evaluator.
#include <gtest/gtest.h>

#include "common/model_library_loader.h"
#include "graph/graph_test_util.h"
#include "tessera/compile/model_compiler.h"
#include "tessera/graph/evaluate.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/support/error.h"

namespace tessera {
namespace {

using graph::DType;
using testing::ModelBuilder;
using testing::random_ints;
using testing::random_tensor;

/// ids [3, 5] (i64) index two tables: `emb` [17, 6] through an i32 Cast and `pos` [11, 6]
/// through a Reshape to [15]; the two lookups are added.
ModelBuilder two_lookups() {
    ModelBuilder m(13);
    m.input("ids", DType::I64, {3, 5});
    m.initializer("emb", random_tensor({17, 6}, 1));
    m.initializer("pos", random_tensor({11, 6}, 2));
    m.initializer("flat", testing::i64s({15}));
    m.initializer("shape", testing::i64s({3, 5, 6}));
    m.node("Cast", {"ids"}, {"ids32"}).i("to", 6); // int32
    m.node("Gather", {"emb", "ids32"}, {"a"}, "word_lookup");
    m.node("Reshape", {"ids", "flat"}, {"ids_flat"});
    m.node("Gather", {"pos", "ids_flat"}, {"b_flat"}, "position_lookup");
    m.node("Reshape", {"b_flat", "shape"}, {"b"});
    m.node("Add", {"a", "b"}, {"y"});
    m.output("y", DType::F32, {3, 5, 6});
    return m;
}

TEST(IndexInputCheck, OutOfRangeIdsFailTheRunNamingInputElementAndNode) {
    testing::ScratchDir dir("tessera_index_check");
    const std::string onnx = dir.write("lookups.onnx", two_lookups().bytes());
    compile::BuildOptions opts;
    opts.model_path = onnx;
    const compile::ModelBuild b = compile::prepare_model_build(opts);
    std::vector<uint8_t> weights;
    const runtime::ModelPlan plan = compile::make_model_plan(b, weights);
    // One check of input 0 with the stricter of the two bounds.
    ASSERT_EQ(plan.index_checks.size(), 1u);
    EXPECT_EQ(plan.index_checks[0].input, 0);
    EXPECT_EQ(plan.index_checks[0].bound, 11);
    EXPECT_NE(plan.index_checks[0].consumer.find("position_lookup"), std::string::npos)
        << plan.index_checks[0].consumer;
    const std::string so = dir.file("lookups.so");
    compile::write_model_library(b, so, opts);
    testing::LoadedModel lib(so);
    const graph::Graph g = graph::import_onnx(onnx);

    // Every valid value, negatives included, runs and matches the evaluator.
    const graph::TensorData ok = random_ints({3, 5}, 7, -11, 10);
    EXPECT_TRUE(testing::outputs_match(lib.run({ok}), graph::evaluate(g, {ok})));

    for (int64_t bad_value : {11, -12, 16}) {
        graph::TensorData bad = ok;
        bad.data<int64_t>()[2 * 5 + 3] = bad_value;
        try {
            lib.run({bad});
            ADD_FAILURE() << "a run with id " << bad_value << " succeeded";
        } catch (const std::runtime_error& e) {
            const std::string msg = e.what();
            EXPECT_NE(msg.find("input 'ids' element [2, 3] is " + std::to_string(bad_value) +
                               ", outside [-11, 11)"),
                      std::string::npos)
                << msg;
            EXPECT_NE(msg.find("position_lookup"), std::string::npos) << msg;
        }
        // The reference evaluator refuses it too (ONNX: an index out of range is an error).
        EXPECT_THROW(graph::evaluate(g, {bad}), UserError);
    }
    // The library still runs after a refused run.
    EXPECT_TRUE(testing::outputs_match(lib.run({ok}), graph::evaluate(g, {ok})));
}

} // namespace
} // namespace tessera
