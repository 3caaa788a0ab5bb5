// The pipeline that makes a lowered function ready for a backend.
#include "tessera/lower/lower_for_codegen.h"

#include "tessera/ir/simplify.h"
#include "tessera/ir/verify.h"
#include "tessera/lower/unroll_loops.h"
#include "tessera/lower/vectorize_loops.h"

namespace tessera::lower {

ir::LoweredFunc prepare_for_codegen(ir::LoweredFunc f) {
    ir::Stmt s = ir::simplify(f.body);
    s = vectorize_loops(s);
    s = unroll_loops(s);
    // Folds the constants unrolling substituted and the Ramp bases vectorizing built.
    f.body = ir::simplify(s);
    ir::verify(f);
    return f;
}

} // namespace tessera::lower
