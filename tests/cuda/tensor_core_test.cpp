// Tensor cores: `warp_mma` nests lowered to WarpMma statements (lower/warp_mma.h), the tensor-core
// default schedule of matrix products (f16 operands summed in f32; f32 with TF32 allowed), its
// CUDA compiled by NVRTC for sm_80 and sm_90, and its products under the CPU emulation, whose
// mma follows the PTX ISA's fragment tables (cpu_emulation.h), against the reference on random
// inputs. On a GPU (CudaDevice*), the same schedules against the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <tuple>

#include "common/test_util.h"
#include "cpu_emulation.h"
#include "gpu_schedules.h"
#include "require_gpu.h"
#include "tessera/backends/cuda_driver.h"
#include "tessera/cost_model/features.h"
#include "tessera/ir/functor.h"
#include "tessera/ir/op.h"
#include "tessera/ir/warp_mma.h"
#include "tessera/lower/warp_mma.h"
#include "tessera/schedule/default_schedule.h"
#include "tessera/schedule/gpu_sampling.h"
#include "tessera/schedule/schedule.h"
#include "tessera/schedule/tensor_core_schedule.h"
#include "tessera/support/half.h"
#include "tessera/support/rng.h"
#include "tessera/te/op_library.h"
#include "tessera/te/op_registry.h"
#include "tessera/te/reference_eval.h"
#include "tessera/te/tensor.h"

