// Reference kernels of the data-movement and index ops: reshapes, Transpose, Concat, Split,
// Slice, Gather, Shape, constants, Range, Expand, Pad, Dropout. All work on every dtype.
#include <algorithm>
#include <cmath>

#include "eval_ops.h"
#include "op_util.h"

namespace tessera::graph::detail {

void gather_elements(const TensorData& src, TensorData& dst, const std::vector<int64_t>& strides,
                     int64_t base) {
    TESSERA_CHECK(src.dtype() == dst.dtype()) << "gather_elements dtype mismatch";
    dispatch(src.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        const T* ps = src.data<T>();
        T* pd = dst.data<T>();
        for_each_index<1>(
            dst.shape(), {strides}, {base},
            [&](int64_t o, const std::array<int64_t, 1>& off) { pd[o] = ps[off[0]]; });
        return 0;
    });
}

// Axes from an optional input (index i) of the node.
static std::vector<int64_t> optional_ints(const EvalInputs& in, size_t i, const char* what,
                                          const std::string& where) {
    if (i >= in.size() || in[i] == nullptr)
        return {};
    return int_elements(*in[i], what, where);
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
        for (int64_t o = 0; o < outer; ++o)
            std::memcpy(out.raw() + (o * out_block + offset) * es, t->raw() + o * block * es,
                        static_cast<size_t>(block) * es);
        offset += block;
    }
    return {std::move(out)};
}

EvalOutputs eval_split(const Node& n, const EvalInputs& in, size_t num_outputs,
                       const std::string& where) {
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
    dispatch(s.dtype(), [&](auto tag) {
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
    if (mode != "constant" && mode != "reflect" && mode != "edge")
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

EvalOutputs eval_dropout(const Node& n, const EvalInputs& in, size_t num_outputs,
                         const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    EvalOutputs outs{x};
    if (num_outputs > 1) {
        TensorData mask(DType::Bool, x.shape());
        std::fill(mask.raw(), mask.raw() + mask.nbytes(), uint8_t(1));
        outs.push_back(std::move(mask));
    }
    return outs;
}

} // namespace tessera::graph::detail
