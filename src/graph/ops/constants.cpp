// The ops whose output is made from compile-time values: Shape(data) start, end (reads only
// its operand's static shape), Constant value (a tensor; import turns ONNX Constant into a
// constant value, passes may still make the node), ConstantOfShape(shape) value,
// Range(start, limit, delta).
#include <algorithm>
#include <cmath>

#include "../op_util.h"
#include "eval_util.h"
#include "node_kernel.h"
#include "node_types.h"
#include "op_import.h"
#include "tessera/ir/op.h"
#include "tessera/te/op_library.h"
#include "tessera/te/ops_extra.h"

namespace tessera::graph::detail {

namespace {

EvalOutputs eval_shape(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    auto [start, end] = shape_range(n, x.rank());
    std::vector<int64_t> dims(x.shape().begin() + start, x.shape().begin() + end);
    return {TensorData::from_vector<int64_t>({static_cast<int64_t>(dims.size())}, dims)};
}

EvalOutputs eval_constant(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData* v = n.attr_tensor("value");
    if (!v)
        throw UserError() << where << ": attribute 'value' is missing";
    return {*v};
}

EvalOutputs eval_constant_of_shape(const Node& n, const EvalInputs& in, const std::string& where) {
    std::vector<int64_t> dims = int_elements(require_input(in, 0, where), "shape", where);
    for (int64_t d : dims)
        if (d < 0)
            throw UserError() << where << ": negative dim in shape " << shape_str(dims);
    const TensorData* v = n.attr_tensor("value");
    TensorData fill = v ? *v : TensorData::scalar(0.0f);
    if (fill.numel() != 1)
        throw UserError() << where << ": value has " << fill.numel() << " elements, expected 1";
    TensorData out(fill.dtype(), dims);
    const size_t es = dtype_size(out.dtype());
    for (int64_t i = 0; i < out.numel(); ++i)
        std::memcpy(out.raw() + i * es, fill.raw(), es);
    return {std::move(out)};
}

EvalOutputs eval_range(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& s = require_input(in, 0, where);
    const TensorData& l = require_input(in, 1, where);
    const TensorData& d = require_input(in, 2, where);
    require_dtype(s, {DType::F32, DType::F64, DType::I32, DType::I64}, "start", where);
    for (const TensorData* t : {&s, &l, &d})
        if (t->dtype() != s.dtype() || t->numel() != 1)
            throw UserError() << where << ": start, limit and delta must be scalars of one dtype";
    TensorData out(s.dtype(), {});
    visit_computed(s.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        const T start = s.data<T>()[0], limit = l.data<T>()[0], delta = d.data<T>()[0];
        int64_t count = range_count(static_cast<double>(start), static_cast<double>(limit),
                                    static_cast<double>(delta), where);
        out = TensorData(s.dtype(), {count});
        T* po = out.data<T>();
        for (int64_t i = 0; i < count; ++i)
            po[i] = static_cast<T>(start + static_cast<T>(i) * delta);
        return 0;
    });
    return {std::move(out)};
}

// Shape's value: the operand's dims [start, end).
TensorData shape_value(const Node& n, const std::vector<graph::Shape>& in) {
    const auto [start, end] = shape_range(n, static_cast<int64_t>(in.at(0).size()));
    return TensorData::from_vector<int64_t>(
        {end - start}, std::vector<int64_t>(in[0].begin() + start, in[0].begin() + end));
}

TypeList shape_types(const NodeTypes& t) {
    const Value& x = t.in(0, "data");
    auto [start, end] = shape_range(t.node(), x.shape.size());
    return {{DType::I64, {end - start}}};
}

TypeList constant_types(const NodeTypes& t) {
    const TensorData* v = t.node().attr_tensor("value");
    if (!v)
        t.fail("attribute 'value' is missing");
    return {{v->dtype(), v->shape()}};
}

TypeList constant_of_shape_types(const NodeTypes& t) {
    std::vector<int64_t> dims = t.ints_of(0, "shape");
    for (int64_t d : dims)
        if (d < 0)
            t.fail("negative dim in shape " + shape_str(dims));
    const TensorData* v = t.node().attr_tensor("value");
    if (v && v->numel() != 1)
        t.fail("value has " + std::to_string(v->numel()) + " elements, expected 1");
    return {{v ? v->dtype() : DType::F32, dims}};
}

TypeList range_types(const NodeTypes& t) {
    const Value& s = t.in(0, "start");
    t.dtype(s, kNumeric, "start");
    t.scalar_of(t.in(1, "limit"), s.dtype, "limit");
    t.scalar_of(t.in(2, "delta"), s.dtype, "delta");
    t.scalar_of(s, s.dtype, "start");
    double start = t.value_of(0, "start").as_f64()[0];
    double limit = t.value_of(1, "limit").as_f64()[0];
    double delta = t.value_of(2, "delta").as_f64()[0];
    return {{s.dtype, {range_count(start, limit, delta, t.where())}}};
}

// ONNX Constant: the output is a constant value, no node.
void import_constant(OpImport& im) {
    const Attributes& src = im.source().attrs;
    if (src.size() != 1)
        im.fail("needs exactly one value attribute");
    const auto& [key, a] = *src.begin();
    TensorData t;
    if (key == "value")
        t = *a.t;
    else if (key == "value_float")
        t = TensorData::scalar(a.f);
    else if (key == "value_floats")
        t = TensorData::from_vector<float>({static_cast<int64_t>(a.floats.size())}, a.floats);
    else if (key == "value_int")
        t = TensorData::scalar(a.i);
    else
        t = TensorData::from_vector<int64_t>({static_cast<int64_t>(a.ints.size())}, a.ints);
    im.define_output_constant(std::move(t));
}

void shape_kernel(NodeKernel& k) {
    const Shape& in = k.input_value(0).shape;
    const auto [start, end] = shape_range(k.node(), static_cast<int64_t>(in.size()));
    std::vector<te::Expr> dims;
    for (int64_t d = start; d < end; ++d)
        dims.push_back(ir::make_const(k.out_type(), in[d]));
    k.set(te::constant_table(k.output_value().shape, dims));
}

void constant_kernel(NodeKernel& k) {
    const TensorData* v = k.node().attr_tensor("value");
    if (!v)
        throw UserError() << k.where() << ": attribute 'value' is missing";
    k.set(te::constant_table(k.output_value().shape, immediates(k.out_type(), *v)));
}

void constant_of_shape_kernel(NodeKernel& k) {
    const TensorData* v = k.node().attr_tensor("value");
    const ir::DataType dt = k.out_type();
    k.set(te::full(k.output_value().shape, v ? immediates(dt, *v).at(0) : ir::make_zero(dt)));
}

// The limit only sets the output's extent.
void range_kernel(NodeKernel& k) {
    const ir::DataType dt = k.out_type();
    k.set(te::arange(k.static_immediate(0, dt), k.static_immediate(2, dt),
                     k.output_value().shape.at(0)));
}

using K = Attribute::Kind;

} // namespace

} // namespace tessera::graph::detail

