// The data-movement ops: reshapes (Flatten, Reshape, Squeeze, Unsqueeze), Transpose, Concat,
// Split, Slice, Gather, Expand, Pad, Tile, DepthToSpace, SpaceToDepth, Identity and Dropout.
// All work on every dtype. Canonical forms (opset 17; older opsets' attributes become constant
// operands):
//   Flatten axis (>= 0); Transpose perm (explicit); Gather(data, indices) axis
//   Concat axis (an absent axis is 1 before opset 4, an error after)
//   Reshape(data, shape) allowzero;  Expand(X, shape)
//   Split(X, split?) axis; sizes as an operand; without it, equal parts (opset 18's
//     num_outputs becomes the operand: chunks of ceil(extent / num_outputs), the last smaller)
//   Slice(data, starts, ends, axes?, steps?)
//   Pad(data, pads, constant_value?) mode: constant, reflect, edge, wrap (opset 19); pads for
//     every axis (opset 18's axes operand is folded into them at import)
//   Squeeze(data, axes?);  Unsqueeze(data, axes)
//   Tile(input, repeats) repeats compile-time (opsets 1-5's Tile(input, tiles, axis) becomes
//     repeats of 1 but at axis)
//   DepthToSpace(input[N,C,H,W]) blocksize, mode ("DCR" or "CRD")
//   SpaceToDepth(input[N,C,H,W]) blocksize, mode ("DCR" before opset 28, which adds "CRD")
//   Dropout(data)   outputs Y, mask? (inference: Y = data, mask all true)
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

// Axes from an optional input (index i) of the node.
std::vector<int64_t> optional_ints(const EvalInputs& in, size_t i, const char* what,
                                   const std::string& where) {
    if (i >= in.size() || in[i] == nullptr)
        return {};
    return int_elements(*in[i], what, where);
}

bool known_pad_mode(const std::string& mode) {
    return mode == "constant" || mode == "reflect" || mode == "edge" || mode == "wrap";
}

EvalOutputs eval_identity(const Node& n, const EvalInputs& in, const std::string& where) {
    return {require_input(in, 0, where)};
}

EvalOutputs eval_flatten(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    return {x.reshaped(flatten_shape(x.shape(), n.attr_int("axis", 1), where))};
}

EvalOutputs eval_reshape(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    std::vector<int64_t> spec = int_elements(require_input(in, 1, where), "shape", where);
    const bool allowzero = n.attr_int("allowzero", 0) != 0;
    return {x.reshaped(resolve_reshape(x.shape(), spec, allowzero, where))};
}

EvalOutputs eval_squeeze(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    return {x.reshaped(squeeze_shape(x.shape(), optional_ints(in, 1, "axes", where), where))};
}

EvalOutputs eval_unsqueeze(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    std::vector<int64_t> axes = int_elements(require_input(in, 1, where), "axes", where);
    return {x.reshaped(unsqueeze_shape(x.shape(), axes, where))};
}

EvalOutputs eval_transpose(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    std::vector<int64_t> perm = transpose_perm(n.attr_ints("perm"), x.rank(), where);
    std::vector<int64_t> xs = contiguous_strides(x.shape());
    Shape out_shape(perm.size());
    std::vector<int64_t> strides(perm.size());
    for (size_t d = 0; d < perm.size(); ++d) {
        out_shape[d] = x.shape()[perm[d]];
        strides[d] = xs[perm[d]];
    }
    TensorData out(x.dtype(), out_shape);
    gather_elements(x, out, strides, 0);
    return {std::move(out)};
}

EvalOutputs eval_concat(const Node& n, const EvalInputs& in, const std::string& where) {
    std::vector<Shape> shapes;
    for (size_t i = 0; i < in.size(); ++i) {
        const TensorData& t = require_input(in, i, where);
        if (t.dtype() != in[0]->dtype())
            throw UserError() << where << ": input " << i << " is " << dtype_name(t.dtype())
                              << ", input 0 is " << dtype_name(in[0]->dtype());
        shapes.push_back(t.shape());
    }
    const int64_t axis =
        normalize_axis(n.attr_int("axis", 0), in.empty() ? 0 : in[0]->rank(), where);
    Shape out_shape = concat_shape(shapes, axis, where);
    TensorData out(in[0]->dtype(), out_shape);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
        outer *= out_shape[d];
    for (size_t d = axis + 1; d < out_shape.size(); ++d)
        inner *= out_shape[d];
    const size_t es = dtype_size(out.dtype());
    const int64_t out_block = out_shape[axis] * inner;
    int64_t offset = 0;
    for (const TensorData* t : in) {
        const int64_t block = t->shape()[axis] * inner;
        if (block == 0)
            continue; // an empty operand: nothing to copy (and no storage to copy from)
        for (int64_t o = 0; o < outer; ++o)
            std::memcpy(out.raw() + (o * out_block + offset) * es, t->raw() + o * block * es,
                        static_cast<size_t>(block) * es);
        offset += block;
    }
    return {std::move(out)};
}

