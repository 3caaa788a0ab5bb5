// Helpers of the graph-pass tests: a small graph builder and the before/after check every pass
// test uses (evaluate on random inputs before and after the pass, compare within fp32
// tolerance).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph_test_util.h"
#include "tessera/graph/evaluate.h"
#include "tessera/graph/passes.h"
#include "tessera/graph/shape_inference.h"

namespace tessera::graph {

/// Builds a graph node by node; values get names v0, v1, ...
struct GraphBuilder {
    Graph g;
    ValueId input(const std::string& name, const Shape& shape, DType t = DType::F32) {
        ValueId v = g.add_value(name, t, shape);
        g.inputs.push_back(v);
        return v;
    }
    ValueId constant(const TensorData& t) {
        return g.add_constant("c" + std::to_string(g.num_values()), t);
    }
    ValueId constant_f32(const Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
        return constant(testing::random_tensor(shape, seed, lo, hi));
    }
    ValueId scalar(float x) { return constant(TensorData::scalar<float>(x)); }
    ValueId ints(std::vector<int64_t> v) { return constant(testing::i64s(std::move(v))); }
    ValueId op(Op op, std::vector<ValueId> ins, Attributes attrs = {}) {
        ValueId out = g.add_value("v" + std::to_string(g.num_values()));
        g.add_node(op, std::move(ins), {out}, std::move(attrs), op_name(op));
        return out;
    }
    /// Marks the outputs, infers shapes and returns the graph.
    Graph finish(std::vector<ValueId> outputs) {
        g.outputs = std::move(outputs);
        infer_shapes(g);
        g.verify();
        return g;
    }
};

/// Random data for every graph input (f32 uniform in [-1, 1); integers in [0, 3]).
inline std::vector<TensorData> random_inputs(const Graph& g, uint64_t seed) {
    std::vector<TensorData> in;
    for (size_t i = 0; i < g.inputs.size(); ++i) {
        const Value& v = g.value(g.inputs[i]);
        if (v.dtype == DType::F32)
            in.push_back(testing::random_tensor(v.shape, seed + i));
        else
            in.push_back(testing::random_ints(v.shape, seed + i, 0, 3).cast(v.dtype));
    }
    return in;
}

/// Runs `pass` on g and checks that g still verifies, is shape-inferred, and computes the same
/// outputs (rtol 1e-4, atol 1e-5) on two random input sets. Returns the pass's result.
/// `scale_tol` > 0 widens the absolute tolerance to scale_tol * max |want| of each output, for
/// passes that reassociate long sums (Winograd's transforms round relative to the terms' sizes,
/// not to the result's).
inline PassResult check_pass(Graph& g, const std::function<PassResult(Graph&)>& pass,
                             uint64_t seed = 7, double scale_tol = 0) {
    const Graph before = g;
    PassResult r = pass(g);
    g.verify();
    EXPECT_EQ(infer_shapes(g), 0) << "pass left untyped or stale values\n" << to_string(g);
    EXPECT_EQ(r.nodes_after, static_cast<int>(g.num_nodes()));
    EXPECT_EQ(g.outputs.size(), before.outputs.size());
    for (uint64_t s = seed; s < seed + 2; ++s) {
        std::vector<TensorData> in = random_inputs(before, s * 101);
        std::vector<TensorData> want = evaluate(before, in);
        std::vector<TensorData> got = evaluate(g, in);
        EXPECT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
            double atol = 1e-5;
            if (scale_tol > 0 && want[i].dtype() == DType::F32) {
                double peak = 0;
                for (int64_t k = 0; k < want[i].numel(); ++k)
                    peak = std::max(peak, std::abs(double(want[i].data<float>()[k])));
                atol = std::max(atol, scale_tol * peak);
            }
            testing::Closeness c = testing::compare(got[i], want[i], 1e-4, atol);
            EXPECT_TRUE(c.ok) << "output " << i << " after " << r.pass << ": " << c.message;
        }
    }
    return r;
}

/// Number of live nodes of `op`.
inline int count_op(const Graph& g, Op op) {
    int n = 0;
    for (NodeId id : g.node_ids())
        n += g.node(id).op == op ? 1 : 0;
    return n;
}

/// The first live node of `op` (ascending id); fails the test when there is none.
inline const Node& first_node(const Graph& g, Op op) {
    for (NodeId id : g.node_ids())
        if (g.node(id).op == op)
            return g.node(id);
    ADD_FAILURE() << "no " << op_name(op) << " node";
    return g.node(g.node_ids().at(0));
}

/// Every value of g (graph inputs, constants, node outputs) evaluated node by node on `inputs`
/// with the reference evaluator.
inline std::vector<std::shared_ptr<const TensorData>>
evaluate_all_values(const Graph& g, const std::vector<TensorData>& inputs) {
    std::vector<std::shared_ptr<const TensorData>> vals(g.num_values());
    for (size_t i = 0; i < inputs.size(); ++i)
        vals[g.inputs[i]] = std::make_shared<const TensorData>(inputs[i]);
    for (size_t v = 0; v < g.num_values(); ++v)
        if (g.value(static_cast<ValueId>(v)).is_constant())
            vals[v] = g.value(static_cast<ValueId>(v)).constant;
    for (NodeId id : g.topological_order()) {
        const Node& n = g.node(id);
        std::vector<const TensorData*> ins;
        for (ValueId v : n.inputs)
            ins.push_back(v == kNoValue ? nullptr : vals[v].get());
        std::vector<TensorData> outs = evaluate_node(n, ins, id);
        for (size_t i = 0; i < outs.size() && i < n.outputs.size(); ++i)
            if (n.outputs[i] != kNoValue)
                vals[n.outputs[i]] = std::make_shared<const TensorData>(std::move(outs[i]));
    }
    return vals;
}

} // namespace tessera::graph
