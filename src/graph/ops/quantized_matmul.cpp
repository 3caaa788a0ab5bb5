// QMatMul and QMatMulActivations (ops.def documents their operands), the 8-bit matrix
// products the quantized-ops pass makes from a QDQ model's DequantizeLinear -> MatMul (on
// constant weights, and on two computed operands): their types, naive evaluators over the
// integer definitions and their kernels.
#include "quantized_matmul.h"

#include <algorithm>
#include <cstring>

#include "../op_util.h"
#include "node_kernel.h"
#include "node_types.h"
#include "quantized_conv.h"
#include "tessera/te/op_library.h"

namespace tessera::graph::detail {

TensorData pack_matmul_weight_words(const TensorData& w) {
    TESSERA_CHECK(w.rank() == 2 && w.dtype() == DType::I8)
        << "8-bit matmul weight " << shape_str(w.shape());
    const int64_t K = w.shape()[0], N = w.shape()[1], words = (K + 3) / 4;
    TensorData out(DType::I32, {words, N});
    auto* dst = reinterpret_cast<uint8_t*>(out.data<int32_t>());
    std::memset(dst, 0, static_cast<size_t>(out.numel()) * 4);
    const int8_t* src = w.data<int8_t>();
    for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n)
            dst[((k / 4) * N + n) * 4 + k % 4] = static_cast<uint8_t>(src[k * N + n]);
    return out;
}

namespace {

TypeList qmatmul_types(const NodeTypes& t) {
    const Value& x = t.in(0, "X");
    const Value& w = t.in(1, "W");
    t.dtype(x, {DType::U8}, "X");
    t.dtype(w, {DType::I32}, "W");
    t.min_rank(x, 1, "X");
    t.rank(w, 2, "W");
    const int64_t K = x.shape.back(), N = w.shape[1];
    if (w.shape[0] != (K + 3) / 4)
        t.fail("W " + shape_str(w.shape) + " does not hold " + std::to_string(K) +
               " rows in words of four");
    for (size_t i : {size_t(2), size_t(3)}) {
        const Value& v = t.in(i, i == 2 ? "Offset" : "Scale");
        t.dtype(v, {i == 2 ? DType::I32 : DType::F32}, i == 2 ? "Offset" : "Scale");
        if (v.shape != Shape{N})
            t.fail(std::string(i == 2 ? "Offset" : "Scale") + " has shape " + shape_str(v.shape) +
                   ", expected [" + std::to_string(N) + "]");
    }
    Shape out = x.shape;
    out.back() = N;
    return {{DType::F32, out}};
}

EvalOutputs eval_qmatmul(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData &x = require_input(in, 0, where), &w = require_input(in, 1, where),
                     &off = require_input(in, 2, where), &sc = require_input(in, 3, where);
    const int64_t K = x.shape().back(), N = w.shape()[1], M = x.numel() / K;
    Shape out_shape = x.shape();
    out_shape.back() = N;
    TensorData y(DType::F32, out_shape);
    const uint8_t* px = x.data<uint8_t>();
    const auto* pw = reinterpret_cast<const uint8_t*>(w.data<int32_t>());
    for (int64_t m = 0; m < M; ++m)
        for (int64_t c = 0; c < N; ++c) {
            uint32_t acc = 0; // i32 arithmetic, wrapping as the kernel's
            for (int64_t k = 0; k < K; ++k)
                acc += static_cast<uint32_t>(
                    int32_t(px[m * K + k]) *
                    int32_t(static_cast<int8_t>(pw[((k / 4) * N + c) * 4 + k % 4])));
            acc += static_cast<uint32_t>(off.data<int32_t>()[c]);
            y.data<float>()[m * N + c] =
                static_cast<float>(static_cast<int32_t>(acc)) * sc.data<float>()[c];
        }
    return {y};
}

void qmatmul_kernel(NodeKernel& k) { k.set(te::qmatmul(k.in(0), k.in(1), k.in(2), k.in(3))); }

TypeList qmatmul_activations_types(const NodeTypes& t) {
    const Value& x = t.in(0, "X");
    const Value& y = t.in(1, "Y");
    const Value& s = t.in(2, "Scale");
    t.dtype(x, {DType::U8}, "X");
    t.dtype(y, {DType::U8}, "Y");
    t.dtype(s, {DType::F32}, "Scale");
    t.min_rank(x, 2, "X");
    t.rank(y, x.shape.size(), "Y");
    const size_t r = x.shape.size();
    const int64_t K = x.shape[r - 1];
    if (y.shape[r - 2] != K || K % 4 != 0 ||
        !std::equal(x.shape.begin(), x.shape.end() - 2, y.shape.begin()))
        t.fail("X " + shape_str(x.shape) + " and Y " + shape_str(y.shape) +
               " need the same batch dimensions and a shared inner dimension that is a "
               "multiple of 4");
    if (s.shape != Shape{1})
        t.fail("Scale has shape " + shape_str(s.shape) + ", expected [1]");
    zero_point_attr(t.node(), "x_zero_point", t.where());
    zero_point_attr(t.node(), "y_zero_point", t.where());
    Shape out = x.shape;
    out.back() = y.shape.back();
    return {{DType::F32, out}};
}

EvalOutputs eval_qmatmul_activations(const Node& n, const EvalInputs& in,
                                     const std::string& where) {
    const TensorData &x = require_input(in, 0, where), &y = require_input(in, 1, where),
                     &s = require_input(in, 2, where);
    const int64_t zx = zero_point_attr(n, "x_zero_point", where),
                  zy = zero_point_attr(n, "y_zero_point", where);
    const size_t r = x.rank();
    const int64_t M = x.shape()[r - 2], K = x.shape()[r - 1], N = y.shape()[r - 1];
    const int64_t batches = x.numel() / (M * K);
    Shape out_shape = x.shape();
    out_shape.back() = N;
    TensorData z(DType::F32, out_shape);
    const uint8_t *px = x.data<uint8_t>(), *py = y.data<uint8_t>();
    for (int64_t b = 0; b < batches; ++b)
        for (int64_t m = 0; m < M; ++m)
            for (int64_t c = 0; c < N; ++c) {
                int64_t acc = 0;
                for (int64_t k = 0; k < K; ++k)
                    acc += (int64_t(px[(b * M + m) * K + k]) - zx) *
                           (int64_t(py[(b * K + k) * N + c]) - zy);
                z.data<float>()[(b * M + m) * N + c] = static_cast<float>(acc) * s.data<float>()[0];
            }
    return {z};
}

void qmatmul_activations_kernel(NodeKernel& k) {
    k.set(te::qmatmul_activations(k.in(0), k.in(1), k.in(2),
                                  zero_point_attr(k.node(), "x_zero_point", k.where()),
                                  zero_point_attr(k.node(), "y_zero_point", k.where())));
}

} // namespace

} // namespace tessera::graph::detail

namespace tessera::graph::ops {

using namespace detail;

// Made by the quantized-ops pass only: no ONNX opset defines it.
const OpDef QMatMul = pass_made_op(Op::QMatMul, 4, 4, qmatmul_types, eval_qmatmul,
                                   FusionKind::OutFusable, "qmatmul", qmatmul_kernel);
const OpDef QMatMulActivations =
    pass_made_op(Op::QMatMulActivations, 3, 3, qmatmul_activations_types, eval_qmatmul_activations,
                 FusionKind::OutFusable, "qmatmul_activations", qmatmul_activations_kernel);

} // namespace tessera::graph::ops