EvalOutputs eval_split(const Node& n, const EvalInputs& in, const std::string& where) {
    const size_t num_outputs = n.outputs.size();
    const TensorData& x = require_input(in, 0, where);
    const int64_t axis = normalize_axis(n.attr_int("axis", 0), x.rank(), where);
    const bool has_split = in.size() > 1 && in[1] != nullptr;
    std::vector<int64_t> sizes = split_sizes(x.shape(), axis, optional_ints(in, 1, "split", where),
                                             has_split, num_outputs, where);
    std::vector<int64_t> strides = contiguous_strides(x.shape());
    EvalOutputs outs;
    int64_t start = 0;
    for (int64_t s : sizes) {
        Shape shape = x.shape();
        shape[axis] = s;
        TensorData part(x.dtype(), shape);
        gather_elements(x, part, strides, start * strides[axis]);
        outs.push_back(std::move(part));
        start += s;
    }
    return outs;
}

EvalOutputs eval_slice(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    std::vector<int64_t> starts = int_elements(require_input(in, 1, where), "starts", where);
    std::vector<int64_t> ends = int_elements(require_input(in, 2, where), "ends", where);
    std::vector<SliceAxis> axes =
        resolve_slice(x.shape(), starts, ends, optional_ints(in, 3, "axes", where),
                      optional_ints(in, 4, "steps", where), where);
    std::vector<int64_t> xs = contiguous_strides(x.shape());
    Shape out_shape(axes.size());
    std::vector<int64_t> strides(axes.size());
    int64_t base = 0;
    for (size_t d = 0; d < axes.size(); ++d) {
        out_shape[d] = axes[d].count;
        strides[d] = xs[d] * axes[d].step;
        base += axes[d].start * xs[d];
    }
    TensorData out(x.dtype(), out_shape);
    gather_elements(x, out, strides, base);
    return {std::move(out)};
}

EvalOutputs eval_gather(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    const TensorData& idx = require_input(in, 1, where);
    require_dtype(idx, {DType::I64, DType::I32}, "indices", where);
    if (x.rank() == 0)
        throw UserError() << where << ": gather from a scalar";
    const int64_t axis = normalize_axis(n.attr_int("axis", 0), x.rank(), where);
    std::vector<int64_t> ids = idx.as_i64();
    const int64_t dim = x.shape()[axis];
    for (int64_t& i : ids) {
        if (i < -dim || i >= dim)
            throw UserError() << where << ": index " << i << " is out of range for extent " << dim;
        if (i < 0)
            i += dim;
    }
    TensorData out(x.dtype(), gather_shape(x.shape(), idx.shape(), axis));
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
        outer *= x.shape()[d];
    for (int64_t d = axis + 1; d < x.rank(); ++d)
        inner *= x.shape()[d];
    const size_t es = dtype_size(x.dtype());
    const size_t block = static_cast<size_t>(inner) * es;
    uint8_t* po = out.raw();
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i : ids) {
            std::memcpy(po, x.raw() + (o * dim + i) * inner * es, block);
            po += block;
        }
    return {std::move(out)};
}

EvalOutputs eval_expand(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    std::vector<int64_t> shape = int_elements(require_input(in, 1, where), "shape", where);
    Shape out_shape = broadcast_shapes({x.shape(), shape}, where);
    TensorData out(x.dtype(), out_shape);
    gather_elements(x, out, broadcast_strides(x.shape(), out_shape), 0);
    return {std::move(out)};
}

EvalOutputs eval_pad(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    std::vector<int64_t> pads = int_elements(require_input(in, 1, where), "pads", where);
    const std::string mode = n.attr_string("mode", "constant");
    if (!known_pad_mode(mode))
        throw UserError() << where << ": unsupported pad mode '" << mode << "'";
    Shape out_shape = pad_shape(x.shape(), pads, where);
    const int64_t rank = x.rank();
    for (int64_t d = 0; d < rank; ++d) {
        if (mode == "constant")
            break;
        const int64_t dim = x.shape()[d];
        const bool pads_dim = pads[d] > 0 || pads[d + rank] > 0;
        if (pads_dim && dim == 0)
            throw UserError() << where << ": cannot " << mode << "-pad an empty dim";
        if (mode == "reflect" && (pads[d] >= dim || pads[d + rank] >= dim) && pads_dim)
            throw UserError() << where << ": reflect pads " << shape_str(pads)
                              << " must be smaller than the dims of " << shape_str(x.shape());
    }
    const TensorData* cv = in.size() > 2 ? in[2] : nullptr;
    if (cv && (cv->dtype() != x.dtype() || cv->numel() != 1))
        throw UserError() << where << ": constant_value must be a " << dtype_name(x.dtype())
                          << " scalar";
    TensorData out(x.dtype(), out_shape);
    std::vector<int64_t> xs = contiguous_strides(x.shape());
    const size_t es = dtype_size(x.dtype());
    std::vector<int64_t> idx(rank, 0);
    for (int64_t o = 0; o < out.numel(); ++o) {
        int64_t src = 0;
        bool inside = true;
        for (int64_t d = 0; d < rank; ++d) {
            const int64_t dim = x.shape()[d];
            int64_t i = idx[d] - pads[d];
            if (i < 0 || i >= dim) {
                if (mode == "constant") {
                    inside = false;
                    break;
                }
                if (mode == "edge")
                    i = std::clamp<int64_t>(i, 0, dim - 1);
                else if (mode == "wrap")
                    i = (i % dim + dim) % dim; // periodic, also for pads wider than dim
                else
                    i = i < 0 ? -i : 2 * (dim - 1) - i; // reflect, without the edge
            }
            src += i * xs[d];
        }
        if (inside)
            std::memcpy(out.raw() + o * es, x.raw() + src * es, es);
        else if (cv)
            std::memcpy(out.raw() + o * es, cv->raw(), es);
        for (int64_t d = rank - 1; d >= 0; --d) {
            if (++idx[d] < out_shape[d])
                break;
            idx[d] = 0;
        }
    }
    return {std::move(out)};
}

