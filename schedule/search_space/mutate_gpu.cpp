// mutate_gpu: the mutation rules of GPU states (Ansor's GPU evolutionary search): tile sizes
// within the device limits with the cooperative fetches following the block's threads, the
// unroll pragma among the GPU configs, and the thread count of untiled stages.
#include <algorithm>

#include "search_space_util.h"
#include "tessera/schedule/mutation.h"
#include "tessera/schedule/schedule.h"

namespace tessera::sched {

namespace {

/// Probability that a tile mutation moves a divisor factor between parts (a perfect tile
/// stays perfect), as sample_initial_gpu_state's 7 in 10 divisor draws.
constexpr double kDivisorProbability = 0.7;

/// Whether steps[i] is a one-length split whose inner part one of the next two steps binds to
/// threadIdx.x (after a block binding of the outer part, or alone).
bool inner_bound_to_thread(const std::vector<Step>& steps, size_t i) {
    const Step& sp = steps[i];
    if (sp.kind != StepKind::Split || sp.lengths.size() != 1)
        return false;
    for (size_t j = i + 1; j < std::min(steps.size(), i + 3); ++j) {
        const Step& an = steps[j];
        if (an.kind != StepKind::Annotate || an.stage != sp.stage)
            return false;
        if (an.iter == sp.iter + 1 && an.annotation == IterAnnotation::ThreadX)
            return true;
    }
    return false;
}

/// Whether steps[i], about to be applied to `pre`, is a cooperative fetch: the split of a
/// shared copy (inside its reader) by the block's threads. (A split by the vector width
/// before the fuse is not: its inner part is vectorized.)
bool is_cooperative_fetch(const State& pre, const std::vector<Step>& steps, size_t i) {
    const Step& step = steps[i];
    if (!inner_bound_to_thread(steps, i) || step.stage < 0 ||
        step.stage >= static_cast<int>(pre.stages.size()))
        return false;
    const Stage& st = pre.stages[step.stage];
    return st.scope == StageScope::Shared && st.location.kind == ComputeLocKind::At;
}

/// Whether steps[i], about to be applied to `pre`, binds a root stage's threads: the split of
/// an untiled stage's fused spatial loop (one element per thread) or of a cross-thread
/// reduction's fused reduce loop, its inner part bound to threadIdx.x.
bool is_thread_split(const State& pre, const std::vector<Step>& steps, size_t i) {
    const Step& step = steps[i];
    if (!inner_bound_to_thread(steps, i) || step.stage < 0 ||
        step.stage >= static_cast<int>(pre.stages.size()))
        return false;
    const Stage& st = pre.stages[step.stage];
    return !st.is_input() && st.location.kind == ComputeLocKind::Root &&
           st.scope != StageScope::Shared && !is_tiled(st) && step.iter >= 0 &&
           step.iter < static_cast<int>(st.iters.size());
}

/// The indices of the steps `accept(pre, step)` picks, judged on the state before each.
template <typename F> std::vector<size_t> find_steps(const State& s, F accept) {
    std::vector<size_t> out;
    State pre = make_initial_state(s.compute);
    for (size_t i = 0; i < s.steps.size(); ++i) {
        if (accept(pre, s.steps, i))
            out.push_back(i);
        apply_step(pre, s.steps[i]);
    }
    return out;
}

/// make_initial_state(c) with `steps` applied, each cooperative fetch re-split by its
/// block's thread count at that point (refresh_cooperative_fetch).
State replay_refreshing_fetches(const te::Compute& c, const std::vector<Step>& steps) {
    State out = make_initial_state(c);
    for (size_t i = 0; i < steps.size(); ++i) {
        Step step = steps[i];
        if (is_cooperative_fetch(out, steps, i))
            step.lengths = {detail::block_threads(out, step.stage)};
        apply_step(out, step);
    }
    return out;
}

/// Replays `steps` with the cooperative fetches refreshed and checks the limits; throws
/// ScheduleError naming the broken limit.
State replay_within_limits(const te::Compute& c, const std::vector<Step>& steps,
                           const GpuSampleOptions& opts) {
    State s = replay_refreshing_fetches(c, steps);
    const std::string why = gpu_limit_violation(s, opts);
    if (!why.empty())
        throw ScheduleError(why);
    return s;
}

} // namespace

bool is_gpu_state(const State& s) {
    for (const Stage& st : s.stages)
        for (const Iterator& it : st.iters)
            if (is_gpu_binding(it.annotation))
                return true;
    return false;
}

State refresh_cooperative_fetch(const State& s) {
    return replay_refreshing_fetches(s.compute, s.steps);
}

State mutate_gpu_tile_size(const State& s, Rng& rng, const GpuSampleOptions& opts) {
    std::vector<size_t> splits;
    for (size_t i = 0; i < s.steps.size(); ++i)
        if (s.steps[i].kind == StepKind::Split && s.steps[i].lengths.size() >= 2)
            splits.push_back(i);
    if (splits.empty())
        throw ScheduleError("mutate_gpu_tile_size: the state has no multi-level tiling split");
    std::string last = "no new tile size";
    for (int attempt = 0; attempt < std::max(1, opts.max_tries); ++attempt) {
        const size_t k = detail::pick(splits, rng);
        const Step& step = s.steps[k];
        const State pre = detail::replay_prefix(s.compute, s.steps, k);
        const Stage& st = pre.stage(step.stage, "split stage");
        if (step.iter < 0 || step.iter >= static_cast<int>(st.iters.size()))
            throw ScheduleError("mutate_gpu_tile_size: split step " + std::to_string(k) +
                                " has iterator " + std::to_string(step.iter) + " out of range");
        const std::vector<int64_t> lengths = detail::mutate_split_lengths(
            st.iters[step.iter].extent, step.lengths, kDivisorProbability, rng);
        if (lengths == step.lengths)
            continue;
        std::vector<Step> steps = s.steps;
        steps[k].lengths = lengths;
        try {
            return replay_within_limits(s.compute, steps, opts);
        } catch (const ScheduleError& e) {
            last = e.what(); // draw again
        }
    }
    throw ScheduleError("mutate_gpu_tile_size: no tile size within the limits (last: " + last +
                        ")");
}

State mutate_gpu_auto_unroll(const State& s, Rng& rng, const GpuSampleOptions& opts) {
    SampleOptions menu;
    menu.auto_unroll_configs = opts.auto_unroll_configs;
    return mutate_auto_unroll(s, rng, menu);
}

State mutate_gpu_thread_count(const State& s, Rng& rng, const GpuSampleOptions& opts) {
    const std::vector<size_t> splits = find_steps(s, is_thread_split);
    if (splits.empty())
        throw ScheduleError("mutate_gpu_thread_count: the state has no untiled thread binding");
    const size_t k = detail::pick(splits, rng);
    const State pre = detail::replay_prefix(s.compute, s.steps, k);
    const Step& step = s.steps[k];
    const Stage& st = pre.stage(step.stage, "split stage");
    if (step.iter < 0 || step.iter >= static_cast<int>(st.iters.size()))
        throw ScheduleError("mutate_gpu_thread_count: split step " + std::to_string(k) +
                            " has iterator " + std::to_string(step.iter) + " out of range");
    const int64_t extent = st.iters[step.iter].extent;
    std::vector<int64_t> values;
    if (st.iters[step.iter].kind == IterKind::Reduce) {
        // A cross-thread reduction: whole warps, as sampled (up to max_reduce_threads and the
        // reduce extent rounded up to a warp).
        const int64_t warps = detail::max_reduce_warps(extent, opts);
        for (int64_t w = 1; w <= warps; ++w)
            if (32 * w != step.lengths[0] && 32 * w <= opts.max_threads_per_block)
                values.push_back(32 * w);
    } else {
        for (int64_t v : opts.elementwise_threads) {
            const int64_t capped = std::max<int64_t>(1, std::min(v, extent));
            if (capped != step.lengths[0] && capped <= opts.max_threads_per_block &&
                std::find(values.begin(), values.end(), capped) == values.end())
                values.push_back(capped);
        }
    }
    if (values.empty())
        throw ScheduleError("mutate_gpu_thread_count: no other thread count fits");
    std::vector<Step> steps = s.steps;
    steps[k].lengths = {detail::pick(values, rng)};
    return replay_within_limits(s.compute, steps, opts);
}

std::optional<State> mutate_gpu(const State& s, Rng& rng, const GpuSampleOptions& opts,
                                const GpuMutationWeights& weights) {
    bool tiles = false, unroll = false;
    for (const Step& step : s.steps) {
        tiles = tiles || (step.kind == StepKind::Split && step.lengths.size() >= 2);
        unroll = unroll || (step.kind == StepKind::Pragma && step.pragma == "auto_unroll_max_step");
    }
    const bool threads = !find_steps(s, is_thread_split).empty();
    const double w[3] = {tiles ? std::max(0.0, weights.tile_size) : 0.0,
                         unroll ? std::max(0.0, weights.auto_unroll) : 0.0,
                         threads ? std::max(0.0, weights.thread_count) : 0.0};
    const double total = w[0] + w[1] + w[2];
    if (!(total > 0))
        return std::nullopt;
    double x = rng.uniform01() * total;
    int pick = 0;
    while (pick < 2 && x >= w[pick]) {
        x -= w[pick];
        ++pick;
    }
    while (w[pick] <= 0) // rounding past the last positive weight
        --pick;
    try {
        switch (pick) {
        case 0:
            return mutate_gpu_tile_size(s, rng, opts);
        case 1:
            return mutate_gpu_auto_unroll(s, rng, opts);
        default:
            return mutate_gpu_thread_count(s, rng, opts);
        }
    } catch (const ScheduleError&) {
        return std::nullopt;
    }
}

} // namespace tessera::sched
