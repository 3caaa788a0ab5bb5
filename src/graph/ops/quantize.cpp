// Linear quantization between float and 8- or 16-bit integers (ONNX QuantizeLinear and
// DequantizeLinear, opsets 10 to 21), per tensor or per axis:
//   QuantizeLinear(X f32, scale f32, zero_point)    -> saturate(round_half_even(X / scale) + zp)
//   DequantizeLinear(X, scale f32, zero_point)      -> (X - zero_point) * scale, f32
// zero_point is i8, u8, i16 or u16 (and DequantizeLinear's X may be i32 with a zero zero_point);
// it gives the quantized type. Canonical form: all three operands present, scale and
// zero_point of X's rank (a per-axis one has the axis's extent there and 1 elsewhere), so both
// ops are broadcasts without attributes. Block quantization (opset 21's block_size) is refused.
// The narrow quantized types (float8, float4, int4, uint4, int2, uint2) import as the ops'
// definitions in f32 arithmetic and Casts (emit_narrow_quantize).
#include <algorithm>
#include <cmath>
#include <limits>

#include "../op_util.h"
#include "eval_util.h"
#include "node_kernel.h"
#include "node_types.h"
#include "op_import.h"
#include "round_half_even.h"
#include "tessera/ir/op.h"
#include "tessera/support/narrow_types.h"
#include "tessera/te/op_library.h"

