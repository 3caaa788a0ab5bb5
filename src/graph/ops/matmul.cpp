// Matrix products: Gemm(A, B, C?) alpha, beta, transA, transB; MatMul numpy-style batched.
#include <algorithm>
#include <cmath>
#include <limits>

#include "../op_util.h"
#include "eval_util.h"
#include "node_kernel.h"
#include "node_types.h"
#include "op_import.h"
#include "tessera/te/op_library.h"
#include "tessera/te/ops_extra.h"

namespace tessera::graph::detail {

namespace {

// C[M, N] += A[M, K] * B[K, N], all row-major; the j loop is contiguous in B and C.
void matmul_kernel(int64_t M, int64_t K, int64_t N, const float* a, const float* b, float* c) {
    for (int64_t i = 0; i < M; ++i) {
        float* crow = c + i * N;
        for (int64_t k = 0; k < K; ++k) {
            const float av = a[i * K + k];
            const float* brow = b + k * N;
            for (int64_t j = 0; j < N; ++j)
                crow[j] += av * brow[j];
        }
    }
}

std::vector<float> transposed(const float* p, int64_t rows, int64_t cols) {
    std::vector<float> t(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
            t[c * rows + r] = p[r * cols + c];
    return t;
}

EvalOutputs eval_gemm(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& a = require_input(in, 0, where);
    const TensorData& b = require_input(in, 1, where);
    const TensorData* c = in.size() > 2 ? in[2] : nullptr;
    require_f32(a, "A", where);
    require_f32(b, "B", where);
    require_rank(a, 2, "A", where);
    require_rank(b, 2, "B", where);
    const bool ta = n.attr_int("transA", 0) != 0, tb = n.attr_int("transB", 0) != 0;
    const float alpha = n.attr_float("alpha", 1.0f), beta = n.attr_float("beta", 1.0f);
    const int64_t M = ta ? a.shape()[1] : a.shape()[0], K = ta ? a.shape()[0] : a.shape()[1];
    const int64_t K2 = tb ? b.shape()[1] : b.shape()[0], N = tb ? b.shape()[0] : b.shape()[1];
    if (K != K2)
        throw UserError() << where << ": A " << shape_str(a.shape()) << " and B "
                          << shape_str(b.shape()) << " do not multiply (transA " << ta
                          << ", transB " << tb << ")";
    std::vector<float> at = ta ? transposed(a.data<float>(), K, M) : a.to_vector<float>();
    std::vector<float> bt = tb ? transposed(b.data<float>(), N, K) : b.to_vector<float>();
    TensorData out(DType::F32, {M, N});
    float* po = out.data<float>();
    matmul_kernel(M, K, N, at.data(), bt.data(), po);
    for (int64_t i = 0; i < M * N; ++i)
        po[i] *= alpha;
    if (c) {
        require_f32(*c, "C", where);
        Shape s = broadcast_shapes({c->shape(), {M, N}}, where);
        if (s != Shape{M, N})
            throw UserError() << where << ": C " << shape_str(c->shape())
                              << " does not broadcast to [" << M << "," << N << "]";
        const float* pc = c->data<float>();
        for_each_index<1>(
            {M, N}, {broadcast_strides(c->shape(), {M, N})}, {0},
            [&](int64_t o, const std::array<int64_t, 1>& off) { po[o] += beta * pc[off[0]]; });
    }
    return {std::move(out)};
}

EvalOutputs eval_matmul(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& a = require_input(in, 0, where);
    const TensorData& b = require_input(in, 1, where);
    require_f32(a, "A", where);
    require_f32(b, "B", where);
    Shape out_shape = matmul_shape(a.shape(), b.shape(), where);
    // Promote 1-D operands to matrices, then broadcast the batch dims.
    Shape as = a.shape(), bs = b.shape();
    if (as.size() == 1)
        as.insert(as.begin(), 1);
    if (bs.size() == 1)
        bs.push_back(1);
    const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
    Shape abatch(as.begin(), as.end() - 2), bbatch(bs.begin(), bs.end() - 2);
    Shape batch = broadcast_shapes({abatch, bbatch}, where);
    TensorData out(DType::F32, out_shape);
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* po = out.data<float>();
    for_each_index<2>(batch, {broadcast_strides(abatch, batch), broadcast_strides(bbatch, batch)},
                      {0, 0}, [&](int64_t o, const std::array<int64_t, 2>& off) {
                          matmul_kernel(M, K, N, pa + off[0] * M * K, pb + off[1] * K * N,
                                        po + o * M * N);
                      });
    return {std::move(out)};
}

TypeList gemm_types(const NodeTypes& t) {
    const Node& n = t.node();
    const Value& a = t.in(0, "A");
    const Value& b = t.in(1, "B");
    t.dtype(a, kF32, "A");
    t.dtype(b, kF32, "B");
    t.rank(a, 2, "A");
    t.rank(b, 2, "B");
    const bool ta = n.attr_int("transA", 0) != 0, tb = n.attr_int("transB", 0) != 0;
    const int64_t M = a.shape[ta ? 1 : 0], K = a.shape[ta ? 0 : 1];
    const int64_t K2 = b.shape[tb ? 1 : 0], N = b.shape[tb ? 0 : 1];
    if (K != K2)
        t.fail("A " + shape_str(a.shape) + " and B " + shape_str(b.shape) +
               " do not multiply (transA " + std::to_string(ta) + ", transB " + std::to_string(tb) +
               ")");
    if (t.has(2)) {
        const Value& c = t.in(2, "C");
        t.dtype(c, kF32, "C");
        if (broadcast_shapes({c.shape, {M, N}}, t.where()) != Shape{M, N})
            t.fail("C " + shape_str(c.shape) + " does not broadcast to [" + std::to_string(M) +
                   "," + std::to_string(N) + "]");
    }
    return {{DType::F32, {M, N}}};
}

TypeList matmul_types(const NodeTypes& t) {
    const Value& a = t.in(0, "A");
    const Value& b = t.in(1, "B");
    t.dtype(a, kF32, "A");
    t.dtype(b, kF32, "B");
    return {{DType::F32, matmul_shape(a.shape, b.shape, t.where())}};
}

using K = Attribute::Kind;

} // namespace

} // namespace tessera::graph::detail

namespace tessera::graph::ops {

using namespace detail;

const OpDef Gemm =
    OpDef(Op::Gemm)
        .onnx(1, 2, 3, 1,
              {{"alpha", K::Float}, {"beta", K::Float}, {"transA", K::Int}, {"transB", K::Int}})
        .import_with([](OpImport& im) {
            im.keep("alpha", Attribute::of_float(1.0f));
            im.keep("beta", Attribute::of_float(1.0f));
            im.keep("transA", Attribute::of_int(0));
            im.keep("transB", Attribute::of_int(0));
        })
        .types(gemm_types)
        .eval(eval_gemm)
        .fuses_as(FusionKind::OutFusable)
        .builds([](NodeKernel& k) {
            const Node& n = k.node();
            k.set(te::gemm(k.in(0), k.in(1), k.opt_in(2), n.attr_float("alpha", 1.0f),
                           n.attr_float("beta", 1.0f), n.attr_int("transA", 0) != 0,
                           n.attr_int("transB", 0) != 0));
        });

const OpDef MatMul = OpDef(Op::MatMul)
                         .onnx(1, 2, 2, 1)
                         .types(matmul_types)
                         .eval(eval_matmul)
                         .fuses_as(FusionKind::OutFusable)
                         .builds([](NodeKernel& k) { k.set(te::matmul(k.in(0), k.in(1))); });

} // namespace tessera::graph::ops
