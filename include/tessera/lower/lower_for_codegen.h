// The last lowering steps before a backend: vector and unrolled loops become plain code.
#pragma once

#include "tessera/ir/stmt.h"

namespace tessera::lower {

/// f ready for code generation: lower_tile_matmuls -> simplify -> vectorize_loops ->
/// unroll_loops -> simplify -> verify (InternalError when a pass broke the IR; ScheduleError
/// when a tile_matmul nest does not fit its tiles). Afterwards the body holds only Serial and
/// Parallel loops (and TileMatmul statements), with the indices of unrolled copies folded to
/// constants. Idempotent; a function it returned is marked ready_for_codegen and returned as
/// it is (no second pass over the body). The backends call it on what they are given.
ir::LoweredFunc prepare_for_codegen(ir::LoweredFunc f);

} // namespace tessera::lower
