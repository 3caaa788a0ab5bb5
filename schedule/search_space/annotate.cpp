// sample_initial_state: Ansor's initial-population rules (InitFillTileSize,
// InitChangeComputeLocation, InitParallel, InitUnroll, InitVectorization) over a sketch.
#include <algorithm>

#include "../internal/parallel_outer.h"
#include "search_space_util.h"
#include "tessera/schedule/sampling.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"

namespace tessera::sched {

namespace {

/// The most vectors one unrolled register-tile row may hold (split_wide_vector_tile): beyond
/// it the loop stays scalar (a 32-register file cannot hold more accumulators anyway).
constexpr int64_t kMaxUnrolledVectors = 8;

/// Replays the sketch with every Split step's lengths sampled for the extent it splits; with
/// probability opts.register_resident_probability the multi-level tiles have no cache tile
/// (the second-innermost part of each four-part spatial split is 1).
State fill_tile_sizes(const State& sketch, Rng& rng, const SampleOptions& opts) {
    const bool register_resident = rng.uniform01() < opts.register_resident_probability;
    State s = make_initial_state(sketch.compute);
    for (size_t i = 0; i < sketch.steps.size(); ++i) {
        Step step = sketch.steps[i];
        if (step.kind == StepKind::Split && !step.lengths.empty()) {
            const Stage& st = s.stage(step.stage, "split stage");
            if (step.iter >= 0 && step.iter < static_cast<int>(st.iters.size())) {
                const Iterator& it = st.iters[step.iter];
                step.lengths = sample_split_lengths(it.extent, step.lengths.size(), rng, opts);
                if (register_resident && step.lengths.size() == 3 && it.kind == IterKind::Spatial)
                    step.lengths[1] = 1;
            }
        }
        if (is_panel_layout_step(s, step)) {
            const int64_t width = panel_width_for(s, step, opts);
            for (int64_t& f : step.lengths)
                f = f > 1 ? width : f;
        }
        try {
            apply_step(s, step);
        } catch (const ScheduleError& e) {
            throw ScheduleError("sketch step " + std::to_string(i) + " (" + to_string(step) +
                                "): " + e.what());
        }
    }
    return s;
}

/// Each movable stage, last to first: inline, root, or a candidate loop, uniformly.
void change_compute_locations(State& s, Rng& rng) {
    for (int sid = static_cast<int>(s.stages.size()) - 1; sid >= 0; --sid) {
        if (!can_change_compute_location(s, sid))
            continue;
        const auto candidates = compute_location_candidates(s, sid);
        const int64_t choice = rng.uniform_int(0, static_cast<int64_t>(candidates.size()) + 1);
        if (choice == 0) {
            if (!s.stages[sid].has_reduce() && s.attached_stages(sid).empty())
                compute_inline(s, sid);
        } else if (choice == 1) {
            compute_root(s, sid);
        } else {
            const auto& [target, iter] = candidates[static_cast<size_t>(choice - 2)];
            compute_at(s, sid, target, iter);
        }
    }
}


/// A register tile whose innermost spatial loop is a whole number of vectors wider than one
/// (e.g. the 64 columns of a 6 x 64 sgemm tile): split it into vector-wide parts, vectorize
/// the inner part and unroll the outer one, so that the tile stays a set of vector registers
/// (one vector per unrolled part) instead of a scalar loop. Applies to tiled stages (the
/// register tile) and to cache-read copies (packing loops, any whole number of vectors; the
/// outer part unrolled only up to the same bound); nothing otherwise.
void split_wide_vector_tile(State& s, int sid, const SampleOptions& opts) {
    const Stage& st = s.stages[sid];
    const int n = static_cast<int>(st.iters.size());
    const int64_t lanes = opts.max_vectorize_lanes;
    if (n == 0 || lanes < 2 || !(is_tiled(st) || st.origin == StageOrigin::CacheRead))
        return;
    const Iterator& it = st.iters[n - 1];
    const bool copy = st.origin == StageOrigin::CacheRead;
    if (it.kind == IterKind::Reduce || it.annotation != IterAnnotation::None ||
        !s.attached_at(sid, n - 1).empty() || it.extent <= lanes || it.extent % lanes != 0 ||
        (!copy && it.extent > lanes * kMaxUnrolledVectors))
        return;
    const bool unrolled = it.extent <= lanes * kMaxUnrolledVectors;
    split(s, sid, n - 1, {lanes});
    if (unrolled)
        unroll(s, sid, n - 1);
    vectorize(s, sid, n);
}

/// Fuses the innermost spatial loops (only one in a tiled stage, whose inner loops do not
/// walk contiguous memory together) while the product stays within the vector width, and
/// vectorizes a random number of them.
void annotate_vectorize(State& s, int sid, Rng& rng, const SampleOptions& opts) {
    const Stage& st = s.stages[sid];
    const int n = static_cast<int>(st.iters.size());
    const bool tiled = is_tiled(st);
    int64_t prod = 1;
    int fusible = 0;
    while (fusible < n) {
        const int k = n - 1 - fusible;
        const Iterator& it = st.iters[k];
        if (!s.attached_at(sid, k).empty() || it.kind == IterKind::Reduce ||
            it.annotation != IterAnnotation::None || (tiled && fusible > 0))
            break;
        prod *= it.extent;
        if (prod > opts.max_vectorize_lanes)
            break;
        ++fusible;
    }
    if (fusible == 0) {
        split_wide_vector_tile(s, sid, opts);
        return;
    }
    const int count = static_cast<int>(rng.uniform_int(1, fusible));
    int iter = n - 1;
    if (count > 1) {
        std::vector<int> ids;
        for (int k = n - count; k < n; ++k)
            ids.push_back(k);
        iter = fuse(s, sid, ids);
    }
    vectorize(s, sid, iter);
}

} // namespace

std::vector<int64_t> default_auto_unroll_configs() { return {0, 16, 64, 512}; }

State sample_initial_state(const State& sketch, Rng& rng, const SampleOptions& opts) {
    State s = fill_tile_sizes(sketch, rng, opts);
    if (opts.change_compute_location)
        change_compute_locations(s, rng);

    const int64_t max_degree = int64_t{16} * std::max(1, opts.num_cores);
    for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid)
        if (!s.stages[sid].is_input() && s.stages[sid].location.kind == ComputeLocKind::Root)
            parallelize_outer_loops(s, sid, 0, max_degree);

    for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid) {
        const Stage& st = s.stages[sid];
        if (st.is_input() || st.location.kind == ComputeLocKind::Inlined || st.iters.empty() ||
            opts.auto_unroll_configs.empty())
            continue;
        const bool reduces = std::any_of(st.iters.begin(), st.iters.end(), [](const Iterator& it) {
            return it.kind == IterKind::Reduce;
        });
        if (reduces)
            pragma(s, sid, 0, "auto_unroll_max_step", detail::pick(opts.auto_unroll_configs, rng));
    }

    for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid)
        if (!s.stages[sid].is_input() && s.stages[sid].location.kind != ComputeLocKind::Inlined)
            annotate_vectorize(s, sid, rng, opts);
    return s;
}

} // namespace tessera::sched
