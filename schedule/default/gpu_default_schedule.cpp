// gpu_default_schedule: the rule-based default schedule for GPUs (default_schedule.h). A tiled
// reduction gets the GPU sketch "SSSRRSRS" (a local register tile fused into its copy-out,
// shared copies of its inputs) with fixed tile lengths derived from its shape: a block tile of
// threads x register tile along two reuse axes, chosen so that the grid has enough blocks to
// fill the device, and an inner reduce tile that the shared copies hold. A long reduction with
// a small output is a cross-thread reduction (a block per output element). Every other stage
// is inlined or bound one output element per thread. Candidates are checked against the device
// limits and the GPU lowering; the first that passes wins, and smaller tiles, then the plain
// binding, follow when none does.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "../internal/body_util.h"
#include "../search_space/search_space_util.h"
#include "default_rules.h"
#include "tessera/schedule/gpu_sampling.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"

namespace tessera::sched::detail {

namespace {

/// The tiling structure of the GPU sketches: levels block, vthread, thread (spatial), two
/// reduce levels, a spatial register level, a reduce level, a spatial register level.
const char* const kGpuStructure = "SSSRRSRS";
/// Threads per block of an untiled stage (one output element per thread).
constexpr int64_t kElementwiseThreads = 256;
/// pragma auto_unroll_max_step of a tiled reduction: the register tile with a few reduce steps
/// is unrolled (one of GpuSampleOptions' default auto_unroll_configs).
constexpr int64_t kAutoUnroll = 512;

/// Block tiles along the two reuse axes (x the inner, y the outer), largest first: threads x
/// per-thread register tile per axis. 8x8 registers per thread and 256 threads (128x128 block
/// tiles) for large outputs, down to small tiles that give small outputs enough blocks.
struct TileConfig {
    int64_t reg_x, reg_y, thr_x, thr_y;
};
constexpr TileConfig kConfigs[] = {
    {8, 8, 16, 16}, {4, 4, 16, 16}, {4, 4, 16, 8}, {4, 4, 8, 8}, {2, 2, 8, 8}, {1, 1, 8, 8},
};
constexpr int kNumConfigs = static_cast<int>(sizeof(kConfigs) / sizeof(kConfigs[0]));
/// The inner reduce tile (what one shared copy holds per step) along each reduce axis: a
/// reduce axis up to this long (a kernel window, a short K) lies whole inside it, a longer one
/// is cut into chunks of this length (shorter where the unroll budget asks, plan_tiles).
/// Smaller caps are tried when the copies do not fit.
constexpr int64_t kReduceCaps[] = {8, 4, 1};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The split lengths of one tiled stage: per spatial axis [vthread, thread, 1, register], per
/// reduce axis [inner tile, 1] (inner to the reduce level the shared copies are fetched at).
struct TilePlan {
    std::vector<std::vector<int64_t>> spatial;
    std::vector<std::vector<int64_t>> reduce;
};

/// For each spatial axis of st, which of its body's reads leave it out (do not index with it):
/// a block tile along such an axis reuses those reads' data. Axes of extent 1 reuse nothing.
std::vector<std::vector<bool>> left_out_reads(const Stage& st) {
    std::vector<std::vector<bool>> out(st.axes.size());
    const ir::Expr body = inline_lets(st.body);
    for_each_read(body, [&](const ir::TensorRead* r) {
        for (size_t d = 0; d < st.axes.size(); ++d) {
            bool used = false;
            for (const ir::Expr& i : r->indices)
                used = used || uses_any(i, {st.axes[d].get()});
            out[d].push_back(!used && st.nodes[d].extent > 1);
        }
    });
    return out;
}

bool any_of(const std::vector<bool>& v) { return std::find(v.begin(), v.end(), true) != v.end(); }

/// The two axes a block tile spans (x inner, y outer; -1 when the stage has no such axis): x
/// the innermost axis with reuse; y the innermost other axis whose reuse comes from other
/// reads (matmul's i and j, a convolution's output channels and width), else the next axis
/// with reuse, else the next axis longer than 1.
std::pair<int, int> tile_axes(const Stage& st) {
    const std::vector<std::vector<bool>> left_out = left_out_reads(st);
    const int n = static_cast<int>(st.axes.size());
    auto innermost = [&](auto&& accept) {
        for (int d = n - 1; d >= 0; --d)
            if (st.nodes[d].extent > 1 && accept(d))
                return d;
        return -1;
    };
    int x = innermost([&](int d) { return any_of(left_out[d]); });
    if (x < 0)
        x = innermost([](int) { return true; });
    if (x < 0)
        return {-1, -1};
    int y = innermost(
        [&](int d) { return d != x && any_of(left_out[d]) && left_out[d] != left_out[x]; });
    if (y < 0)
        y = innermost([&](int d) { return d != x && any_of(left_out[d]); });
    if (y < 0)
        y = innermost([&](int d) { return d != x; });
    return {x, y};
}

/// Threads along an axis of `tiles` register tiles, `wanted` of them or fewer: all when they
/// are no more, else the largest divisor of tiles between wanted / 2 and wanted (whole block
/// tiles: 56 columns in 14 tiles of 4 take 7 threads, not 8 with a partial block under
/// guards), else `wanted`.
int64_t threads_along(int64_t tiles, int64_t wanted) {
    if (tiles <= wanted)
        return tiles;
    for (int64_t t = wanted; 2 * t >= wanted; --t)
        if (tiles % t == 0)
            return t;
    return wanted;
}

/// The plan of st (a stage about to be tiled: untouched root iterators) for one block tile
/// config and reduce cap. Threads the two tile axes leave unused (a short axis) go to the
/// other axes, innermost first.
TilePlan plan_tiles(const Stage& st, const TileConfig& cfg, int64_t reduce_cap) {
    const int n = static_cast<int>(st.axes.size());
    const auto [x, y] = tile_axes(st);
    std::vector<int64_t> thr(n, 1), reg(n, 1);
    auto place = [&](int d, int64_t r, int64_t t) {
        if (d < 0)
            return;
        const int64_t e = st.nodes[d].extent;
        reg[d] = std::min(r, e);
        thr[d] = threads_along(ceil_div(e, reg[d]), t);
    };
    place(x, cfg.reg_x, cfg.thr_x);
    place(y, cfg.reg_y, cfg.thr_y);
    const int64_t wanted = cfg.thr_x * cfg.thr_y;
    int64_t used = (x >= 0 ? thr[x] : 1) * (y >= 0 ? thr[y] : 1);
    for (int d = n - 1; d >= 0 && used < wanted; --d) {
        if (d == x || d == y)
            continue;
        thr[d] = std::min(st.nodes[d].extent, wanted / used);
        used *= thr[d];
    }
    TilePlan plan;
    for (int d = 0; d < n; ++d)
        plan.spatial.push_back({1, thr[d], 1, reg[d]});
    const int m = static_cast<int>(st.reduce_axes().size());
    plan.reduce.resize(m);
    int64_t unrolled = 1; // steps of the inner reduce tile times the register tile
    for (int d = 0; d < n; ++d)
        unrolled *= reg[d];
    for (int r = m - 1; r >= 0; --r) {
        plan.reduce[r] = {std::min(st.nodes[n + r].extent, reduce_cap), 1};
        unrolled *= plan.reduce[r][0];
    }
    // The inner reduce tile and the register tile unroll whole (kAutoUnroll) or the register
    // tile is indexed at run time (local memory): halve the outer reduce axes (a convolution's
    // channels before its window) until they do. On the H200 the 1x64x56x56 3x3 conv with 4x4
    // registers ran 0.093 ms with 8 channels per step (1152 steps), 0.042 with 4, 0.030 with 2.
    for (int r = 0; r < m && unrolled > kAutoUnroll; ++r)
        while (plan.reduce[r][0] > 1 && unrolled > kAutoUnroll) {
            const int64_t half = ceil_div(plan.reduce[r][0], 2);
            unrolled = unrolled / plan.reduce[r][0] * half;
            plan.reduce[r][0] = half;
        }
    return plan;
}

/// Blocks of the grid under `plan` for a stage with these spatial extents.
int64_t grid_blocks(const Stage& st, const TilePlan& plan) {
    int64_t blocks = 1;
    for (size_t d = 0; d < plan.spatial.size(); ++d)
        blocks *= ceil_div(st.nodes[d].extent, plan.spatial[d][1] * plan.spatial[d][3]);
    return blocks;
}

/// The config indices to try for st, best first: the first (largest tile) whose grid has
/// kGpuMinBlocks blocks (the last when none has), then smaller tiles, then larger ones.
std::vector<int> config_order(const Stage& st) {
    int first = kNumConfigs - 1;
    for (int k = 0; k < kNumConfigs; ++k)
        if (grid_blocks(st, plan_tiles(st, kConfigs[k], kReduceCaps[0])) >= kGpuMinBlocks) {
            first = k;
            break;
        }
    std::vector<int> order;
    for (int k = first; k < kNumConfigs; ++k)
        order.push_back(k);
    for (int k = first - 1; k >= 0; --k)
        order.push_back(k);
    return order;
}

/// The threads of a cross-thread reduction over `extent` iterations: whole warps, up to
/// kElementwiseThreads (longer ranges loop) and the limits.
int64_t reduce_threads(int64_t extent, const GpuSampleOptions& limits) {
    const int64_t cap = std::max<int64_t>(
        32,
        std::min({kElementwiseThreads, limits.max_reduce_threads, limits.max_threads_per_block}));
    return std::min(32 * ceil_div(extent, 32), cap / 32 * 32);
}

constexpr int kNumReduceCaps = static_cast<int>(sizeof(kReduceCaps) / sizeof(kReduceCaps[0]));
/// Tile candidates per sketch: every config with every reduce cap.
constexpr int kNumAttempts = kNumConfigs * kNumReduceCaps;

/// The sketch's steps replayed with the plan's lengths: attempt `attempt` (< kNumAttempts) of
/// each tiled stage takes its config_order entry attempt / kNumReduceCaps with reduce cap
/// attempt % kNumReduceCaps. Throws ScheduleError when a step is illegal.
State fill_tiles(const State& sketch, int attempt, const GpuSampleOptions& limits) {
    State s = make_initial_state(sketch.compute);
    std::map<int, TilePlan> plans; // by stage id at the time of its (consecutive) tiling splits
    for (size_t i = 0; i < sketch.steps.size(); ++i) {
        Step step = sketch.steps[i];
        if (is_cross_thread_split(s, sketch.steps, i)) {
            step.lengths = {reduce_threads(s.stages[step.stage].iters[step.iter].extent, limits)};
        } else if (step.kind == StepKind::Split && !step.lengths.empty()) {
            const Stage& st = s.stage(step.stage, "split stage");
            if (step.iter < 0 || step.iter >= static_cast<int>(st.iters.size()))
                throw ScheduleError("split of a missing iterator");
            const int node = st.iters[step.iter].node;
            const int n = static_cast<int>(st.axes.size());
            auto it = plans.find(step.stage);
            if (it == plans.end()) {
                const int config = config_order(st)[static_cast<size_t>(attempt / kNumReduceCaps)];
                const int64_t cap = kReduceCaps[attempt % kNumReduceCaps];
                it = plans.emplace(step.stage, plan_tiles(st, kConfigs[config], cap)).first;
            }
            const TilePlan& plan = it->second;
            const std::vector<int64_t>* lengths = nullptr;
            if (node >= 0 && node < n)
                lengths = &plan.spatial[node];
            else if (node >= n && node - n < static_cast<int>(plan.reduce.size()))
                lengths = &plan.reduce[node - n];
            if (!lengths || lengths->size() != step.lengths.size())
                throw ScheduleError("split outside the GPU tiling structure");
            step.lengths = *lengths;
        }
        apply_step(s, step);
    }
    return s;
}

/// Binds an untiled root stage one output element per thread: its leading spatial loops fused,
/// split by up to kElementwiseThreads, blockIdx.x x threadIdx.x. A stage without spatial loops
/// (a reduction to one value) stays on one thread.
void bind_elementwise(State& s, int sid) {
    const Stage& st = s.stages[sid];
    int count = 0;
    int64_t size = 1;
    while (count < static_cast<int>(st.iters.size()) && st.iters[count].kind == IterKind::Spatial)
        size *= st.iters[count++].extent;
    if (count == 0)
        return;
    const int fused = fuse_run(s, sid, 0, count);
    const std::vector<int> parts = split(s, sid, fused, {std::min(kElementwiseThreads, size)});
    annotate(s, sid, parts[0], IterAnnotation::BlockX);
    annotate(s, sid, parts[1], IterAnnotation::ThreadX);
}

/// Moves the shared copies attached at a reduce loop of extent 1 (a kernel window that lies
/// whole in the inner reduce tile) out to the innermost enclosing reduce loop longer than 1 of
/// the same outer reduce level (the channel chunks): the same region per iteration, and a loop
/// that pipelining can overlap (it has a next iteration).
void attach_copies_at_long_loop(State& s) {
    for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid) {
        const ComputeLocation at = s.stages[sid].location;
        if (s.stages[sid].scope != StageScope::Shared || at.kind != ComputeLocKind::At)
            continue;
        const std::vector<Iterator>& loops = s.stages[at.stage].iters;
        int k = at.iter;
        while (k > 0 && loops[k].extent == 1 && loops[k - 1].kind == IterKind::Reduce)
            --k;
        if (k != at.iter && loops[k].extent > 1)
            compute_at(s, sid, at.stage, k);
    }
}

/// The bindings of a filled GPU sketch, as sample_initial_gpu_state makes them but fixed: root
/// stages bound (tiled: block / vthread / thread levels; untiled: one element per thread),
/// shared copies fetched cooperatively by all threads of their block, the reduce loop they are
/// attached at (attach_copies_at_long_loop) pipelined (the next tile loaded into registers
/// during this one's sums), tiled reductions unrolled up to kAutoUnroll.
void bind_gpu(State& s) {
    attach_copies_at_long_loop(s);
    for (int sid = static_cast<int>(s.stages.size()) - 1; sid >= 0; --sid) {
        const Stage& st = s.stages[sid];
        if (st.is_input() || st.location.kind != ComputeLocKind::Root)
            continue;
        if (cross_thread_reduce_iter(s, sid) >= 0)
            bind_cross_thread(s, sid);
        else if (is_tiled(st))
            bind_tiled(s, sid);
        else if (s.attached_stages(sid).empty())
            bind_elementwise(s, sid);
    }
    for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid) {
        const Stage& st = s.stages[sid];
        if (st.location.kind != ComputeLocKind::At)
            continue;
        if (st.scope == StageScope::Shared) {
            const ComputeLocation at = st.location; // st dangles once s changes
            bind_cooperative_fetch(s, sid, block_threads(s, sid), /*vector_width=*/0);
            // The next reduce tile's copy loads while this one is summed.
            const Iterator& loop = s.stages[at.stage].iters[at.iter];
            if (loop.kind == IterKind::Reduce && loop.annotation == IterAnnotation::None)
                annotate(s, at.stage, at.iter, IterAnnotation::Pipeline);
        } else if (st.has_reduce() && is_tiled(st)) {
            pragma(s, sid, 0, "auto_unroll_max_step", kAutoUnroll);
        }
    }
}

} // namespace

