// sample_initial_gpu_state: Ansor's GPU initial-population rules (fill tile sizes, thread
// binding, cooperative fetching, unroll) over a GPU sketch, with cheap device-limit checks.
#include <algorithm>

#include "search_space_util.h"
#include "tessera/schedule/gpu_sampling.h"
#include "tessera/schedule/schedule.h"

namespace tessera::sched {

namespace {

/// Caps of sampled split lengths (outer to inner, as Step::lengths) by the number of lengths:
/// a spatial GPU tiling (4: vthread, thread, two register levels) or a reduce one (2), so
/// that most samples fit the thread, register and shared-memory limits; anything else 64.
std::vector<int64_t> length_caps(size_t count) {
    if (count == 4)
        return {4, 32, 4, 4};
    if (count == 2)
        return {8, 8};
    return std::vector<int64_t>(count, 64);
}

/// Lengths innermost first, each a divisor of the extent left (probability 0.7) or any value,
/// within its cap.
std::vector<int64_t> sample_capped_lengths(int64_t extent, size_t count, Rng& rng) {
    const std::vector<int64_t> caps = length_caps(count);
    std::vector<int64_t> out(count, 1);
    int64_t left = extent;
    for (size_t i = count; i-- > 0;) {
        const int64_t cap = std::max<int64_t>(1, std::min(caps[i], left));
        std::vector<int64_t> divisors;
        for (int64_t d = 1; d <= cap; ++d)
            if (left % d == 0)
                divisors.push_back(d);
        if (rng.uniform_int(0, 9) < 7)
            out[i] = divisors[static_cast<size_t>(rng.uniform_int(0, int64_t(divisors.size()) - 1))];
        else
            out[i] = rng.uniform_int(1, cap);
        left = (left + out[i] - 1) / out[i];
    }
    return out;
}

/// The block's thread count of a cross-thread reduction over `extent` iterations: a multiple
/// of 32 up to opts.max_reduce_threads and to the extent rounded up to a warp.
int64_t sample_reduce_threads(int64_t extent, Rng& rng, const GpuSampleOptions& opts) {
    return 32 * rng.uniform_int(1, detail::max_reduce_warps(extent, opts));
}

/// Replays the sketch with every Split step's lengths sampled for the extent it splits.
State fill_gpu_tile_sizes(const State& sketch, Rng& rng, const GpuSampleOptions& opts) {
    State s = make_initial_state(sketch.compute);
    for (size_t i = 0; i < sketch.steps.size(); ++i) {
        Step step = sketch.steps[i];
        if (step.kind == StepKind::Split && !step.lengths.empty()) {
            const Stage& st = s.stage(step.stage, "split stage");
            if (detail::is_cross_thread_split(s, sketch.steps, i))
                step.lengths = {sample_reduce_threads(st.iters[step.iter].extent, rng, opts)};
            else if (step.iter >= 0 && step.iter < static_cast<int>(st.iters.size()))
                step.lengths =
                    sample_capped_lengths(st.iters[step.iter].extent, step.lengths.size(), rng);
        }
        apply_step(s, step);
    }
    return s;
}

/// An untiled root stage: its spatial loops fused, split by a sampled thread count and bound.
void bind_untiled(State& s, int sid, Rng& rng, const GpuSampleOptions& opts) {
    const Stage& st = s.stages[sid];
    std::vector<int> spatial;
    int64_t size = 1;
    for (int k = 0; k < static_cast<int>(st.iters.size()); ++k)
        if (st.iters[k].kind == IterKind::Spatial) {
            spatial.push_back(k);
            size *= st.iters[k].extent;
        }
    if (spatial.empty() || spatial.back() != static_cast<int>(spatial.size()) - 1)
        return; // nothing to bind (or not in the initial order): one thread runs it
    const int fused = detail::fuse_run(s, sid, 0, static_cast<int>(spatial.size()));
    const auto& menu = opts.elementwise_threads;
    int64_t threads = menu[static_cast<size_t>(rng.uniform_int(0, int64_t(menu.size()) - 1))];
    threads = std::max<int64_t>(1, std::min(threads, size));
    const std::vector<int> parts = split(s, sid, fused, {threads});
    annotate(s, sid, parts[0], IterAnnotation::BlockX);
    annotate(s, sid, parts[1], IterAnnotation::ThreadX);
}

/// Cooperative fetching of a shared copy: its loops fused, split by the block's thread count,
/// the inner part bound to threadIdx.x. When the innermost loop's extent is a multiple of the
/// vector width (4 for 4-byte types, 2 for f16), half of the samples first split it by that
/// width and vectorize the inner part (one float4 / half2 access per thread and step).
void bind_cooperative_fetch(State& s, int sid, int64_t threads, Rng& rng) {
    const Stage& st = s.stages[sid];
    const int64_t inner = st.iters.back().extent;
    const int bytes = st.tensor.dtype().bytes();
    const int64_t width = bytes == 4 ? 4 : (bytes == 2 && st.tensor.dtype().is_float() ? 2 : 0);
    const bool vectorize =
        width > 0 && inner % width == 0 && inner > width && rng.uniform_int(0, 1) == 1;
    detail::bind_cooperative_fetch(s, sid, threads, vectorize ? width : 0);
}

/// Elements of the region a stage stores (its root nodes' extents).
int64_t region_elements(const Stage& st) {
    int64_t n = 1;
    for (size_t d = 0; d < st.axes.size(); ++d)
        n *= st.nodes[d].extent;
    return n;
}

/// Why the state breaks a device limit, or "" when it fits.
std::string limit_violation(const State& s, const GpuSampleOptions& opts) {
    std::vector<int64_t> shared(s.stages.size(), 0);
    for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid) {
        const Stage& st = s.stages[sid];
        if (st.is_input() || st.location.kind == ComputeLocKind::Inlined)
            continue;
        const int64_t bytes = region_elements(st) * st.tensor.dtype().bytes();
        if (st.location.kind == ComputeLocKind::Root) {
            if (detail::annotated_product(st, IterAnnotation::ThreadX) > opts.max_threads_per_block)
                return "too many threads per block";
            if (detail::annotated_product(st, IterAnnotation::VThread) > opts.max_vthread)
                return "too many virtual threads";
        } else if (st.scope == StageScope::Shared) {
            shared[detail::root_stage(s, sid)] += bytes;
        } else if (bytes > opts.max_local_bytes) {
            return "register tile of '" + st.tensor.name() + "' too large";
        }
    }
    for (int64_t b : shared)
        if (b > opts.max_shared_bytes)
            return "too much shared memory";
    return "";
}

State sample_once(const State& sketch, Rng& rng, const GpuSampleOptions& opts) {
    State s = fill_gpu_tile_sizes(sketch, rng, opts);
    // Root stages first (their thread counts size the cooperative fetches).
    for (int sid = static_cast<int>(s.stages.size()) - 1; sid >= 0; --sid) {
        const Stage& st = s.stages[sid];
        if (st.is_input() || st.location.kind != ComputeLocKind::Root)
            continue;
        if (cross_thread_reduce_iter(s, sid) >= 0)
            detail::bind_cross_thread(s, sid);
        else if (is_tiled(st))
            detail::bind_tiled(s, sid);
        else if (s.attached_stages(sid).empty())
            bind_untiled(s, sid, rng, opts);
    }
    for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid) {
        const Stage& st = s.stages[sid];
        if (st.location.kind != ComputeLocKind::At)
            continue;
        if (st.scope == StageScope::Shared) {
            // Cooperative fetching: all threads of the block copy the tile together.
            bind_cooperative_fetch(s, sid, detail::block_threads(s, sid), rng);
        } else if (st.has_reduce() && is_tiled(st)) {
            const auto& menu = opts.auto_unroll_configs;
            const int64_t v = menu[static_cast<size_t>(rng.uniform_int(0, int64_t(menu.size()) - 1))];
            pragma(s, sid, 0, "auto_unroll_max_step", v);
        }
    }
    const std::string why = limit_violation(s, opts);
    if (!why.empty())
        throw ScheduleError(why);
    return s;
}

} // namespace

std::string gpu_limit_violation(const State& s, const GpuSampleOptions& opts) {
    return limit_violation(s, opts);
}

State sample_initial_gpu_state(const State& sketch, Rng& rng, const GpuSampleOptions& opts) {
    std::string last;
    for (int attempt = 0; attempt < std::max(1, opts.max_tries); ++attempt) {
        try {
            return sample_once(sketch, rng, opts);
        } catch (const ScheduleError& e) {
            last = e.what();
        }
    }
    throw ScheduleError("no GPU annotation within the device limits after " +
                        std::to_string(opts.max_tries) + " samples (last: " + last + ")");
}

} // namespace tessera::sched
