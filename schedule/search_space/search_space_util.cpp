// Internal helpers of annotation and mutation.
#include "search_space_util.h"

#include <algorithm>

#include "tessera/schedule/schedule.h"
#include "tessera/support/error.h"

namespace tessera::sched::detail {

std::vector<int64_t> divisors(int64_t n) {
    std::vector<int64_t> small, large;
    for (int64_t d = 1; d * d <= n; ++d) {
        if (n % d != 0)
            continue;
        small.push_back(d);
        if (d != n / d)
            large.push_back(n / d);
    }
    small.insert(small.end(), large.rbegin(), large.rend());
    return small;
}

State replay_prefix(const te::Compute& c, const std::vector<Step>& steps, size_t n) {
    TESSERA_CHECK(n <= steps.size()) << "prefix of " << n << " of " << steps.size() << " steps";
    return replay(c, std::vector<Step>(steps.begin(), steps.begin() + static_cast<long>(n)));
}

State replay_rest(State s, const std::vector<Step>& steps, size_t from) {
    for (size_t i = from; i < steps.size(); ++i) {
        try {
            apply_step(s, steps[i]);
        } catch (const ScheduleError& e) {
            throw ScheduleError("step " + std::to_string(i) + " (" + to_string(steps[i]) +
                                "): " + e.what());
        }
    }
    return s;
}

State replay_rest_limiting_vectors(const State& s, std::vector<Step> steps, size_t from,
                                   int64_t max_lanes) {
    State out = replay_rest(s, steps, from);
    std::vector<bool> wide(out.stages.size(), false);
    bool any = false;
    for (size_t sid = 0; sid < out.stages.size(); ++sid)
        for (const Iterator& it : out.stages[sid].iters)
            if (it.annotation == IterAnnotation::Vectorize && it.extent > max_lanes)
                any = wide[sid] = true;
    if (!any)
        return out;
    // Stage ids in steps after `from` are those of the final state as long as no stage is
    // added after it; otherwise leave the state as it is (lowering reports the wide loop).
    for (size_t i = from; i < steps.size(); ++i)
        if (steps[i].kind == StepKind::CacheWrite || steps[i].kind == StepKind::CacheRead ||
            steps[i].kind == StepKind::Rfactor)
            return out;
    for (size_t i = steps.size(); i-- > from;)
        if (steps[i].kind == StepKind::Annotate &&
            steps[i].annotation == IterAnnotation::Vectorize && steps[i].stage >= 0 &&
            steps[i].stage < static_cast<int>(wide.size()) && wide[steps[i].stage])
            erase_step(steps, i);
    return replay_rest(s, steps, from);
}

std::vector<int64_t> mutate_split_lengths(int64_t extent, std::vector<int64_t> lengths,
                                          double divisor_probability, Rng& rng) {
    const size_t n = lengths.size();
    int64_t prod = 1;
    for (int64_t l : lengths)
        prod *= l;
    if (rng.uniform01() < divisor_probability) {
        // Move a factor d of one part (position 0 is the outer part, whose extent is the
        // ceiling of what the others leave) to another part.
        std::vector<int64_t> value(n + 1);
        value[0] = (extent + prod - 1) / prod;
        std::copy(lengths.begin(), lengths.end(), value.begin() + 1);
        std::vector<size_t> sources;
        for (size_t p = 0; p <= n; ++p)
            if (value[p] > 1)
                sources.push_back(p);
        if (sources.empty())
            return lengths;
        const size_t src = pick(sources, rng);
        std::vector<int64_t> factors = divisors(value[src]);
        factors.erase(factors.begin()); // 1
        const int64_t d = pick(factors, rng);
        size_t dst = static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(n) - 1));
        if (dst >= src)
            ++dst;
        if (src > 0)
            lengths[src - 1] = value[src] / d;
        if (dst > 0)
            lengths[dst - 1] *= d;
    } else {
        // Resample one part freely, keeping the product within about the extent.
        const size_t j = static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(n) - 1));
        const int64_t others = prod / lengths[j];
        lengths[j] = rng.uniform_int(1, std::max<int64_t>(1, (extent + others - 1) / others));
    }
    return lengths;
}

void erase_step(std::vector<Step>& steps, size_t idx) {
    TESSERA_CHECK(idx < steps.size()) << "erase of step " << idx << " of " << steps.size();
    const int removed = static_cast<int>(idx);
    for (size_t i = idx + 1; i < steps.size(); ++i) {
        Step& st = steps[i];
        if (st.kind != StepKind::FollowSplit)
            continue;
        if (st.src_step == removed)
            throw ScheduleError("step " + std::to_string(i) + " follows the removed step " +
                                std::to_string(idx));
        if (st.src_step > removed)
            --st.src_step;
    }
    steps.erase(steps.begin() + static_cast<long>(idx));
}