ir::LoweredFunc check_gpu(const State& s, const GpuSampleOptions& limits) {
    const std::string why = gpu_limit_violation(s, limits);
    if (!why.empty())
        throw ScheduleError(why);
    LowerOptions o;
    o.gpu = true;
    try {
        return lower_state(s, "gpu_default_schedule_check", o);
    } catch (const ScheduleError&) {
        throw;
    } catch (const std::exception& e) {
        throw ScheduleError(std::string("does not lower: ") + e.what());
    }
}

namespace {

/// The GPU sketch rules of the default schedule: the tuner's GPU list (sketch.h), fixed here so
/// that rules added for the search do not change what untuned models run.
SketchRules gpu_default_rules(const SketchOptions& opts) {
    SketchRules rules;
    rules.push_back(make_gpu_shared_computed_read_rule(opts));
    rules.push_back(make_always_inline_rule(opts));
    rules.push_back(make_gpu_cross_thread_reduction_rule(opts));
    rules.push_back(make_add_cache_write_rule(opts));
    rules.push_back(make_multi_level_tiling_with_fusion_rule(opts));
    rules.push_back(make_multi_level_tiling_rule(opts));
    rules.push_back(make_gpu_shared_cache_read_rule(opts));
    rules.push_back(make_skip_stage_rule(opts));
    return rules;
}

int count_shared(const State& s) {
    int n = 0;
    for (const Stage& st : s.stages)
        n += st.scope == StageScope::Shared;
    return n;
}

/// Every compute stage bound one output element per thread, injective non-outputs inlined
/// first when `inline_stages`.
State elementwise_schedule(const te::Compute& c, bool inline_stages) {
    State s = make_initial_state(c);
    if (inline_stages)
        for (int sid = static_cast<int>(s.stages.size()) - 1; sid >= 0; --sid)
            if (s.is_injective(sid) && !s.is_output(sid)) {
                try {
                    compute_inline(s, sid);
                } catch (const ScheduleError&) {
                    // Kept as its own kernel.
                }
            }
    for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid)
        if (!s.stages[sid].is_input() && s.stages[sid].location.kind == ComputeLocKind::Root)
            bind_elementwise(s, sid);
    return s;
}

} // namespace

