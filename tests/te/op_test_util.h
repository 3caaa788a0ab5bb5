// Shared helpers of the operator tests: run a Compute through lower_default + the interpreter and
// compare with a reference.
#pragma once

#include <gtest/gtest.h>

#include "common/jit_executor.h"
#include "common/op_runner.h"
#include "common/reference_ops.h"
#include "common/test_util.h"
#include "tessera/ir/interpreter.h"
#include "tessera/lower/lower_default.h"
#include "tessera/support/error.h"
#include "tessera/te/compute.h"
#include "tessera/te/op_library.h"

namespace tessera::testing {

/// The inputs' data as RefTensors.
inline std::vector<RefTensor> as_refs(const te::Compute& c,
                                      const std::vector<std::vector<float>>& data) {
    std::vector<RefTensor> r;
    for (size_t i = 0; i < c.inputs.size(); ++i)
        r.emplace_back(c.inputs[i].shape(), data[i]);
    return r;
}

/// Runs the single-output compute on `inputs` through both the loop-IR interpreter and the
/// LLVM JIT, and checks shape and values of each against `want`.
inline void expect_output(const te::Compute& c, const std::vector<std::vector<float>>& inputs,
                          const RefTensor& want, double tol = 1e-5) {
    ASSERT_EQ(c.outputs.size(), 1u);
    ASSERT_EQ(c.outputs[0].shape(), want.shape) << "output shape of " << c.outputs[0].name();
    const std::pair<const char*, Executor> executors[] = {
        {"interpreter", interpreter_executor()}, {"llvm-jit", jit_executor()}};
    for (const auto& [name, exec] : executors) {
        std::vector<std::vector<float>> got = run_compute(c, inputs, exec);
        ASSERT_EQ(got.size(), 1u);
        EXPECT_LE(max_rel_error(got[0], want.data), tol)
            << "output " << c.outputs[0].name() << " through the " << name;
    }
}

/// Names of the stages in order.
inline std::vector<std::string> stage_names(const te::Compute& c) {
    std::vector<std::string> names;
    for (const auto& t : c.stages)
        names.push_back(t.name());
    return names;
}

} // namespace tessera::testing
