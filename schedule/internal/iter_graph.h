// The iterator graph of a stage: root nodes (axes, then reduce axes), split and fuse relations,
// leaf iterators. Extents flow from roots to leaves; values flow from leaves to roots.
#pragma once

#include <vector>

#include "tessera/ir/expr.h"
#include "tessera/schedule/state.h"

namespace tessera::sched {

/// Resets st's graph to one root node and one iterator per axis and reduce axis of its
/// current definition (annotations cleared).
void init_stage_iters(Stage& st);

/// Number of root nodes (spatial axes + reduce axes).
int num_roots(const Stage& st);

/// Recomputes every derived node extent from the root extents (split: the ceiling part;
/// fuse: the product) and copies them into st.iters.
void recompute_extents(Stage& st);

/// The value of every node given the value of every leaf iterator (leaf_values[k] for
/// st.iters[k]). Split: parent = sum(part * stride); fuse: part = (fused / inner) % extent.
std::vector<ir::Expr> node_values(const Stage& st, const std::vector<ir::Expr>& leaf_values);

/// The guards of imperfect splits: `value(parent) < extent(parent)` for each split whose parts
/// cover more than the parent's extent. Given the node values of node_values().
std::vector<ir::Expr> split_guards(const Stage& st, const std::vector<ir::Expr>& values);

} // namespace tessera::sched