State gpu_default_schedule(const te::Compute& c, const DefaultScheduleOptions& opts) {
    if (std::optional<State> tc = gpu_tensor_core_schedule(c, opts))
        return *std::move(tc);
    SketchOptions sketch_opts;
    sketch_opts.target = TargetKind::Gpu;
    sketch_opts.gpu_tiling_structure = kGpuStructure;
    std::vector<State> sketches;
    try {
        sketches = generate_sketches(c, gpu_default_rules(sketch_opts));
    } catch (const std::exception&) {
        sketches.clear(); // The plain binding below needs no sketch.
    }
    // Sketches with the most cross-thread reductions first (wherever the rule applies: rows
    // read by a block's threads side by side, coalesced, instead of one thread each), then the
    // most shared copies (ties: generation order). Sketches without a split are the plain
    // binding below.
    std::vector<std::pair<std::pair<int, int>, size_t>> order;
    for (size_t i = 0; i < sketches.size(); ++i) {
        bool split = false;
        int cross = 0;
        for (size_t k = 0; k < sketches[i].steps.size(); ++k) {
            const Step& st = sketches[i].steps[k];
            split = split || st.kind == StepKind::Split;
            cross += st.kind == StepKind::Annotate && st.annotation == IterAnnotation::ThreadX;
        }
        if (split)
            order.push_back({{-cross, -count_shared(sketches[i])}, i});
    }
    std::stable_sort(order.begin(), order.end());
    for (const auto& [rank, i] : order) {
        (void)rank;
        bool tiling = false; // else every attempt is the same
        for (const Step& st : sketches[i].steps)
            tiling = tiling || (st.kind == StepKind::Split && st.lengths.size() >= 2);
        for (int attempt = 0; attempt < (tiling ? kNumAttempts : 1); ++attempt) {
            try {
                State s = fill_tiles(sketches[i], attempt, opts.gpu);
                bind_gpu(s);
                check_gpu(s, opts.gpu);
                return s;
            } catch (const ScheduleError&) {
                // The next tile candidate.
            }
        }
    }
    for (bool inline_stages : {true, false}) {
        try {
            State s = elementwise_schedule(c, inline_stages);
            check_gpu(s, opts.gpu);
            return s;
        } catch (const ScheduleError&) {
            // The next, simpler variant.
        }
    }
    return make_initial_state(c); // one thread per kernel: slow, but it lowers
}

} // namespace tessera::sched::detail
