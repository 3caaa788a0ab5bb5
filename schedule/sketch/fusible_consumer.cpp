// fusible_consumer: the consumer a multi-level-tiled stage can be fused into (Ansor's
// HasSingleElementwiseMatchedConsumer with its ElementWiseMatch chain through inlined stages).
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
        const std::vector<int> cons = s.consumers(cur);
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
