// Task extraction: fused group -> te::Compute (one op-library call per member node), then
// deduplication by workload key.
#include "tessera/graph/tasks.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <optional>

#include "op_util.h"
#include "winograd_ops.h"
#include "tessera/graph/shape_inference.h"
#include "tessera/ir/op.h"
#include "tessera/te/flops.h"
#include "tessera/te/op_library.h"
#include "tessera/te/ops_extra.h"
#include "tessera/te/workload_key.h"

namespace tessera::graph {

using detail::normalize_axes;

namespace {

using te::Expr;
using te::Tensor;

// Operand i of `op` only steers the output shape (or is a scalar parameter): it is read at
// compile time and is not a Compute input. Shape reads only its input's static shape, and
// ConstantOfShape and Range make their whole output from compile-time values.
bool is_shape_operand(Op op, size_t i) {
    switch (op) {
    case Op::Reshape:
    case Op::Expand:
    case Op::Squeeze:
    case Op::Unsqueeze:
    case Op::ReduceSum:
    case Op::Split:
    case Op::Slice:
    case Op::Pad:
    case Op::Clip:
    case Op::Dropout: // ratio and training_mode: inference ignores them
        return i >= 1;
    case Op::Shape:
    case Op::ConstantOfShape:
    case Op::Range:
        return true;
    default:
        return false;
    }
}

// The elements of d as immediates of scalar type t (integers exactly, not through double).
std::vector<Expr> immediates(ir::DataType t, const TensorData& d) {
    std::vector<Expr> out;
    if (t.is_float()) {
        for (double v : d.as_f64())
            out.push_back(ir::make_const(t, v));
    } else {
        for (int64_t v : d.as_i64())
            out.push_back(ir::make_const(t, v));
    }
    return out;
}

te::PadMode pad_mode(const std::string& mode, const std::string& where) {
    if (mode == "constant")
        return te::PadMode::Constant;
    if (mode == "edge")
        return te::PadMode::Edge;
    if (mode == "reflect")
        return te::PadMode::Reflect;
    throw UserError() << where << ": unsupported pad mode '" << mode << "'";
}

class GroupBuilder {
  public:
    GroupBuilder(const Graph& g, const FusedGroup& group) : g_(g), group_(group) {}

    GroupCompute build() {
        GroupCompute gc;
        std::vector<bool> data_input(g_.num_values(), false);
        for (NodeId id : group_.nodes) {
            const Node& n = g_.node(id);
            for (size_t i = 0; i < n.inputs.size(); ++i)
                if (n.inputs[i] != kNoValue && !is_shape_operand(n.op, i))
                    data_input[n.inputs[i]] = true;
        }
        std::vector<Tensor> inputs;
        for (ValueId v : group_.inputs) {
            if (!data_input[v])
                continue;
            const Value& val = g_.value(v);
            Tensor t = te::placeholder(val.shape, to_ir_type(val.dtype), val.name);
            env_[v] = t;
            inputs.push_back(t);
            gc.inputs.push_back(v);
        }
        for (NodeId id : group_.nodes) {
            // The op library's errors name the op and operands only: say which node.
            const std::string where = describe_node(g_.node(id), id);
            try {
                build_node(id, where);
            } catch (const UserError& e) {
                const std::string msg = e.what();
                if (msg.rfind(where, 0) == 0)
                    throw;
                throw UserError() << where << ": " << msg;
            }
        }
        std::vector<Tensor> outputs;
        for (ValueId v : group_.outputs) {
            Tensor t = tensor(v);
            // An output that is a group input unchanged (a lone Identity) still needs a stage.
            if (t->is_placeholder())
                t = te::unary(t, [](Expr e) { return e; }, "copy");
            outputs.push_back(t);
            gc.outputs.push_back(v);
        }
        gc.compute = te::make_compute(std::move(inputs), std::move(outputs));
        for (size_t i = 0; i < gc.inputs.size(); ++i)
            if (g_.value(gc.inputs[i]).is_constant() && !is_transform_table(gc.inputs[i]))
                gc.compute.weight_inputs.push_back(static_cast<int>(i));
        return gc;
    }

