// Shape inference per op, and compile-time value propagation through small tensors.
#include "tessera/graph/shape_inference.h"

#include <algorithm>

#include "eval_ops.h"
#include "layout_ops.h"
#include "winograd_ops.h"
#include "op_util.h"
#include "tessera/graph/evaluate.h"

namespace tessera::graph {

using namespace detail;

namespace {

using TypeList = std::vector<std::pair<DType, Shape>>;

const std::initializer_list<DType> kNumeric = {DType::F32, DType::F64, DType::I32, DType::I64};
const std::initializer_list<DType> kFloat = {DType::F32, DType::F64};
const std::initializer_list<DType> kF32 = {DType::F32};

// One node's inference: access to its typed inputs and their compile-time values.
class NodeTypes {
  public:
    NodeTypes(const Graph& g, const Node& n, NodeId id, const ShapeInferer& inf)
        : g_(g), n_(n), inf_(inf), where_(describe_node(n, id)) {}

    TypeList infer();

  private:
    bool has(size_t i) const { return n_.input(i) != kNoValue; }

    const Value& in(size_t i, const char* what) const {
        if (!has(i))
            throw UserError() << where_ << ": input " << i << " (" << what << ") is missing";
        const Value& v = g_.value(n_.inputs[i]);
        TESSERA_CHECK(v.typed) << where_ << " input '" << v.name << "' has no type yet";
        return v;
    }

    void dtype(const Value& v, std::initializer_list<DType> allowed, const char* what) const {
        for (DType d : allowed)
            if (v.dtype == d)
                return;
        std::string names;
        for (DType d : allowed)
            names += std::string(names.empty() ? "" : " or ") + dtype_name(d);
        throw UserError() << where_ << ": " << what << " '" << v.name << "' is "
                          << dtype_name(v.dtype) << ", expected " << names;
    }

    void same_dtype(const Value& a, const Value& b) const {
        if (a.dtype != b.dtype)
            throw UserError() << where_ << ": input dtypes differ ('" << a.name << "' is "
                              << dtype_name(a.dtype) << ", '" << b.name << "' is "
                              << dtype_name(b.dtype) << ")";
    }

    void rank(const Value& v, int64_t r, const char* what) const {
        if (static_cast<int64_t>(v.shape.size()) != r)
            throw UserError() << where_ << ": " << what << " '" << v.name << "' must have rank "
                              << r << ", got shape " << shape_str(v.shape);
    }

    void min_rank(const Value& v, int64_t r, const char* what) const {
        if (static_cast<int64_t>(v.shape.size()) < r)
            throw UserError() << where_ << ": " << what << " '" << v.name
                              << "' must have rank >= " << r << ", got shape "
                              << shape_str(v.shape);
    }

    void scalar_of(const Value& v, DType t, const char* what) const {
        if (v.dtype != t || shape_numel(v.shape) != 1)
            throw UserError() << where_ << ": " << what << " must be a " << dtype_name(t)
                              << " scalar, got " << dtype_name(v.dtype) << shape_str(v.shape);
    }

    // The compile-time value of input i (shape operands); an error when unknown.
    const TensorData& value_of(size_t i, const char* what) const {
        const Value& v = in(i, what);
        const TensorData* t = inf_.known_value(n_.inputs[i]);
        if (!t)
            throw UserError() << where_ << ": " << what << " '" << v.name
                              << "' must be a compile-time constant";
        return *t;
    }
    std::vector<int64_t> ints_of(size_t i, const char* what) const {
        return int_elements(value_of(i, what), what, where_);
    }
    std::vector<int64_t> opt_ints_of(size_t i, const char* what) const {
        return has(i) ? ints_of(i, what) : std::vector<int64_t>{};
    }

    TypeList conv() const;
    TypeList pool() const;
    TypeList gemm() const;
    TypeList batch_norm() const;
    TypeList layer_norm() const;
    TypeList reduce() const;
    std::vector<Shape> input_shapes() const;
    TypeList arith() const;
    TypeList compare(bool numeric_only) const;
    TypeList pad() const;

