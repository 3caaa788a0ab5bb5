// MatMulBF16 (ops.def documents its operands), the bf16 matrix product the precision pass makes
// from a MatMul or Gemm on constant f32 weights: its types, a naive evaluator over its
// definition and its kernel.
#include "bf16_matmul.h"

#include "../op_util.h"
#include "node_kernel.h"
#include "node_types.h"
#include "tessera/te/op_library.h"

namespace tessera::graph::detail {

TensorData pack_bf16_weight_words(const TensorData& w) {
    TESSERA_CHECK(w.rank() == 2 && w.dtype() == DType::F32 && w.shape()[0] % 2 == 0)
        << "bf16 matmul weight " << shape_str(w.shape());
    const int64_t K = w.shape()[0], N = w.shape()[1];
    TensorData out(DType::I32, {K / 2, N});
    const float* src = w.data<float>();
    int32_t* dst = out.data<int32_t>();
    for (int64_t j = 0; j < K / 2; ++j)
        for (int64_t n = 0; n < N; ++n)
            dst[j * N + n] =
                static_cast<int32_t>(uint32_t(f32_to_bf16_bits(src[2 * j * N + n])) |
                                     uint32_t(f32_to_bf16_bits(src[(2 * j + 1) * N + n])) << 16);
    return out;
}

namespace {

TypeList bf16_matmul_types(const NodeTypes& t) {
    const Value& x = t.in(0, "X");
    const Value& w = t.in(1, "W");
    t.dtype(x, {DType::BF16}, "X");
    t.dtype(w, {DType::I32}, "W");
    t.min_rank(x, 1, "X");
    t.rank(w, 2, "W");
    const int64_t K = x.shape.back();
    if (K % 2 != 0 || w.shape[0] != K / 2)
        t.fail("W " + shape_str(w.shape) + " does not hold " + std::to_string(K) +
               " rows in words of two (an even number)");
    Shape out = x.shape;
    out.back() = w.shape[1];
    return {{DType::F32, out}};
}

EvalOutputs eval_bf16_matmul(const Node&, const EvalInputs& in, const std::string& where) {
    const TensorData &x = require_input(in, 0, where), &w = require_input(in, 1, where);
    const int64_t K = x.shape().back(), N = w.shape()[1], M = x.numel() / K;
    Shape out_shape = x.shape();
    out_shape.back() = N;
    TensorData y(DType::F32, out_shape);
    const BFloat16* px = x.data<BFloat16>();
    const int32_t* pw = w.data<int32_t>();
    float* py = y.data<float>();
    // Word by word, each word's two products summed first, as dot2_bf16 defines it.
    for (int64_t m = 0; m < M; ++m)
        for (int64_t c = 0; c < N; ++c) {
            float acc = 0;
            for (int64_t j = 0; j < K / 2; ++j) {
                const uint32_t xw =
                    uint32_t(px[m * K + 2 * j].bits) | uint32_t(px[m * K + 2 * j + 1].bits) << 16;
                acc += dot2_bf16(xw, static_cast<uint32_t>(pw[j * N + c]));
            }
            py[m * N + c] = acc;
        }
    return {y};
}

void bf16_matmul_kernel(NodeKernel& k) { k.set(te::bf16_matmul(k.in(0), k.in(1))); }

} // namespace

} // namespace tessera::graph::detail

namespace tessera::graph::ops {

using namespace detail;

// Made by the precision pass only: no ONNX opset defines it.
const OpDef MatMulBF16 = pass_made_op(Op::MatMulBF16, 2, 2, bf16_matmul_types, eval_bf16_matmul,
                                      FusionKind::OutFusable, "bf16_matmul", bf16_matmul_kernel);

} // namespace tessera::graph::ops
