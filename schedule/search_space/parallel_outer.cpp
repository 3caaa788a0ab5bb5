// Parallelizing a stage's outer loops (internal/parallel_outer.h).
#include "../internal/parallel_outer.h"

#include <algorithm>
#include <vector>

#include "tessera/schedule/schedule.h"

namespace tessera::sched {

void parallelize_outer_loops(State& s, int sid, int offset, int64_t max_degree, int end) {
    const int n = end >= 0 ? std::min(end, static_cast<int>(s.stages[sid].iters.size()))
                           : static_cast<int>(s.stages[sid].iters.size());
    std::vector<int> to_fuse;
    int64_t degree = 1;
    int k = offset;
    for (; k < n; ++k) {
        const Iterator& it = s.stages[sid].iters[k];
        if (it.kind == IterKind::Reduce || it.annotation != IterAnnotation::None)
            break;
        to_fuse.push_back(k);
        degree *= it.extent;
        if (degree > max_degree || !s.attached_at(sid, k).empty())
            break;
    }
    if (degree == 1) {
        if (k < n) {
            const std::vector<int> attached = s.attached_at(sid, k);
            if (!attached.empty()) {
                for (int a : attached)
                    parallelize_outer_loops(s, a, 0, max_degree);
                parallelize_outer_loops(s, sid, k + 1, max_degree, end);
            }
        }
        return;
    }
    if (to_fuse.size() > 1)
        fuse(s, sid, to_fuse);
    parallel(s, sid, to_fuse.front());
}

} // namespace tessera::sched
