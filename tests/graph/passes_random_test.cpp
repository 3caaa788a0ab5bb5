// Random graphs through the -O3 pipeline: elementwise chains over [7,13] values with neutral
// constants, duplicated subexpressions, transpose and reshape round trips and constant-only
// branches, so that every pass finds work; the optimized graph must compute the same outputs.
#include <gtest/gtest.h>

#include "passes_util.h"
#include "tessera/graph/pipeline.h"
#include "tessera/support/rng.h"

namespace tessera::graph {
namespace {

Graph random_graph(uint64_t seed) {
    Rng rng(seed);
    GraphBuilder b;
    std::vector<ValueId> pool = {b.input("x", {7, 13}), b.input("y", {7, 13}),
                                 b.constant_f32({7, 13}, seed + 1)};
    auto pick = [&]() { return pool[static_cast<size_t>(rng.uniform_int(0, pool.size() - 1))]; };
    auto konst = [&]() {
        switch (rng.uniform_int(0, 3)) {
        case 0:
            return b.scalar(0.0f);
        case 1:
            return b.scalar(1.0f);
        case 2:
            return b.constant_f32({13}, rng.next() % 1000, 0.5f, 1.5f);
        }
        return b.constant_f32({7, 13}, rng.next() % 1000, 0.5f, 1.5f);
    };
    const int steps = static_cast<int>(rng.uniform_int(8, 20));
    for (int i = 0; i < steps; ++i) {
        ValueId v = kNoValue;
        const ValueId a = pick();
        switch (rng.uniform_int(0, 9)) {
        case 0:
            v = b.op(Op::Add, {a, rng.uniform_int(0, 1) ? pick() : konst()});
            break;
        case 1:
            v = b.op(Op::Mul, {rng.uniform_int(0, 1) ? pick() : konst(), a});
            break;
        case 2:
            v = b.op(Op::Sub, {a, konst()});
            break;
        case 3: // by 1 or a constant in [0.5, 1.5): never zero
            v = b.op(Op::Div, {a, rng.uniform_int(0, 1)
                                      ? b.scalar(1.0f)
                                      : b.constant_f32({13}, rng.next() % 1000, 0.5f, 1.5f)});
            break;
        case 4:
            v = b.op(Op::Tanh, {a});
            break;
        case 5:
            v = b.op(Op::Sigmoid, {a});
            break;
        case 6: { // a duplicate of the last node (or a Relu when there is none yet)
            if (b.g.node_capacity() == 0) {
                v = b.op(Op::Relu, {a});
                break;
            }
            const Node last = b.g.node(static_cast<NodeId>(b.g.node_capacity() - 1));
            v = b.op(last.op, last.inputs, last.attrs);
            break;
        }
        case 7:
            v = b.op(Op::Identity, {a});
            break;
        case 8: {
            ValueId t = b.op(Op::Transpose, {a}, {{"perm", Attribute::of_ints({1, 0})}});
            v = b.op(Op::Transpose, {t}, {{"perm", Attribute::of_ints({1, 0})}});
            break;
        }
        case 9: {
            ValueId r = b.op(Op::Reshape, {a, b.ints({91})}, {{"allowzero", Attribute::of_int(0)}});
            v = b.op(Op::Reshape, {r, b.ints({7, 13})}, {{"allowzero", Attribute::of_int(0)}});
            break;
        }
        }
        pool.push_back(v);
        infer_shapes(b.g); // every pool value is [7,13]: operands broadcast to it
    }
    // Outputs: the last value and one earlier one, both broadcast to [7,13] by adding x.
    ValueId out1 = b.op(Op::Add, {pool.back(), pool[0]});
    ValueId out2 = b.op(Op::Mul, {pool[pool.size() / 2], pool[1]});
    return b.finish({out1, out2});
}

TEST(RandomGraphs, O3KeepsOutputs) {
    int reduced = 0;
    for (uint64_t seed = 1; seed <= 40; ++seed) {
        Graph g = random_graph(seed);
        const size_t before = g.num_nodes();
        PipelineOptions o;
        o.level = 3;
        check_pass(
            g,
            [&](Graph& h) {
                std::vector<PassResult> log = optimize(h, o);
                PassResult r = log.back();
                r.pass = "O3 pipeline (seed " + std::to_string(seed) + ")";
                r.nodes_after = static_cast<int>(h.num_nodes());
                return r;
            },
            seed);
        reduced += g.num_nodes() < before ? 1 : 0;
    }
    EXPECT_GE(reduced, 30); // the generator plants work for the passes in nearly every graph
}

} // namespace
} // namespace tessera::graph
