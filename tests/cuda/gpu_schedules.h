// Hand-written GPU schedules for the CUDA tests: a one-thread-per-element binding for any
// Compute, and a shared-memory tiled matmul with cooperative fetching.
#pragma once

#include <string>
#include <vector>

#include "tessera/schedule/schedule.h"
#include "tessera/schedule/state.h"
#include "tessera/te/compute.h"

namespace tessera::testing {

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