EvalOutputs eval_dropout(const Node& n, const EvalInputs& in, const std::string& where) {
    const size_t num_outputs = n.outputs.size();
    const TensorData& x = require_input(in, 0, where);
    EvalOutputs outs{x};
    if (num_outputs > 1) {
        TensorData mask(DType::Bool, x.shape());
        std::fill(mask.raw(), mask.raw() + mask.nbytes(), uint8_t(1));
        outs.push_back(std::move(mask));
    }
    return outs;
}

// ---- type inference ----

TypeList flatten_types(const NodeTypes& t) {
    const Value& x = t.in(0, "input");
    return {{x.dtype, flatten_shape(x.shape, t.node().attr_int("axis", 1), t.where())}};
}

TypeList reshape_types(const NodeTypes& t) {
    const Value& x = t.in(0, "data");
    return {{x.dtype, resolve_reshape(x.shape, t.ints_of(1, "shape"),
                                      t.node().attr_int("allowzero", 0) != 0, t.where())}};
}

TypeList squeeze_types(const NodeTypes& t) {
    const Value& x = t.in(0, "data");
    return {{x.dtype, squeeze_shape(x.shape, t.opt_ints_of(1, "axes"), t.where())}};
}

TypeList unsqueeze_types(const NodeTypes& t) {
    const Value& x = t.in(0, "data");
    return {{x.dtype, unsqueeze_shape(x.shape, t.ints_of(1, "axes"), t.where())}};
}

TypeList transpose_types(const NodeTypes& t) {
    const Value& x = t.in(0, "data");
    std::vector<int64_t> perm =
        transpose_perm(t.node().attr_ints("perm"), x.shape.size(), t.where());
    Shape out;
    for (int64_t d : perm)
        out.push_back(x.shape[d]);
    return {{x.dtype, out}};
}

TypeList concat_types(const NodeTypes& t) {
    std::vector<Shape> shapes;
    const Value& a = t.in(0, "input");
    for (size_t i = 0; i < t.num_inputs(); ++i) {
        t.same_dtype(a, t.in(i, "input"));
        shapes.push_back(t.in(i, "input").shape);
    }
    if (a.shape.empty())
        t.fail("cannot concatenate scalars");
    return {{a.dtype, concat_shape(shapes, t.node().attr_int("axis", 0), t.where())}};
}

TypeList split_types(const NodeTypes& t) {
    const Value& x = t.in(0, "input");
    t.min_rank(x, 1, "input");
    const int64_t axis = normalize_axis(t.node().attr_int("axis", 0), x.shape.size(), t.where());
    std::vector<int64_t> sizes =
        split_sizes(x.shape, axis, t.opt_ints_of(1, "split"), t.has(1), t.num_outputs(), t.where());
    TypeList types;
    for (int64_t s : sizes) {
        Shape shape = x.shape;
        shape[axis] = s;
        types.push_back({x.dtype, shape});
    }
    return types;
}

TypeList slice_types(const NodeTypes& t) {
    const Value& x = t.in(0, "data");
    std::vector<SliceAxis> axes =
        resolve_slice(x.shape, t.ints_of(1, "starts"), t.ints_of(2, "ends"),
                      t.opt_ints_of(3, "axes"), t.opt_ints_of(4, "steps"), t.where());
    Shape out;
    for (const SliceAxis& a : axes)
        out.push_back(a.count);
    return {{x.dtype, out}};
}

TypeList gather_types(const NodeTypes& t) {
    const Value& x = t.in(0, "data");
    const Value& idx = t.in(1, "indices");
    t.dtype(idx, {DType::I64, DType::I32}, "indices");
    t.min_rank(x, 1, "data");
    const int64_t axis = normalize_axis(t.node().attr_int("axis", 0), x.shape.size(), t.where());
    return {{x.dtype, gather_shape(x.shape, idx.shape, axis)}};
}

TypeList expand_types(const NodeTypes& t) {
    const Value& x = t.in(0, "input");
    return {{x.dtype, broadcast_shapes({x.shape, t.ints_of(1, "shape")}, t.where())}};
}

TypeList pad_types(const NodeTypes& t) {
    const Value& x = t.in(0, "data");
    const std::string mode = t.node().attr_string("mode", "constant");
    if (!known_pad_mode(mode))
        t.fail("unsupported pad mode '" + mode + "'");
    if (t.has(2))
        t.scalar_of(t.in(2, "constant_value"), x.dtype, "constant_value");
    return {{x.dtype, pad_shape(x.shape, t.ints_of(1, "pads"), t.where())}};
}

TypeList dropout_types(const NodeTypes& t) {
    const Value& x = t.in(0, "data");
    TypeList types = {{x.dtype, x.shape}};
    if (t.num_outputs() > 1)
        types.push_back({DType::Bool, x.shape});
    return types;
}

// ---- import ----

// Opsets 1-4 give the shape as an attribute (and a legacy consumed_inputs hint, which does
// not change the result): it becomes the shape operand.
void import_reshape(OpImport& im) {
    if (im.opset() < 5) {
        im.expect_inputs(1, 1);
        if (!im.has("shape"))
            im.fail("attribute 'shape' is required");
        im.inputs().push_back(im.ints_constant("shape", im.attr("shape").ints));
    } else {
        im.expect_inputs(2, 2);
    }
    im.keep("allowzero", Attribute::of_int(0));
}

