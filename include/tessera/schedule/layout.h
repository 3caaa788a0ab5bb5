// Storage layout transforms (state.h LayoutTransform): the shape they give and host-side
// packing of input data.
//
// Packing constant inputs (weights) is done once, ahead of time, when a model is built or a
// candidate is measured, as vendor libraries do for their packed weight formats: the kernel
// then reads the packed array directly. It is not part of the kernel's time.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/schedule/state.h"

namespace tessera::sched {

/// Throws ScheduleError unless `t` is valid for a tensor of `shape`: factors empty or one per
/// dimension (each >= 0; 0 and 1 mean no split), order empty or a permutation of the
/// dimensions after splitting.
void check_layout(const LayoutTransform& t, const std::vector<int64_t>& shape);

/// The shape of the transformed storage: split dimensions become (ceil(extent/f), f), then
/// permuted by order. Pre: check_layout passed.
std::vector<int64_t> packed_shape(const LayoutTransform& t, const std::vector<int64_t>& shape);

/// The indices into the transformed storage of the element at `indices` of the original
/// shape, as IR expressions (used by lowering; simplify folds the div/mod when the tiling
/// matches). Pre: check_layout passed, one index per dimension.
std::vector<ir::Expr> packed_indices(const LayoutTransform& t, const std::vector<int64_t>& shape,
                                     const std::vector<ir::Expr>& indices);

/// Packs dense row-major `src` of `shape` (elem_bytes per element) into `dst`, which must hold
/// num_elements(packed_shape) elements; padding elements are set to zero bytes.
void pack_layout(const LayoutTransform& t, const std::vector<int64_t>& shape, size_t elem_bytes,
                 const void* src, void* dst);

/// pack_layout for f32 data, returning the packed array.
std::vector<float> pack_layout(const LayoutTransform& t, const std::vector<int64_t>& shape,
                               const std::vector<float>& src);

} // namespace tessera::sched
