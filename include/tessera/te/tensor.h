// Building tensor expressions: placeholders (inputs), compute tensors and reductions.
//
// A compute tensor is defined elementwise: `C = compute({m, n}, [&](auto& i) { return
// sum(A(i[0], k.var) * B(k.var, i[1]), {k}); }, "C")`. The body is an ir::Expr over the
// tensor's axis Vars (and reduce-axis Vars inside one top-level Reduce); other tensors are read
// with TensorRead (`A(i, j)`). Lowering (lower/lower_default.h) turns these into loops.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tessera/ir/expr.h"

namespace tessera::te {

using ir::DataType;
using ir::Expr;
using ir::IterVar;
using ir::Tensor;
using ir::Var;

/// An input tensor of the given shape and element type.
/// Throws UserError when an extent is not positive or dtype is a vector type. A rank-0 shape
/// ({}) is a scalar tensor of one element.
Tensor placeholder(std::vector<int64_t> shape, DataType dtype, std::string name);

/// A tensor whose element at index `axes` is `f(axes)`. compute makes one fresh i64 axis Var per
/// dimension, named by `axis_names` when given (one per dimension) and "i0", "i1", ... otherwise,
/// and calls f once. The tensor's dtype is the body's (scalar) type.
/// Pre (TESSERA_CHECK, a bug in the caller otherwise): the body is scalar; a Reduce appears only
/// as the whole body; the body uses no variables but the axes, the top-level Reduce's axes and
/// its own Let bindings. Throws UserError when an extent is not positive.
Tensor compute(std::vector<int64_t> shape, std::function<Expr(const std::vector<Var>&)> f,
               std::string name, std::vector<std::string> axis_names = {});

/// A fresh reduction axis ranging over [0, extent). Pre: extent > 0.
IterVar reduce_axis(int64_t extent, std::string name);

/// Reductions of `src` over `axes`, for use as the whole body of a compute tensor. The result
/// starts from the operation's identity (0, lowest value, highest value). Pre: axes not empty.
Expr sum(Expr src, std::vector<IterVar> axes);
Expr reduce_max(Expr src, std::vector<IterVar> axes);
Expr reduce_min(Expr src, std::vector<IterVar> axes);

/// Number of elements of a shape (1 for rank 0).
int64_t num_elements(const std::vector<int64_t>& shape);

/// "[2, 3, 4]": the shape as text for messages.
std::string shape_to_string(const std::vector<int64_t>& shape);

} // namespace tessera::te