void insert_step(std::vector<Step>& steps, size_t idx, Step st) {
    TESSERA_CHECK(idx <= steps.size()) << "insert at " << idx << " of " << steps.size();
    for (size_t i = idx; i < steps.size(); ++i)
        if (steps[i].kind == StepKind::FollowSplit && steps[i].src_step >= static_cast<int>(idx))
            ++steps[i].src_step;
    steps.insert(steps.begin() + static_cast<long>(idx), std::move(st));
}

int root_stage(const State& s, int sid) {
    while (s.stages[sid].location.kind == ComputeLocKind::At)
        sid = s.stages[sid].location.stage;
    return sid;
}

int64_t annotated_product(const Stage& st, IterAnnotation a) {
    int64_t p = 1;
    for (const Iterator& it : st.iters)
        if (it.annotation == a)
            p *= it.extent;
    return p;
}

int64_t block_threads(const State& s, int sid) {
    return annotated_product(s.stages[root_stage(s, sid)], IterAnnotation::ThreadX);
}

int64_t max_reduce_warps(int64_t extent, const GpuSampleOptions& opts) {
    return std::max<int64_t>(
        1, std::min((extent + 31) / 32, std::max<int64_t>(32, opts.max_reduce_threads) / 32));
}

int fuse_run(State& s, int sid, int first, int count) {
    if (count == 1)
        return first;
    std::vector<int> ids;
    for (int k = first; k < first + count; ++k)
        ids.push_back(k);
    return fuse(s, sid, ids);
}

bool is_cross_thread_split(const State& s, const std::vector<Step>& steps, size_t i) {
    const Step& sp = steps[i];
    if (sp.kind != StepKind::Split || sp.lengths.size() != 1 || i + 1 >= steps.size() ||
        sp.stage < 0 || sp.stage >= static_cast<int>(s.stages.size()))
        return false;
    const Stage& st = s.stages[sp.stage];
    if (sp.iter < 0 || sp.iter >= static_cast<int>(st.iters.size()) ||
        st.iters[sp.iter].kind != IterKind::Reduce)
        return false;
    const Step& an = steps[i + 1];
    return an.kind == StepKind::Annotate && an.stage == sp.stage && an.iter == sp.iter + 1 &&
           an.annotation == IterAnnotation::ThreadX;
}

void bind_tiled(State& s, int sid) {
    const int n_space = static_cast<int>(s.stages[sid].axes.size());
    const Stage& st = s.stages[sid];
    if (n_space == 0 || static_cast<int>(st.iters.size()) < 3 * n_space)
        throw ScheduleError("tiled stage '" + st.tensor.name() + "' has too few loops to bind");
    for (int k = 0; k < 3 * n_space; ++k)
        if (st.iters[k].kind != IterKind::Spatial)
            throw ScheduleError("tiled stage '" + st.tensor.name() +
                                "' does not start with three spatial levels");
    const IterAnnotation kinds[3] = {IterAnnotation::BlockX, IterAnnotation::VThread,
                                     IterAnnotation::ThreadX};
    for (int level = 0; level < 3; ++level)
        annotate(s, sid, fuse_run(s, sid, level, n_space), kinds[level]);
}

void bind_cross_thread(State& s, int sid) {
    int n_space = 0;
    while (n_space < static_cast<int>(s.stages[sid].iters.size()) &&
           s.stages[sid].iters[n_space].kind == IterKind::Spatial)
        ++n_space;
    if (n_space > 0)
        annotate(s, sid, fuse_run(s, sid, 0, n_space), IterAnnotation::BlockX);
}

void bind_cooperative_fetch(State& s, int sid, int64_t threads, int64_t vector_width) {
    const int n = static_cast<int>(s.stages[sid].iters.size());
    if (vector_width > 0) {
        split(s, sid, n - 1, {vector_width});     // ..., c_o, c_i
        const int fused = fuse_run(s, sid, 0, n); // (... c_o), c_i
        split(s, sid, fused, {threads});          // outer, thread, c_i
        annotate(s, sid, 1, IterAnnotation::ThreadX);
        annotate(s, sid, 2, IterAnnotation::Vectorize);
        return;
    }
    const int fused = fuse_run(s, sid, 0, n);
    const std::vector<int> parts = split(s, sid, fused, {threads});
    annotate(s, sid, parts[1], IterAnnotation::ThreadX);
}

} // namespace tessera::sched::detail