// Opsets 1-5: Tile(input, tiles, axis) repeats along one axis; both scalars become repeats.
void import_tile(OpImport& im) {
    if (im.opset() >= 6) {
        im.expect_inputs(2, 2);
        return;
    }
    im.expect_inputs(3, 3);
    const TensorData* tiles = im.known_value(im.inputs()[1]);
    const TensorData* axis = im.known_value(im.inputs()[2]);
    if (!tiles || !axis || tiles->numel() != 1 || axis->numel() != 1)
        im.fail("tiles and axis must be compile-time scalars");
    const int64_t rank = im.input_rank(0);
    std::vector<int64_t> repeats(rank, 1);
    repeats[normalize_axis(axis->as_i64()[0], rank, im.where())] = tiles->as_i64()[0];
    im.inputs().resize(1);
    im.inputs().push_back(im.ints_constant("repeats", repeats));
}

void import_flatten(OpImport& im) {
    const int64_t rank = im.input_rank(0);
    const int64_t axis = im.source().attr_int("axis", 1);
    if (axis < -rank || axis > rank)
        im.fail("axis " + std::to_string(axis) + " is out of range for rank " +
                std::to_string(rank));
    im.set("axis", Attribute::of_int(axis < 0 ? axis + rank : axis));
}

// Concat, Split and Gather: the axis normalized to [0, rank).
void import_axis(OpImport& im) {
    // Concat's axis is required from opset 4; before, it defaults to 1.
    if (im.op() == Op::Concat && !im.has("axis") && im.opset() >= 4)
        im.fail("attribute 'axis' is missing");
    const int64_t def = im.op() == Op::Concat ? 1 : 0;
    if (im.input_rank(0) == 0)
        im.fail(im.op() == Op::Gather ? "gather from a scalar" : "cannot concatenate scalars");
    im.set("axis", Attribute::of_int(normalize_axis(im.source().attr_int("axis", def),
                                                    im.input_rank(0), im.where())));
}

// Opset 18's num_outputs: chunks of ceil(extent / n), the last one smaller (ONNX 18), as the
// split operand.
std::vector<int64_t> split_chunks(const OpImport& im, int64_t dim, int64_t n) {
    const int64_t chunk = ceil_div(dim, n);
    const int64_t last = dim - chunk * (n - 1);
    if (last <= 0)
        im.fail("extent " + std::to_string(dim) + " does not split into " + std::to_string(n) +
                " chunks of " + std::to_string(chunk) + " (the last would be empty)");
    std::vector<int64_t> sizes(n, chunk);
    sizes.back() = last;
    return sizes;
}

void import_split(OpImport& im) {
    if (im.opset() < 13) {
        // Opset 1 takes the sizes as an operand or an attribute, 2 to 12 as an attribute.
        im.expect_inputs(1, im.opset() < 2 ? 2 : 1);
        if (im.has("split") && im.inputs().size() > 1)
            im.fail("gives the split sizes both as an input and an attribute");
        if (im.has("split"))
            im.inputs().push_back(im.ints_constant("split", im.attr("split").ints));
    }
    const int64_t axis =
        normalize_axis(im.source().attr_int("axis", 0), im.input_rank(0), im.where());
    im.set("axis", Attribute::of_int(axis));
    if (im.has("num_outputs")) {
        if (im.inputs().size() > 1 && im.inputs()[1] != kNoValue)
            im.fail("takes the 'split' input or the 'num_outputs' attribute, not both");
        const int64_t n = im.attr("num_outputs").i;
        if (n < 1 || n != static_cast<int64_t>(im.outputs().size()))
            im.fail("num_outputs " + std::to_string(n) + " differs from the " +
                    std::to_string(im.outputs().size()) + " outputs");
        im.inputs().resize(1);
        im.inputs().push_back(
            im.ints_constant("split", split_chunks(im, im.input_value(0).shape[axis], n)));
    }
}

void import_slice(OpImport& im) {
    if (im.opset() >= 10) {
        im.expect_inputs(3, 5);
        return;
    }
    im.expect_inputs(1, 1);
    if (!im.has("starts") || !im.has("ends"))
        im.fail("attributes 'starts' and 'ends' are required");
    for (const char* key : {"starts", "ends", "axes"})
        if (im.has(key))
            im.inputs().push_back(im.ints_constant(key, im.attr(key).ints));
}

void import_squeeze(OpImport& im) {
    const bool un = im.op() == Op::Unsqueeze;
    if (im.opset() < 13) {
        im.expect_inputs(1, 1);
        if (un && !im.has("axes"))
            im.fail("attribute 'axes' is required");
        if (im.has("axes"))
            im.inputs().push_back(im.ints_constant("axes", im.attr("axes").ints));
    } else if (un) {
        im.expect_inputs(2, 2);
    }
}

