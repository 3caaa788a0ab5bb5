// The perfect loop nest under a root loop, as the lowerings that match a whole nest to one
// statement (tile_matmul.cpp, warp_mma.cpp) read it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/ir/stmt.h"
#include "tessera/ir/substitute.h"

namespace tessera::lower::detail {

struct NestLoop {
    ir::Var var;
    int64_t extent = 0;
    int64_t c = 0, a = 0, b = 0; ///< coefficients in the C, A and B indices (set_coefficients)
};

struct PerfectNest {
    /// The Lets' values and the extent-1 loops' variables (as 0), to substitute into indices.
    ir::Substituter subs;
    /// The loops of constant extent > 1 from 0, outer first (the root included).
    std::vector<NestLoop> loops;
    /// The first statement under them that is neither a loop nor a Let.
    ir::Stmt body;
};

/// Walks the loops and Lets under root (itself a loop of any kind). Throws ScheduleError
/// "<what>: loop 'x' is <kind>" for an inner loop that is neither serial nor unrolled, and
/// "<what>: loop 'x' does not run a constant count from 0".
PerfectNest perfect_nest(const ir::For* root, const std::string& what);

/// Sets each loop's coefficients in the store's index ic and its operands' indices ia and ib.
/// Throws ScheduleError "<what>: an index is not linear in loop 'x'".
void set_coefficients(std::vector<NestLoop>& loops, const ir::Expr& ic, const ir::Expr& ia,
                      const ir::Expr& ib, const std::string& what);

} // namespace tessera::lower::detail
