// Normalizations. Canonical forms (opset 17):
//   BatchNormalization(X, scale, B, mean, var) epsilon: inference only, one output (opsets
//     1-8 too: consumed_inputs and is_test are ignored, the mode follows the outputs used;
//     spatial must be 1).
//   LayerNormalization(X, scale, B?) axis, epsilon: outputs Y, mean?, inv_std_dev? (opset 17+).
//   Softmax(X) axis, LogSoftmax(X) axis: along that one axis (the opset 13 meaning; older
//     opsets normalize the input coerced to 2-D at `axis` and are rewritten to Flatten, the op
//     on axis 1 and Reshape).
//   InstanceNormalization(X [N, C, D1, ...], scale [C], B [C]) epsilon: over the spatial dims
//     of each (n, c) (opset 1's consumed_inputs is ignored).
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
#include "tessera/te/reduce_ops.h"

namespace tessera::graph::detail {

namespace {

// The evaluator's per-channel parameters: operands 1, 2, ... f32 of shape [C], one per name.
std::vector<const float*> channel_params(const EvalInputs& in, int64_t C,
                                         std::initializer_list<const char*> names,
                                         const std::string& where) {
    std::vector<const float*> p;
    for (const char* name : names) {
        const TensorData& t = require_input(in, p.size() + 1, where);
        require_f32(t, name, where);
        if (t.shape() != Shape{C})
            throw UserError() << where << ": " << name << " has shape " << shape_str(t.shape())
                              << ", expected [" << C << "]";
        p.push_back(t.data<float>());
    }
    return p;
}

EvalOutputs eval_batch_norm(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    require_f32(x, "X", where);
    if (x.rank() < 2)
        throw UserError() << where << ": X must have rank >= 2, got shape " << shape_str(x.shape());
    const int64_t N = x.shape()[0], C = x.shape()[1],
                  inner = x.numel() / std::max<int64_t>(1, N * C);
    const std::vector<const float*> p = channel_params(in, C, {"scale", "B", "mean", "var"}, where);
    const double eps = n.attr_float("epsilon", 1e-5f);
    TensorData out(DType::F32, x.shape());
    const float* px = x.data<float>();
    float* po = out.data<float>();
    for (int64_t c = 0; c < C; ++c) {
        const float s = static_cast<float>(p[0][c] / std::sqrt(static_cast<double>(p[3][c]) + eps));
        const float shift = static_cast<float>(p[1][c] - static_cast<double>(p[2][c]) * s);
        for (int64_t b = 0; b < N; ++b) {
            const int64_t base = (b * C + c) * inner;
            for (int64_t i = 0; i < inner; ++i)
                po[base + i] = px[base + i] * s + shift;
        }
    }
    return {std::move(out)};
}

// Softmax-like evaluation along the node's axis: f(x lane, output lane, length, stride) for
// every lane of the axis (x f32, at least rank 1; `what` names the op in errors).
template <typename F>
EvalOutputs along_axis(const Node& n, const EvalInputs& in, const char* what,
                       const std::string& where, F f) {
    const TensorData& x = require_input(in, 0, where);
    require_f32(x, "input", where);
    const int64_t rank = x.rank();
    if (rank == 0)
        throw UserError() << where << ": " << what << " of a scalar";
    const int64_t axis = normalize_axis(n.attr_int("axis", -1), rank, where);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
        outer *= x.shape()[d];
    for (int64_t d = axis + 1; d < rank; ++d)
        inner *= x.shape()[d];
    const int64_t len = x.shape()[axis];
    TensorData out(DType::F32, x.shape());
    const float* px = x.data<float>();
    float* po = out.data<float>();
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
            const int64_t base = o * len * inner + i;
            f(px + base, po + base, len, inner);
        }
    return {std::move(out)};
}

EvalOutputs eval_softmax(const Node& n, const EvalInputs& in, const std::string& where) {
    return along_axis(n, in, "softmax", where,
                      [](const float* px, float* po, int64_t len, int64_t stride) {
                          float mx = -std::numeric_limits<float>::infinity();
                          for (int64_t k = 0; k < len; ++k)
                              mx = std::max(mx, px[k * stride]);
                          double sum = 0;
                          for (int64_t k = 0; k < len; ++k) {
                              const float e = std::exp(px[k * stride] - mx);
                              po[k * stride] = e;
                              sum += e;
                          }
                          for (int64_t k = 0; k < len; ++k)
                              po[k * stride] = static_cast<float>(po[k * stride] / sum);
                      });
}

// log(softmax(x)) along the axis in double: x - max - log(sum(exp(x - max))).
EvalOutputs eval_log_softmax(const Node& n, const EvalInputs& in, const std::string& where) {
    return along_axis(n, in, "log softmax", where,
                      [](const float* px, float* po, int64_t len, int64_t stride) {
                          double mx = -std::numeric_limits<double>::infinity();
                          for (int64_t k = 0; k < len; ++k)
                              mx = std::max(mx, static_cast<double>(px[k * stride]));
                          double sum = 0;
                          for (int64_t k = 0; k < len; ++k)
                              sum += std::exp(px[k * stride] - mx);
                          const double lse = mx + std::log(sum);
                          for (int64_t k = 0; k < len; ++k)
                              po[k * stride] = static_cast<float>(px[k * stride] - lse);
                      });
}

// Per (n, c): mean and biased variance over the spatial elements, in double.
EvalOutputs eval_instance_norm(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    require_f32(x, "input", where);
    if (x.rank() < 3)
        throw UserError() << where << ": input must have rank >= 3, got shape "
                          << shape_str(x.shape());
    const int64_t N = x.shape()[0], C = x.shape()[1];
    const int64_t spatial = x.numel() / std::max<int64_t>(1, N * C);
    const std::vector<const float*> p = channel_params(in, C, {"scale", "B"}, where);
    const double eps = n.attr_float("epsilon", 1e-5f);
    TensorData out(DType::F32, x.shape());
    const float* px = x.data<float>();
    float* po = out.data<float>();
    for (int64_t b = 0; b < N; ++b)
        for (int64_t c = 0; c < C; ++c) {
            const float* row = px + (b * C + c) * spatial;
            double mean = 0, var = 0;
            for (int64_t k = 0; k < spatial; ++k)
                mean += row[k];
            mean /= static_cast<double>(spatial);
            for (int64_t k = 0; k < spatial; ++k)
                var += (row[k] - mean) * (row[k] - mean);
            var /= static_cast<double>(spatial);
            const double inv = 1.0 / std::sqrt(var + eps);
            for (int64_t k = 0; k < spatial; ++k)
                po[(b * C + c) * spatial + k] =
                    static_cast<float>((row[k] - mean) * inv * p[0][c] + p[1][c]);
        }
    return {std::move(out)};
}

EvalOutputs eval_layer_norm(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    const TensorData& scale = require_input(in, 1, where);
    const TensorData* bias = in.size() > 2 ? in[2] : nullptr;
    require_f32(x, "X", where);
    require_f32(scale, "scale", where);
    if (x.rank() == 0)
        throw UserError() << where << ": layer norm of a scalar";
    const int64_t axis = normalize_axis(n.attr_int("axis", -1), x.rank(), where);
    const double eps = n.attr_float("epsilon", 1e-5f);
    Shape norm_shape(x.shape().begin() + axis, x.shape().end());
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d)
        outer *= x.shape()[d];
    const int64_t len = shape_numel(norm_shape);
    // Scale and bias broadcast (unidirectionally) to the normalized shape.
    auto expand = [&](const TensorData& t, const char* what) {
        if (broadcast_shapes({t.shape(), norm_shape}, where) != norm_shape)
            throw UserError() << where << ": " << what << " " << shape_str(t.shape())
                              << " does not broadcast to " << shape_str(norm_shape);
        std::vector<float> v(static_cast<size_t>(len));
        const float* pt = t.data<float>();
        for_each_index<1>(norm_shape, {broadcast_strides(t.shape(), norm_shape)}, {0},
                          [&](int64_t o, const std::array<int64_t, 1>& off) { v[o] = pt[off[0]]; });
        return v;
    };
    std::vector<float> sv = expand(scale, "scale");
    std::vector<float> bv(static_cast<size_t>(len), 0.0f);
    if (bias) {
        require_f32(*bias, "B", where);
        bv = expand(*bias, "B");
    }
    Shape stat_shape(x.shape().begin(), x.shape().begin() + axis);
    stat_shape.resize(x.shape().size(), 1);
    TensorData out(DType::F32, x.shape()), mean_out(DType::F32, stat_shape),
        inv_out(DType::F32, stat_shape);
    const float* px = x.data<float>();
    float* po = out.data<float>();
    for (int64_t o = 0; o < outer; ++o) {
        const float* row = px + o * len;
        double mean = 0, var = 0;
        for (int64_t k = 0; k < len; ++k)
            mean += row[k];
        mean /= static_cast<double>(len);
        for (int64_t k = 0; k < len; ++k)
            var += (row[k] - mean) * (row[k] - mean);
        var /= static_cast<double>(len);
        const double inv = 1.0 / std::sqrt(var + eps);
        for (int64_t k = 0; k < len; ++k)
            po[o * len + k] = static_cast<float>((row[k] - mean) * inv * sv[k] + bv[k]);
        mean_out.data<float>()[o] = static_cast<float>(mean);
        inv_out.data<float>()[o] = static_cast<float>(inv);
    }
    EvalOutputs outs;
    outs.push_back(std::move(out));
    outs.push_back(std::move(mean_out));
    outs.push_back(std::move(inv_out));
    return outs;
}