namespace tessera::graph::detail {

namespace {

using K = Attribute::Kind;

const std::initializer_list<DType> kQuantized = {DType::I8, DType::U8, DType::I16, DType::U16};
const std::initializer_list<DType> kDequantizable = {DType::I8, DType::U8, DType::I16, DType::U16,
                                                     DType::I32};

// ---- import ----

// The quantized type is one of the narrow ones (float8, float4, 4- and 2-bit integers; one
// code per byte): the op imports as its definition in f32 ops and Casts, which handle those
// types (Cast's saturate and rounding rules are ONNX's):
//   DequantizeLinear: (Cast(X, f32) - Cast(zp, f32)) * scale
//   QuantizeLinear, integers: Cast(Clip(Round(X / scale) + Cast(zp, f32), lo, hi), T)
//   QuantizeLinear, floats:   Cast(X / scale + Cast(zp, f32), T) with the op's saturate
// `in` holds X, scale and the zero point already of X's rank.
void emit_narrow_quantize(OpImport& im, const std::vector<ValueId>& in, DType narrow) {
    auto cast = [&](ValueId v, DType to, const char* suffix, Attributes a = {}) {
        const ValueId r = im.new_value(suffix);
        a["to"] = Attribute::of_string(dtype_name(to));
        im.emit(Op::Cast, {v}, {r}, std::move(a));
        return r;
    };
    auto binary = [&](Op op, ValueId a, ValueId b, const char* suffix) {
        const ValueId r = im.new_value(suffix);
        im.emit(op, {a, b}, {r}, {});
        return r;
    };
    const ValueId zp = cast(in[2], DType::F32, "zero_point/f32");
    const ValueId y = im.outputs()[0];
    if (im.op() == Op::DequantizeLinear) {
        const ValueId diff = binary(Op::Sub, cast(in[0], DType::F32, "x/f32"), zp, "centered");
        im.emit(Op::Mul, {diff, in[1]}, {y}, {});
        return;
    }
    const NarrowFormatInfo& info = narrow_format_info(*narrow_format(narrow));
    ValueId q = binary(Op::Div, in[0], in[1], "scaled");
    Attributes a;
    if (info.is_float) {
        a["saturate"] = Attribute::of_int(im.source().attr_int("saturate", 1));
    } else {
        const ValueId r = im.new_value("rounded");
        im.emit(Op::Round, {q}, {r}, {});
        q = r;
    }
    q = binary(Op::Add, q, zp, "shifted");
    if (!info.is_float) {
        const float hi = static_cast<float>((1 << (info.bits - (info.is_signed ? 1 : 0))) - 1);
        const float lo = info.is_signed ? -hi - 1 : 0.0f;
        const ValueId r = im.new_value("clipped");
        im.emit(Op::Clip,
                {q, im.constant("lo", TensorData::scalar(lo)),
                 im.constant("hi", TensorData::scalar(hi))},
                {r}, {});
        q = r;
    }
    a["to"] = Attribute::of_string(dtype_name(narrow));
    im.emit(Op::Cast, {q}, {y}, std::move(a));
}

// Reshapes scale and zero point to X's rank (per axis) and makes an absent zero point a zero
// of `zp_dtype`.
void import_quantize(OpImport& im) {
    if (im.has("block_size") && im.attr("block_size").i != 0)
        im.fail("block quantization (block_size " + std::to_string(im.attr("block_size").i) +
                ") is not supported");
    std::vector<ValueId>& in = im.inputs();
    const int64_t rank = im.input_rank(0);
    // Copies: adding values below may move the graph's storage.
    const Shape x_shape = im.input_value(0).shape;
    const Shape s_shape = im.input_value(1).shape;
    DType zp_dtype = im.input_value(0).dtype; // DequantizeLinear: X's own type
    if (im.op() == Op::QuantizeLinear) {
        zp_dtype = DType::U8;
        if (im.has("output_dtype") && im.attr("output_dtype").i != 0) {
            std::optional<DType> t =
                dtype_from_onnx_code(static_cast<int32_t>(im.attr("output_dtype").i));
            if (!t || (std::find(kQuantized.begin(), kQuantized.end(), *t) == kQuantized.end() &&
                       !narrow_format(*t)))
                im.fail("output_dtype " + std::to_string(im.attr("output_dtype").i) +
                        " is not a supported quantized type (int8, uint8, int16, uint16, float8, "
                        "float4, int4, uint4, int2, uint2)");
            zp_dtype = *t;
        }
    }
    Shape q_shape; // scale's canonical shape; empty: per tensor, as given
    bool reshaped = false; // a Reshape was emitted: the op must be emitted here too
    if (shape_numel(s_shape) != 1 || s_shape.size() > 1) {
        if (s_shape.size() != 1)
            im.fail("scale has shape " + shape_str(s_shape) +
                    ", expected one element or one per element of the axis");
        const int64_t axis = normalize_axis(im.source().attr_int("axis", 1), rank, im.where());
        if (s_shape[0] != x_shape[axis])
            im.fail("scale has " + std::to_string(s_shape[0]) + " elements for axis " +
                    std::to_string(axis) + " of extent " + std::to_string(x_shape[axis]));
        q_shape.assign(rank, 1);
        q_shape[axis] = s_shape[0];
    }
    if (in.size() < 3 || in[2] == kNoValue) {
        TensorData zero(zp_dtype, s_shape);
        in.resize(3);
        in[2] = im.constant("zero_point", zero);
    } else if (im.input_value(2).shape != s_shape && shape_numel(s_shape) == 1 &&
               shape_numel(im.input_value(2).shape) == 1) {
        // One element as [1] against a scalar scale (or the reverse): the same per-tensor form.
        if (im.input_value(2).is_constant()) {
            in[2] = im.constant("zero_point", im.input_value(2).constant->reshaped(s_shape));
        } else {
            const ValueId r = im.new_value("zero_point");
            im.emit(Op::Reshape, {in[2], im.ints_constant("zero_point_shape", s_shape)}, {r}, {});
            in[2] = r;
            reshaped = true;
        }
    } else if (im.input_value(2).shape != s_shape) {
        im.fail("zero_point has shape " + shape_str(im.input_value(2).shape) + ", scale has " +
                shape_str(s_shape));
    }
    const DType q_dtype = im.input_value(2).dtype;
    const bool narrow = narrow_format(q_dtype).has_value();
    if (!q_shape.empty()) {
        // Constant parameters (the usual case) are reshaped here, so that passes before
        // constant folding (the quantized-ops pass) read them as constants.
        for (size_t i : {size_t(1), size_t(2)}) {
            const Value& v = im.input_value(i);
            if (v.is_constant()) {
                in[i] = im.constant(i == 1 ? "scale" : "zero_point",
                                    v.constant->reshaped(q_shape));
                continue;
            }
            const ValueId r = im.new_value(i == 1 ? "scale" : "zero_point");
            im.emit(Op::Reshape, {in[i], im.ints_constant("qshape", q_shape)}, {r}, {});
            in[i] = r;
            reshaped = true;
        }
    }
    if (narrow)
        emit_narrow_quantize(im, in, q_dtype);
    else if (reshaped)
        im.emit(im.op(), in, im.outputs(), {}); // the reshapes were emitted: the op too
}

// ---- types ----

// X's shape, which scale and zero point must broadcast into without widening it.
Shape quantize_shape(const NodeTypes& t, const Value& x, const Value& s, const Value& zp) {
    t.dtype(s, kF32, "scale");
    if (broadcast_shapes({x.shape, s.shape, zp.shape}, t.where()) != x.shape)
        t.fail("scale " + shape_str(s.shape) + " and zero point " + shape_str(zp.shape) +
               " do not broadcast into X " + shape_str(x.shape));
    return x.shape;
}

TypeList quantize_types(const NodeTypes& t) {
    const Value &x = t.in(0, "X"), &s = t.in(1, "scale"), &zp = t.in(2, "zero_point");
    t.dtype(x, kF32, "X");
    t.dtype(zp, kQuantized, "zero_point");
    return {{zp.dtype, quantize_shape(t, x, s, zp)}};
}

TypeList dequantize_types(const NodeTypes& t) {
    const Value &x = t.in(0, "X"), &s = t.in(1, "scale"), &zp = t.in(2, "zero_point");
    t.dtype(x, kDequantizable, "X");
    t.same_dtype(x, zp);
    return {{DType::F32, quantize_shape(t, x, s, zp)}};
}

// ---- evaluation ----

// f(x element, scale, zero point as float) for every element of X, written as Out.
template <typename Out, typename F>
TensorData map_quantized(const EvalInputs& in, DType out_dtype, const std::string& where, F&& f) {
    const TensorData &x = require_input(in, 0, where), &s = require_input(in, 1, where),
                     &zp = require_input(in, 2, where);
    require_f32(s, "scale", where);
    TensorData out(out_dtype, x.shape());
    const std::vector<double> zps = zp.as_f64();
    const float* ps = s.data<float>();
    Out* po = out.data<Out>();
    visit_computed(x.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        const T* px = x.data<T>();
        for_each_index<2>(
            x.shape(),
            {broadcast_strides(s.shape(), x.shape()), broadcast_strides(zp.shape(), x.shape())},
            {0, 0}, [&](int64_t i, const std::array<int64_t, 2>& off) {
                po[i] = f(px[i], ps[off[0]], static_cast<float>(zps[off[1]]));
            });
    });
    return out;
}

EvalOutputs eval_quantize(const Node& n, const EvalInputs& in, const std::string& where) {
    const DType q = require_input(in, 2, where).dtype();
    return {visit_computed(q, [&](auto tag) {
        using Q = std::remove_pointer_t<decltype(tag)>;
        const float lo = static_cast<float>(std::numeric_limits<Q>::lowest());
        const float hi = static_cast<float>(std::numeric_limits<Q>::max());
        return map_quantized<Q>(in, q, where, [&](auto x, float s, float zp) {
            // ONNX: the division in f32, rounding halves to even, then the zero point.
            const float r = std::nearbyint(static_cast<float>(x) / s) + zp;
            return static_cast<Q>(r != r ? 0.0f : std::min(std::max(r, lo), hi));
        });
    })};
}

EvalOutputs eval_dequantize(const Node& n, const EvalInputs& in, const std::string& where) {
    return {map_quantized<float>(in, DType::F32, where, [](auto x, float s, float zp) {
        return (static_cast<float>(x) - zp) * s;
    })};
}

// ---- kernels ----

// Whether value v is a compile-time f32 tensor of ones (a scale the quantized-ops pass moved
// into the product before it).
bool constant_ones(const Value& v) {
    if (!v.is_constant() || v.dtype != DType::F32)
        return false;
    for (int64_t i = 0; i < v.constant->numel(); ++i)
        if (v.constant->data<float>()[i] != 1.0f)
            return false;
    return true;
}

void quantize_kernel(NodeKernel& k) {
    const ir::DataType q = k.out_type();
    const ir::DataType f32 = ir::DataType::f32();
    const double lo = q.is_int() ? -std::ldexp(1.0, q.bits - 1) : 0.0;
    const double hi = q.is_int() ? std::ldexp(1.0, q.bits - 1) - 1 : std::ldexp(1.0, q.bits) - 1;
    // x / 1 is x: no division per element (the scale is read from memory, so LLVM cannot
    // drop it).
    const bool unit_scale = constant_ones(k.input_value(1));
    // A compile-time zero point (a QDQ model's) bounds the value before rounding: clamping to
    // [lo - zp, hi - zp], integers, commutes with rounding, and the rounded i32 plus zp is in
    // range. Code generation turns i32(round_even(clamped)) into one conversion (x86's
    // cvtps2dq), and the zero point is added as an integer.
    const Value& zp_value = k.input_value(2);
    const bool constant_zp = zp_value.is_constant() && zp_value.constant->numel() == 1;
    const double zp = constant_zp ? zp_value.constant->as_f64()[0] : 0.0;
    k.set(te::broadcast_map(
        {k.in(0), k.in(1), k.in(2)},
        [&](const std::vector<te::Expr>& v) {
            const te::Expr x = unit_scale ? v[0] : v[0] / v[1];
            if (constant_zp) {
                const te::Expr c =
                    ir::min(ir::max(x, ir::make_const(f32, lo - zp)), ir::make_const(f32, hi - zp));
                const ir::DataType i32 = ir::DataType::i32();
                return ir::cast(q, ir::cast(i32, round_half_even(c)) +
                                       ir::make_const(i32, static_cast<int64_t>(zp)));
            }
            te::Expr r = round_half_even(x) + ir::cast(f32, v[2]);
            r = ir::min(ir::max(r, ir::make_const(f32, lo)), ir::make_const(f32, hi));
            return ir::cast(q, r);
        },
        "quantize_linear"));
}

void dequantize_kernel(NodeKernel& k) {
    const ir::DataType f32 = ir::DataType::f32();
    k.set(te::broadcast_map(
        {k.in(0), k.in(1), k.in(2)},
        [&](const std::vector<te::Expr>& v) {
            return (ir::cast(f32, v[0]) - ir::cast(f32, v[2])) * v[1];
        },
        "dequantize_linear"));
}

// Attributes of both ops across their opsets (saturate concerns float8 outputs only).
std::vector<AttrSpec> quantize_attrs(bool quantize) {
    std::vector<AttrSpec> a = {{"axis", K::Int, 13}, {"block_size", K::Int, 21}};
    if (quantize) {
        a.push_back({"saturate", K::Int, 19});
        a.push_back({"output_dtype", K::Int, 21});
    }
    return a;
}

} // namespace

} // namespace tessera::graph::detail

namespace tessera::graph::ops {

using namespace detail;

const OpDef QuantizeLinear = OpDef(Op::QuantizeLinear)
                                 .onnx(10, 2, 3, 1, quantize_attrs(true))
                                 .import_with(import_quantize)
                                 .types(quantize_types)
                                 .eval(eval_quantize)
                                 .fuses_as(FusionKind::Broadcast)
                                 .named("quantize_linear")
                                 .builds(quantize_kernel);

const OpDef DequantizeLinear = OpDef(Op::DequantizeLinear)
                                   .onnx(10, 2, 3, 1, quantize_attrs(false))
                                   .import_with(import_quantize)
                                   .types(dequantize_types)
                                   .eval(eval_dequantize)
                                   .fuses_as(FusionKind::Broadcast)
                                   .named("dequantize_linear")
                                   .builds(dequantize_kernel);

} // namespace tessera::graph::ops
