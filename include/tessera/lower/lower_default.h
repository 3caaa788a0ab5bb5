// The default (unscheduled) lowering of a Compute to a naive loop nest.
#pragma once

#include <string>

#include "tessera/ir/expr.h"
#include "tessera/ir/stmt.h"
#include "tessera/te/compute.h"

namespace tessera::lower {

/// Lowers `c` without any schedule: the reference loop nest every schedule must agree with.
///
/// Parameters (the contract of tests, the CLI and the backends): `c.inputs` in order, then
/// `c.outputs` in order, one Buffer each with the tensor's name, shape and dtype. The caller
/// passes args[i] = data of params[i], dense row-major.
///
/// Body: the stages in `c.stages` order, each a nest of serial For loops over its axes (outermost
/// first; loop variables are fresh Vars named like the tensor's axes, and every variable is bound
/// once in the function, so it passes ir::verify) storing the body at the row-major flat
/// index. A stage whose body is a Reduce first stores the identity, then loops over the reduce
/// axes (outermost first) doing `out[idx] = out[idx] OP source`, accumulating in the output
/// element. Stages that are not outputs live in Heap Allocates wrapped around the whole body
/// (the first stage outermost). TensorReads become Loads with row-major flat indices
/// (sum of index * stride, stride 1 left out); no TensorRead or Reduce remains.
ir::LoweredFunc lower_default(const te::Compute& c, const std::string& name);

/// The row-major flat index of `indices` in `shape`: sum of indices[d] * stride[d], leaving out
/// multiplications by 1. Rank 0 gives the constant 0. Exposed for other lowering code.
ir::Expr flatten_index(const std::vector<int64_t>& shape, const std::vector<ir::Expr>& indices);

} // namespace tessera::lower