// Per-channel parameters (BatchNormalization's, InstanceNormalization's): operands from
// `first` on, f32 of shape [C], C = x's dim 1.
void check_channel_params(const NodeTypes& t, const Value& x, size_t first,
                          std::initializer_list<const char*> names) {
    size_t i = first;
    for (const char* name : names) {
        const Value& p = t.in(i++, name);
        t.dtype(p, kF32, name);
        if (p.shape != Shape{x.shape[1]})
            t.fail(std::string(name) + " '" + p.name + "' has shape " + shape_str(p.shape) +
                   ", expected [" + std::to_string(x.shape[1]) + "]");
    }
}

TypeList batch_norm_types(const NodeTypes& t) {
    const Value& x = t.in(0, "X");
    t.dtype(x, kF32, "X");
    t.min_rank(x, 2, "X");
    check_channel_params(t, x, 1, {"scale", "B", "mean", "var"});
    return {{DType::F32, x.shape}};
}

TypeList layer_norm_types(const NodeTypes& t) {
    const Value& x = t.in(0, "X");
    t.dtype(x, kF32, "X");
    t.min_rank(x, 1, "X");
    const int64_t axis = normalize_axis(t.node().attr_int("axis", -1), x.shape.size(), t.where());
    Shape norm(x.shape.begin() + axis, x.shape.end());
    for (size_t i = 1; i < 3; ++i) {
        if (i == 2 && !t.has(2))
            break;
        const char* what = i == 1 ? "scale" : "B";
        const Value& p = t.in(i, what);
        t.dtype(p, kF32, what);
        if (broadcast_shapes({p.shape, norm}, t.where()) != norm)
            t.fail("'" + p.name + "' " + shape_str(p.shape) + " does not broadcast to " +
                   shape_str(norm));
    }
    Shape stat(x.shape.begin(), x.shape.begin() + axis);
    stat.resize(x.shape.size(), 1);
    return {{DType::F32, x.shape}, {DType::F32, stat}, {DType::F32, stat}};
}