  private:
    // A Winograd transform's table (operand 1): a few hundred coefficients read by broadcast.
    // As a weight, sketches would vectorize along its rows, the outermost axis of the
    // transform's output, and scatter every store.
    bool is_transform_table(ValueId v) const {
        for (NodeId id : g_.users(v)) {
            const Node& n = g_.node(id);
            if ((n.op != Op::WinogradInput && n.op != Op::WinogradOutput) || n.input(1) != v)
                return false;
        }
        return true;
    }

    Tensor tensor(ValueId v) const {
        auto it = env_.find(v);
        TESSERA_CHECK(it != env_.end()) << "value '" << g_.value(v).name << "' has no tensor";
        return it->second;
    }
    Tensor opt_tensor(const Node& n, size_t i) const {
        return n.input(i) == kNoValue ? Tensor() : tensor(n.inputs[i]);
    }

    // The compile-time value of a shape operand as integers; empty when absent.
    std::vector<int64_t> static_ints(const Node& n, size_t i, const std::string& where) const {
        if (n.input(i) == kNoValue)
            return {};
        std::optional<TensorData> t = static_value(g_, n.inputs[i]);
        if (!t)
            throw UserError() << where << ": operand " << i << " ('" << g_.value(n.inputs[i]).name
                              << "') is not a compile-time value";
        return t->as_i64();
    }
    std::optional<double> static_scalar(const Node& n, size_t i, const std::string& where) const {
        if (n.input(i) == kNoValue)
            return std::nullopt;
        std::optional<TensorData> t = static_value(g_, n.inputs[i]);
        if (!t || t->numel() != 1)
            throw UserError() << where << ": operand " << i << " ('" << g_.value(n.inputs[i]).name
                              << "') is not a compile-time scalar";
        return t->as_f64()[0];
    }

    // A compile-time scalar operand as an immediate of type t (integers exactly).
    Expr static_immediate(const Node& n, size_t i, ir::DataType t, const std::string& where) const {
        std::optional<TensorData> d =
            n.input(i) == kNoValue ? std::nullopt : static_value(g_, n.inputs[i]);
        if (!d || d->numel() != 1)
            throw UserError() << where << ": operand " << i << " ('"
                              << (n.input(i) == kNoValue ? "" : g_.value(n.inputs[i]).name)
                              << "') is not a compile-time scalar";
        return immediates(t, *d).at(0);
    }

    static te::Conv2dParams conv_params(const Node& n, const std::string& where,
                                        const std::array<int64_t, 2>& kernel) {
        detail::Window2d win = detail::window_of(n, kernel, where);
        te::Conv2dParams p;
        p.stride_h = win.stride[0];
        p.stride_w = win.stride[1];
        p.dilation_h = win.dilation[0];
        p.dilation_w = win.dilation[1];
        p.pad_top = win.pads[0];
        p.pad_left = win.pads[1];
        p.pad_bottom = win.pads[2];
        p.pad_right = win.pads[3];
        p.groups = n.attr_int("group", 1);
        return p;
    }

    Tensor pool(const Node& n, const Tensor& x, const std::string& where) const {
        detail::Window2d win = detail::window_of(n, {0, 0}, where);
        te::Pool2dParams p;
        p.kernel_h = win.kernel[0];
        p.kernel_w = win.kernel[1];
        p.stride_h = win.stride[0];
        p.stride_w = win.stride[1];
        p.pad_top = win.pads[0];
        p.pad_left = win.pads[1];
        p.pad_bottom = win.pads[2];
        p.pad_right = win.pads[3];
        p.ceil_mode = win.ceil_mode;
        if (n.op == Op::MaxPool || n.op == Op::MaxPoolBlocked) {
            p.dilation_h = win.dilation[0];
            p.dilation_w = win.dilation[1];
            return n.op == Op::MaxPool ? te::max_pool2d(x, p) : te::max_pool2d_nchwc(x, p);
        }
        p.count_include_pad = n.attr_int("count_include_pad", 0) != 0;
        return te::avg_pool2d(x, p);
    }

