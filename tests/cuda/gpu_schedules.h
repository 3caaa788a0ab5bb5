// Helpers of the CUDA tests: GPU options, lowering for a GPU, specs of every registry op, the
// check of a GPU function against the reference through the CPU emulation of its CUDA, and
// hand-written GPU schedules (a one-thread-per-element binding for any Compute, a
// shared-memory tiled matmul with cooperative fetching).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/op_runner.h"
#include "common/test_util.h"
#include "cpu_emulation.h"
#include "tessera/backends/cuda.h"
#include "tessera/ir/verify.h"
#include "tessera/schedule/default_schedule.h"
#include "tessera/schedule/lower_state.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"
#include "tessera/schedule/state.h"
#include "tessera/te/compute.h"
#include "tessera/te/op_registry.h"

namespace tessera::testing {

/// Sketch options of the GPU target (the tuner's GPU rule list).
inline sched::SketchOptions gpu_sketch_options() {
    sched::SketchOptions o;
    o.target = sched::TargetKind::Gpu;
    return o;
}

/// Default-schedule options of the GPU target (default device limits).
inline sched::DefaultScheduleOptions gpu_default_options() {
    sched::DefaultScheduleOptions o;
    o.target = sched::TargetKind::Gpu;
    return o;
}

/// s lowered for a GPU under `name`, checked by ir::verify (which throws on a malformed
/// function).
inline ir::LoweredFunc lower_gpu(const sched::State& s, const std::string& name) {
    sched::LowerOptions o;
    o.gpu = true;
    ir::LoweredFunc f = sched::lower_state(s, name, o);
    ir::verify(f);
    return f;
}

/// A spec of every registry op with its required sizes set to `size` (e.g. "matmul:m=13,...").
inline std::vector<std::string> registry_specs(int size) {
    std::vector<std::string> out;
    for (const std::string& op : te::list_ops()) {
        std::string spec = op;
        char sep = ':';
        for (const te::OpKey& k : te::op_keys(op))
            if (k.required) {
                spec += sep + k.name + "=" + std::to_string(size);
                sep = ',';
            }
        out.push_back(spec);
    }
    return out;
}

/// Runs f (s lowered for a GPU) through the CPU emulation of its generated CUDA on
/// random_inputs(s.compute, seed) and expects every output within `tol` (max_rel_error) of the
/// reference lowering of s.compute; `context` ends each failure message.
inline void expect_emulation_matches(const sched::State& s, const ir::LoweredFunc& f, uint64_t seed,
                                     double tol = 1e-5, const std::string& context = "") {
    const auto inputs = random_inputs(s.compute, seed);
    const auto want = run_compute(s.compute, inputs);
    const auto got = run_lowered(f, inputs, [](const ir::LoweredFunc& g, std::vector<void*>& a) {
        emulate_on_cpu(backend::cuda::codegen_cuda(g), a);
    });
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
        EXPECT_LE(max_rel_error(got[i], want[i]), tol) << "output " << i << context;
}

/// Every compute stage at root: its spatial iterators fused, split by `threads`, the outer part
/// bound to blockIdx.x and the inner to threadIdx.x; reductions run serially per thread.
inline sched::State gpu_bind_elementwise(const te::Compute& c, int64_t threads) {
    sched::State s = sched::make_initial_state(c);
    for (int sid = 0; sid < static_cast<int>(s.stages.size()); ++sid) {
        const sched::Stage& st = s.stages[sid];
        if (st.is_input())
            continue;
        std::vector<int> spatial;
        for (int k = 0; k < static_cast<int>(st.iters.size()); ++k)
            if (st.iters[k].kind == sched::IterKind::Spatial)
                spatial.push_back(k);
        if (spatial.empty())
            continue; // a full reduction to a scalar runs on one thread
        const int fused = spatial.size() > 1 ? sched::fuse(s, sid, spatial) : spatial[0];
        const std::vector<int> parts = sched::split(s, sid, fused, {threads});
        sched::annotate(s, sid, parts[0], sched::IterAnnotation::BlockX);
        sched::annotate(s, sid, parts[1], sched::IterAnnotation::ThreadX);
    }
    return s;
}

/// matmul C[m,n] = sum_k a[m,k] b[k,n] (stages a, b, C): 64x64 block tiles of 256 threads, each
/// thread a 4x4 register tile (cache_write "local"), k in steps of 8 through shared-memory
/// copies of a and b that all threads of a block fetch together (cache_read "shared").
inline sched::State gpu_tiled_matmul(const te::Compute& c) {
    sched::State s = sched::make_initial_state(c);
    const int a = 0, b = 1;
    int local = sched::cache_write(s, 2, "local"); // C.local = 2, C = 3
    int out = local + 1;
    sched::split(s, out, 0, {16, 4});              // i0 i1 i2 j
    sched::split(s, out, 3, {16, 4});              // i0 i1 i2 j0 j1 j2
    sched::reorder(s, out, {0, 3, 1, 4, 2, 5});    // i0 j0 i1 j1 i2 j2
    sched::fuse(s, out, {0, 1});                   // block j0 ... (i0.j0, i1, j1, i2, j2)
    sched::fuse(s, out, {1, 2});                   // (block, thread, i2, j2)
    sched::annotate(s, out, 0, sched::IterAnnotation::BlockX);
    sched::annotate(s, out, 1, sched::IterAnnotation::ThreadX);
    sched::compute_at(s, local, out, 1);
    sched::split(s, local, 2, {8});                // i j k0 k1
    sched::reorder(s, local, {2, 3, 0, 1});        // k0 k1 i j
    // cache_read inserts stages and shifts ids: find stages by their tensors.
    const ir::Tensor local_t = s.stages[local].tensor;
    for (const ir::Tensor& in_t : {s.stages[a].tensor, s.stages[b].tensor}) {
        const int shared = sched::cache_read(s, s.stage_id_of(in_t), "shared",
                                             {s.stage_id_of(local_t)});
        sched::compute_at(s, shared, s.stage_id_of(local_t), 0);
        const int f = sched::fuse(s, shared, {0, 1});
        const std::vector<int> parts = sched::split(s, shared, f, {256});
        sched::annotate(s, shared, parts[1], sched::IterAnnotation::ThreadX);
    }
    return s;
}

} // namespace tessera::testing