// Opset 18's axes operand: the pads of the listed axes become pads of every axis (0 for the
// others), so the canonical Pad has no axes.
void fold_pad_axes(OpImport& im) {
    std::vector<ValueId>& ins = im.inputs();
    const TensorData* axes_t = im.known_value(ins[3]);
    const TensorData* pads_t = im.known_value(ins[1]);
    if (!pads_t || !axes_t)
        im.fail_not_constant(pads_t ? 3 : 1, pads_t ? "axes" : "pads");
    const int64_t rank = im.input_rank(0);
    const std::vector<int64_t> axes = int_elements(*axes_t, "axes", im.where());
    const std::vector<int64_t> pads = int_elements(*pads_t, "pads", im.where());
    const int64_t n = static_cast<int64_t>(axes.size());
    if (static_cast<int64_t>(pads.size()) != 2 * n)
        im.fail(std::to_string(pads.size()) + " pads for " + std::to_string(n) + " axes");
    std::vector<int64_t> full(2 * rank, 0);
    std::vector<bool> seen(rank, false);
    for (int64_t i = 0; i < n; ++i) {
        const int64_t a = normalize_axis(axes[i], rank, im.where());
        if (seen[a])
            im.fail("axis " + std::to_string(axes[i]) + " is repeated in axes");
        seen[a] = true;
        full[a] = pads[i];
        full[a + rank] = pads[i + n];
    }
    ins[1] = im.ints_constant("pads", full);
    ins.resize(3);
}

void import_pad(OpImport& im) {
    if (im.opset() >= 11 && im.opset() < 18)
        im.expect_inputs(2, 3);
    if (im.opset() < 11) {
        im.expect_inputs(1, 1);
        const char* key = im.opset() < 2 ? "paddings" : "pads"; // renamed in opset 2
        if (!im.has(key))
            im.fail(std::string("attribute '") + key + "' is required");
        im.inputs().push_back(im.ints_constant("pads", im.attr(key).ints));
        im.inputs().push_back(
            im.constant("value", TensorData::scalar(im.source().attr_float("value", 0.0f))
                                     .cast(im.input_value(0).dtype)));
    }
    const std::string mode = im.source().attr_string("mode", "constant");
    if (!known_pad_mode(mode) || (mode == "wrap" && im.opset() < 19))
        im.fail("unsupported pad mode '" + mode + "'");
    im.keep("mode", Attribute::of_string("constant"));
    std::vector<ValueId>& ins = im.inputs();
    if (ins.size() > 3 && ins[3] != kNoValue)
        fold_pad_axes(im);
    while (ins.size() > 1 && ins.back() == kNoValue)
        ins.pop_back();
}

// Inference: ratio and training_mode do not matter (training_mode must be false, or the ratio a
// constant 0: then training drops nothing and scales by 1, as torch's F.dropout(x, p=0.0) with
// its default training=True exports, in torchvision's Swin attention).
void import_dropout(OpImport& im) {
    if (im.opset() < 12)
        im.expect_inputs(1, 1);
    std::vector<ValueId>& ins = im.inputs();
    if (ins.size() > 2 && ins[2] != kNoValue) {
        // The messages name a non-constant operand as --bind's callers look for it.
        const TensorData* mode = im.known_value(ins[2]);
        if (!mode)
            im.fail_not_constant(2, "training_mode");
        if (mode->numel() != 1)
            im.fail("training_mode must be a scalar");
        if (mode->as_i64()[0] != 0) {
            const char* unsupported =
                "training_mode=true is not supported (unless the ratio is a constant 0)";
            if (ins[1] == kNoValue)
                im.fail(unsupported); // the default ratio, 0.5
            const TensorData* ratio = im.known_value(ins[1]);
            if (!ratio)
                im.fail("ratio '" + im.input_value(1).name +
                        "' must be a compile-time constant when training_mode is true");
            if (ratio->numel() != 1 || ratio->cast(DType::F64).data<double>()[0] != 0.0)
                im.fail(unsupported);
        }
    }
    ins.resize(1);
}

// ---- kernels ----

te::PadMode pad_mode(const std::string& mode, const std::string& where) {
    if (mode == "constant")
        return te::PadMode::Constant;
    if (mode == "edge")
        return te::PadMode::Edge;
    if (mode == "reflect")
        return te::PadMode::Reflect;
    throw UserError() << where << ": unsupported pad mode '" << mode << "'";
}

void reshape_kernel(NodeKernel& k) { k.set(te::reshape(k.in(0), k.output_value().shape)); }

void concat_kernel(NodeKernel& k) {
    std::vector<te::Tensor> xs;
    for (size_t i = 0; i < k.node().inputs.size(); ++i)
        xs.push_back(k.in(i));
    k.set(te::concat(xs, k.node().attr_int("axis", 0)));
}

void split_kernel(NodeKernel& k) {
    const Node& n = k.node();
    const Shape& in = k.input_value(0).shape;
    const int64_t axis =
        normalize_axis(n.attr_int("axis", 0), static_cast<int64_t>(in.size()), k.where());
    const std::vector<int64_t> sizes = split_sizes(
        in, axis, k.static_ints(1), n.input(1) != kNoValue, n.outputs.size(), k.where());
    const std::vector<te::Tensor> parts = te::split(k.in(0), sizes, axis);
    for (size_t i = 0; i < parts.size(); ++i)
        k.set(parts[i], i);
}

// Wrap padding (te::pad has no such mode): each output index reads the input periodically.
te::Tensor wrap_pad(const te::Tensor& x, const std::vector<int64_t>& pads, const Shape& out) {
    const size_t rank = out.size();
    return te::compute(
        out,
        [&](const std::vector<te::Var>& i) {
            std::vector<te::Expr> at;
            for (size_t d = 0; d < rank; ++d) {
                const int64_t dim = x.shape()[d];
                // (i - pad) mod dim with a non-negative dividend: i + (-pad mod dim).
                const int64_t shift = ((-pads[d]) % dim + dim) % dim;
                at.push_back(dim == 1 ? te::Expr(int64_t(0))
                                      : (te::Expr(i[d]) + te::Expr(shift)) % te::Expr(dim));
            }
            return x(at);
        },
        "pad_wrap");
}

