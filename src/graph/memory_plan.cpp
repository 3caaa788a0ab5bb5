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
    // The operands of in-place groups become views of the group's output, which lives from
    // its first operand's definition to the last read of it or any operand.
    for (int s = 0; s < steps; ++s) {
        if (!groups[s].operands_in_place)
            continue;
        const int whole = index_of[groups[s].outputs.at(0)];
        TESSERA_CHECK(whole >= 0) << "an in-place group's output is not planned";
        const std::vector<int64_t> offsets = operand_view_offsets(g, groups[s]);
        for (size_t k = 0; k < groups[s].inputs.size(); ++k) {
            const int view = index_of[groups[s].inputs[k]];
            TESSERA_CHECK(view >= 0) << "an in-place group's operand is not planned";
            BufferAssignment& a = plan.assignments[view];
            BufferAssignment& c = plan.assignments[whole];
            a.view_of = whole;
            a.offset = offsets[k];
            c.def = std::min(c.def, a.def);
            c.last_use = std::max(c.last_use, a.last_use);
        }
    }

    // Walk the steps, releasing dead buffers and assigning outputs.
    std::vector<uint8_t> buffer_free;
    std::vector<int> occupant;   // buffer -> assignment index of the value it holds now
    std::vector<int> dying_here; // assignment indices
    // Assignment `index` takes the smallest free buffer that fits, else the largest free one
    // grown to fit, else a new one.
    auto take_buffer = [&](int index) {
        BufferAssignment& a = plan.assignments[index];
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
            occupant.push_back(index);
        }
        a.buffer = best;
        buffer_free[best] = 0;
        occupant[best] = index;
    };
    for (int s = 0; s < steps; ++s) {
        // Release what died before this step.
        for (size_t b = 0; b < occupant.size(); ++b)
            if (plan.assignments[occupant[b]].last_use < s)
                buffer_free[b] = 1;
        // Inputs dying at this step, candidates for in-place reuse (not views: the rest of
        // their buffer is still live).
        dying_here.clear();
        // Only a group with one output: each element of an input is read just before the same
        // element of the output overwrites it. A second output's loop nest would still read the
        // input after the first output overwrote it.
        if (groups[s].kind == OpPattern::Elementwise && groups[s].outputs.size() == 1)
            for (ValueId v : groups[s].inputs)
                if (index_of[v] >= 0 && plan.assignments[index_of[v]].last_use == s &&
                    plan.assignments[index_of[v]].view_of < 0)
                    dying_here.push_back(index_of[v]);
        for (ValueId v : groups[s].outputs) {
            const int index = index_of[v];
            if (index < 0)
                continue;
            // A view lives in its group's output, which takes its buffer with the first
            // operand defined (never in place: the operand is written at an offset).
            const int whole = plan.assignments[index].view_of;
            if (whole >= 0) {
                if (plan.assignments[whole].buffer < 0)
                    take_buffer(whole);
                plan.assignments[index].buffer = plan.assignments[whole].buffer;
                continue;
            }
            if (plan.assignments[index].buffer >= 0)
                continue; // an in-place group's output, placed with its first operand
            BufferAssignment& a = plan.assignments[index];
            // In place over a dying input's buffer.
            for (size_t k = 0; k < dying_here.size(); ++k) {
                const BufferAssignment& in = plan.assignments[dying_here[k]];
                if (plan.buffer_bytes[in.buffer] >= a.bytes) {
                    a.buffer = in.buffer;
                    a.in_place = true;
                    occupant[a.buffer] = index;
                    dying_here.erase(dying_here.begin() + static_cast<long>(k));
                    break;
                }
            }
            if (a.buffer < 0)
                take_buffer(index);
        }
    }

    for (const BufferAssignment& a : plan.assignments) {
        plan.naive_bytes += a.view_of < 0 ? a.bytes : 0;
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
