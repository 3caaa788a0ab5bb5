// Memory planning over fused groups: the intermediate values passed between groups (group
// outputs that are not graph outputs) get buffers from a pool, reused once a value is dead.
//
// Liveness is measured in group steps: a value is live from the group that defines it (step
// `def`) to the last group that reads it (step `last_use`), inclusive. Groups run one after
// the other in the given order. At each step the buffers of values whose last use was an
// earlier step are released; each output of the step then takes
//  - in place, the buffer of an input that dies at this step, when the group is purely
//    elementwise (kind Elementwise) with a single output, and the buffer is at least as
//    large; otherwise
//  - the smallest free buffer at least as large (best fit); otherwise
//  - the largest free buffer, grown to the value's size; otherwise
//  - a new buffer.
// The operands of an in-place group (FusedGroup::operands_in_place: a concat, a reinterpreting
// PackU8Words) are views: each lives in the group's output buffer at its byte offset. That
// output is live from the first step
// that defines an operand to the last step that reads it or an operand, and takes its buffer
// at that first step; a view never serves an in-place output (the rest of the buffer is
// still live).
// Graph inputs, graph outputs and constants are owned by the caller and not planned.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/graph/fusion.h"
#include "tessera/graph/graph.h"

namespace tessera::graph {

/// Where one planned value lives.
struct BufferAssignment {
    ValueId value = kNoValue;
    int64_t bytes = 0;
    int buffer = -1;       ///< index into MemoryPlan::buffer_bytes
    int def = 0;           ///< defining group step
    int last_use = 0;      ///< last reading group step (>= def)
    bool in_place = false; ///< shares the buffer of an input dying at step `def`
    /// An operand of an in-place concat: `offset` bytes into the buffer of the assignment
    /// `view_of` (the concat's output), which holds it; -1 for a value with its own buffer.
    int view_of = -1;
    int64_t offset = 0;
};

struct MemoryPlan {
    /// One entry per planned value, in definition order.
    std::vector<BufferAssignment> assignments;
    /// Size of each pool buffer (the largest value it holds).
    std::vector<int64_t> buffer_bytes;
    /// Sum of buffer_bytes: the memory the plan needs for intermediates.
    int64_t planned_bytes = 0;
    /// Sum of every planned value's size (views excluded): the memory without reuse.
    int64_t naive_bytes = 0;
    /// Largest total size of simultaneously live values (a value and the one computed in place
    /// over it count once): no plan with the same in-place choices can need less.
    int64_t live_lower_bound = 0;
    int in_place_count = 0;
};

/// Plans the intermediates of `groups` (the output of fuse_ops on g, in its order). Pre: every
/// planned value is typed. Post: two values share a buffer only when their live intervals are
/// disjoint or the later one is in place at the earlier one's last use; planned_bytes <=
/// naive_bytes and live_lower_bound <= planned_bytes.
MemoryPlan plan_memory(const Graph& g, const std::vector<FusedGroup>& groups);

} // namespace tessera::graph
