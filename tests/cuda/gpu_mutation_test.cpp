// GPU mutations (sched::mutate_gpu and its rules) and the GPU evolutionary search: mutated
// states keep every device limit and consistent cooperative fetches over many seeded draws,
// replay from their steps, pass the CUDA codegen's limits and compute the reference under the
// CPU emulation; a GPU search on the simulated measurer is deterministic per seed and its rounds
// contain mutated states.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "gpu_schedules.h"
#include "tessera/backends/cuda.h"
#include "tessera/cost_model/cost_model.h"
#include "tessera/schedule/default_schedule.h"
#include "tessera/schedule/gpu_sampling.h"
#include "tessera/schedule/mutation.h"
#include "tessera/schedule/schedule.h"
#include "tessera/te/op_registry.h"
#include "tessera/tuner/evolutionary_search.h"
#include "tessera/tuner/tune_task.h"

namespace tessera::testing {
namespace {

namespace cuda = backend::cuda;

int root_of(const sched::State& s, int sid) {
    while (s.stages[sid].location.kind == sched::ComputeLocKind::At)
        sid = s.stages[sid].location.stage;
    return sid;
}

int64_t thread_product(const sched::Stage& st) {
    int64_t p = 1;
    for (const sched::Iterator& it : st.iters)
        if (it.annotation == sched::IterAnnotation::ThreadX)
            p *= it.extent;
    return p;
}

/// Each shared copy is fetched by exactly its block's threads.
void expect_fetches_match_blocks(const sched::State& s) {
    for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid) {
        const sched::Stage& st = s.stages[sid];
        if (st.scope != sched::StageScope::Shared || st.location.kind != sched::ComputeLocKind::At)
            continue;
        EXPECT_EQ(thread_product(st), thread_product(s.stages[root_of(s, sid)]))
            << st.tensor.name() << "\n"
            << sched::to_string(s);
    }
}

/// The invariants of every mutated state: limits, fetches, replay, lowering and codegen limits.
void expect_valid_gpu_state(const sched::State& s, const sched::GpuSampleOptions& lim) {
    EXPECT_EQ(sched::gpu_limit_violation(s, lim), "") << sched::to_string(s);
    EXPECT_TRUE(sched::is_gpu_state(s));
    expect_fetches_match_blocks(s);
    const sched::State again =
        sched::replay(s.compute, sched::steps_from_json(sched::steps_to_json(s.steps)));
    EXPECT_EQ(sched::to_string(again), sched::to_string(s));
    cuda::DeviceLimits dl;
    dl.max_threads_per_block = lim.max_threads_per_block;
    dl.max_shared_bytes = lim.max_shared_bytes;
    EXPECT_NO_THROW(cuda::codegen_cuda(lower_gpu(s, "mutated"), dl)) << sched::to_string(s);
}

/// Initial GPU states of c, one per sketch (and the default schedule).
std::vector<sched::State> initial_states(const te::Compute& c, Rng& rng,
                                         const sched::GpuSampleOptions& lim) {
    std::vector<sched::State> out;
    for (const sched::State& sketch : sched::generate_sketches(c, gpu_sketch_options()))
        out.push_back(sched::sample_initial_gpu_state(sketch, rng, lim));
    sched::DefaultScheduleOptions d = gpu_default_options();
    d.gpu = lim;
    out.push_back(sched::default_schedule(c, d));
    return out;
}

TEST(GpuMutation, ChainsOfMutationsKeepEveryLimitAndConsistentFetches) {
    // Tighter limits than the device's, so that many draws would break them.
    sched::GpuSampleOptions lim;
    lim.max_threads_per_block = 256;
    lim.max_shared_bytes = 8 * 1024;
    lim.max_local_bytes = 256;
    lim.max_vthread = 4;
    int mutated = 0, thread_changes = 0;
    for (const char* spec : {"matmul:m=256,n=127,k=64", "conv2d:n=1,c=16,h=14,w=14,k=32"}) {
        SCOPED_TRACE(spec);
        const te::Compute c = te::make_op(spec).compute;
        Rng rng(5);
        for (const sched::State& start : initial_states(c, rng, lim)) {
            sched::State s = start;
            for (int i = 0; i < 12; ++i) {
                const std::optional<sched::State> next = sched::mutate_gpu(s, rng, lim);
                if (!next)
                    continue;
                const int out = next->stage_id_of(c.outputs[0]);
                thread_changes +=
                    thread_product(next->stages[out]) != thread_product(s.stages[out]);
                s = *next;
                ++mutated;
                expect_valid_gpu_state(s, lim);
            }
        }
    }
    EXPECT_GE(mutated, 60);
    EXPECT_GE(thread_changes, 5) << "tile mutations change the block's threads (and fetches)";
}

TEST(GpuMutation, TileSizeMutationRefreshesTheCooperativeFetches) {
    const te::Compute c = te::make_op("matmul:m=128,n=128,k=32").compute;
    sched::DefaultScheduleOptions d = gpu_default_options();
    const sched::State s = sched::default_schedule(c, d);
    const int out = s.stage_id_of(c.outputs[0]);
    Rng rng(9);
    int changed = 0;
    for (int i = 0; i < 40 && changed < 3; ++i) {
        const sched::State m = sched::mutate_gpu_tile_size(s, rng);
        const int mo = m.stage_id_of(c.outputs[0]);
        if (thread_product(m.stages[mo]) == thread_product(s.stages[out]))
            continue;
        ++changed;
        expect_fetches_match_blocks(m);
        // Only the tiling split and the fetch splits differ from the parent.
        ASSERT_EQ(m.steps.size(), s.steps.size());
        int differ = 0;
        for (size_t k = 0; k < s.steps.size(); ++k)
            differ += m.steps[k] != s.steps[k];
        EXPECT_EQ(differ, 3) << "one tiling split, two cooperative fetches";
    }
    EXPECT_EQ(changed, 3);
    // refresh_cooperative_fetch of a consistent state changes nothing.
    EXPECT_EQ(sched::steps_to_json(sched::refresh_cooperative_fetch(s).steps),
              sched::steps_to_json(s.steps));
}

TEST(GpuMutation, ThreadCountAndUnrollStayOnTheirMenus) {
    const sched::GpuSampleOptions lim;
    // An elementwise state has only thread counts to mutate.
    const te::Compute g = te::make_op("gelu:m=7,n=127").compute;
    sched::DefaultScheduleOptions d = gpu_default_options();
    const sched::State e = sched::default_schedule(g, d);
    Rng rng(3);
    std::set<int64_t> seen;
    for (int i = 0; i < 30; ++i) {
        const std::optional<sched::State> m = sched::mutate_gpu(e, rng);
        ASSERT_TRUE(m);
        const int64_t t = thread_product(m->stages[m->stage_id_of(g.outputs[0])]);
        EXPECT_NE(t, thread_product(e.stages[e.stage_id_of(g.outputs[0])]));
        EXPECT_TRUE(t == 7 * 127 || std::count(lim.elementwise_threads.begin(),
                                               lim.elementwise_threads.end(), t) == 1)
            << t;
        seen.insert(t);
    }
    EXPECT_GE(seen.size(), 3u);
    EXPECT_THROW(sched::mutate_gpu_tile_size(e, rng), ScheduleError);
    EXPECT_THROW(sched::mutate_gpu_auto_unroll(e, rng), ScheduleError);
    // A cross-thread reduction's threads stay whole warps, up to the range rounded to a warp.
    const te::Compute r = te::make_op("reduce_sum:m=7,n=200").compute;
    const sched::State cross = sched::default_schedule(r, d);
    const int64_t before = thread_product(cross.stages[cross.stage_id_of(r.outputs[0])]);
    EXPECT_EQ(before, 224);
    for (int i = 0; i < 10; ++i) {
        const sched::State m = sched::mutate_gpu_thread_count(cross, rng);
        const int64_t t = thread_product(m.stages[m.stage_id_of(r.outputs[0])]);
        EXPECT_NE(t, before);
        EXPECT_EQ(t % 32, 0) << t;
        EXPECT_LE(t, 224);
        EXPECT_EQ(sched::gpu_limit_violation(m), "");
        EXPECT_NO_THROW(cuda::codegen_cuda(lower_gpu(m, "cross")));
    }
    // The unroll pragma of a tiled reduction moves among the GPU configs.
    const sched::State t = sched::default_schedule(te::make_op("matmul:m=64,n=64,k=64").compute, d);
    for (int i = 0; i < 10; ++i) {
        const sched::State m = sched::mutate_gpu_auto_unroll(t, rng);
        for (const sched::Step& st : m.steps)
            if (st.kind == sched::StepKind::Pragma) {
                EXPECT_NE(st.value, 512);
                EXPECT_EQ(std::count(lim.auto_unroll_configs.begin(), lim.auto_unroll_configs.end(),
                                     st.value),
                          1);
            }
    }
}

TEST(GpuMutation, MutatedStatesComputeTheReferenceInEmulation) {
    Rng rng(41);
    const te::Compute c = te::make_op("matmul:m=37,n=29,k=13").compute;
    sched::DefaultScheduleOptions d = gpu_default_options();
    sched::State s = sched::default_schedule(c, d);
    std::vector<sched::State> picked;
    for (int i = 0; i < 40 && picked.size() < 2; ++i) {
        const std::optional<sched::State> m = sched::mutate_gpu(s, rng);
        if (!m)
            continue;
        s = *m;
        // Keep the emulation small (one OS thread per CUDA thread): few threads in all.
        int64_t threads = 0;
        for (const cuda::KernelInfo& k : cuda::codegen_cuda(lower_gpu(s, "mm")).kernels)
            threads +=
                k.dims.threads_per_block() * k.dims.grid[0] * k.dims.grid[1] * k.dims.grid[2];
        if (i >= 4 && threads <= 600 && (picked.empty() || i >= 12))
            picked.push_back(s);
    }
    // Softmax's four kernels, one with another thread count.
    const std::optional<sched::State> sm = sched::mutate_gpu(
        sched::default_schedule(te::make_op("softmax:m=127,n=13").compute, d), rng);
    ASSERT_TRUE(sm);
    picked.push_back(*sm);
    ASSERT_EQ(picked.size(), 3u);
    uint64_t seed = 5;
    for (const sched::State& m : picked) {
        SCOPED_TRACE(sched::to_string(m));
        expect_emulation_matches(m, lower_gpu(m, "emu"), seed++);
    }
}

TEST(GpuSearch, EvolutionMutatesGpuStatesDeterministically) {
    const te::Compute c = te::make_op("matmul:m=32,n=24,k=16").compute;
    const std::vector<sched::State> sketches = sched::generate_sketches(c, gpu_sketch_options());
    auto run = [&](uint64_t seed, tune::SearchStats& stats) {
        Rng rng(seed);
        const std::vector<sched::State> init =
            tune::sample_states(sketches, 8, rng, {}, stats, sched::TargetKind::Gpu);
        auto model = cost::make_random_model(seed);
        tune::FeatureCache cache;
        tune::EvolutionOptions eo;
        eo.population = 12;
        eo.generations = 1;
        std::vector<std::string> out;
        for (const tune::ScoredState& b :
             tune::evolve(init, 6, {}, *model, cache, eo, rng, stats)) {
            EXPECT_EQ(sched::gpu_limit_violation(b.state), "");
            out.push_back(b.schedule_json);
        }
        return out;
    };
    tune::SearchStats a, b, other;
    const std::vector<std::string> ra = run(1, a);
    EXPECT_EQ(ra, run(1, b));
    EXPECT_NE(ra, run(2, other));
    EXPECT_EQ(ra.size(), 6u);
    EXPECT_GE(a.mutations, 6) << "GPU generations are mutations, not copies only";
}

TEST(GpuSearch, TuneTaskOnTheSimulatedMeasurerIsDeterministicAndMutates) {
    const te::OpInstance op = te::make_op("matmul:m=16,n=24,k=8");
    const tune::TuneTarget target{"cuda -arch=sm_90", "gpu-test", "cuda;sm_90"};
    auto run = [&](uint64_t seed, tune::TuneResult& result) {
        tune::TuningDatabase db(":memory:");
        auto model = cost::make_random_model(seed);
        auto measurer = tune::make_simulated_measurer(1);
        tune::SearchOptions o;
        o.num_trials = 8;
        o.population = 12;
        o.generations = 1;
        o.measure_per_round = 4;
        o.init_from_db = 4;
        o.retrain_min_records = 1000; // keep the random model
        o.seed = seed;
        o.search_threads = 1;
        o.sketch.target = o.defaults.target = sched::TargetKind::Gpu;
        result = tune::tune_task(op.compute, op.flops, target, db, *model, *measurer, o);
        std::vector<std::string> measured;
        for (const tune::TuningRecord& r : db.records_of(result.workload_key))
            measured.push_back(r.schedule_json);
        return measured;
    };
    tune::TuneResult ra, rb, rc;
    const std::vector<std::string> a = run(3, ra);
    EXPECT_EQ(a, run(3, rb));
    EXPECT_NE(a, run(4, rc));
    EXPECT_EQ(a.size(), 8u);
    EXPECT_GT(ra.search.mutations, 0);
    // The GPU default schedule seeds the search and is measured first.
    sched::DefaultScheduleOptions d = gpu_default_options();
    EXPECT_EQ(a.front(), sched::steps_to_json(sched::default_schedule(op.compute, d).steps));
    // Every measured schedule (fresh samples and the evolution's picks) is a GPU state in limits.
    for (const std::string& json : a) {
        const sched::State s = sched::replay(op.compute, sched::steps_from_json(json));
        EXPECT_TRUE(sched::is_gpu_state(s));
        EXPECT_EQ(sched::gpu_limit_violation(s), "");
    }
}

} // namespace
} // namespace tessera::testing