    const Graph& g_;
    const Node& n_;
    const ShapeInferer& inf_;
    std::string where_;
};

TypeList NodeTypes::conv() const {
    const Value& x = in(0, "X");
    const Value& w = in(1, "W");
    dtype(x, kF32, "X");
    dtype(w, kF32, "W");
    rank(x, 4, "X");
    rank(w, 4, "W");
    const int64_t C = x.shape[1], M = w.shape[0], G = n_.attr_int("group", 1);
    if (G < 1 || C % G != 0 || M % G != 0 || C / G != w.shape[1])
        throw UserError() << where_ << ": X " << shape_str(x.shape) << " and W "
                          << shape_str(w.shape) << " do not match group " << G;
    if (has(2)) {
        const Value& b = in(2, "B");
        dtype(b, kF32, "B");
        if (b.shape != Shape{M})
            throw UserError() << where_ << ": B '" << b.name << "' has shape " << shape_str(b.shape)
                              << ", expected [" << M << "]";
    }
    Window2d win = window_of(n_, {w.shape[2], w.shape[3]}, where_);
    if (win.kernel[0] != w.shape[2] || win.kernel[1] != w.shape[3])
        throw UserError() << where_ << ": kernel_shape differs from W " << shape_str(w.shape);
    Shape out = {x.shape[0], M, 0, 0};
    for (int d = 0; d < 2; ++d)
        out[2 + d] =
            window_output_dim(x.shape[2 + d], win.kernel[d], win.stride[d], win.dilation[d],
                              win.pads[d], win.pads[2 + d], false, where_);
    return {{DType::F32, out}};
}

TypeList NodeTypes::pool() const {
    const Value& x = in(0, "X");
    dtype(x, kF32, "X");
    rank(x, 4, "X");
    Window2d win = window_of(n_, {0, 0}, where_);
    const bool is_max = n_.op == Op::MaxPool;
    if (!is_max) {
        int64_t cip = n_.attr_int("count_include_pad", 0);
        if (cip != 0 && cip != 1)
            throw UserError() << where_ << ": count_include_pad " << cip << " is not 0 or 1";
    }
    Shape out = {x.shape[0], x.shape[1], 0, 0};
    for (int d = 0; d < 2; ++d)
        out[2 + d] = window_output_dim(x.shape[2 + d], win.kernel[d], win.stride[d],
                                       is_max ? win.dilation[d] : 1, win.pads[d], win.pads[2 + d],
                                       win.ceil_mode, where_);
    return {{DType::F32, out}};
}

TypeList NodeTypes::gemm() const {
    const Value& a = in(0, "A");
    const Value& b = in(1, "B");
    dtype(a, kF32, "A");
    dtype(b, kF32, "B");
    rank(a, 2, "A");
    rank(b, 2, "B");
    const bool ta = n_.attr_int("transA", 0) != 0, tb = n_.attr_int("transB", 0) != 0;
    const int64_t M = a.shape[ta ? 1 : 0], K = a.shape[ta ? 0 : 1];
    const int64_t K2 = b.shape[tb ? 1 : 0], N = b.shape[tb ? 0 : 1];
    if (K != K2)
        throw UserError() << where_ << ": A " << shape_str(a.shape) << " and B "
                          << shape_str(b.shape) << " do not multiply (transA " << ta << ", transB "
                          << tb << ")";
    if (has(2)) {
        const Value& c = in(2, "C");
        dtype(c, kF32, "C");
        if (broadcast_shapes({c.shape, {M, N}}, where_) != Shape{M, N})
            throw UserError() << where_ << ": C " << shape_str(c.shape)
                              << " does not broadcast to [" << M << "," << N << "]";
    }
    return {{DType::F32, {M, N}}};
}

TypeList NodeTypes::batch_norm() const {
    const Value& x = in(0, "X");
    dtype(x, kF32, "X");
    min_rank(x, 2, "X");
    const char* names[] = {"scale", "B", "mean", "var"};
    for (size_t i = 0; i < 4; ++i) {
        const Value& p = in(i + 1, names[i]);
        dtype(p, kF32, names[i]);
        if (p.shape != Shape{x.shape[1]})
            throw UserError() << where_ << ": " << names[i] << " '" << p.name << "' has shape "
                              << shape_str(p.shape) << ", expected [" << x.shape[1] << "]";
    }
    return {{DType::F32, x.shape}};
}

TypeList NodeTypes::layer_norm() const {
    const Value& x = in(0, "X");
    dtype(x, kF32, "X");
    min_rank(x, 1, "X");
    const int64_t axis = normalize_axis(n_.attr_int("axis", -1), x.shape.size(), where_);
    Shape norm(x.shape.begin() + axis, x.shape.end());
    for (size_t i = 1; i < 3; ++i) {
        if (i == 2 && !has(2))
            break;
        const Value& p = in(i, i == 1 ? "scale" : "B");
        dtype(p, kF32, i == 1 ? "scale" : "B");
        if (broadcast_shapes({p.shape, norm}, where_) != norm)
            throw UserError() << where_ << ": '" << p.name << "' " << shape_str(p.shape)
                              << " does not broadcast to " << shape_str(norm);
    }
    Shape stat(x.shape.begin(), x.shape.begin() + axis);
    stat.resize(x.shape.size(), 1);
    return {{DType::F32, x.shape}, {DType::F32, stat}, {DType::F32, stat}};
}

TypeList NodeTypes::reduce() const {
    const Value& x = in(0, "data");
    dtype(x, kNumeric, "data");
    std::vector<int64_t> axes =
        n_.op == Op::ReduceSum ? opt_ints_of(1, "axes") : n_.attr_ints("axes");
    axes = normalize_axes(axes, x.shape.size(), where_);
    if (axes.empty() && n_.op == Op::ReduceSum && n_.attr_int("noop_with_empty_axes", 0) != 0)
        return {{x.dtype, x.shape}};
    return {{x.dtype, reduced_shape(x.shape, axes, n_.attr_int("keepdims", 1) != 0)}};
}

std::vector<Shape> NodeTypes::input_shapes() const {
    std::vector<Shape> shapes;
    for (size_t i = 0; i < n_.inputs.size(); ++i)
        shapes.push_back(in(i, "input").shape);
    if (shapes.empty())
        throw UserError() << where_ << ": no inputs";
    return shapes;
}

// Add, Sub, Mul, Div, Max, Min: one numeric dtype, broadcast shapes.
TypeList NodeTypes::arith() const {
    std::vector<Shape> shapes = input_shapes();
    const Value& a = in(0, "input");
    dtype(a, kNumeric, "input");
    for (size_t i = 1; i < n_.inputs.size(); ++i)
        same_dtype(a, in(i, "input"));
    return {{a.dtype, broadcast_shapes(shapes, where_)}};
}

TypeList NodeTypes::compare(bool numeric_only) const {
    std::vector<Shape> shapes = input_shapes();
    const Value& a = in(0, "input");
    if (numeric_only)
        dtype(a, kNumeric, "input");
    same_dtype(a, in(1, "input"));
    return {{DType::Bool, broadcast_shapes(shapes, where_)}};
}

TypeList NodeTypes::pad() const {
    const Value& x = in(0, "data");
    const std::string mode = n_.attr_string("mode", "constant");
    if (mode != "constant" && mode != "reflect" && mode != "edge")
        throw UserError() << where_ << ": unsupported pad mode '" << mode << "'";
    if (has(2))
        scalar_of(in(2, "constant_value"), x.dtype, "constant_value");
    return {{x.dtype, pad_shape(x.shape, ints_of(1, "pads"), where_)}};
}

TypeList NodeTypes::infer() {
    switch (n_.op) {
    case Op::Conv:
        return conv();
    case Op::MaxPool:
    case Op::AveragePool:
        return pool();
    case Op::GlobalAveragePool: {
        const Value& x = in(0, "X");
        dtype(x, kF32, "X");
        min_rank(x, 3, "X");
        Shape out = x.shape;
        std::fill(out.begin() + 2, out.end(), 1);
        return {{DType::F32, out}};
    }
    case Op::Gemm:
        return gemm();
    case Op::MatMul: {
        const Value& a = in(0, "A");
        const Value& b = in(1, "B");
        dtype(a, kF32, "A");
        dtype(b, kF32, "B");
        return {{DType::F32, matmul_shape(a.shape, b.shape, where_)}};
    }
    case Op::BatchNormalization:
        return batch_norm();
    case Op::LayerNormalization:
        return layer_norm();
    case Op::Softmax: {
        const Value& x = in(0, "input");
        dtype(x, kF32, "input");
        min_rank(x, 1, "input");
        normalize_axis(n_.attr_int("axis", -1), x.shape.size(), where_);
        return {{x.dtype, x.shape}};
    }
    case Op::ReduceMean:
    case Op::ReduceSum:
    case Op::ReduceMax:
        return reduce();
    case Op::Relu:
    case Op::Neg: {
        const Value& x = in(0, "input");
        dtype(x, kNumeric, "input");
        return {{x.dtype, x.shape}};
    }
    case Op::LeakyRelu:
    case Op::Sigmoid:
    case Op::HardSigmoid:
    case Op::HardSwish:
    case Op::Tanh:
    case Op::Erf:
    case Op::Gelu:
    case Op::Sqrt:
    case Op::Exp:
    case Op::Log:
    case Op::Reciprocal: {
        const Value& x = in(0, "input");
        dtype(x, kFloat, "input");
        return {{x.dtype, x.shape}};
    }
    case Op::Not: {
        const Value& x = in(0, "input");
        dtype(x, {DType::Bool}, "input");
        return {{x.dtype, x.shape}};
    }
    case Op::Clip: {
        const Value& x = in(0, "input");
        dtype(x, kNumeric, "input");
        if (has(1))
            scalar_of(in(1, "min"), x.dtype, "min");
        if (has(2))
            scalar_of(in(2, "max"), x.dtype, "max");
        return {{x.dtype, x.shape}};
    }
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Max:
    case Op::Min:
        return arith();
    case Op::Pow: {
        const Value& a = in(0, "base");
        dtype(a, kNumeric, "base");
        dtype(in(1, "exponent"), kNumeric, "exponent");
        return {{a.dtype, broadcast_shapes(input_shapes(), where_)}};
    }
    case Op::Equal:
        return compare(false);
    case Op::Less:
    case Op::Greater:
        return compare(true);
    case Op::Where: {
        dtype(in(0, "condition"), {DType::Bool}, "condition");
        same_dtype(in(1, "X"), in(2, "Y"));
        return {{in(1, "X").dtype, broadcast_shapes(input_shapes(), where_)}};
    }
    case Op::Cast: {
        const Value& x = in(0, "input");
        std::string to = n_.attr_string("to");
        std::optional<DType> t = parse_dtype(to);
        if (!t)
            throw UserError() << where_ << ": cannot cast to '" << to << "'";
        return {{*t, x.shape}};
    }
    case Op::Identity: {
        const Value& x = in(0, "input");
        return {{x.dtype, x.shape}};
    }
    case Op::Dropout: {
        const Value& x = in(0, "data");
        TypeList t = {{x.dtype, x.shape}};
        if (n_.outputs.size() > 1)
            t.push_back({DType::Bool, x.shape});
        return t;
    }
    case Op::Flatten: {
        const Value& x = in(0, "input");
        return {{x.dtype, flatten_shape(x.shape, n_.attr_int("axis", 1), where_)}};
    }
    case Op::Reshape: {
        const Value& x = in(0, "data");
        Shape s =
            resolve_reshape(x.shape, ints_of(1, "shape"), n_.attr_int("allowzero", 0) != 0, where_);
        return {{x.dtype, s}};
    }
    case Op::Squeeze: {
        const Value& x = in(0, "data");
        return {{x.dtype, squeeze_shape(x.shape, opt_ints_of(1, "axes"), where_)}};
    }
    case Op::Unsqueeze: {
        const Value& x = in(0, "data");
        return {{x.dtype, unsqueeze_shape(x.shape, ints_of(1, "axes"), where_)}};
    }
    case Op::Transpose: {
        const Value& x = in(0, "data");
        std::vector<int64_t> perm = transpose_perm(n_.attr_ints("perm"), x.shape.size(), where_);
        Shape out;
        for (int64_t d : perm)
            out.push_back(x.shape[d]);
        return {{x.dtype, out}};
    }
    case Op::Concat: {
        std::vector<Shape> shapes;
        const Value& a = in(0, "input");
        for (size_t i = 0; i < n_.inputs.size(); ++i) {
            same_dtype(a, in(i, "input"));
            shapes.push_back(in(i, "input").shape);
        }
        if (a.shape.empty())
            throw UserError() << where_ << ": cannot concatenate scalars";
        return {{a.dtype, concat_shape(shapes, n_.attr_int("axis", 0), where_)}};
    }
    case Op::Split: {
        const Value& x = in(0, "input");
        min_rank(x, 1, "input");
        const int64_t axis = normalize_axis(n_.attr_int("axis", 0), x.shape.size(), where_);
        std::vector<int64_t> sizes =
            split_sizes(x.shape, axis, opt_ints_of(1, "split"), has(1), n_.outputs.size(), where_);
        TypeList t;
        for (int64_t s : sizes) {
            Shape shape = x.shape;
            shape[axis] = s;
            t.push_back({x.dtype, shape});
        }
        return t;
    }
    case Op::Slice: {
        const Value& x = in(0, "data");
        std::vector<SliceAxis> axes =
            resolve_slice(x.shape, ints_of(1, "starts"), ints_of(2, "ends"), opt_ints_of(3, "axes"),
                          opt_ints_of(4, "steps"), where_);
        Shape out;
        for (const SliceAxis& a : axes)
            out.push_back(a.count);
        return {{x.dtype, out}};
    }
    case Op::Gather: {
        const Value& x = in(0, "data");
        const Value& idx = in(1, "indices");
        dtype(idx, {DType::I64, DType::I32}, "indices");
        min_rank(x, 1, "data");
        const int64_t axis = normalize_axis(n_.attr_int("axis", 0), x.shape.size(), where_);
        return {{x.dtype, gather_shape(x.shape, idx.shape, axis)}};
    }
    case Op::Shape: {
        const Value& x = in(0, "data");
        auto [start, end] = shape_range(n_, x.shape.size());
        return {{DType::I64, {end - start}}};
    }
    case Op::Constant: {
        const TensorData* v = n_.attr_tensor("value");
        if (!v)
            throw UserError() << where_ << ": attribute 'value' is missing";
        return {{v->dtype(), v->shape()}};
    }
    case Op::ConstantOfShape: {
        std::vector<int64_t> dims = ints_of(0, "shape");
        for (int64_t d : dims)
            if (d < 0)
                throw UserError() << where_ << ": negative dim in shape " << shape_str(dims);
        const TensorData* v = n_.attr_tensor("value");
        if (v && v->numel() != 1)
            throw UserError() << where_ << ": value has " << v->numel() << " elements, expected 1";
        return {{v ? v->dtype() : DType::F32, dims}};
    }
    case Op::Range: {
        const Value& s = in(0, "start");
        dtype(s, kNumeric, "start");
        scalar_of(in(1, "limit"), s.dtype, "limit");
        scalar_of(in(2, "delta"), s.dtype, "delta");
        scalar_of(s, s.dtype, "start");
        double start = value_of(0, "start").as_f64()[0];
        double limit = value_of(1, "limit").as_f64()[0];
        double delta = value_of(2, "delta").as_f64()[0];
        return {{s.dtype, {range_count(start, limit, delta, where_)}}};
    }
    case Op::Expand: {
        const Value& x = in(0, "input");
        return {{x.dtype, broadcast_shapes({x.shape, ints_of(1, "shape")}, where_)}};
    }
    case Op::Pad:
        return pad();
    case Op::LayoutToBlocked:
    case Op::LayoutFromBlocked:
    case Op::ConvBlocked:
    case Op::MaxPoolBlocked:
    case Op::WinogradInput:
    case Op::WinogradOutput: {
        std::vector<const Value*> ins;
        for (size_t i = 0; i < n_.inputs.size(); ++i)
            ins.push_back(has(i) ? &in(i, "input") : nullptr);
        if (n_.op == Op::WinogradInput || n_.op == Op::WinogradOutput)
            return winograd_types(n_, ins, where_);
        return blocked_layout_types(n_, ins, where_);
    }
    }
    TESSERA_UNREACHABLE();
}

} // namespace

ShapeInferer::ShapeInferer(Graph& g) : g_(g) {}

const TensorData* ShapeInferer::known_value(ValueId v) const {
    if (v == kNoValue)
        return nullptr;
    const Value& val = g_.value(v);
    if (val.is_constant())
        return val.constant.get();
    return static_cast<size_t>(v) < known_.size() ? known_[v].get() : nullptr;
}

int ShapeInferer::infer(NodeId id) {
    const Node& n = g_.node(id);
    TypeList types = NodeTypes(g_, n, id, *this).infer();
    TESSERA_CHECK(types.size() >= n.outputs.size())
        << describe_node(n, id) << ": inferred " << types.size() << " outputs for "
        << n.outputs.size();
    int changed = 0;
    bool small = true;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
        Value& v = g_.value(n.outputs[i]);
        if (!v.typed || v.dtype != types[i].first || v.shape != types[i].second)
            ++changed;
        v.typed = true;
        v.dtype = types[i].first;
        v.shape = types[i].second;
        small = small && shape_numel(v.shape) <= kMaxStaticValueElements;
    }
    if (known_.size() < g_.num_values())
        known_.resize(g_.num_values());
    for (ValueId o : n.outputs)
        known_[o].reset();
    // Propagate compile-time values: Shape needs only its input's type; others all inputs.
    std::vector<const TensorData*> ins;
    bool all_known = true;
    for (ValueId v : n.inputs) {
        const TensorData* t = known_value(v);
        if (v != kNoValue && !t)
            all_known = false;
        ins.push_back(t);
    }
    if (n.op == Op::Shape) {
        auto [start, end] = shape_range(n, g_.value(n.inputs[0]).shape.size());
        const Shape& s = g_.value(n.inputs[0]).shape;
        known_[n.outputs[0]] = std::make_shared<const TensorData>(TensorData::from_vector<int64_t>(
            {end - start}, std::vector<int64_t>(s.begin() + start, s.begin() + end)));
    } else if (all_known && small) {
        std::vector<TensorData> outs = evaluate_node(n, ins, id);
        for (size_t i = 0; i < outs.size(); ++i) {
            TESSERA_CHECK(outs[i].shape() == g_.value(n.outputs[i]).shape &&
                          outs[i].dtype() == g_.value(n.outputs[i]).dtype)
                << describe_node(n, id) << ": evaluated output " << i << " disagrees with its "
                << "inferred type";
            known_[n.outputs[i]] = std::make_shared<const TensorData>(std::move(outs[i]));
        }
    }
    return changed;
}

