// Turning Vectorized loops into vector instructions.
#pragma once

#include "tessera/ir/stmt.h"

namespace tessera::lower {

/// Replaces every For of kind Vectorized with constant extent L > 1 by its body with
/// loop_var := Ramp(min, 1, L), widening what depends on it: scalars that meet vectors are
/// broadcast, Loads and Stores with a vector index become vector (dense, gather or scatter)
/// accesses, Selects and math calls work lane-wise, Lets of vector values bind vector
/// variables, and inner loops and Allocates inside keep their structure. Index arithmetic is
/// kept in Ramp form (`Ramp(b, s) + x` -> `Ramp(b + x, s)`, `Ramp(b, s) * c` -> `Ramp(b*c, s*c)`)
/// so that dense accesses stay recognizable. An IfThenElse whose condition becomes a vector
/// is scalarized: one copy per lane with the lane's scalar values.
///
/// Correctness first: a loop that cannot be widened (a store of a vector value to a scalar
/// index, inner loop bounds that depend on the loop variable, a body that already holds vector
/// expressions, a non-constant extent) becomes a Serial loop instead. Extent 1 becomes the body
/// with loop_var := min. Inner Vectorized loops are handled before outer ones.
ir::Stmt vectorize_loops(const ir::Stmt& s);

} // namespace tessera::lower
