// MatMulBF16 and MatMulBF16NT (ops.def documents their operands), the bf16 matrix products the
// precision pass makes from a MatMul or Gemm on constant f32 weights and from a MatMul of two
// computed values: their types, naive evaluators over their definitions and their kernels.
#include "bf16_matmul.h"

#include <algorithm>

#include "../op_util.h"
#include "node_kernel.h"
#include "node_types.h"
#include "tessera/te/op_library.h"

namespace tessera::graph::detail {

TensorData pack_bf16_weight_words(const TensorData& w) {
    const size_t r = w.rank();
    TESSERA_CHECK((r == 2 || r == 3) && w.dtype() == DType::F32 && w.shape()[r - 2] % 2 == 0)
        << "bf16 matmul weight " << shape_str(w.shape());
    const int64_t B = r == 3 ? w.shape()[0] : 1, K = w.shape()[r - 2], N = w.shape()[r - 1];
    Shape words = w.shape();
    words[r - 2] = K / 2;
    TensorData out(DType::I32, words);
    for (int64_t b = 0; b < B; ++b) {
        const float* src = w.data<float>() + b * K * N;
        int32_t* dst = out.data<int32_t>() + b * K / 2 * N;
        for (int64_t j = 0; j < K / 2; ++j)
            for (int64_t n = 0; n < N; ++n)
                dst[j * N + n] = static_cast<int32_t>(
                    uint32_t(f32_to_bf16_bits(src[2 * j * N + n])) |
                    uint32_t(f32_to_bf16_bits(src[(2 * j + 1) * N + n])) << 16);
    }
    return out;
}

namespace {

TypeList bf16_matmul_types(const NodeTypes& t) {
    const Value& x = t.in(0, "X");
    const Value& w = t.in(1, "W");
    t.dtype(x, {DType::BF16}, "X");
    t.dtype(w, {DType::I32}, "W");
    t.min_rank(x, 1, "X");
    // Batched weights [B, K / 2, N] go with X [B, M, K], one matrix per batch.
    if (w.shape.size() == 3) {
        t.rank(x, 3, "X");
        if (x.shape[0] != w.shape[0])
            t.fail("X " + shape_str(x.shape) + " and W " + shape_str(w.shape) +
                   " need the same batch dimension");
    } else {
        t.rank(w, 2, "W");
    }
    const int64_t K = x.shape.back(), words = w.shape[w.shape.size() - 2];
    if (K % 2 != 0 || words != K / 2)
        t.fail("W " + shape_str(w.shape) + " does not hold " + std::to_string(K) +
               " rows in words of two (an even number)");
    Shape out = x.shape;
    out.back() = w.shape.back();
    return {{DType::F32, out}};
}

EvalOutputs eval_bf16_matmul(const Node&, const EvalInputs& in, const std::string& where) {
    const TensorData &x = require_input(in, 0, where), &w = require_input(in, 1, where);
    const int64_t K = x.shape().back(), N = w.shape().back(), M = x.numel() / K;
    // Rows per weight matrix: all of them, or one batch's with batched weights.
    const int64_t rows_per_w = w.rank() == 3 ? x.shape()[1] : M;
    Shape out_shape = x.shape();
    out_shape.back() = N;
    TensorData y(DType::F32, out_shape);
    const BFloat16* px = x.data<BFloat16>();
    const int32_t* pw = w.data<int32_t>();
    float* py = y.data<float>();
    // Word by word, each word's two products summed first, as dot2_bf16 defines it.
    for (int64_t m = 0; m < M; ++m)
        for (int64_t c = 0; c < N; ++c) {
            const int32_t* wm = pw + m / rows_per_w * (K / 2) * N;
            float acc = 0;
            for (int64_t j = 0; j < K / 2; ++j) {
                const uint32_t xw =
                    uint32_t(px[m * K + 2 * j].bits) | uint32_t(px[m * K + 2 * j + 1].bits) << 16;
                acc += dot2_bf16(xw, static_cast<uint32_t>(wm[j * N + c]));
            }
            py[m * N + c] = acc;
        }
    return {y};
}

void bf16_matmul_kernel(NodeKernel& k) { k.set(te::bf16_matmul(k.in(0), k.in(1))); }

// Attribute "kn" 1: Y is [..., K, N] as it is; 0 (default): Y is [..., N, K], its columns as
// rows.
bool y_is_kn(const Node& n) { return n.attr_int("kn", 0) != 0; }

TypeList bf16_matmul_nt_types(const NodeTypes& t) {
    const Value& x = t.in(0, "X");
    const Value& y = t.in(1, "Y");
    t.dtype(x, {DType::BF16}, "X");
    t.dtype(y, {DType::BF16}, "Y");
    t.min_rank(x, 2, "X");
    t.rank(y, static_cast<int64_t>(x.shape.size()), "Y");
    const size_t r = x.shape.size();
    const int64_t K = x.shape.back();
    const bool kn = y_is_kn(t.node());
    if (K % 2 != 0 || y.shape[kn ? r - 2 : r - 1] != K ||
        !std::equal(x.shape.begin(), x.shape.end() - 2, y.shape.begin()))
        t.fail("X " + shape_str(x.shape) + " and Y " + shape_str(y.shape) +
               " need the same batch dimensions and the same even inner dimension");
    Shape out = x.shape;
    out[r - 1] = y.shape[kn ? r - 1 : r - 2];
    return {{DType::F32, out}};
}

EvalOutputs eval_bf16_matmul_nt(const Node& node, const EvalInputs& in, const std::string& where) {
    const TensorData &x = require_input(in, 0, where), &y = require_input(in, 1, where);
    const size_t r = x.rank();
    const bool kn = y_is_kn(node);
    const int64_t M = x.shape()[r - 2], K = x.shape()[r - 1], N = y.shape()[kn ? r - 1 : r - 2];
    const int64_t batches = x.numel() / (M * K);
    Shape out_shape = x.shape();
    out_shape.back() = N;
    TensorData z(DType::F32, out_shape);
    const BFloat16* px = x.data<BFloat16>();
    const BFloat16* py = y.data<BFloat16>();
    float* pz = z.data<float>();
    auto word = [](const BFloat16* p) { return uint32_t(p[0].bits) | uint32_t(p[1].bits) << 16; };
    // Y's elements (k, n) and (k + 1, n) of batch b as one word.
    auto y_word = [&](int64_t b, int64_t k, int64_t n) {
        if (!kn)
            return word(py + (b * N + n) * K + k);
        const BFloat16* yb = py + b * K * N;
        return uint32_t(yb[k * N + n].bits) | uint32_t(yb[(k + 1) * N + n].bits) << 16;
    };
    // Word by word, each word's two products summed first, as dot2_bf16 defines it.
    for (int64_t b = 0; b < batches; ++b)
        for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < N; ++n) {
                float acc = 0;
                for (int64_t j = 0; j < K / 2; ++j)
                    acc += dot2_bf16(word(px + (b * M + m) * K + 2 * j), y_word(b, 2 * j, n));
                pz[(b * M + m) * N + n] = acc;
            }
    return {z};
}

void bf16_matmul_nt_kernel(NodeKernel& k) {
    k.set(y_is_kn(k.node()) ? te::bf16_matmul_kn(k.in(0), k.in(1))
                            : te::bf16_matmul_nt(k.in(0), k.in(1)));
}

} // namespace

} // namespace tessera::graph::detail

namespace tessera::graph::ops {

using namespace detail;

// Made by the precision pass only: no ONNX opset defines it.
const OpDef MatMulBF16 = pass_made_op(Op::MatMulBF16, 2, 2, bf16_matmul_types, eval_bf16_matmul,
                                      FusionKind::OutFusable, "bf16_matmul", bf16_matmul_kernel);
const OpDef MatMulBF16NT =
    pass_made_op(Op::MatMulBF16NT, 2, 2, bf16_matmul_nt_types, eval_bf16_matmul_nt,
                 FusionKind::OutFusable, "bf16_matmul_nt", bf16_matmul_nt_kernel);

} // namespace tessera::graph::ops
