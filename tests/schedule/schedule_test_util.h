// Helpers of the schedule tests: run a State through lower_state and compare with the default
// lowering, through the interpreter and the LLVM JIT.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/jit_executor.h"
#include "common/op_runner.h"
#include "common/test_util.h"
#include "tessera/ir/verify.h"
#include "tessera/lower/lower_default.h"
#include "tessera/lower/lower_for_codegen.h"
#include "tessera/schedule/layout.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/schedule.h"
#include "tessera/te/op_library.h"

namespace tessera::testing {

/// The inputs packed as the state's input stages store them (layout transforms).
inline std::vector<std::vector<float>> pack_inputs(const sched::State& s,
                                                   const std::vector<std::vector<float>>& in) {
    std::vector<std::vector<float>> out;
    for (size_t i = 0; i < s.compute.inputs.size(); ++i) {
        const sched::Stage& st = s.stages[s.stage_id_of(s.compute.inputs[i])];
        out.push_back(st.layout.is_identity()
                          ? in[i]
                          : sched::pack_layout(st.layout, st.tensor.shape(), in[i]));
    }
    return out;
}

/// Lowers s, checks ir::verify and prepare_for_codegen, runs it through the interpreter and
/// (unless interpreter_only) the LLVM JIT on random inputs, and compares every output with
/// lower_default's through the interpreter.
inline void expect_state_matches(const sched::State& s, uint64_t seed = 7,
                                 bool interpreter_only = false, double tol = 1e-4,
                                 const sched::LowerOptions& opts = {}) {
    SCOPED_TRACE(sched::to_string(s));
    ir::LoweredFunc f = sched::lower_state(s, "scheduled", opts);
    ASSERT_NO_THROW(ir::verify(f)) << "lowered state fails verify";
    ASSERT_NO_THROW(lower::prepare_for_codegen(f)) << "lowered state fails prepare_for_codegen";
    const auto inputs = random_inputs(s.compute, seed);
    const auto want = run_compute(s.compute, inputs);
    const auto packed = pack_inputs(s, inputs);
    std::vector<std::pair<const char*, Executor>> executors = {
        {"interpreter", interpreter_executor()}};
    if (!interpreter_only)
        executors.push_back({"llvm-jit", jit_executor()});
    for (const auto& [name, exec] : executors) {
        const auto got = run_lowered(f, packed, exec);
        ASSERT_EQ(got.size(), want.size());
        for (size_t o = 0; o < got.size(); ++o)
            EXPECT_LE(max_rel_error(got[o], want[o]), tol)
                << "output " << o << " through the " << name;
    }
}

/// A single-op compute from the spec registry.
inline te::Compute op_compute(const std::string& spec) { return te::make_op(spec).compute; }

} // namespace tessera::testing