namespace tessera::testing {
namespace {

namespace cuda = backend::cuda;
using ir::DataType;

/// C [batch.., m, n] f32 = A [batch.., m, k] x B [batch.., k, n] of type t summed in f32.
te::Compute product(std::vector<int64_t> batch, int64_t m, int64_t n, int64_t k, DataType t) {
    auto shape = [&](int64_t r, int64_t c) {
        std::vector<int64_t> s = batch;
        s.push_back(r);
        s.push_back(c);
        return s;
    };
    const ir::Tensor a = te::placeholder(shape(m, k), t, "a");
    const ir::Tensor b = te::placeholder(shape(k, n), t, "b");
    const ir::Tensor c =
        t == DataType::f32() ? te::matmul(a, b) : te::matmul_accumulate(a, b, DataType::f32());
    return te::make_compute({a, b}, {c});
}

sched::State tensor_core_default(const te::Compute& c, bool tf32 = false) {
    sched::DefaultScheduleOptions o = gpu_default_options();
    o.gpu_tf32 = tf32;
    return sched::default_schedule(c, o);
}

/// Random operands as bytes of their type (f16 bits or f32), in [-1, 1).
std::vector<std::vector<uint8_t>> operands(const te::Compute& c, uint64_t seed) {
    std::vector<std::vector<uint8_t>> out;
    Rng rng(seed);
    for (const ir::Tensor& t : c.inputs) {
        int64_t n = 1;
        for (int64_t d : t.shape())
            n *= d;
        std::vector<uint8_t> bytes(n * t.dtype().bytes());
        for (int64_t i = 0; i < n; ++i) {
            const float v = rng.uniform_float(-1, 1);
            if (t.dtype() == DataType::f16()) {
                const uint16_t h = f32_to_f16_bits(v);
                std::memcpy(bytes.data() + 2 * i, &h, 2);
            } else {
                std::memcpy(bytes.data() + 4 * i, &v, 4);
            }
        }
        out.push_back(std::move(bytes));
    }
    return out;
}

/// The largest |got - want| / max(|want|, 1) over the output of c, the reference computed
/// from `in` by the tensor-expression evaluator: over every element, or over a seeded sample
/// of `checks` of them when the output is larger.
double max_error(const te::Compute& c, const std::vector<std::vector<uint8_t>>& in,
                 const std::vector<float>& got, int64_t checks = INT64_MAX) {
    te::ReferenceEvaluator ref;
    for (size_t i = 0; i < in.size(); ++i)
        ref.bind(c.inputs[i], in[i].data());
    const ir::Tensor& out = c.outputs[0];
    const std::vector<int64_t>& shape = out.shape();
    const int64_t n = static_cast<int64_t>(got.size());
    Rng pick(3);
    double worst = 0;
    for (int64_t t = 0; t < std::min(checks, n); ++t) {
        const int64_t flat = checks >= n ? t : pick.uniform_int(0, n - 1);
        std::vector<int64_t> idx(shape.size());
        int64_t rest = flat;
        for (size_t d = shape.size(); d-- > 0;) {
            idx[d] = rest % shape[d];
            rest /= shape[d];
        }
        const double want = ref.at(out, idx);
        worst = std::max(worst, std::fabs(got[flat] - want) / std::max(1.0, std::fabs(want)));
    }
    return worst;
}

/// s's generated CUDA run by the CPU emulation on random operands: its largest error.
double emulated_error(const sched::State& s, uint64_t seed) {
    const cuda::CudaSource src = cuda::codegen_cuda(lower_gpu(s, "tc"));
    EmulatedCuda emu(src);
    auto in = operands(s.compute, seed);
    std::vector<float> out;
    int64_t n = 1;
    for (int64_t d : s.compute.outputs[0].shape())
        n *= d;
    out.assign(n, std::nanf(""));
    std::vector<void*> args;
    for (auto& bytes : in)
        args.push_back(bytes.data());
    args.push_back(out.data());
    emu.run(args);
    return max_error(s.compute, in, out);
}

TEST(TensorCore, F16ProductGetsWarpMmaAndCompilesForSm80AndSm90) {
    const sched::State s = tensor_core_default(product({}, 48, 40, 48, DataType::f16()));
    const cuda::CudaSource src = cuda::codegen_cuda(lower_gpu(s, "tc"));
    EXPECT_GT(count_occurrences(src.code, "tessera_mma_f16("), 1) << src.code;
    ASSERT_EQ(src.kernels.size(), 1u);
    EXPECT_EQ(src.kernels[0].dims.block[0], 32); // lanes; warps along y
    for (const char* arch : {"sm_80", "sm_90"}) {
        SCOPED_TRACE(arch);
        const cuda::NvrtcResult m = cuda::nvrtc_compile(src.code, "tc", {arch, true, false});
        EXPECT_NE(m.ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
                  std::string::npos);
    }
    // Before sm_80 there is no such mma: NVRTC says so.
    try {
        cuda::nvrtc_compile(src.code, "tc", {"sm_75", false, false});
        ADD_FAILURE() << "compiled for sm_75";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("needs sm_80"), std::string::npos) << e.what();
    }
}

TEST(TensorCore, F16ProductsMatchTheReferenceUnderEmulation) {
    // One 16 x 8 tile per warp, several warps and k steps; a batch of 3 in the block index.
    for (const auto& [batch, m, n, k] :
         std::vector<std::tuple<std::vector<int64_t>, int64_t, int64_t, int64_t>>{
             {{}, 48, 40, 48}, {{3}, 32, 24, 16}, {{}, 16, 8, 80}}) {
        SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
        const sched::State s = tensor_core_default(product(batch, m, n, k, DataType::f16()));
        // Exact f16 products summed in f32 in another order.
        EXPECT_LE(emulated_error(s, 7), 1e-5);
    }
}

TEST(TensorCore, Tf32OnlyWhenAllowedAndMatchesWithinItsRounding) {
    const te::Compute c = product({}, 32, 16, 24, DataType::f32());
    const std::string plain =
        cuda::codegen_cuda(lower_gpu(tensor_core_default(c, false), "f32")).code;
    EXPECT_EQ(count_occurrences(plain, "tessera_mma_"), 0);
    const sched::State s = tensor_core_default(c, true);
    const cuda::CudaSource src = cuda::codegen_cuda(lower_gpu(s, "tf32"));
    EXPECT_GT(count_occurrences(src.code, "tessera_mma_tf32("), 0) << src.code;
    EXPECT_NE(cuda::nvrtc_compile(src.code, "tf32", {"sm_80", true, false})
                  .ptx.find("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
              std::string::npos);
    // Operands rounded to 10 mantissa bits: about 2^-11 relative each, 24 products.
    const double err = emulated_error(s, 3);
    EXPECT_LE(err, 1e-2);
    EXPECT_GT(err, 1e-7); // TF32 really rounds (an f32 product would be within 1e-6)
}

TEST(TensorCore, EpiloguesRunInTheCopyOutAndWeightsMayBeTransposed) {
    // relu(A B + bias), f16 operands: the bias and relu applied to the accumulators on their
    // way out (one kernel).
    const ir::Tensor a = te::placeholder({48, 32}, DataType::f16(), "a");
    const ir::Tensor b = te::placeholder({32, 40}, DataType::f16(), "b");
    const ir::Tensor bias = te::placeholder({40}, DataType::f32(), "bias");
    const ir::Tensor y = te::relu(te::add(te::matmul_accumulate(a, b, DataType::f32()), bias));
    const sched::State s = tensor_core_default(te::make_compute({a, b, bias}, {y}));
    const cuda::CudaSource src = cuda::codegen_cuda(lower_gpu(s, "epilogue"));
    EXPECT_EQ(src.kernels.size(), 1u);
    EXPECT_GT(count_occurrences(src.code, "tessera_mma_f16("), 0) << src.code;
    EXPECT_LE(emulated_error(s, 4), 1e-5);
    // A dense layer in TF32: its weights [n][k] (B transposed), bias and relu.
    const sched::State d =
        tensor_core_default(te::make_op("dense:m=32,n=24,k=16,bias=1,relu=1").compute, true);
    EXPECT_GT(
        count_occurrences(cuda::codegen_cuda(lower_gpu(d, "dense")).code, "tessera_mma_tf32("), 0);
    EXPECT_LE(emulated_error(d, 6), 1e-2);
}

TEST(TensorCore, RowOperandFragmentRowsAreAdjacentInSharedMemory) {
    // 64 x 64 blocks of 2 x 2 warps with mi = 2 and four k steps per fetch (k tile 64): a's
    // shared copy holds the rows 2 mi apart that one fragment load reads next to each other,
    // fetched 16 bytes at a time; b keeps rows padded by one word.
    for (const DataType t : {DataType::f16(), DataType::f32()}) {
        SCOPED_TRACE(t == DataType::f32() ? "tf32" : "f16");
        const bool tf32 = t == DataType::f32();
        const sched::State s = tensor_core_default(product({}, 64, 64, 128, t), tf32);
        int copies = 0;
        for (const sched::Stage& st : s.stages) {
            if (st.scope != sched::StageScope::Shared)
                continue;
            ++copies;
            if (st.tensor.name() == "a.shared") {
                EXPECT_EQ(st.layout.order, (std::vector<int>{1, 0, 2, 3})) << sched::to_string(s);
                const int64_t row = (tf32 ? 32 : 64) + 16 / t.bytes(); // k tile + 16 bytes
                EXPECT_EQ(st.layout.factors, (std::vector<int64_t>{4, row}));
            } else {
                EXPECT_TRUE(st.layout.order.empty()) << st.tensor.name();
            }
        }
        EXPECT_EQ(copies, 2);
        const std::string code = cuda::codegen_cuda(lower_gpu(s, "tc")).code;
        const std::string vec =
            tf32 ? "const float4 a_vec" : "const tessera_vector<__half, 8> a_vec";
        EXPECT_GT(count_occurrences(code, vec), 0) << code;
        EXPECT_LE(emulated_error(s, 9), tf32 ? 1e-2 : 1e-5);
    }
}

TEST(TensorCore, ShapesWithoutWholeTilesKeepTheSimtSchedule) {
    for (const auto& [m, n, k] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
             {13, 8, 16}, {16, 12, 16}, {16, 8, 13}}) {
        const sched::State s = tensor_core_default(product({}, m, n, k, DataType::f16()));
        const cuda::CudaSource src = cuda::codegen_cuda(lower_gpu(s, "simt"));
        EXPECT_EQ(count_occurrences(src.code, "tessera_mma_"), 0) << m << "x" << n << "x" << k;
        EXPECT_LE(emulated_error(s, 5), 1e-5) << m << "x" << n << "x" << k;
    }
}

TEST(TensorCore, OtherTilesLowerCompileAndOneMatchesUnderEmulation) {
    const te::Compute c = product({}, 128, 128, 64, DataType::f16());
    const std::vector<sched::TensorCoreTiles> tiles = {
        {2, 2, 4, 8, 2, false}, {2, 2, 4, 8, 4, true}, {2, 2, 2, 8, 2, true},
        {4, 2, 2, 8, 2, true},  {2, 4, 4, 4, 2, true}, {4, 4, 2, 4, 2, true}};
    for (const sched::TensorCoreTiles& t : tiles) {
        SCOPED_TRACE(std::to_string(t.rows()) + "x" + std::to_string(t.columns()));
        const sched::State s = sched::tensor_core_schedule(c, t, false);
        EXPECT_EQ(sched::gpu_limit_violation(s), "");
        const cuda::CudaSource src = cuda::codegen_cuda(lower_gpu(s, "tiles"));
        EXPECT_EQ(src.kernels[0].dims.block[1], t.wi * t.wj);
        EXPECT_NO_THROW(cuda::nvrtc_compile(src.code, "tiles", {"sm_90", false, false}));
    }
    // Sixteen warps, padded rows, two k steps per fetch.
    EXPECT_LE(emulated_error(sched::tensor_core_schedule(c, tiles.back(), false), 9), 1e-5);
    // Tiles that do not divide the product, and an f32 product without TF32, are refused.
    EXPECT_THROW(sched::tensor_core_schedule(c, {2, 2, 4, 8, 8, true}, false), ScheduleError);
    EXPECT_THROW(
        sched::tensor_core_schedule(product({}, 128, 128, 64, DataType::f32()), tiles[0], false),
        ScheduleError);
}

/// A lane loop of `lanes` around a `warp_mma` k loop of 16 over halves h and c:
///   acc[h * 2 + c] += f32(A[row * 16 + k]) * f32(B[k * 8 + col])
/// with row = 2 * (L / 4) + h, or `row_of_lane` instead, and col = 2 * (L % 4) + c.
ir::Stmt lane_nest(int64_t lanes, bool swap_row_groups = false) {
    const ir::Buffer a = ir::Buffer::make("A", DataType::f16(), {16, 16});
    const ir::Buffer b = ir::Buffer::make("B", DataType::f16(), {16, 8});
    const ir::Buffer acc = ir::Buffer::make("acc", DataType::f32(), {4});
    ir::Var lane("lane"), k("k"), h("h"), c("c");
    auto n = [](int64_t v) { return ir::Expr(v); };
    const ir::Expr g = swap_row_groups ? ir::Expr(lane % n(8)) : ir::Expr(lane / n(4));
    const ir::Expr row = g * n(2) + h, col = (lane % n(4)) * n(2) + c;
    const ir::Expr ic = h * n(2) + c;
    const ir::Expr update =
        ir::Load::make(acc, ic) + ir::cast(DataType::f32(), ir::Load::make(a, row * n(16) + k)) *
                                      ir::cast(DataType::f32(), ir::Load::make(b, k * n(8) + col));
    ir::Stmt s = ir::Store::make(acc, update, ic);
    s = ir::For::make(c, n(0), n(2), ir::ForKind::Serial, s);
    s = ir::For::make(h, n(0), n(2), ir::ForKind::Serial, s);
    s = ir::For::make(k, n(0), n(16), ir::ForKind::WarpMma, s);
    return ir::For::make(lane, n(0), n(lanes), ir::ForKind::GpuThreadX, s);
}

TEST(TensorCore, LoweringBuildsTheFragmentsFromTheLanesIndices) {
    const ir::Stmt lowered = lower::lower_warp_mmas(lane_nest(32));
    ASSERT_TRUE(ir::contains_call(lowered, ir::CallOp::WarpMma));
    // A lane reading the wrong rows for its group, or a lane loop that is not one warp, is
    // refused with the reason.
    try {
        lower::lower_warp_mmas(lane_nest(32, true));
        ADD_FAILURE() << "lowered a nest whose A rows do not follow the row groups";
    } catch (const ScheduleError& e) {
        EXPECT_NE(std::string(e.what()).find("row group"), std::string::npos) << e.what();
    }
    try {
        lower::lower_warp_mmas(lane_nest(64));
        ADD_FAILURE() << "lowered inside a lane loop of 64";
    } catch (const ScheduleError& e) {
        EXPECT_NE(std::string(e.what()).find("32 lanes"), std::string::npos) << e.what();
    }
}

TEST(TensorCore, ScheduleReplaysFromItsSteps) {
    const sched::State s = tensor_core_default(product({}, 64, 64, 64, DataType::f16()));
    // The tuner reads a GPU state's features from its CPU lowering (bindings as serial loops):
    // there the warp_mma nest stays plain loops, so the default seeds a search like any state.
    EXPECT_GT(cost::extract_features(sched::lower_state(s, "candidate")).rows.size(), 0u);
    const sched::State again =
        sched::replay(s.compute, sched::steps_from_json(sched::steps_to_json(s.steps)));
    EXPECT_EQ(sched::steps_to_json(again.steps), sched::steps_to_json(s.steps));
    EXPECT_NE(sched::steps_to_json(s.steps).find("warp_mma"), std::string::npos);
}

/// s on the device on random operands: its largest error against the reference (a seeded
/// sample of `checks` outputs when the output is large) and its time in ms.
std::pair<double, double> on_device(const sched::State& s, int checks) {
    const cuda::CudaSource src = cuda::codegen_cuda(lower_gpu(s, "tc"));
    cuda::NvrtcOptions o;
    o.arch = cuda::CudaDriver::get().device().arch();
    o.want_ptx = false;
    cuda::DeviceFunction fn(src, cuda::nvrtc_compile(src.code, "tc", o).cubin);
    auto in = operands(s.compute, 13);
    const ir::Tensor& out_t = s.compute.outputs[0];
    int64_t n = 1;
    for (int64_t d : out_t.shape())
        n *= d;
    std::vector<float> out(n);
    fn.copy_in(0, in[0].data());
    fn.copy_in(1, in[1].data());
    const double ms = fn.time_ms(5);
    fn.copy_out(2, out.data());
    return {max_error(s.compute, in, out, checks), ms};
}

TEST(CudaDeviceTensorCore, F16AndTf32ProductsMatchTheReference) {
    TESSERA_REQUIRE_GPU();
    for (const auto& [m, n, k] :
         std::vector<std::tuple<int64_t, int64_t, int64_t>>{{48, 40, 48}, {256, 128, 96}}) {
        EXPECT_LE(
            on_device(tensor_core_default(product({}, m, n, k, DataType::f16())), 1 << 20).first,
            1e-5);
        EXPECT_LE(
            on_device(tensor_core_default(product({}, m, n, k, DataType::f32()), true), 1 << 20)
                .first,
            2e-2);
    }
}

/// Times the tensor-core default schedule at 4096^3 (scripts/gpu_check.sh prints tessera's op
/// run next to cuBLAS) and, for the record, other tiles of the f16 product; checks a sample of
/// outputs of each.
TEST(CudaDeviceTensorCore, Gemm4096Throughput) {
    TESSERA_REQUIRE_GPU();
    const double flop = 2.0 * 4096 * 4096 * 4096;
    for (bool tf32 : {false, true}) {
        const auto [err, ms] = on_device(
            tensor_core_default(
                product({}, 4096, 4096, 4096, tf32 ? DataType::f32() : DataType::f16()), tf32),
            64);
        std::printf("tessera tensor-core %s gemm 4096^3 (default schedule): %.3f ms, %.1f "
                    "TFLOP/s, max rel err %.2e\n",
                    tf32 ? "tf32" : "f16", ms, flop / (ms * 1e9), err);
        EXPECT_LE(err, tf32 ? 5e-2 : 1e-4);
    }
    const te::Compute f16 = product({}, 4096, 4096, 4096, DataType::f16());
    for (const sched::TensorCoreTiles& t :
         std::vector<sched::TensorCoreTiles>{{2, 2, 4, 8, 2, true, false},
                                             {2, 2, 4, 8, 1, true, true},
                                             {2, 2, 4, 8, 4, true, true},
                                             {2, 2, 2, 8, 2, true, true},
                                             {4, 2, 2, 8, 2, true, true},
                                             {2, 4, 4, 4, 2, true, true}}) {
        const auto [err, ms] = on_device(sched::tensor_core_schedule(f16, t, false), 64);
        std::printf("tessera tensor-core f16 gemm 4096^3 tiles warps %lldx%lld mma %lldx%lld "
                    "k_steps %lld pad %d pipeline %d: %.3f ms, %.1f TFLOP/s, max rel err %.2e\n",
                    (long long)t.wi, (long long)t.wj, (long long)t.mi, (long long)t.nj,
                    (long long)t.k_steps, int(t.pad_rows), int(t.pipeline), ms, flop / (ms * 1e9),
                    err);
        EXPECT_LE(err, 1e-4);
    }
}

} // namespace
} // namespace tessera::testing
