// Reductions over chosen axes (empty axes: all of them; keepdims keeps reduced dims as 1) and
// the global pools, which reduce the spatial dims. Canonical forms (opset 17, as ONNX has them):
//   ReduceSum(data, axes?) keepdims, noop_with_empty_axes: axes an operand (opset 13 form;
//     older opsets' axes attribute becomes a constant operand). Empty axes with
//     noop_with_empty_axes = 1: the identity.
//   ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceLogSum,
//     ReduceLogSumExp, ReduceSumSquare(data) axes?, keepdims: axes an attribute (opsets 1-17
//     form). At opset 18 axes became an operand; it must be a compile-time constant (the
//     kernels need the axes anyway) and is imported as the attribute, so that one form reaches
//     the passes, the evaluator and the kernels; empty axes with noop_with_empty_axes = 1
//     import as Identity.
//   GlobalMaxPool(X [N, C, D1, ...]), GlobalLpPool(X) p: the max and (sum |x|^p)^(1/p) over
//     the dims from 2 on, kept as 1 (f32, rank >= 3); p an integer >= 1 (opset 1's float p
//     must be one). GlobalAveragePool is with the windowed ops (conv_pool.cpp).
// ReduceL2, ReduceLogSum and ReduceLogSumExp take floats only (integer results would need a
// rounding ONNX leaves open); the other reductions any numeric dtype, integer sums and
// products wrapping; ReduceMax and ReduceMin also bools (any, all; opset 20). ReduceLogSumExp is
// max + log(sum(exp(x - max))), stable for large inputs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "../op_util.h"
#include "eval_util.h"
#include "node_kernel.h"
#include "node_types.h"
#include "op_import.h"
#include "tessera/ir/op.h"
#include "tessera/te/op_library.h"
#include "tessera/te/ops_extra.h"
#include "tessera/te/reduce_ops.h"

namespace tessera::graph::detail {

namespace {

// ---- semantics --------------------------------------------------------------------------------

/// How a reduction combines its elements: pre-map, combination, post-map.
enum class Pre { None, Abs, Square };
enum class Combine { Sum, Prod, Max, Min, LogSumExp };
enum class Post { None, Mean, Sqrt, Log };
struct ReduceKind {
    Pre pre = Pre::None;
    Combine combine = Combine::Sum;
    Post post = Post::None;
    bool float_only = false;
};

ReduceKind reduce_kind(Op op) {
    switch (op) {
    case Op::ReduceSum:
        return {};
    case Op::ReduceMean:
        return {Pre::None, Combine::Sum, Post::Mean, false};
    case Op::ReduceMax:
        return {Pre::None, Combine::Max, Post::None, false};
    case Op::ReduceMin:
        return {Pre::None, Combine::Min, Post::None, false};
    case Op::ReduceProd:
        return {Pre::None, Combine::Prod, Post::None, false};
    case Op::ReduceL1:
        return {Pre::Abs, Combine::Sum, Post::None, false};
    case Op::ReduceL2:
        return {Pre::Square, Combine::Sum, Post::Sqrt, true};
    case Op::ReduceLogSum:
        return {Pre::None, Combine::Sum, Post::Log, true};
    case Op::ReduceLogSumExp:
        return {Pre::None, Combine::LogSumExp, Post::Log, true};
    case Op::ReduceSumSquare:
        return {Pre::Square, Combine::Sum, Post::None, false};
    default:
        break;
    }
    TESSERA_UNREACHABLE();
}

// Integer sums and products wrap (as numpy's and the kernels' do), without signed overflow.
template <typename T> T wrapping_add(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    } else {
        return a + b;
    }
}
template <typename T> T wrapping_mul(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    } else {
        return a * b;
    }
}

/// The node's axes, as given (ReduceSum's operand, the others' attribute).
std::vector<int64_t> given_axes(const Node& n, const EvalInputs& in, const std::string& where) {
    if (n.op != Op::ReduceSum)
        return n.attr_ints("axes");
    return in.size() > 1 && in[1] ? int_elements(*in[1], "axes", where) : std::vector<int64_t>{};
}

bool is_noop(const Node& n, const std::vector<int64_t>& axes) {
    return axes.empty() && n.op == Op::ReduceSum && n.attr_int("noop_with_empty_axes", 0) != 0;
}

// ReduceMax and ReduceMin of bools (opset 20): any and all.
bool reduces_bools(const Node& n, DType x) {
    return x == DType::Bool && (n.op == Op::ReduceMax || n.op == Op::ReduceMin);
}