int infer_shapes(Graph& g) {
    for (ValueId v : g.inputs)
        if (!g.value(v).typed)
            throw UserError() << "graph input '" << g.value(v).name << "' has no static type";
    ShapeInferer inf(g);
    int changed = 0;
    for (NodeId id : g.topological_order())
        changed += inf.infer(id);
    return changed;
}

std::optional<TensorData> static_value(const Graph& g, ValueId v) {
    const Value& val = g.value(v);
    if (val.is_constant())
        return *val.constant;
    // Ancestors of v through small typed values, computed producers first.
    std::vector<std::shared_ptr<const TensorData>> known(g.num_values());
    std::vector<uint8_t> visiting(g.node_capacity(), 0);
    std::vector<std::pair<NodeId, size_t>> stack;
    auto small = [&](ValueId x) {
        const Value& xv = g.value(x);
        return xv.typed && shape_numel(xv.shape) <= kMaxStaticValueElements;
    };
    if (val.producer == kNoNode || !small(v))
        return std::nullopt;
    stack.push_back({val.producer, 0});
    visiting[val.producer] = 1;
    while (!stack.empty()) {
        auto& [id, next] = stack.back();
        const Node& n = g.node(id);
        if (n.op != Op::Shape && next < n.inputs.size()) {
            ValueId in = n.inputs[next++];
            if (in == kNoValue || g.value(in).is_constant())
                continue;
            NodeId p = g.value(in).producer;
            if (p != kNoNode && !visiting[p] && small(in)) {
                visiting[p] = 1;
                stack.push_back({p, 0});
            }
            continue;
        }
        // All inputs visited: evaluate when every one is known.
        std::vector<const TensorData*> ins;
        bool ok = true;
        for (ValueId in : n.inputs) {
            if (in == kNoValue) {
                ins.push_back(nullptr);
                continue;
            }
            const TensorData* t =
                g.value(in).is_constant() ? g.value(in).constant.get() : known[in].get();
            ok = ok && t != nullptr;
            ins.push_back(t);
        }
        bool outs_small = true;
        for (ValueId o : n.outputs)
            outs_small = outs_small && small(o);
        if (n.op == Op::Shape && g.value(n.inputs[0]).typed) {
            const Shape& s = g.value(n.inputs[0]).shape;
            auto [start, end] = shape_range(n, s.size());
            known[n.outputs[0]] =
                std::make_shared<const TensorData>(TensorData::from_vector<int64_t>(
                    {end - start}, std::vector<int64_t>(s.begin() + start, s.begin() + end)));
        } else if (ok && outs_small) {
            std::vector<TensorData> outs = evaluate_node(n, ins, id);
            for (size_t i = 0; i < outs.size(); ++i)
                known[n.outputs[i]] = std::make_shared<const TensorData>(std::move(outs[i]));
        }
        stack.pop_back();
    }
    if (!known[v])
        return std::nullopt;
    return *known[v];
}

} // namespace tessera::graph
