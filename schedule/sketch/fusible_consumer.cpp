// fusible_consumer: the consumer a multi-level-tiled stage can be fused into (Ansor's
// HasSingleElementwiseMatchedConsumer with its ElementWiseMatch chain through inlined stages).
#include <algorithm>

#include "tessera/schedule/sketch.h"

namespace tessera::sched {

int fusible_consumer(const State& s, int sid) {
    const std::vector<int> targets = s.consumers_through_inlined(sid);
    if (targets.size() != 1)
        return -1;
    const int target = targets[0];
    const Stage& t = s.stages[target];
    if (t.is_input() || !s.is_injective(target) || t.location.kind != ComputeLocKind::Root ||
        !t.relations.empty() || !s.attached_stages(target).empty())
        return -1;
    // Every stage on the way (sid, the inlined ones, the target) reads its predecessor alone
    // and elementwise, so the target's tiles map one to one onto sid's.
    int cur = sid;
    for (size_t n = 0; n < s.stages.size(); ++n) {
        // An inlined reader read only by cur's other readers is part of them (SiLU's sigmoid,
        // inlined into the multiply that also reads cur).
        const std::vector<int> all = s.consumers(cur);
        std::vector<int> cons;
        for (int c : all) {
            bool inside = s.stages[c].location.kind == ComputeLocKind::Inlined;
            for (int r : inside ? s.consumers(c) : std::vector<int>{})
                inside = inside && std::find(all.begin(), all.end(), r) != all.end();
            if (!inside || s.consumers(c).empty())
                cons.push_back(c);
        }
        if (cons.size() != 1 || !s.elementwise_match(cur, cons[0]))
            return -1;
        if (cons[0] == target)
            return target;
        if (s.stages[cons[0]].location.kind != ComputeLocKind::Inlined)
            return -1;
        cur = cons[0];
    }
    return -1;
}

} // namespace tessera::sched