// Every input element combines into the output element at its index with the reduced dims at
// 0; floats accumulate in double.
EvalOutputs eval_reduce(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    if (reduces_bools(n, x.dtype())) {
        const TensorData xi = x.cast(DType::I32);
        EvalInputs in_i = in;
        in_i[0] = &xi;
        TensorData r = eval_reduce(n, in_i, where)[0];
        // An empty set's max is the lowest i32, which is false (any of nothing); its min the
        // highest, which is true (all of nothing).
        int32_t* pr = r.data<int32_t>();
        for (int64_t i = 0; i < r.numel(); ++i)
            pr[i] = pr[i] > 0 ? 1 : 0;
        return {r.cast(DType::Bool)};
    }
    const ReduceKind kind = reduce_kind(n.op);
    if (kind.float_only)
        require_dtype(x, {DType::F32, DType::F64}, "data", where);
    else
        require_dtype(x, {DType::F32, DType::F64, DType::I32, DType::I64}, "data", where);
    const std::vector<int64_t> axes = normalize_axes(given_axes(n, in, where), x.rank(), where);
    if (is_noop(n, axes))
        return {x};
    const bool keepdims = n.attr_int("keepdims", 1) != 0;
    const Shape kept = reduced_shape(x.shape(), axes, true); // reduced dims as 1
    TensorData out(x.dtype(), reduced_shape(x.shape(), axes, keepdims));
    const std::vector<int64_t> out_strides = broadcast_strides(kept, x.shape());
    const int64_t count = out.numel() ? x.numel() / out.numel() : 0;
    visit_computed(x.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
        using Lim = std::numeric_limits<Acc>;
        const T* px = x.data<T>();
        auto for_each = [&](auto&& f) {
            for_each_index<1>(x.shape(), {out_strides}, {0},
                              [&](int64_t i, const std::array<int64_t, 1>& off) {
                                  f(off[0], static_cast<Acc>(px[i]));
                              });
        };
        const Acc lowest = Lim::has_infinity ? -Lim::infinity() : Lim::lowest();
        const Acc highest = Lim::has_infinity ? Lim::infinity() : Lim::max();
        const size_t size = static_cast<size_t>(out.numel());
        // LogSumExp: the max first; it shifts the exponents where it is finite.
        std::vector<Acc> shift(size, Acc(0));
        if (kind.combine == Combine::LogSumExp) {
            std::vector<Acc> mx(size, lowest);
            for_each([&](int64_t o, Acc v) { mx[o] = (v != v || v > mx[o]) ? v : mx[o]; });
            for (size_t o = 0; o < size; ++o)
                shift[o] = std::isfinite(static_cast<double>(mx[o])) ? mx[o] : Acc(0);
        }
        const Acc init = kind.combine == Combine::Prod  ? Acc(1)
                         : kind.combine == Combine::Max ? lowest
                         : kind.combine == Combine::Min ? highest
                                                        : Acc(0);
        std::vector<Acc> acc(size, init);
        for_each([&](int64_t o, Acc v) {
            if (kind.pre == Pre::Abs)
                v = v < 0 ? wrapping_mul(v, Acc(-1)) : v;
            else if (kind.pre == Pre::Square)
                v = wrapping_mul(v, v);
            Acc& a = acc[o];
            switch (kind.combine) {
            case Combine::Sum:
                a = wrapping_add(a, v);
                break;
            case Combine::Prod:
                a = wrapping_mul(a, v);
                break;
            case Combine::Max: // NaN wins (v != v)
                a = (v != v || v > a) ? v : a;
                break;
            case Combine::Min:
                a = (v != v || v < a) ? v : a;
                break;
            case Combine::LogSumExp:
                a += static_cast<Acc>(std::exp(static_cast<double>(v - shift[o])));
                break;
            }
        });
        T* po = out.data<T>();
        for (size_t o = 0; o < size; ++o) {
            Acc v = acc[o];
            switch (kind.post) {
            case Post::None:
                break;
            case Post::Mean:
                v = count ? v / static_cast<Acc>(count) : v;
                break;
            case Post::Sqrt:
                v = static_cast<Acc>(std::sqrt(static_cast<double>(v)));
                break;
            case Post::Log:
                v = static_cast<Acc>(std::log(static_cast<double>(v))) + shift[o];
                break;
            }
            po[o] = static_cast<T>(v);
        }
        return 0;
    });
    return {std::move(out)};
}