void pad_kernel(NodeKernel& k) {
    const std::vector<int64_t> pads = k.static_ints(1);
    if (k.node().attr_string("mode", "constant") == "wrap") {
        k.set(wrap_pad(k.in(0), pads, k.output_value().shape));
        return;
    }
    const te::PadMode mode = pad_mode(k.node().attr_string("mode", "constant"), k.where());
    const size_t rank = k.output_value().shape.size();
    std::vector<int64_t> before(pads.begin(), pads.begin() + rank);
    std::vector<int64_t> after(pads.begin() + rank, pads.end());
    const te::Expr runtime_value = k.runtime_scalar(2);
    if (runtime_value.defined() && mode == te::PadMode::Constant)
        k.set(te::pad(k.in(0), before, after, runtime_value));
    else
        k.set(te::pad(k.in(0), before, after, k.static_scalar(2).value_or(0.0), mode));
}

void expand_kernel(NodeKernel& k) {
    const te::Tensor in = k.in(0);
    const Shape target = k.output_value().shape;
    k.set(te::compute(
        target,
        [&](const std::vector<te::Var>& i) {
            std::vector<te::Expr> idx;
            const auto& s = in.shape();
            for (size_t d = 0; d < s.size(); ++d)
                idx.push_back(s[d] == 1 ? te::Expr(0) : te::Expr(i[target.size() - s.size() + d]));
            return in(idx);
        },
        "expand"));
}

// Inference: the data unchanged, the mask all true.
void dropout_kernel(NodeKernel& k) {
    k.set(k.in(0));
    if (k.node().outputs.size() > 1 && k.node().outputs[1] != kNoValue)
        k.set(te::full(k.output_value(1).shape, ir::make_one(ir::DataType::boolean())), 1);
}

// ---- Tile -------------------------------------------------------------------------------------

Shape tile_shape(const Shape& in, const std::vector<int64_t>& repeats, const std::string& where) {
    if (repeats.size() != in.size())
        throw UserError() << where << ": " << repeats.size() << " repeats for rank " << in.size();
    Shape out(in.size());
    for (size_t d = 0; d < in.size(); ++d) {
        if (repeats[d] < 0)
            throw UserError() << where << ": negative repeat " << repeats[d];
        out[d] = in[d] * repeats[d];
    }
    return out;
}

EvalOutputs eval_tile(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    const std::vector<int64_t> reps = int_elements(require_input(in, 1, where), "repeats", where);
    TensorData out(x.dtype(), tile_shape(x.shape(), reps, where));
    const std::vector<int64_t> xs = contiguous_strides(x.shape());
    const size_t es = dtype_size(x.dtype());
    std::vector<int64_t> idx(out.rank(), 0);
    for (int64_t o = 0; o < out.numel(); ++o, next_index(idx, out.shape())) {
        int64_t src = 0;
        for (int64_t d = 0; d < x.rank(); ++d)
            src += (idx[d] % x.shape()[d]) * xs[d];
        std::memcpy(out.raw() + o * es, x.raw() + src * es, es);
    }
    return {std::move(out)};
}

TypeList tile_types(const NodeTypes& t) {
    const Value& x = t.in(0, "input");
    t.dtype(t.in(1, "repeats"), {DType::I64}, "repeats");
    return {{x.dtype, tile_shape(x.shape, t.ints_of(1, "repeats"), t.where())}};
}

void tile_kernel(NodeKernel& k) {
    const te::Tensor x = k.in(0);
    k.set(te::compute(
        k.output_value().shape,
        [&](const std::vector<te::Var>& i) {
            std::vector<te::Expr> at;
            for (size_t d = 0; d < i.size(); ++d)
                at.push_back(x.shape()[d] == 1 ? te::Expr(int64_t(0))
                                               : te::Expr(i[d]) % te::Expr(x.shape()[d]));
            return x(at);
        },
        "tile"));
}

// ---- DepthToSpace, SpaceToDepth ----------------------------------------------------------------

// The block size and mode, checked against the input shape.
struct BlockSpec {
    int64_t b;
    bool crd; // "CRD": channel-major blocks; "DCR" (SpaceToDepth before opset 28): depth-major
};

BlockSpec block_spec(const Node& n, const Shape& in, const std::string& where) {
    const int64_t b = n.attr_int("blocksize", 0);
    if (b <= 0)
        throw UserError() << where << ": blocksize must be positive, got " << b;
    if (in.size() != 4)
        throw UserError() << where << ": input must have rank 4, got shape " << shape_str(in);
    const std::string mode = n.attr_string("mode", "DCR");
    if (mode != "DCR" && mode != "CRD")
        throw UserError() << where << ": mode must be DCR or CRD, got '" << mode << "'";
    if (n.op == Op::DepthToSpace && in[1] % (b * b) != 0)
        throw UserError() << where << ": " << in[1] << " channels do not split into blocks of " << b
                          << "x" << b;
    if (n.op == Op::SpaceToDepth && (in[2] % b != 0 || in[3] % b != 0))
        throw UserError() << where << ": spatial dims of " << shape_str(in)
                          << " are not multiples of blocksize " << b;
    return {b, mode == "CRD"};
}