TypeList instance_norm_types(const NodeTypes& t) {
    const Value& x = t.in(0, "input");
    t.dtype(x, kF32, "input");
    t.min_rank(x, 3, "input");
    check_channel_params(t, x, 1, {"scale", "B"});
    return {{DType::F32, x.shape}};
}

TypeList softmax_types(const NodeTypes& t) {
    const Value& x = t.in(0, "input");
    t.dtype(x, kF32, "input");
    t.min_rank(x, 1, "input");
    normalize_axis(t.node().attr_int("axis", -1), x.shape.size(), t.where());
    return {{x.dtype, x.shape}};
}

void import_batch_norm(OpImport& im) {
    im.only_first_output("training-mode statistics");
    im.outputs().resize(1);
    if (im.source().attr_int("spatial", 1) != 1)
        im.fail("spatial=0 is not supported");
    if (im.source().attr_int("training_mode", 0) != 0)
        im.fail("training_mode=1 is not supported");
    im.keep("epsilon", Attribute::of_float(1e-5f));
}

void import_layer_norm(OpImport& im) {
    if (im.source().attr_int("stash_type", 1) != 1)
        im.fail("stash_type other than 1 (float) is not supported");
    im.set("axis", Attribute::of_int(normalize_axis(im.source().attr_int("axis", -1),
                                                    im.input_rank(0), im.where())));
    im.keep("epsilon", Attribute::of_float(1e-5f));
}

// Softmax and LogSoftmax before opset 13 normalize the input coerced to 2-D at `axis`; from 13
// on, along one axis.
void import_softmax(OpImport& im) {
    const int64_t rank = im.input_rank(0);
    if (rank == 0)
        im.fail(im.op_type() + " of a scalar");
    const int64_t axis =
        normalize_axis(im.source().attr_int("axis", im.opset() >= 13 ? -1 : 1), rank, im.where());
    if (im.opset() >= 13 || axis == rank - 1) {
        im.set("axis", Attribute::of_int(axis));
        return;
    }
    const Shape shape = im.input_value(0).shape;
    ValueId flat = im.new_value("flatten");
    ValueId soft = im.new_value("softmax");
    im.emit(Op::Flatten, {im.inputs()[0]}, {flat}, {{"axis", Attribute::of_int(axis)}});
    im.emit(im.op(), {flat}, {soft}, {{"axis", Attribute::of_int(1)}});
    im.emit(Op::Reshape, {soft, im.ints_constant("shape", shape)}, im.outputs(),
            {{"allowzero", Attribute::of_int(0)}});
}

