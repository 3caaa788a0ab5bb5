// QMatMul (ops.def documents its operands), the 8-bit matrix product the quantized-ops pass
// makes from a QDQ model's DequantizeLinear -> MatMul: its types, a naive evaluator over the
// integer definition and its kernel.
#include "quantized_matmul.h"

#include <cstring>

#include "../op_util.h"
#include "node_kernel.h"
#include "node_types.h"
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

} // namespace

} // namespace tessera::graph::detail

namespace tessera::graph::ops {

using namespace detail;

// Made by the quantized-ops pass only: no ONNX opset defines it.
const OpDef QMatMul = pass_made_op(Op::QMatMul, 4, 4, qmatmul_types, eval_qmatmul,
                                   FusionKind::OutFusable, "qmatmul", qmatmul_kernel);

} // namespace tessera::graph::ops