Shape block_shape(Op op, const Shape& in, int64_t b) {
    if (op == Op::DepthToSpace)
        return {in[0], in[1] / (b * b), in[2] * b, in[3] * b};
    return {in[0], in[1] * b * b, in[2] / b, in[3] / b};
}

// The input channel of DepthToSpace output channel c at block offset (i, j), with C the output
// channel count: DCR reads depth-major blocks, CRD channel-major ones.
int64_t d2s_channel(const BlockSpec& s, int64_t c, int64_t i, int64_t j, int64_t C) {
    return s.crd ? (c * s.b + i) * s.b + j : (i * s.b + j) * C + c;
}

EvalOutputs eval_block(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    const BlockSpec s = block_spec(n, x.shape(), where);
    const Shape& xs = x.shape();
    TensorData out(x.dtype(), block_shape(n.op, xs, s.b));
    const Shape& os = out.shape();
    const size_t es = dtype_size(x.dtype());
    std::vector<int64_t> idx(4, 0);
    for (int64_t o = 0; o < out.numel(); ++o, next_index(idx, os)) {
        const int64_t nn = idx[0], c = idx[1], h = idx[2], w = idx[3];
        int64_t src;
        if (n.op == Op::DepthToSpace) {
            const int64_t xc = d2s_channel(s, c, h % s.b, w % s.b, os[1]);
            src = ((nn * xs[1] + xc) * xs[2] + h / s.b) * xs[3] + w / s.b;
        } else {
            const int64_t bb = s.b * s.b;
            const int64_t blk = s.crd ? c % bb : c / xs[1], xc = s.crd ? c / bb : c % xs[1];
            const int64_t xh = h * s.b + blk / s.b, xw = w * s.b + blk % s.b;
            src = ((nn * xs[1] + xc) * xs[2] + xh) * xs[3] + xw;
        }
        std::memcpy(out.raw() + o * es, x.raw() + src * es, es);
    }
    return {std::move(out)};
}

TypeList block_types(const NodeTypes& t) {
    const Value& x = t.in(0, "input");
    const BlockSpec s = block_spec(t.node(), x.shape, t.where());
    return {{x.dtype, block_shape(t.op(), x.shape, s.b)}};
}

void import_block(OpImport& im) {
    if (!im.has("blocksize"))
        im.fail("attribute 'blocksize' is missing");
    im.keep("blocksize", Attribute::of_int(0));
    im.keep("mode", Attribute::of_string("DCR"));
}

void block_kernel(NodeKernel& k) {
    const te::Tensor x = k.in(0);
    const BlockSpec s = block_spec(k.node(), x.shape(), k.where());
    const Shape os = k.output_value().shape;
    const int64_t b = s.b, C = x.shape()[1];
    const bool d2s = k.op() == Op::DepthToSpace;
    k.set(te::compute(
        os,
        [&](const std::vector<te::Var>& i) {
            const te::Expr c = i[1], h = i[2], w = i[3];
            if (d2s) {
                const te::Expr bi = h % te::Expr(b), bj = w % te::Expr(b);
                const te::Expr xc = s.crd ? (c * te::Expr(b) + bi) * te::Expr(b) + bj
                                          : (bi * te::Expr(b) + bj) * te::Expr(os[1]) + c;
                return x(te::Expr(i[0]), xc, h / te::Expr(b), w / te::Expr(b));
            }
            const te::Expr bb = te::Expr(b * b);
            const te::Expr blk = s.crd ? c % bb : c / te::Expr(C);
            const te::Expr xc = s.crd ? c / bb : c % te::Expr(C);
            return x(te::Expr(i[0]), xc, h * te::Expr(b) + blk / te::Expr(b),
                     w * te::Expr(b) + blk % te::Expr(b));
        },
        d2s ? "depth_to_space" : "space_to_depth"));
}

using K = Attribute::Kind;
using FK = FusionKind;

// A reshape-like op: the kernel only renames the elements.
OpDef reshape_op(Op op, EvalOutputs (*eval)(const Node&, const EvalInputs&, const std::string&),
                 TypeList (*types)(const NodeTypes&)) {
    return OpDef(op)
        .types(types)
        .moves_elements()
        .eval(eval)
        .fuses_as(FK::Injective)
        .builds(reshape_kernel);
}

} // namespace

} // namespace tessera::graph::detail

