// The evaluator's driver: dispatch per op and the whole-graph run with liveness-based freeing.
#include "tessera/graph/evaluate.h"

#include "eval_ops.h"
#include "layout_ops.h"
#include "winograd_ops.h"

namespace tessera::graph {

using namespace detail;

std::vector<TensorData> evaluate_node(const Node& n, const std::vector<const TensorData*>& in,
                                      NodeId id) {
    const std::string where = describe_node(n, id);
    const size_t nout = n.outputs.size();
    EvalOutputs outs;
    switch (n.op) {
    case Op::Conv:
        outs = eval_conv(n, in, where);
        break;
    case Op::MaxPool:
    case Op::AveragePool:
        outs = eval_pool(n, in, where);
        break;
    case Op::GlobalAveragePool:
        outs = eval_global_average_pool(n, in, where);
        break;
    case Op::Gemm:
        outs = eval_gemm(n, in, where);
        break;
    case Op::MatMul:
        outs = eval_matmul(n, in, where);
        break;
    case Op::BatchNormalization:
        outs = eval_batch_norm(n, in, where);
        break;
    case Op::Softmax:
        outs = eval_softmax(n, in, where);
        break;
    case Op::LayerNormalization:
        outs = eval_layer_norm(n, in, where);
        break;
    case Op::ReduceMean:
    case Op::ReduceSum:
    case Op::ReduceMax:
        outs = eval_reduce(n, in, where);
        break;
    case Op::Relu:
        outs = eval_unary(n, in, UnaryFn::Relu, where);
        break;
    case Op::LeakyRelu:
        outs = eval_unary(n, in, UnaryFn::LeakyRelu, where);
        break;
    case Op::Sigmoid:
        outs = eval_unary(n, in, UnaryFn::Sigmoid, where);
        break;
    case Op::HardSigmoid:
        outs = eval_unary(n, in, UnaryFn::HardSigmoid, where);
        break;
    case Op::HardSwish:
        outs = eval_unary(n, in, UnaryFn::HardSwish, where);
        break;
    case Op::Tanh:
        outs = eval_unary(n, in, UnaryFn::Tanh, where);
        break;
    case Op::Erf:
        outs = eval_unary(n, in, UnaryFn::Erf, where);
        break;
    case Op::Gelu:
        outs = eval_unary(n, in, UnaryFn::Gelu, where);
        break;
    case Op::Sqrt:
        outs = eval_unary(n, in, UnaryFn::Sqrt, where);
        break;
    case Op::Exp:
        outs = eval_unary(n, in, UnaryFn::Exp, where);
        break;
    case Op::Log:
        outs = eval_unary(n, in, UnaryFn::Log, where);
        break;
    case Op::Neg:
        outs = eval_unary(n, in, UnaryFn::Neg, where);
        break;
    case Op::Reciprocal:
        outs = eval_unary(n, in, UnaryFn::Reciprocal, where);
        break;
    case Op::Not:
        outs = eval_not(n, in, where);
        break;
    case Op::Clip:
        outs = eval_clip(n, in, where);
        break;
    case Op::Add:
        outs = eval_arith(n, in, ArithFn::Add, where);
        break;
    case Op::Sub:
        outs = eval_arith(n, in, ArithFn::Sub, where);
        break;
    case Op::Mul:
        outs = eval_arith(n, in, ArithFn::Mul, where);
        break;
    case Op::Div:
        outs = eval_arith(n, in, ArithFn::Div, where);
        break;
    case Op::Pow:
        outs = eval_pow(n, in, where);
        break;
    case Op::Max:
        outs = eval_variadic(n, in, ArithFn::Max, where);
        break;
    case Op::Min:
        outs = eval_variadic(n, in, ArithFn::Min, where);
        break;
    case Op::Equal:
        outs = eval_compare(n, in, CompareFn::Equal, where);
        break;
    case Op::Less:
        outs = eval_compare(n, in, CompareFn::Less, where);
        break;
    case Op::Greater:
        outs = eval_compare(n, in, CompareFn::Greater, where);
        break;
    case Op::Where:
        outs = eval_where(n, in, where);
        break;
    case Op::Cast:
        outs = eval_cast(n, in, where);
        break;
    case Op::Identity:
        outs = eval_identity(n, in, where);
        break;
    case Op::Flatten:
        outs = eval_flatten(n, in, where);
        break;
    case Op::Reshape:
        outs = eval_reshape(n, in, where);
        break;
    case Op::Squeeze:
        outs = eval_squeeze(n, in, where);
        break;
    case Op::Unsqueeze:
        outs = eval_unsqueeze(n, in, where);
        break;
    case Op::Transpose:
        outs = eval_transpose(n, in, where);
        break;
    case Op::Concat:
        outs = eval_concat(n, in, where);
        break;
    case Op::Split:
        outs = eval_split(n, in, nout, where);
        break;
    case Op::Slice:
        outs = eval_slice(n, in, where);
        break;
    case Op::Gather:
        outs = eval_gather(n, in, where);
        break;
    case Op::Shape:
        outs = eval_shape(n, in, where);
        break;
    case Op::Constant:
        outs = eval_constant(n, in, where);
        break;
    case Op::ConstantOfShape:
        outs = eval_constant_of_shape(n, in, where);
        break;
    case Op::Range:
        outs = eval_range(n, in, where);
        break;
    case Op::Expand:
        outs = eval_expand(n, in, where);
        break;
    case Op::Pad:
        outs = eval_pad(n, in, where);
        break;
    case Op::Dropout:
        outs = eval_dropout(n, in, nout, where);
        break;
    case Op::LayoutToBlocked:
        outs = eval_layout_to_blocked(n, in, where);
        break;
    case Op::LayoutFromBlocked:
        outs = eval_layout_from_blocked(n, in, where);
        break;
    case Op::ConvBlocked:
        outs = eval_conv_blocked(n, in, where);
        break;
    case Op::MaxPoolBlocked:
        outs = eval_max_pool_blocked(n, in, where);
        break;
    case Op::WinogradInput:
        outs = eval_winograd_input(n, in, where);
        break;
    case Op::WinogradOutput:
        outs = eval_winograd_output(n, in, where);
        break;
    }
    // Kernels with optional outputs (LayerNormalization) compute them all; keep what the node
    // declares.
    if (outs.size() > nout)
        outs.resize(nout);
    TESSERA_CHECK(outs.size() == nout)
        << where << " produced " << outs.size() << " outputs, the node has " << nout;
    return outs;
}

std::vector<TensorData> evaluate(const Graph& g, const std::vector<TensorData>& inputs) {
    if (inputs.size() != g.inputs.size())
        throw UserError() << "graph '" << g.name << "' takes " << g.inputs.size() << " inputs, got "
                          << inputs.size();
    std::vector<std::shared_ptr<const TensorData>> vals(g.num_values());
    for (size_t i = 0; i < inputs.size(); ++i) {
        const Value& v = g.value(g.inputs[i]);
        if (v.typed && (v.dtype != inputs[i].dtype() || v.shape != inputs[i].shape()))
            throw UserError() << "input '" << v.name << "' expects " << dtype_name(v.dtype)
                              << shape_str(v.shape) << ", got " << dtype_name(inputs[i].dtype())
                              << shape_str(inputs[i].shape());
        vals[g.inputs[i]] = std::make_shared<const TensorData>(inputs[i]);
    }
    for (size_t i = 0; i < g.num_values(); ++i)
        if (g.value(static_cast<ValueId>(i)).is_constant())
            vals[i] = g.value(static_cast<ValueId>(i)).constant;

    // Remaining reads per value; a computed value is freed when they reach zero.
    std::vector<int> reads(g.num_values(), 0);
    std::vector<NodeId> order = g.topological_order();
    for (NodeId id : order)
        for (ValueId v : g.node(id).inputs)
            if (v != kNoValue)
                ++reads[v];
    std::vector<bool> keep(g.num_values(), false);
    for (ValueId v : g.outputs)
        keep[v] = true;

    for (NodeId id : order) {
        const Node& n = g.node(id);
        std::vector<const TensorData*> ins;
        for (ValueId v : n.inputs) {
            if (v == kNoValue) {
                ins.push_back(nullptr);
                continue;
            }
            TESSERA_CHECK(vals[v] != nullptr) << describe_node(n, id) << " reads '"
                                              << g.value(v).name << "' before it is computed";
            ins.push_back(vals[v].get());
        }
        std::vector<TensorData> outs = evaluate_node(n, ins, id);
        for (size_t i = 0; i < outs.size(); ++i) {
            const Value& v = g.value(n.outputs[i]);
            TESSERA_CHECK(!v.typed || (v.dtype == outs[i].dtype() && v.shape == outs[i].shape()))
                << describe_node(n, id) << " output '" << v.name << "' is "
                << dtype_name(outs[i].dtype()) << shape_str(outs[i].shape())
                << " but its value says " << dtype_name(v.dtype) << shape_str(v.shape);
            if (reads[n.outputs[i]] > 0 || keep[n.outputs[i]])
                vals[n.outputs[i]] = std::make_shared<const TensorData>(std::move(outs[i]));
        }
        for (ValueId v : n.inputs)
            if (v != kNoValue && --reads[v] == 0 && !keep[v] && !g.value(v).is_constant())
                vals[v].reset();
    }
    std::vector<TensorData> result;
    for (ValueId v : g.outputs) {
        TESSERA_CHECK(vals[v] != nullptr)
            << "graph output '" << g.value(v).name << "' was not computed";
        result.push_back(*vals[v]);
    }
    return result;
}

} // namespace tessera::graph
