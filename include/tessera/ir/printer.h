// The deterministic text form of the loop IR, for dumps, error messages and golden tests.
//
// The syntax is C-like and fully parenthesized, e.g.
//
//     func matmul(A: f32[16, 16], B: f32[16, 16], C: f32[16, 16]) {
//       for (i, 0, 16) parallel {
//         for (j, 0, 16) {
//           for (k, 0, 16) {
//             C[(i*16) + j] = (C[(i*16) + j] + (A[(i*16) + k]*B[(k*16) + j]))
//           }
//         }
//       }
//     }
//
// - Loop kinds other than serial follow the header (`parallel`, `vectorized`, `unrolled`);
//   Allocate prints `allocate T: f32[4, 8] stack {`, Evaluate `evaluate(value)`, and the
//   no-op statement `evaluate(0)`. Subscripts and call arguments drop their outer parentheses.
// - Immediates of type i64 and f32 print bare (`3`, `1.5`, a float always has a '.', an 'e',
//   `inf` or `nan`); other types carry their type: `(i32)3`, `(f64)1.5`; bools are true/false.
// - Casts print as `f32(x)`, broadcasts as `x8(v)`, ramps as `ramp(base, stride, lanes)`,
//   vector reductions as `vector_reduce_sum(v, lanes)`, lets as `(let x = v in body)`.
// - Tensor-expression nodes print as `T[i, j]` and `sum(k: 0..16, source)`.
// - Variables, buffers and tensors are identified by object, and names are hints: each
//   to_string call gives distinct objects with the same hint distinct names (`i`, `i_1`, ...),
//   in order of first appearance in the text, so the output never depends on addresses and is
//   identical across runs. Names are unique per call only: two calls may name differently.
#pragma once

#include <ostream>
#include <string>

#include "tessera/ir/stmt.h"

namespace tessera::ir {

/// One line, no trailing newline. An undefined handle prints as `<undef>`.
std::string to_string(const Expr& e);
/// One line per statement, each ending in '\n', nested blocks indented by two spaces.
std::string to_string(const Stmt& s);
/// The signature `func name(P: f32[4, 8], ...) {`, the indented body and `}`, with '\n'.
std::string to_string(const LoweredFunc& f);

std::ostream& operator<<(std::ostream& os, const Expr& e);
std::ostream& operator<<(std::ostream& os, const Stmt& s);
std::ostream& operator<<(std::ostream& os, const LoweredFunc& f);

} // namespace tessera::ir