namespace tessera::graph::ops {

using namespace detail;

const OpDef Flatten = reshape_op(Op::Flatten, eval_flatten, flatten_types)
                          .onnx(1, 1, 1, 1, {{"axis", K::Int}})
                          .import_with(import_flatten);
const OpDef Reshape = reshape_op(Op::Reshape, eval_reshape, reshape_types)
                          .onnx(1, 1, 2, 1,
                                {{"shape", K::Ints, 1, 5},
                                 {"consumed_inputs", K::Ints, 1, 5},
                                 {"allowzero", K::Int, 14}})
                          .import_with(import_reshape)
                          .static_from(1);
const OpDef Squeeze = reshape_op(Op::Squeeze, eval_squeeze, squeeze_types)
                          .onnx(1, 1, 2, 1, {{"axes", K::Ints, 1, 13}})
                          .import_with(import_squeeze)
                          .static_from(1);
const OpDef Unsqueeze = reshape_op(Op::Unsqueeze, eval_unsqueeze, unsqueeze_types)
                            .onnx(1, 1, 2, 1, {{"axes", K::Ints, 1, 13}})
                            .import_with(import_squeeze)
                            .static_from(1);

const OpDef Transpose =
    OpDef(Op::Transpose)
        .onnx(1, 1, 1, 1, {{"perm", K::Ints}})
        .import_with([](OpImport& im) {
            im.set("perm", Attribute::of_ints(transpose_perm(im.source().attr_ints("perm"),
                                                             im.input_rank(0), im.where())));
        })
        .moves_elements()
        .types(transpose_types)
        .eval(eval_transpose)
        .fuses_as(FK::Injective)
        .builds([](NodeKernel& k) { k.set(te::transpose(k.in(0), k.node().attr_ints("perm"))); });

const OpDef Concat = OpDef(Op::Concat)
                         .onnx(1, 1, OpDef::kAnyCount, 1, {{"axis", K::Int}})
                         .import_with(import_axis)
                         .moves_elements()
                         .types(concat_types)
                         .eval(eval_concat)
                         .fuses_as(FK::Injective)
                         .builds(concat_kernel);

// Several outputs: one kernel per output would duplicate the reads, so Split stays alone.
const OpDef Split =
    OpDef(Op::Split)
        .onnx(1, 1, 2, OpDef::kAnyCount,
              {{"axis", K::Int}, {"split", K::Ints, 1, 13}, {"num_outputs", K::Int, 18}})
        .import_with(import_split)
        .moves_elements()
        .types(split_types)
        .eval(eval_split)
        .fuses_as(FK::Opaque)
        .static_from(1)
        .builds(split_kernel);

const OpDef Slice =
    OpDef(Op::Slice)
        .onnx(1, 1, 5, 1,
              {{"starts", K::Ints, 1, 10}, {"ends", K::Ints, 1, 10}, {"axes", K::Ints, 1, 10}})
        .import_with(import_slice)
        .moves_elements()
        .types(slice_types)
        .eval(eval_slice)
        .fuses_as(FK::Injective)
        .static_from(1)
        .builds([](NodeKernel& k) {
            k.set(te::slice(k.in(0), k.static_ints(1), k.static_ints(2), k.static_ints(3),
                            k.static_ints(4)));
        });

const OpDef Gather = OpDef(Op::Gather)
                         .onnx(1, 2, 2, 1, {{"axis", K::Int}})
                         .import_with(import_axis)
                         .moves_elements()
                         .types(gather_types)
                         .eval(eval_gather)
                         .fuses_as(FK::Injective)
                         .builds([](NodeKernel& k) {
                             k.set(te::gather(k.in(0), k.in(1), k.node().attr_int("axis", 0)));
                         });

const OpDef Expand = OpDef(Op::Expand)
                         .onnx(8, 2, 2, 1)
                         .moves_elements()
                         .types(expand_types)
                         .eval(eval_expand)
                         .fuses_as(FK::Injective)
                         .static_from(1)
                         .builds(expand_kernel);

const OpDef Pad = OpDef(Op::Pad)
                      .onnx(1, 1, 4, 1,
                            {{"mode", K::String},
                             {"paddings", K::Ints, 1, 2},
                             {"pads", K::Ints, 2, 11},
                             {"value", K::Float, 1, 11}})
                      .import_with(import_pad)
                      .types(pad_types)
                      .eval(eval_pad)
                      .fuses_as(FK::Injective)
                      .static_from(1)
                      .runtime_scalars_from_operand(2)
                      .builds(pad_kernel);

const OpDef Tile = OpDef(Op::Tile)
                       .onnx(1, 2, 3, 1)
                       .import_with(import_tile)
                       .moves_elements()
                       .types(tile_types)
                       .eval(eval_tile)
                       .fuses_as(FK::Injective)
                       .static_from(1)
                       .builds(tile_kernel);

const OpDef DepthToSpace = OpDef(Op::DepthToSpace)
                               .onnx(1, 1, 1, 1, {{"blocksize", K::Int}, {"mode", K::String, 11}})
                               .import_with(import_block)
                               .moves_elements()
                               .types(block_types)
                               .eval(eval_block)
                               .fuses_as(FK::Injective)
                               .named("depth_to_space")
                               .builds(block_kernel);

const OpDef SpaceToDepth = OpDef(Op::SpaceToDepth)
                               .onnx(1, 1, 1, 1, {{"blocksize", K::Int}, {"mode", K::String, 28}})
                               .import_with(import_block)
                               .moves_elements()
                               .types(block_types)
                               .eval(eval_block)
                               .fuses_as(FK::Injective)
                               .named("space_to_depth")
                               .builds(block_kernel);

const OpDef Identity = OpDef(Op::Identity)
                           .onnx(1, 1, 1, 1)
                           .moves_elements()
                           .types(like_input)
                           .eval(eval_identity)
                           .fuses_as(FK::Elementwise)
                           .builds([](NodeKernel& k) { k.set(k.in(0)); });

const OpDef Dropout =
    OpDef(Op::Dropout)
        .onnx(1, 1, 3, 2,
              {{"ratio", K::Float, 1, 12}, {"seed", K::Int, 12}, {"is_test", K::Int, 1, 7}})
        .import_with(import_dropout)
        .types(dropout_types)
        .eval(eval_dropout)
        .fuses_as(FK::Elementwise)
        .static_from(1)
        .builds(dropout_kernel);

} // namespace tessera::graph::ops