void layer_norm_kernel(NodeKernel& k) {
    const Node& n = k.node();
    const int64_t axis = n.attr_int("axis", -1);
    const double eps = n.attr_float("epsilon", 1e-5f);
    // The statistics only when read: without them the Compute (and its key) is the plain
    // layer_norm of every transformer block.
    bool stats = false;
    for (size_t i = 1; i < n.outputs.size(); ++i)
        stats = stats || k.needed(i);
    if (!stats) {
        k.set(te::layer_norm(k.in(0), k.in(1), k.opt_in(2), axis, eps));
        return;
    }
    te::LayerNormOutputs lo = te::layer_norm_with_stats(k.in(0), k.in(1), k.opt_in(2), axis, eps);
    k.set(lo.y);
    if (n.outputs.size() > 1)
        k.set(lo.mean, 1);
    if (n.outputs.size() > 2)
        k.set(lo.inv_std_dev, 2);
}

using K = Attribute::Kind;

} // namespace

} // namespace tessera::graph::detail

namespace tessera::graph::ops {

using namespace detail;

// Inference BN is a per-channel scale and shift: elementwise, broadcast along channels.
const OpDef BatchNormalization =
    OpDef(Op::BatchNormalization)
        .onnx(1, 5, 5, 5,
              {{"epsilon", K::Float},
               {"momentum", K::Float},
               {"spatial", K::Int, 1, 9},
               {"consumed_inputs", K::Ints, 1, 6},
               {"is_test", K::Int, 1, 7},
               {"training_mode", K::Int, 14}})
        .import_with(import_batch_norm)
        .types(batch_norm_types)
        .eval(eval_batch_norm)
        .fuses_as(FusionKind::Broadcast)
        .named("batch_norm")
        .builds([](NodeKernel& k) {
            k.set(te::batch_norm_inference(k.in(0), k.in(1), k.in(2), k.in(3), k.in(4),
                                           k.node().attr_float("epsilon", 1e-5f)));
        });

const OpDef LayerNormalization =
    OpDef(Op::LayerNormalization)
        .onnx(17, 2, 3, 3, {{"axis", K::Int}, {"epsilon", K::Float}, {"stash_type", K::Int}})
        .import_with(import_layer_norm)
        .types(layer_norm_types)
        .eval(eval_layer_norm)
        .fuses_as(FusionKind::Reduction)
        .named("layer_norm")
        .builds(layer_norm_kernel);

const OpDef Softmax =
    OpDef(Op::Softmax)
        .onnx(1, 1, 1, 1, {{"axis", K::Int}})
        .import_with(import_softmax)
        .types(softmax_types)
        .eval(eval_softmax)
        .fuses_as(FusionKind::Reduction)
        .builds([](NodeKernel& k) { k.set(te::softmax(k.in(0), k.node().attr_int("axis", -1))); });

const OpDef LogSoftmax = OpDef(Op::LogSoftmax)
                             .onnx(1, 1, 1, 1, {{"axis", K::Int}})
                             .import_with(import_softmax)
                             .types(softmax_types)
                             .eval(eval_log_softmax)
                             .fuses_as(FusionKind::Reduction)
                             .named("log_softmax")
                             .builds([](NodeKernel& k) {
                                 k.set(te::log_softmax(k.in(0), k.node().attr_int("axis", -1)));
                             });

const OpDef InstanceNormalization =
    OpDef(Op::InstanceNormalization)
        .onnx(1, 3, 3, 1, {{"epsilon", K::Float}, {"consumed_inputs", K::Ints, 1, 6}})
        .import_with([](OpImport& im) { im.keep("epsilon", Attribute::of_float(1e-5f)); })
        .types(instance_norm_types)
        .eval(eval_instance_norm)
        .fuses_as(FusionKind::Reduction)
        .named("instance_norm")
        .builds([](NodeKernel& k) {
            k.set(te::instance_norm(k.in(0), k.in(1), k.in(2),
                                    k.node().attr_float("epsilon", 1e-5f)));
        });

} // namespace tessera::graph::ops
