// The LLVM JIT as a test executor: prepare_for_codegen, compile, call.
#pragma once

#include "common/op_runner.h"

namespace tessera::testing {

/// Runs a LoweredFunc through lower::prepare_for_codegen and the LLVM JIT for this host.
Executor jit_executor();

} // namespace tessera::testing