    Tensor binary(Op op, const Tensor& a, const Tensor& b) const {
        switch (op) {
        case Op::Add:
            return te::add(a, b);
        case Op::Sub:
            return te::subtract(a, b);
        case Op::Mul:
            return te::multiply(a, b);
        case Op::Div:
            return te::divide(a, b);
        case Op::Max:
            return te::maximum(a, b);
        case Op::Min:
            return te::minimum(a, b);
        default:
            break;
        }
        TESSERA_UNREACHABLE();
    }

    // True when output value v of a node is read by another node or is a graph output.
    bool needed(ValueId v) const {
        if (v == kNoValue)
            return false;
        if (!g_.users(v).empty())
            return true;
        for (ValueId o : g_.outputs)
            if (o == v)
                return true;
        return false;
    }

    void build_node(NodeId id, const std::string& where) {
        const Node& n = g_.node(id);
        const Value& out = g_.value(n.outputs[0]);
        const ir::DataType dt = to_ir_type(out.dtype);
        auto x = [&]() { return tensor(n.inputs.at(0)); };
        // One tensor per node output; most ops define only the first, multi-output ops (Split,
        // LayerNormalization's statistics, Dropout's mask) fill the others.
        std::vector<Tensor> ys(n.outputs.size());
        Tensor& y = ys[0];
        switch (n.op) {
        case Op::Conv: {
            const Tensor w = tensor(n.inputs.at(1));
            te::Conv2dParams p = conv_params(n, where, {w.shape()[2], w.shape()[3]});
            y = te::conv2d(x(), w, p, opt_tensor(n, 2));
            break;
        }
        case Op::ConvBlocked: {
            const Tensor w = tensor(n.inputs.at(1));
            te::Conv2dParams p = conv_params(n, where, {w.shape()[2], w.shape()[3]});
            y = te::conv2d_nchwc(x(), w, p, opt_tensor(n, 2), n.attr_int("depthwise", 0) != 0);
            break;
        }
        case Op::WinogradInput: {
            const te::WinogradTile t = detail::winograd_input_tile(
                n, g_.value(n.inputs.at(0)).shape, g_.value(n.inputs.at(1)).shape, where);
            y = te::winograd_input_nchwc(x(), tensor(n.inputs.at(1)), t);
            break;
        }
        case Op::WinogradOutput:
            y = te::winograd_output_nchwc(x(), tensor(n.inputs.at(1)), opt_tensor(n, 2),
                                          detail::winograd_output_tile(n),
                                          n.attr_int("block", 0));
            break;
        case Op::LayoutToBlocked:
            y = te::layout_to_nchwc(x(), n.attr_int("block", 0));
            break;
        case Op::LayoutFromBlocked:
            y = te::layout_from_nchwc(x(), n.attr_int("channels", 0));
            break;
        case Op::Gemm:
            y = te::gemm(x(), tensor(n.inputs.at(1)), opt_tensor(n, 2),
                         n.attr_float("alpha", 1.0f), n.attr_float("beta", 1.0f),
                         n.attr_int("transA", 0) != 0, n.attr_int("transB", 0) != 0);
            break;
        case Op::MatMul:
            y = te::matmul(x(), tensor(n.inputs.at(1)));
            break;
        case Op::Relu:
            y = te::relu(x());
            break;
        case Op::Sigmoid:
            y = te::sigmoid(x());
            break;
        case Op::Tanh:
            y = te::tanh(x());
            break;
        case Op::Erf:
            y = te::erf(x());
            break;
        case Op::Gelu:
            y = te::gelu(x());
            break;
        case Op::Exp:
            y = te::exp(x());
            break;
        case Op::Sqrt:
            y = te::sqrt(x());
            break;
        case Op::Log:
            y = te::unary(x(), [](Expr e) { return ir::log(e); }, "log");
            break;
        case Op::Neg:
            y = te::unary(x(), [](Expr e) { return -e; }, "neg");
            break;
        case Op::Reciprocal:
            y = te::unary(
                x(), [dt](Expr e) { return ir::make_one(dt) / e; }, "reciprocal");
            break;
        case Op::LeakyRelu:
            y = te::leaky_relu(x(), n.attr_float("alpha", 0.01f));
            break;
        case Op::HardSigmoid:
        case Op::HardSwish: {
            const double alpha = n.op == Op::HardSwish ? 1.0 / 6 : n.attr_float("alpha", 0.2f);
            const double beta = n.op == Op::HardSwish ? 0.5 : n.attr_float("beta", 0.5f);
            const bool swish = n.op == Op::HardSwish;
            y = te::unary(
                x(),
                [=](Expr e) {
                    Expr h = ir::max(ir::make_zero(dt),
                                     ir::min(ir::make_one(dt), ir::make_const(dt, alpha) * e +
                                                                   ir::make_const(dt, beta)));
                    return swish ? e * h : h;
                },
                swish ? "hard_swish" : "hard_sigmoid");
            break;
        }
        case Op::Clip: {
            const double lo = static_scalar(n, 1, where).value_or(
                -std::numeric_limits<double>::infinity());
            const double hi =
                static_scalar(n, 2, where).value_or(std::numeric_limits<double>::infinity());
            y = te::clip(x(), lo, hi);
            break;
        }
        case Op::Add:
        case Op::Sub:
        case Op::Mul:
            y = binary(n.op, x(), tensor(n.inputs.at(1)));
            break;
        case Op::Div: // integers round toward zero, as the graph evaluator and ONNX do
            y = te::truncating_divide(x(), tensor(n.inputs.at(1)));
            break;
        case Op::Pow: // the exponent may have another dtype
            y = te::power(x(), tensor(n.inputs.at(1)));
            break;
        case Op::Max:
        case Op::Min:
            y = x();
            for (size_t i = 1; i < n.inputs.size(); ++i)
                y = binary(n.op, y, tensor(n.inputs[i]));
            if (n.inputs.size() == 1)
                y = te::unary(y, [](Expr e) { return e; }, "copy");
            break;
        case Op::MaxPool:
        case Op::MaxPoolBlocked:
        case Op::AveragePool:
            y = pool(n, x(), where);
            break;
        case Op::GlobalAveragePool:
            y = te::global_avg_pool2d(x());
            break;
        case Op::Softmax:
            y = te::softmax(x(), n.attr_int("axis", -1));
            break;
        case Op::LayerNormalization: {
            const int64_t axis = n.attr_int("axis", -1);
            const double eps = n.attr_float("epsilon", 1e-5f);
            // The statistics only when read: without them the Compute (and its key) is the
            // plain layer_norm of every transformer block.
            bool stats = false;
            for (size_t i = 1; i < n.outputs.size(); ++i)
                stats = stats || needed(n.outputs[i]);
            if (!stats) {
                y = te::layer_norm(x(), tensor(n.inputs.at(1)), opt_tensor(n, 2), axis, eps);
                break;
            }
            te::LayerNormOutputs lo = te::layer_norm_with_stats(x(), tensor(n.inputs.at(1)),
                                                                opt_tensor(n, 2), axis, eps);
            y = lo.y;
            if (ys.size() > 1)
                ys[1] = lo.mean;
            if (ys.size() > 2)
                ys[2] = lo.inv_std_dev;
            break;
        }
        case Op::BatchNormalization:
            y = te::batch_norm_inference(x(), tensor(n.inputs.at(1)), tensor(n.inputs.at(2)),
                                         tensor(n.inputs.at(3)), tensor(n.inputs.at(4)),
                                         n.attr_float("epsilon", 1e-5f));
            break;
        case Op::ReduceSum:
        case Op::ReduceMean:
        case Op::ReduceMax: {
            std::vector<int64_t> axes =
                n.op == Op::ReduceSum ? static_ints(n, 1, where) : n.attr_ints("axes");
            const bool keep = n.attr_int("keepdims", 1) != 0;
            if (axes.empty() && n.op == Op::ReduceSum && n.attr_int("noop_with_empty_axes", 0)) {
                y = te::unary(x(), [](Expr e) { return e; }, "copy");
                break;
            }
            y = n.op == Op::ReduceSum    ? te::reduce_sum(x(), axes, keep)
                : n.op == Op::ReduceMean ? te::reduce_mean(x(), axes, keep)
                                         : te::reduce_max(x(), axes, keep);
            break;
        }
        case Op::Flatten:
        case Op::Reshape:
        case Op::Squeeze:
        case Op::Unsqueeze:
            y = te::reshape(x(), out.shape);
            break;
        case Op::Transpose:
            y = te::transpose(x(), n.attr_ints("perm"));
            break;
        case Op::Concat: {
            std::vector<Tensor> xs;
            for (ValueId v : n.inputs)
                xs.push_back(tensor(v));
            y = te::concat(xs, n.attr_int("axis", 0));
            break;
        }
        case Op::Gather:
            y = te::gather(x(), tensor(n.inputs.at(1)), n.attr_int("axis", 0));
            break;
        case Op::Slice:
            y = te::slice(x(), static_ints(n, 1, where), static_ints(n, 2, where),
                          static_ints(n, 3, where), static_ints(n, 4, where));
            break;
        case Op::Pad: {
            const te::PadMode mode = pad_mode(n.attr_string("mode", "constant"), where);
            const std::vector<int64_t> pads = static_ints(n, 1, where);
            const size_t rank = out.shape.size();
            std::vector<int64_t> before(pads.begin(), pads.begin() + rank);
            std::vector<int64_t> after(pads.begin() + rank, pads.end());
            y = te::pad(x(), before, after, static_scalar(n, 2, where).value_or(0.0), mode);
            break;
        }
        case Op::Split: {
            const Value& in = g_.value(n.inputs.at(0));
            const int64_t rank = static_cast<int64_t>(in.shape.size());
            const int64_t axis = detail::normalize_axis(n.attr_int("axis", 0), rank, where);
            const bool has_split = n.input(1) != kNoValue;
            const std::vector<int64_t> sizes =
                detail::split_sizes(in.shape, axis, static_ints(n, 1, where), has_split,
                                    n.outputs.size(), where);
            const std::vector<Tensor> parts = te::split(x(), sizes, axis);
            std::copy(parts.begin(), parts.end(), ys.begin());
            break;
        }
        case Op::Where:
            y = te::where(x(), tensor(n.inputs.at(1)), tensor(n.inputs.at(2)));
            break;
        case Op::Shape: {
            const Shape& in = g_.value(n.inputs.at(0)).shape;
            const auto [start, end] = detail::shape_range(n, static_cast<int64_t>(in.size()));
            std::vector<Expr> dims;
            for (int64_t d = start; d < end; ++d)
                dims.push_back(ir::make_const(dt, in[d]));
            y = te::constant_table(out.shape, dims);
            break;
        }
        case Op::Constant: {
            const TensorData* v = n.attr_tensor("value");
            if (!v)
                throw UserError() << where << ": attribute 'value' is missing";
            y = te::constant_table(out.shape, immediates(dt, *v));
            break;
        }
        case Op::ConstantOfShape: {
            const TensorData* v = n.attr_tensor("value");
            y = te::full(out.shape, v ? immediates(dt, *v).at(0) : ir::make_zero(dt));
            break;
        }
        case Op::Range: // the limit only sets the output's extent
            y = te::arange(static_immediate(n, 0, dt, where), static_immediate(n, 2, dt, where),
                           out.shape.at(0));
            break;
        case Op::Expand: {
            const Tensor in = x();
            const Shape target = out.shape;
            y = te::compute(
                target,
                [&](const std::vector<te::Var>& i) {
                    std::vector<Expr> idx;
                    const auto& s = in.shape();
                    for (size_t d = 0; d < s.size(); ++d)
                        idx.push_back(s[d] == 1 ? Expr(0) : Expr(i[target.size() - s.size() + d]));
                    return in(idx);
                },
                "expand");
            break;
        }
        case Op::Cast:
            y = te::unary(x(), [dt](Expr e) { return ir::cast(dt, e); }, "cast");
            break;
        case Op::Equal:
            y = te::broadcast_binary(
                x(), tensor(n.inputs.at(1)), [](Expr a, Expr b) { return ir::eq(a, b); }, "equal");
            break;
        case Op::Less:
            y = te::broadcast_binary(
                x(), tensor(n.inputs.at(1)), [](Expr a, Expr b) { return a < b; }, "less");
            break;
        case Op::Greater:
            y = te::broadcast_binary(
                x(), tensor(n.inputs.at(1)), [](Expr a, Expr b) { return a > b; }, "greater");
            break;
        case Op::Not:
            y = te::unary(x(), [](Expr e) { return ir::logical_not(e); }, "not");
            break;
        case Op::Identity:
            y = x();
            break;
        case Op::Dropout: // inference: the data unchanged, the mask all true
            y = x();
            if (ys.size() > 1 && n.outputs[1] != kNoValue)
                ys[1] = te::full(g_.value(n.outputs[1]).shape,
                                 ir::make_one(ir::DataType::boolean()));
            break;
        }
        for (size_t i = 0; i < n.outputs.size(); ++i) {
            if (n.outputs[i] == kNoValue)
                continue;
            const Value& v = g_.value(n.outputs[i]);
            if (!ys[i].defined() && !needed(n.outputs[i]))
                continue;
            if (!ys[i].defined())
                throw UserError() << where << ": output " << i << " ('" << v.name
                                  << "') has no tensor expression";
            if (ys[i].shape() != v.shape || ys[i].dtype() != to_ir_type(v.dtype))
                throw UserError() << where << ": tensor expression of output " << i << " is "
                                  << ys[i].dtype() << te::shape_to_string(ys[i].shape())
                                  << ", the graph value '" << v.name << "' "
                                  << dtype_name(v.dtype) << shape_str(v.shape);
            env_[n.outputs[i]] = ys[i];
        }
    }

    const Graph& g_;
    const FusedGroup& group_;
    std::map<ValueId, Tensor> env_;
};

} // namespace

GroupCompute group_compute(const Graph& g, const FusedGroup& group) {
    return GroupBuilder(g, group).build();
}

std::vector<Task> extract_tasks(const Graph& g, const std::vector<FusedGroup>& groups) {
    std::vector<Task> tasks;
    std::map<std::string, size_t> by_key;
    for (size_t i = 0; i < groups.size(); ++i) {
        if (groups[i].in_place_concat)
            continue; // its operands are written in place: nothing runs
        GroupCompute gc = group_compute(g, groups[i]);
        const std::string key = te::workload_key(gc.compute);
        auto it = by_key.find(key);
        if (it != by_key.end()) {
            tasks[it->second].groups.push_back(static_cast<int>(i));
            continue;
        }
        Task t;
        t.workload_key = key;
        t.pattern = groups[i].pattern;
        t.flops = te::count_flops(gc.compute);
        t.groups = {static_cast<int>(i)};
        t.compute = std::move(gc);
        by_key[key] = tasks.size();
        tasks.push_back(std::move(t));
    }
    return tasks;
}

} // namespace tessera::graph
