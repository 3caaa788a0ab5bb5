// Bounds inference over a State: validates compute locations, sizes the region each attached
// stage computes, updates the extents of its iterators, and gives every stage's loop variables
// and coordinates (shared by the primitives and the lowering).
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/ir/expr.h"
#include "tessera/schedule/state.h"

namespace tessera::sched {

/// One dimension of the region a stage stores: [min, min + extent). min may use loop
/// variables of the stages around the attach point.
struct DimRegion {
    ir::Expr min;
    int64_t extent = 1;
};

/// The loops of one compute stage (inputs and inlined stages leave these empty).
struct StageLoops {
    std::vector<ir::Var> leaf_vars; ///< One per iterator.
    std::vector<ir::Expr> values;   ///< Every node's value in leaf variables.
    std::vector<ir::Expr> coords;   ///< Spatial global coordinates: region min + local value.
    std::vector<DimRegion> region;  ///< The stored region (the whole tensor at root).
    bool attached = false;          ///< Computed at a loop of another stage.
};

/// Checks every compute location (targets valid, no cycles, every reader of an attached
/// stage runs inside its attach loop; ScheduleError otherwise), sets the root extents of
/// attached stages to their regions and recomputes their iterator extents. Returns the loops
/// of every stage (indexed by stage id).
std::vector<StageLoops> infer_bounds(State& s);

} // namespace tessera::sched
