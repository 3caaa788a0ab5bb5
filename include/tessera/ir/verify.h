// The verifier of lowered loop IR: the invariants every pass must keep, checked after each
// pass in tests.
//
// verify() throws InternalError (a bug in whoever built the IR) whose message names the broken
// rule and prints the offending node and the expression or statement around it, when:
// - a variable is used outside the scope of its binding (For, Let, LetStmt), or is free;
// - a variable is bound twice anywhere in the function;
// - a buffer is used (Load, Store, Prefetch) that is neither a param nor inside its Allocate,
//   or is allocated while already live (a param, or inside its own Allocate);
// - a TensorRead or Reduce remains (lowering removes them);
// - a node's type disagrees with its type rule (infer_type() of the node, the Store, Let and
//   LetStmt rules), or an immediate has a vector type;
// - a For has non-i64 or non-scalar bounds or loop variable, a Vectorized or Unrolled For has a
//   non-constant extent;
// - an IfThenElse condition is not a scalar bool;
// - a Call(Prefetch) appears anywhere but as the whole value of an Evaluate.
#pragma once

#include <vector>

#include "tessera/ir/stmt.h"

namespace tessera::ir {

/// Checks f (its body against its params). Returns normally when f is well formed.
void verify(const LoweredFunc& f);
/// Checks a statement whose live buffers on entry are `params`.
void verify(const Stmt& s, const std::vector<Buffer>& params);

} // namespace tessera::ir
