// The per-operator checks of the graph tests: a small graph per op (OpCase) whose fused groups
// are lowered twice (the default loop nest and sched::default_schedule with its packed
// weights), JIT-compiled and run against the graph evaluator (check_case); and a whole ONNX
// model built into a library and run through its C API against the evaluator
// (expect_library_matches_evaluator). Op families register their cases with
// TESSERA_REGISTER_OP_CASES in their own test file; op_compute_test.cpp runs them all and
// checks that every op of ops.def has one.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "passes_util.h"
#include "tessera/graph/import_onnx.h"
#include "tessera/support/rng.h"

namespace tessera::graph {

using testing::random_ints;
using testing::random_tensor;

// ---- data ------------------------------------------------------------------------------------

/// f32 uniform in [lo, hi) from `seed`.
inline TensorData floats(const Shape& s, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
    return random_tensor(s, seed, lo, hi);
}
/// f32 values of magnitude in [0.25, 1.25) with random signs: never near zero.
inline TensorData nonzero_floats(const Shape& s, uint64_t seed) {
    TensorData t = random_tensor(s, seed, 0.25f, 1.25f);
    Rng rng(seed + 17);
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i)
        if (rng.uniform_int(0, 1))
            p[i] = -p[i];
    return t;
}
inline TensorData bools(const Shape& s, uint64_t seed) {
    return random_ints(s, seed, 0, 1).cast(DType::Bool);
}
inline TensorData ints(const Shape& s, uint64_t seed, int64_t lo, int64_t hi) {
    return random_ints(s, seed, lo, hi);
}

// ---- the check -------------------------------------------------------------------------------
// ---- the check -------------------------------------------------------------------------------

/// A graph under test with data for its inputs.
struct Case {
    GraphBuilder b;
    std::vector<TensorData> feeds;
    /// Absolute tolerance added to rtol 1e-5 for floats (sums that cancel, transcendental
    /// functions of the backend's math library against libm).
    double atol = 1e-6;

    ValueId input(const TensorData& t) {
        const ValueId v = b.input("in" + std::to_string(feeds.size()), t.shape(), t.dtype());
        feeds.push_back(t);
        return v;
    }
    ValueId constant(const TensorData& t) { return b.constant(t); }
    ValueId op(Op op, std::vector<ValueId> ins, Attributes attrs = {}) {
        return b.op(op, std::move(ins), std::move(attrs));
    }
    /// A node with `n` outputs.
    std::vector<ValueId> op_n(Op op, std::vector<ValueId> ins, size_t n, Attributes attrs = {}) {
        std::vector<ValueId> outs;
        for (size_t i = 0; i < n; ++i)
            outs.push_back(b.g.add_value("m" + std::to_string(b.g.num_values())));
        b.g.add_node(op, std::move(ins), outs, std::move(attrs), op_name(op));
        return outs;
    }
};

/// Runs each fused group of the finished case through both lowerings and the JIT and compares
/// its outputs with the evaluator's values (ops without a kernel are skipped: they must fold).
/// Returns the ops that the groups covered.
std::set<Op> check_case(Case& c, std::vector<ValueId> outputs);

inline Attributes attr(const std::string& k, Attribute a) { return {{k, std::move(a)}}; }
inline Attribute I(int64_t v) { return Attribute::of_int(v); }
inline Attribute F(float v) { return Attribute::of_float(v); }
inline Attribute Is(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }
inline Attribute S(std::string v) { return Attribute::of_string(std::move(v)); }
inline TensorData i64s(std::vector<int64_t> v) { return testing::i64s(std::move(v)); }

// ---- the table: one graph per operator -------------------------------------------------------

struct OpCase {
    std::string name;
    /// The ops the case must cover (the operator under test, at least).
    std::vector<Op> ops;
    /// Builds the graph into c and returns its outputs.
    std::function<std::vector<ValueId>(Case& c)> build;
};
inline void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

// Unary float ops on [1, 7, 13]: y = op(x) with x drawn from `lo`..`hi`.
inline OpCase unary_case(std::string name, Op op, float lo = -1.0f, float hi = 1.0f,
                                Attributes a = {}) {
    return {name, {op}, [=](Case& c) -> std::vector<ValueId> {
                return {c.op(op, {c.input(floats({1, 7, 13}, 11, lo, hi))}, a)};
            }};
}

/// Adds the cases `make` returns to all_op_cases(); call at static initialization through
/// TESSERA_REGISTER_OP_CASES(make).
bool register_op_cases(std::vector<OpCase> (*make)());
/// Every registered case, in registration order within a file.
std::vector<OpCase> all_op_cases();
#define TESSERA_REGISTER_OP_CASES(make)                                                            \
    static const bool tessera_op_cases_registered_##make = ::tessera::graph::register_op_cases(make)

// ---- whole builds ----------------------------------------------------------------------------

/// Builds the ONNX model (bytes) at -O`opt_level` into a library as `tessera build` does, runs
/// it through the C API on `feeds` and expects its outputs to match the graph evaluator on the
/// imported graph within rtol / atol (integers and bools exactly). `import` carries input shapes
/// and bound inputs (feeds are for the remaining inputs). With bf16 or fp16 `precision` the
/// evaluator runs the graph as built (its products on bf16 operands, its weights rounded to
/// f16), which the library must match.
/// Returns the built graph.
Graph expect_library_matches_evaluator(const std::string& model_bytes,
                                       const std::vector<TensorData>& feeds, int opt_level,
                                       double rtol = 1e-5, double atol = 1e-6,
                                       const ImportOptions& import = {},
                                       Precision precision = Precision::FP32);

} // namespace tessera::graph