TypeList reduce_types(const NodeTypes& t) {
    const Node& n = t.node();
    const Value& x = t.in(0, "data");
    if (!reduces_bools(n, x.dtype))
        t.dtype(x, reduce_kind(n.op).float_only ? kFloat : kNumeric, "data");
    std::vector<int64_t> axes =
        n.op == Op::ReduceSum ? t.opt_ints_of(1, "axes") : n.attr_ints("axes");
    axes = normalize_axes(axes, x.shape.size(), t.where());
    if (is_noop(n, axes))
        return {{x.dtype, x.shape}};
    return {{x.dtype, reduced_shape(x.shape, axes, n.attr_int("keepdims", 1) != 0)}};
}

void reduce_kernel(NodeKernel& k) {
    const Node& n = k.node();
    std::vector<int64_t> axes = n.op == Op::ReduceSum ? k.static_ints(1) : n.attr_ints("axes");
    const bool keep = n.attr_int("keepdims", 1) != 0;
    if (is_noop(n, axes)) {
        k.set(te::unary(
            k.in(0), [](te::Expr e) { return e; }, "copy"));
        return;
    }
    te::Tensor x = k.in(0);
    if (reduces_bools(n, k.input_value(0).dtype)) {
        // Bytes 0 and 1: their max is any, their min all.
        const ir::DataType u8 = ir::DataType::u8(), b = k.out_type();
        x = te::unary(
            x, [u8](te::Expr e) { return ir::cast(u8, e); }, "bool_bytes");
        const te::Tensor r =
            n.op == Op::ReduceMax ? te::reduce_max(x, axes, keep) : te::reduce_min(x, axes, keep);
        return k.set(te::unary(
            r, [b](te::Expr e) { return ir::cast(b, e); }, "bytes_bool"));
    }
    switch (n.op) {
    case Op::ReduceSum:
        return k.set(te::reduce_sum(x, axes, keep));
    case Op::ReduceMean:
        return k.set(te::reduce_mean(x, axes, keep));
    case Op::ReduceMax:
        return k.set(te::reduce_max(x, axes, keep));
    case Op::ReduceMin:
        return k.set(te::reduce_min(x, axes, keep));
    case Op::ReduceProd:
        return k.set(te::reduce_prod(x, axes, keep));
    case Op::ReduceL1:
        return k.set(te::reduce_l1(x, axes, keep));
    case Op::ReduceL2:
        return k.set(te::reduce_l2(x, axes, keep));
    case Op::ReduceLogSum:
        return k.set(te::reduce_log_sum(x, axes, keep));
    case Op::ReduceLogSumExp:
        return k.set(te::reduce_log_sum_exp(x, axes, keep));
    case Op::ReduceSumSquare:
        return k.set(te::reduce_sum_square(x, axes, keep));
    default:
        break;
    }
    TESSERA_UNREACHABLE();
}

// ---- global pools -----------------------------------------------------------------------------

// GlobalMaxPool (max; NaN wins) and GlobalLpPool ((sum |x|^p)^(1/p) in double) per (n, c).
EvalOutputs eval_global_pool(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    require_f32(x, "X", where);
    if (x.rank() < 3)
        throw UserError() << where << ": X must have rank >= 3, got shape " << shape_str(x.shape());
    const bool is_max = n.op == Op::GlobalMaxPool;
    const int64_t p = is_max ? 0 : n.attr_int("p", 2);
    if (!is_max && p < 1)
        throw UserError() << where << ": p must be >= 1, got " << p;
    Shape out_shape = {x.shape()[0], x.shape()[1]};
    out_shape.resize(x.shape().size(), 1);
    const int64_t planes = x.shape()[0] * x.shape()[1];
    const int64_t spatial = planes ? x.numel() / planes : 0;
    TensorData out(DType::F32, out_shape);
    const float* px = x.data<float>();
    float* po = out.data<float>();
    for (int64_t q = 0; q < planes; ++q) {
        const float* row = px + q * spatial;
        double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
        for (int64_t i = 0; i < spatial; ++i) {
            const double v = row[i];
            if (is_max)
                acc = (v != v || v > acc) ? v : acc;
            else
                acc += p == 1   ? std::fabs(v)
                       : p == 2 ? v * v
                                : std::pow(std::fabs(v), static_cast<double>(p));
        }
        if (!is_max)
            acc = p == 1 ? acc : p == 2 ? std::sqrt(acc) : std::pow(acc, 1.0 / p);
        po[q] = static_cast<float>(acc);
    }
    return {std::move(out)};
}

TypeList global_pool_types(const NodeTypes& t) {
    const Value& x = t.in(0, "X");
    t.dtype(x, kF32, "X");
    t.min_rank(x, 3, "X");
    if (t.op() == Op::GlobalLpPool && t.node().attr_int("p", 2) < 1)
        t.fail("p must be >= 1, got " + std::to_string(t.node().attr_int("p", 2)));
    Shape out = x.shape;
    std::fill(out.begin() + 2, out.end(), 1);
    return {{DType::F32, out}};
}

