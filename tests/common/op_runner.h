// Running a Compute or a LoweredFunc on host data in tests, with a pluggable executor: the
// interpreter by default, the LLVM JIT (or anything else) through the same function type.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "tessera/ir/stmt.h"
#include "tessera/te/compute.h"

namespace tessera::testing {

/// Runs a lowered function: args[i] is the data of f.params[i] (the backend calling convention).
using Executor = std::function<void(const ir::LoweredFunc&, std::vector<void*>&)>;

/// The reference executor: ir::interpret.
Executor interpreter_executor();

/// Random f32 data for each of c.inputs: input i gets random_floats(n, seed + i, lo, hi).
std::vector<std::vector<float>> random_inputs(const te::Compute& c, uint64_t seed, float lo = -1.0f,
                                              float hi = 1.0f);

/// Runs `f`, whose params are the inputs then the outputs (lower_default's order), on `inputs`
/// and returns the outputs. f is checked with ir::verify first. Every param must be f32 or f16
/// (an f16 param holds its values rounded to f16, and an f16 output comes back converted);
/// output buffers start filled with NaN so that an element never written shows up. Throws
/// InternalError on a count or size mismatch or a verifier failure.
std::vector<std::vector<float>> run_lowered(const ir::LoweredFunc& f,
                                            const std::vector<std::vector<float>>& inputs,
                                            const Executor& exec = interpreter_executor());

/// lower_default(c) then run_lowered.
std::vector<std::vector<float>> run_compute(const te::Compute& c,
                                            const std::vector<std::vector<float>>& inputs,
                                            const Executor& exec = interpreter_executor());

} // namespace tessera::testing
