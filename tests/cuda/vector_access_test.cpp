// Vector loads and stores in generated CUDA: a Vectorized loop of 2, 4 or 8 lanes whose
// accesses are contiguous along its variable at an aligned base becomes float4 / float2 / half2
// / 4 or 8 f16 (tessera_vector) accesses; other accesses of the loop stay scalar, and loops
// without any such access (or with a guard inside) stay `#pragma unroll` loops. Checked with
// NVRTC (the PTX's v4.f32 accesses) and against the reference through the CPU emulation.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "common/test_util.h"
#include "cpu_emulation.h"
#include "gpu_schedules.h"
#include "tessera/backends/cuda.h"
#include "tessera/ir/op.h"
#include "tessera/schedule/gpu_sampling.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/sketch.h"
#include "tessera/te/op_library.h"
#include "tessera/te/op_registry.h"
#include "tessera/te/tensor.h"

namespace tessera::testing {
namespace {

namespace cuda = backend::cuda;
using sched::IterAnnotation;

bool has(const std::string& text, const std::string& what) {
    return text.find(what) != std::string::npos;
}

/// Whether some PTX line has both parts (e.g. "ld.global" and ".v4.f32").
bool ptx_line_has(const std::string& ptx, const std::string& a, const std::string& b) {
    std::istringstream in(ptx);
    for (std::string line; std::getline(in, line);)
        if (has(line, a) && has(line, b))
            return true;
    return false;
}

/// The output stage's spatial loops fused, split by `width` (vectorized) and the rest by
/// `threads` (blockIdx.x, threadIdx.x); the other stages inlined.
sched::State vector_elementwise(const te::Compute& c, int64_t width, int64_t threads) {
    sched::State s = sched::make_initial_state(c);
    const int out = s.stage_id_of(c.outputs[0]);
    for (int sid = 0; sid < out; ++sid)
        if (!s.stages[sid].is_input())
            sched::compute_inline(s, sid);
    std::vector<int> all(s.stages[out].iters.size());
    for (size_t k = 0; k < all.size(); ++k)
        all[k] = static_cast<int>(k);
    const int f = all.size() > 1 ? sched::fuse(s, out, all) : 0;
    sched::split(s, out, f, {width});                  // f_o, lane
    sched::split(s, out, 0, {threads});                // block, thread, lane
    sched::annotate(s, out, 0, IterAnnotation::BlockX);
    sched::annotate(s, out, 1, IterAnnotation::ThreadX);
    sched::annotate(s, out, 2, IterAnnotation::Vectorize);
    return s;
}

TEST(CudaVectorAccess, ContiguousAlignedLanesBecomeFloat4) {
    const sched::State s = vector_elementwise(te::make_op("relu:m=13,n=52").compute, 4, 32);
    const ir::LoweredFunc f = lower_gpu(s, "relu4");
    const std::string code = cuda::codegen_cuda(f).code;
    EXPECT_TRUE(has(code, "*reinterpret_cast<const float4*>(&x[")) << code;
    EXPECT_TRUE(has(code, "*reinterpret_cast<float4*>(&relu[")) << code;
    EXPECT_FALSE(has(code, "#pragma unroll")) << code;
    const cuda::NvrtcResult r = cuda::nvrtc_compile(code, "relu4");
    EXPECT_TRUE(ptx_line_has(r.ptx, "ld.global", ".v4.f32")) << r.ptx;
    EXPECT_TRUE(ptx_line_has(r.ptx, "st.global", ".v4.f32")) << r.ptx;
    expect_emulation_matches(s, f, 7);
}

TEST(CudaVectorAccess, TwoLanesBecomeFloat2ThroughFusedIndices) {
    // b[j] of a row broadcast is read at (2q + lane) mod 26: the pair never crosses a row
    // (2 divides 26), so it is one float2 as well.
    const sched::State s =
        vector_elementwise(te::make_op("add:m=7,n=26,broadcast=1").compute, 2, 32);
    const ir::LoweredFunc f = lower_gpu(s, "add2");
    const std::string code = cuda::codegen_cuda(f).code;
    EXPECT_TRUE(has(code, "*reinterpret_cast<const float2*>(&a[")) << code;
    EXPECT_TRUE(has(code, "*reinterpret_cast<float2*>(&add[")) << code;
    EXPECT_TRUE(has(code, "*reinterpret_cast<const float2*>(&b[")) << code;
    const cuda::NvrtcResult r = cuda::nvrtc_compile(code, "add2");
    EXPECT_TRUE(ptx_line_has(r.ptx, "st.global", ".v2.f32")) << r.ptx;
    expect_emulation_matches(s, f, 7);
}

TEST(CudaVectorAccess, MisalignedAndStridedAccessesStayScalar) {
    // y[i, j] = x[i, j + 1]: the store is aligned, the load one element off.
    const ir::Tensor x = te::placeholder({13, 53}, ir::DataType::f32(), "x");
    const ir::Tensor shifted = te::compute(
        {13, 52}, [&](const std::vector<ir::Var>& i) { return x(i[0], i[1] + 1); }, "shifted");
    const sched::State s1 = vector_elementwise(te::make_compute({x}, {shifted}), 4, 32);
    const ir::LoweredFunc f1 = lower_gpu(s1, "shift");
    const std::string c1 = cuda::codegen_cuda(f1).code;
    EXPECT_TRUE(has(c1, "*reinterpret_cast<float4*>(&shifted[")) << c1;
    EXPECT_FALSE(has(c1, "reinterpret_cast<const float4*>")) << c1;
    EXPECT_NO_THROW(cuda::nvrtc_compile(c1, "shift"));
    expect_emulation_matches(s1, f1, 7);

    // Vectorized rows (stride 13): nothing contiguous, the loop stays.
    sched::State s2 = sched::make_initial_state(te::make_op("relu:m=4,n=13").compute);
    sched::reorder(s2, 1, {1, 0});
    sched::annotate(s2, 1, 0, IterAnnotation::ThreadX);
    sched::annotate(s2, 1, 1, IterAnnotation::Vectorize);
    const ir::LoweredFunc f2 = lower_gpu(s2, "rows");
    const std::string c2 = cuda::codegen_cuda(f2).code;
    EXPECT_FALSE(has(c2, "float4")) << c2;
    EXPECT_TRUE(has(c2, "#pragma unroll")) << c2;
    expect_emulation_matches(s2, f2, 7);

    // 13 x 51 elements in groups of 4: the tail's guard sits inside the lanes, the loop stays.
    const sched::State s3 = vector_elementwise(te::make_op("relu:m=13,n=51").compute, 4, 32);
    const ir::LoweredFunc f3 = lower_gpu(s3, "tail");
    const std::string c3 = cuda::codegen_cuda(f3).code;
    EXPECT_FALSE(has(c3, "float4")) << c3;
    expect_emulation_matches(s3, f3, 7);
}

TEST(CudaVectorAccess, HalfPairsBecomeHalf2) {
    const ir::Tensor x = te::placeholder({7, 26}, ir::DataType::f16(), "x");
    const te::Compute c = te::make_compute({x}, {te::relu(x)});
    const std::string code = cuda::codegen_cuda(lower_gpu(vector_elementwise(c, 2, 32), "h2")).code;
    EXPECT_TRUE(has(code, "*reinterpret_cast<const __half2*>(&x[")) << code;
    EXPECT_TRUE(has(code, "__half2 ")) << code;
    EXPECT_NO_THROW(cuda::nvrtc_compile(code, "h2")) << code;
    // Emulated on IEEE halves: relu is exact.
    const std::vector<float> data = random_floats(7 * 26, 5);
    std::vector<_Float16> in(data.begin(), data.end()), out(in.size());
    std::vector<void*> args = {in.data(), out.data()};
    EmulatedCuda(cuda::codegen_cuda(lower_gpu(vector_elementwise(c, 2, 32), "h2"))).run(args);
    for (size_t i = 0; i < in.size(); ++i)
        EXPECT_EQ(float(out[i]), std::max(float(in[i]), 0.0f)) << "element " << i;
}

TEST(CudaVectorAccess, FourAndEightHalvesBecomeOne8Or16ByteAccess) {
    // 7 x 40 halves: rows of 40 = 5 vectors of 8 (or 10 of 4), every vector aligned.
    const ir::Tensor x = te::placeholder({7, 40}, ir::DataType::f16(), "x");
    const te::Compute c = te::make_compute({x}, {te::relu(x)});
    for (int64_t lanes : {4, 8}) {
        SCOPED_TRACE(lanes);
        const cuda::CudaSource src =
            cuda::codegen_cuda(lower_gpu(vector_elementwise(c, lanes, 32), "hv"));
        const std::string vec = "tessera_vector<__half, " + std::to_string(lanes) + ">";
        EXPECT_TRUE(has(src.code, "*reinterpret_cast<const " + vec + "*>(&x[")) << src.code;
        EXPECT_TRUE(has(src.code, "*reinterpret_cast<" + vec + "*>(&relu[")) << src.code;
        const cuda::NvrtcResult m = cuda::nvrtc_compile(src.code, "hv", {"sm_80", true, false});
        // One load instruction of the vector's bytes: four 16-bit or four 32-bit elements.
        EXPECT_TRUE(ptx_line_has(m.ptx, "ld.global", lanes == 8 ? ".v4.u32" : ".v4.u16") ||
                    ptx_line_has(m.ptx, "ld.global", lanes == 8 ? ".v4.b32" : ".v4.b16"))
            << m.ptx;
        const std::vector<float> data = random_floats(7 * 40, 6);
        std::vector<_Float16> in(data.begin(), data.end()), out(in.size());
        std::vector<void*> args = {in.data(), out.data()};
        EmulatedCuda(src).run(args);
        for (size_t i = 0; i < in.size(); ++i)
            EXPECT_EQ(float(out[i]), std::max(float(in[i]), 0.0f)) << "element " << i;
    }
}

/// matmul with 64x64 block tiles of 256 threads, 4x4 register tiles, k steps of 8 through
/// shared copies whose cooperative fetch loads 4 consecutive elements per thread and step.
sched::State matmul_with_vector_fetch(const te::Compute& c) {
    sched::State s = sched::make_initial_state(c);
    const int local = sched::cache_write(s, 2, "local");
    const int out = local + 1;
    sched::split(s, out, 0, {16, 4});
    sched::split(s, out, 3, {16, 4});
    sched::reorder(s, out, {0, 3, 1, 4, 2, 5});
    sched::fuse(s, out, {0, 1});
    sched::fuse(s, out, {1, 2});
    sched::annotate(s, out, 0, IterAnnotation::BlockX);
    sched::annotate(s, out, 1, IterAnnotation::ThreadX);
    sched::compute_at(s, local, out, 1);
    sched::split(s, local, 2, {8});
    sched::reorder(s, local, {2, 3, 0, 1});
    const ir::Tensor local_t = s.stages[local].tensor;
    for (const ir::Tensor& in_t : {s.stages[0].tensor, s.stages[1].tensor}) {
        const int sh = sched::cache_read(s, s.stage_id_of(in_t), "shared",
                                         {s.stage_id_of(local_t)});
        sched::compute_at(s, sh, s.stage_id_of(local_t), 0);
        sched::split(s, sh, 1, {4});      // r, c_o, c_i
        sched::fuse(s, sh, {0, 1});       // (r c_o), c_i
        sched::split(s, sh, 0, {256});    // outer, thread, c_i
        sched::annotate(s, sh, 1, IterAnnotation::ThreadX);
        sched::annotate(s, sh, 2, IterAnnotation::Vectorize);
    }
    return s;
}

TEST(CudaVectorAccess, CooperativeFetchLoadsAndStoresFloat4) {
    const sched::State s = matmul_with_vector_fetch(te::make_op("matmul:m=127,n=128,k=16").compute);
    const ir::LoweredFunc f = lower_gpu(s, "mm");
    const std::string code = cuda::codegen_cuda(f).code;
    EXPECT_TRUE(has(code, "*reinterpret_cast<float4*>(&a_shared[")) << code;
    EXPECT_TRUE(has(code, "*reinterpret_cast<float4*>(&b_shared[")) << code;
    EXPECT_TRUE(has(code, "*reinterpret_cast<const float4*>(&b[")) << code;
    const cuda::NvrtcResult r = cuda::nvrtc_compile(code, "mm");
    EXPECT_TRUE(ptx_line_has(r.ptx, "ld.global", ".v4.f32")) << r.ptx;
    EXPECT_TRUE(ptx_line_has(r.ptx, "st.shared", ".v4.f32")) << r.ptx;
    expect_emulation_matches(s, f, 7);
}

TEST(CudaVectorAccess, GpuSamplingVectorizesSomeCooperativeFetches) {
    sched::SketchOptions o;
    o.target = sched::TargetKind::Gpu;
    const auto sketches = sched::generate_sketches(te::make_op("matmul:m=512,n=512,k=512").compute, o);
    Rng rng(3);
    int vectorized = 0, fetches = 0, with_float4 = 0;
    for (int round = 0; round < 8; ++round)
        for (const sched::State& sketch : sketches) {
            const sched::State s = sched::sample_initial_gpu_state(sketch, rng);
            bool vec_here = false;
            for (const sched::Stage& st : s.stages) {
                if (st.scope != sched::StageScope::Shared)
                    continue;
                ++fetches;
                if (st.iters.back().annotation != IterAnnotation::Vectorize)
                    continue;
                ++vectorized;
                vec_here = true;
                EXPECT_EQ(st.iters.back().extent, 4);
                EXPECT_EQ(st.iters[st.iters.size() - 2].annotation, IterAnnotation::ThreadX);
            }
            // Imperfect sampled tiles may keep a guard inside the lanes (then the loop stays);
            // tiles that divide give vector accesses.
            if (vec_here && has(cuda::codegen_cuda(lower_gpu(s, "mm")).code, "float4"))
                ++with_float4;
        }
    EXPECT_GT(vectorized, 0);
    EXPECT_LT(vectorized, fetches); // some fetches stay scalar
    EXPECT_GT(with_float4, 0);
}

} // namespace
} // namespace tessera::testing
