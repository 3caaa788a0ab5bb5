// Liveness-based buffer reuse over fused groups (see memory_plan.h).
#include "tessera/graph/memory_plan.h"

#include <algorithm>
#include <map>

#include "tessera/support/error.h"

namespace tessera::graph {

MemoryPlan plan_memory(const Graph& g, const std::vector<FusedGroup>& groups) {
    MemoryPlan plan;
    const int steps = static_cast<int>(groups.size());
    std::vector<uint8_t> is_output(g.num_values(), 0);
    for (ValueId v : g.outputs)
        is_output[v] = 1;

    // Liveness of every planned value: defined by a group output, not a graph output.
    std::vector<int> index_of(g.num_values(), -1); // value -> assignment index
    for (int s = 0; s < steps; ++s)
        for (ValueId v : groups[s].outputs) {
            if (is_output[v] || g.value(v).is_constant())
                continue;
            const Value& val = g.value(v);
            TESSERA_CHECK(val.typed) << "memory planning needs a typed value: " << val.name;
            BufferAssignment a;
            a.value = v;
            a.bytes = shape_numel(val.shape) * static_cast<int64_t>(dtype_size(val.dtype));
            a.def = s;
            a.last_use = s;
            index_of[v] = static_cast<int>(plan.assignments.size());
            plan.assignments.push_back(a);
        }
    for (int s = 0; s < steps; ++s)
        for (ValueId v : groups[s].inputs)
            if (index_of[v] >= 0) {
                BufferAssignment& a = plan.assignments[index_of[v]];
                TESSERA_CHECK(a.def < s) << "group " << s << " reads a value of a later group";
                a.last_use = std::max(a.last_use, s);
            }

    // Walk the steps, releasing dead buffers and assigning outputs.
    std::vector<uint8_t> buffer_free;
    std::vector<int> occupant;   // buffer -> assignment index of the value it holds now
    std::vector<int> dying_here; // assignment indices
    for (int s = 0; s < steps; ++s) {
        // Release what died before this step.
        for (size_t b = 0; b < occupant.size(); ++b)
            if (plan.assignments[occupant[b]].last_use < s)
                buffer_free[b] = 1;
        // Inputs dying at this step, candidates for in-place reuse.
        dying_here.clear();
        // Only a group with one output: each element of an input is read just before the same
        // element of the output overwrites it. A second output's loop nest would still read the
        // input after the first output overwrote it.
        if (groups[s].kind == OpPattern::Elementwise && groups[s].outputs.size() == 1)
            for (ValueId v : groups[s].inputs)
                if (index_of[v] >= 0 && plan.assignments[index_of[v]].last_use == s)
                    dying_here.push_back(index_of[v]);
        for (ValueId v : groups[s].outputs) {
            if (index_of[v] < 0)
                continue;
            BufferAssignment& a = plan.assignments[index_of[v]];
            // In place over a dying input's buffer.
            for (size_t k = 0; k < dying_here.size(); ++k) {
                const BufferAssignment& in = plan.assignments[dying_here[k]];
                if (plan.buffer_bytes[in.buffer] >= a.bytes) {
                    a.buffer = in.buffer;
                    a.in_place = true;
                    dying_here.erase(dying_here.begin() + static_cast<long>(k));
                    break;
                }
            }
            if (a.buffer < 0) {
                int best = -1, largest = -1;
                for (int b = 0; b < static_cast<int>(buffer_free.size()); ++b) {
                    if (!buffer_free[b])
                        continue;
                    const int64_t size = plan.buffer_bytes[b];
                    if (size >= a.bytes && (best < 0 || size < plan.buffer_bytes[best]))
                        best = b;
                    if (largest < 0 || size > plan.buffer_bytes[largest])
                        largest = b;
                }
                if (best < 0 && largest >= 0) {
                    best = largest;
                    plan.buffer_bytes[best] = a.bytes;
                }
                if (best < 0) {
                    best = static_cast<int>(plan.buffer_bytes.size());
                    plan.buffer_bytes.push_back(a.bytes);
                    buffer_free.push_back(0);
                    occupant.push_back(index_of[v]);
                }
                a.buffer = best;
                buffer_free[best] = 0;
            }
            occupant[a.buffer] = index_of[v];
        }
    }

    for (const BufferAssignment& a : plan.assignments) {
        plan.naive_bytes += a.bytes;
        plan.in_place_count += a.in_place;
    }
    for (int64_t b : plan.buffer_bytes)
        plan.planned_bytes += b;
    // Live bytes at each step; an in-place value and its source count once at their meeting.
    for (int s = 0; s < steps; ++s) {
        std::map<int, int64_t> live; // buffer -> bytes live in it
        for (const BufferAssignment& a : plan.assignments)
            if (a.def <= s && s <= a.last_use)
                live[a.buffer] = std::max(live[a.buffer], a.bytes);
        int64_t total = 0;
        for (const auto& [b, bytes] : live)
            total += bytes;
        plan.live_lower_bound = std::max(plan.live_lower_bound, total);
    }
    return plan;
}

} // namespace tessera::graph
