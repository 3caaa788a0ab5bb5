// Reductions: ReduceSum(data, axes?) keepdims, noop_with_empty_axes; ReduceMean and
// ReduceMax(data) axes, keepdims.
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

EvalOutputs eval_reduce(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    require_dtype(x, {DType::F32, DType::F64, DType::I32, DType::I64}, "input", where);
    std::vector<int64_t> axes;
    if (n.op == Op::ReduceSum) {
        if (in.size() > 1 && in[1])
            axes = int_elements(*in[1], "axes", where);
    } else {
        axes = n.attr_ints("axes");
    }
    axes = normalize_axes(axes, x.rank(), where);
    if (axes.empty() && n.op == Op::ReduceSum && n.attr_int("noop_with_empty_axes", 0) != 0)
        return {x};
    const bool keepdims = n.attr_int("keepdims", 1) != 0;
    Shape kept = reduced_shape(x.shape(), axes, true); // reduced dims as 1
    TensorData out(x.dtype(), reduced_shape(x.shape(), axes, keepdims));
    // Every input element adds into the output element at its index with reduced dims at 0.
    std::vector<int64_t> out_strides = broadcast_strides(kept, x.shape());
    const int64_t count = out.numel() ? x.numel() / out.numel() : 0;
    dispatch(x.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        if constexpr (std::is_same_v<T, uint8_t>) {
            TESSERA_UNREACHABLE();
        } else {
            using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
            const bool is_max = n.op == Op::ReduceMax;
            std::vector<Acc> acc(static_cast<size_t>(out.numel()),
                                 is_max ? std::numeric_limits<Acc>::lowest() : Acc(0));
            if (is_max && std::is_floating_point_v<T>)
                std::fill(acc.begin(), acc.end(), -std::numeric_limits<Acc>::infinity());
            const T* px = x.data<T>();
            for_each_index<1>(x.shape(), {out_strides}, {0},
                              [&](int64_t i, const std::array<int64_t, 1>& off) {
                                  Acc& a = acc[off[0]];
                                  if (is_max)
                                      a = (px[i] != px[i] || px[i] > a) ? Acc(px[i]) : a;
                                  else
                                      a += px[i];
                              });
            T* po = out.data<T>();
            for (int64_t i = 0; i < out.numel(); ++i) {
                Acc v = acc[i];
                if (n.op == Op::ReduceMean)
                    v = count ? v / static_cast<Acc>(count) : v;
                po[i] = static_cast<T>(v);
            }
        }
        return 0;
    });
    return {std::move(out)};
}

TypeList reduce_types(const NodeTypes& t) {
    const Node& n = t.node();
    const Value& x = t.in(0, "data");
    t.dtype(x, kNumeric, "data");
    std::vector<int64_t> axes =
        n.op == Op::ReduceSum ? t.opt_ints_of(1, "axes") : n.attr_ints("axes");
    axes = normalize_axes(axes, x.shape.size(), t.where());
    if (axes.empty() && n.op == Op::ReduceSum && n.attr_int("noop_with_empty_axes", 0) != 0)
        return {{x.dtype, x.shape}};
    return {{x.dtype, reduced_shape(x.shape, axes, n.attr_int("keepdims", 1) != 0)}};
}

void reduce_kernel(NodeKernel& k) {
    const Node& n = k.node();
    std::vector<int64_t> axes = n.op == Op::ReduceSum ? k.static_ints(1) : n.attr_ints("axes");
    const bool keep = n.attr_int("keepdims", 1) != 0;
    if (axes.empty() && n.op == Op::ReduceSum && n.attr_int("noop_with_empty_axes", 0)) {
        k.set(te::unary(
            k.in(0), [](te::Expr e) { return e; }, "copy"));
        return;
    }
    const te::Tensor x = k.in(0);
    k.set(n.op == Op::ReduceSum    ? te::reduce_sum(x, axes, keep)
          : n.op == Op::ReduceMean ? te::reduce_mean(x, axes, keep)
                                   : te::reduce_max(x, axes, keep));
}

using K = Attribute::Kind;

// ReduceMean and ReduceMax keep axes as an attribute (until opset 18).
OpDef reduce_with_axes_attribute(Op op, const char* kernel_name) {
    return OpDef(op)
        .onnx(1, 1, 1, 1, {{"axes", K::Ints}, {"keepdims", K::Int}})
        .import_with([](OpImport& im) {
            im.keep_if_present("axes");
            im.keep("keepdims", Attribute::of_int(1));
        })
        .types(reduce_types)
        .eval(eval_reduce)
        .fuses_as(FusionKind::Reduction)
        .named(kernel_name)
        .builds(reduce_kernel);
}

// ReduceSum's axes are an operand from opset 13; before, an attribute made an operand.
void import_reduce_sum(OpImport& im) {
    if (im.opset() < 13) {
        im.expect_inputs(1, 1);
        if (im.has("axes"))
            im.inputs().push_back(im.ints_constant("axes", im.attr("axes").ints));
    }
    im.keep("keepdims", Attribute::of_int(1));
    im.keep("noop_with_empty_axes", Attribute::of_int(0));
}

} // namespace

} // namespace tessera::graph::detail

namespace tessera::graph::ops {

using namespace detail;

const OpDef ReduceMean = reduce_with_axes_attribute(Op::ReduceMean, "reduce_mean");
const OpDef ReduceMax = reduce_with_axes_attribute(Op::ReduceMax, "reduce_max");
const OpDef ReduceSum =
    OpDef(Op::ReduceSum)
        .onnx(
            1, 1, 2, 1,
            {{"axes", K::Ints, 1, 13}, {"keepdims", K::Int}, {"noop_with_empty_axes", K::Int, 13}})
        .import_with(import_reduce_sum)
        .types(reduce_types)
        .eval(eval_reduce)
        .fuses_as(FusionKind::Reduction)
        .named("reduce_sum")
        .static_from(1)
        .builds(reduce_kernel);

} // namespace tessera::graph::ops
