// The pipeline that makes a lowered function ready for a backend.
#include "tessera/lower/lower_for_codegen.h"

#include "tessera/ir/simplify.h"
#include "tessera/ir/verify.h"
#include "tessera/lower/tile_matmul.h"
#include "tessera/lower/unroll_loops.h"
#include "tessera/lower/vectorize_loops.h"

namespace tessera::lower {

ir::LoweredFunc prepare_for_codegen(ir::LoweredFunc f) {
    if (f.ready_for_codegen)
        return f;
    // Tile nests first: simplifying would drop a tile_matmul loop of one iteration.
    ir::Stmt s = ir::simplify(lower_tile_matmuls(f.body));
    s = vectorize_loops(s);
    s = unroll_loops(s);
    // Folds the constants unrolling substituted and the Ramp bases vectorizing built.
    f.body = ir::simplify(s);
    ir::verify(f);
    f.ready_for_codegen = true;
    return f;
}

} // namespace tessera::lower