namespace tessera::graph::ops {

using namespace detail;

const OpDef Shape = OpDef(Op::Shape)
                        .onnx(1, 1, 1, 1, {{"start", K::Int, 15}, {"end", K::Int, 15}})
                        .import_with([](OpImport& im) {
                            im.keep_if_present("start");
                            im.keep_if_present("end");
                        })
                        .moves_elements()
                        .types(shape_types)
                        .eval(eval_shape)
                        .from_types(shape_value)
                        .static_from(0)
                        .builds(shape_kernel);

const OpDef Constant = OpDef(Op::Constant)
                           .onnx(1, 0, 0, 1,
                                 {{"value", K::Tensor},
                                  {"value_float", K::Float, 12},
                                  {"value_floats", K::Floats, 12},
                                  {"value_int", K::Int, 12},
                                  {"value_ints", K::Ints, 12}})
                           .import_with(import_constant)
                           .types(constant_types)
                           .eval(eval_constant)
                           .builds(constant_kernel);

const OpDef ConstantOfShape =
    OpDef(Op::ConstantOfShape)
        .onnx(9, 1, 1, 1, {{"value", K::Tensor}})
        .import_with([](OpImport& im) {
            im.keep("value", Attribute::of_tensor(TensorData::from_vector<float>({1}, {0.0f})));
        })
        .types(constant_of_shape_types)
        .eval(eval_constant_of_shape)
        .named("constant_of_shape")
        .static_from(0)
        .builds(constant_of_shape_kernel);

const OpDef Range = OpDef(Op::Range)
                        .onnx(11, 3, 3, 1)
                        .types(range_types)
                        .eval(eval_range)
                        .static_from(0)
                        .builds(range_kernel);

} // namespace tessera::graph::ops
