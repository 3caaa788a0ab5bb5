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

/// A vector load's lanes (a base plus offsets[lane]) grouped into windows of consecutive
/// elements, each window one dense load shuffled into place.
struct LoadWindows {
    std::vector<int64_t> first, last; ///< Each window's first and last offset.
    std::vector<int> window;          ///< The window of each lane.
};

/// The lanes of `offsets` (one per lane of a `lanes`-lane load), in the order of their offsets,
/// grouped into windows of at most `lanes` consecutive elements: a window's load reads only
/// elements between two of its lanes' addresses. nullopt when that takes more than
/// max(2, lanes / 4) windows (a gather then costs less than the loads and shuffles).
std::optional<LoadWindows> load_windows(const std::vector<int64_t>& offsets, int lanes);

} // namespace tessera::backend
