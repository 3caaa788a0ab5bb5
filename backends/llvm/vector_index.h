// What a vector load or store's index says about the addresses of its lanes: one address for
// all, consecutive addresses, a constant stride, or a scalar base plus constant per-lane
// offsets. The code generator picks its instructions from these (a vector load, a broadcast, a
// gather of 32-bit offsets, or a few dense loads and a shuffle).
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "tessera/ir/expr.h"

namespace tessera::backend {

/// If index is a dense vector index (a stride-1 Ramp, possibly plus a broadcast), its first
/// lane; otherwise undefined.
ir::Expr dense_base(const ir::Expr& index);

/// If index is a vector index with a constant stride other than 0 and 1 (a Ramp, possibly plus
/// a broadcast) whose lane offsets fit in 32 bits, its first lane and the stride; otherwise
/// an undefined base.
std::pair<ir::Expr, int64_t> strided_base(const ir::Expr& index);

/// If index is the same address in every lane, that address.
ir::Expr uniform_index(const ir::Expr& index);

/// A vector index as a scalar base (undefined: 0) plus a constant offset per lane.
struct LaneOffsets {
    ir::Expr base;
    std::vector<int64_t> offsets;
};

/// index (a vector of `lanes` lanes) as base + offsets[lane] when it is a sum of broadcast
/// scalars, Ramps with constant strides and terms computed from constants and Ramps of them
/// alone (a channel shuffle's lane / 2 + (lane % 2) * K, with the IR's floor division);
/// nullopt otherwise.
std::optional<LaneOffsets> lane_offsets(const ir::Expr& index);

} // namespace tessera::backend
