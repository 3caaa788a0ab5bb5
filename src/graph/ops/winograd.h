// The tilings and shape rules of the ops WinogradInput and WinogradOutput, defined in
// winograd.cpp with their reference kernels (direct loops over the given tables, accumulated
// in double); ops.def documents their operands, tessera/graph/winograd.h the transforms.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "eval_util.h"
#include "tessera/graph/winograd.h"
#include "tessera/te/op_library.h"

namespace tessera::graph::detail {

/// The output tiling of WinogradInput node n on X of shape x with table shape t (validated).
te::WinogradTile winograd_input_tile(const Node& n, const Shape& x, const Shape& t,
                                     const std::string& where);
/// The output tiling of WinogradOutput node n (its attributes, unvalidated).
te::WinogradTile winograd_output_tile(const Node& n);

/// Output types of WinogradInput / WinogradOutput from their typed inputs (null when absent).
/// Throws UserError prefixed with `where` on a rank, dtype or shape mismatch.
std::vector<std::pair<DType, Shape>>
winograd_types(const Node& n, const std::vector<const Value*>& inputs, const std::string& where);

} // namespace tessera::graph::detail