// ---- import -----------------------------------------------------------------------------------

// The reductions with an axes attribute in the canonical form: at opset 18 the axes operand
// (a compile-time constant) becomes the attribute.
void import_reduce_axes_attribute(OpImport& im) {
    im.keep("keepdims", Attribute::of_int(1));
    if (im.opset() < 18) {
        im.keep_if_present("axes");
        return;
    }
    std::vector<int64_t> axes;
    if (im.inputs().size() > 1 && im.inputs()[1] != kNoValue) {
        const TensorData* t = im.known_value(im.inputs()[1]);
        if (!t)
            im.fail_not_constant(1, "axes");
        axes = int_elements(*t, "axes", im.where());
    }
    im.inputs().resize(1);
    if (axes.empty() && im.source().attr_int("noop_with_empty_axes", 0) != 0) {
        im.emit(Op::Identity, {im.inputs()[0]}, im.outputs(), {});
        return;
    }
    if (!axes.empty())
        im.set("axes", Attribute::of_ints(axes));
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

// GlobalLpPool's p: a float in opset 1, an int from opset 2; canonical an int.
void import_global_lp_pool(OpImport& im) {
    if (im.opset() >= 2) {
        im.keep("p", Attribute::of_int(2));
        return;
    }
    const double p = im.source().attr_float("p", 2.0f);
    if (!(p >= 1 && p <= 1024) || p != std::floor(p))
        im.fail("p = " + std::to_string(p) + " is not supported (integers from 1 to 1024 only)");
    im.set("p", Attribute::of_int(static_cast<int64_t>(p)));
}

using K = Attribute::Kind;

// The entry of a reduction with the axes attribute (an operand from opset 18 on).
OpDef reduce_with_axes_attribute(Op op, const char* kernel_name) {
    return OpDef(op)
        .onnx(
            1, 1, 2, 1,
            {{"axes", K::Ints, 1, 18}, {"keepdims", K::Int}, {"noop_with_empty_axes", K::Int, 18}})
        .import_with([](OpImport& im) {
            if (im.opset() < 18)
                im.expect_inputs(1, 1);
            import_reduce_axes_attribute(im);
        })
        .types(reduce_types)
        .eval(eval_reduce)
        .fuses_as(FusionKind::Reduction)
        .named(kernel_name)
        .builds(reduce_kernel);
}

} // namespace

} // namespace tessera::graph::detail

namespace tessera::graph::ops {

using namespace detail;

const OpDef ReduceMean = reduce_with_axes_attribute(Op::ReduceMean, "reduce_mean");
const OpDef ReduceMax = reduce_with_axes_attribute(Op::ReduceMax, "reduce_max");
const OpDef ReduceMin = reduce_with_axes_attribute(Op::ReduceMin, "reduce_min");
const OpDef ReduceProd = reduce_with_axes_attribute(Op::ReduceProd, "reduce_prod");
const OpDef ReduceL1 = reduce_with_axes_attribute(Op::ReduceL1, "reduce_l1");
const OpDef ReduceL2 = reduce_with_axes_attribute(Op::ReduceL2, "reduce_l2");
const OpDef ReduceLogSum = reduce_with_axes_attribute(Op::ReduceLogSum, "reduce_log_sum");
const OpDef ReduceLogSumExp = reduce_with_axes_attribute(Op::ReduceLogSumExp, "reduce_log_sum_exp");
const OpDef ReduceSumSquare = reduce_with_axes_attribute(Op::ReduceSumSquare, "reduce_sum_square");
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

const OpDef GlobalMaxPool =
    OpDef(Op::GlobalMaxPool)
        .onnx(1, 1, 1, 1)
        .types(global_pool_types)
        .eval(eval_global_pool)
        .fuses_as(FusionKind::Reduction)
        .named("global_max_pool2d")
        .builds([](NodeKernel& k) { k.set(te::global_max_pool2d(k.in(0))); });

const OpDef GlobalLpPool = OpDef(Op::GlobalLpPool)
                               .onnx(1, 1, 1, 1, {{"p", K::Float, 1, 2}, {"p", K::Int, 2}})
                               .import_with(import_global_lp_pool)
                               .types(global_pool_types)
                               .eval(eval_global_pool)
                               .fuses_as(FusionKind::Reduction)
                               .named("global_lp_pool")
                               .builds([](NodeKernel& k) {
                                   k.set(te::global_lp_pool(k.in(0), k.node().attr_int("p", 2)));
                               });

} // namespace tessera::graph::ops
