// The index ops: element selection by index tensors, index-valued reductions, prefix sums,
// scatters and top-k (Einsum is in einsum.cpp; Tile, DepthToSpace and SpaceToDepth, which only move
// elements, are in data_movement.cpp). Canonical forms (opset 17 names; the importer makes
// every attribute with a default explicit and normalizes axes to [0, rank)):
//   GatherElements(data, indices) axis
//   GatherND(data, indices) batch_dims
//   Size(data) -> i64 scalar: the element count, a compile-time value like Shape's
//   CumSum(x, axis) exclusive, reverse          axis compile-time
//   ArgMax(data), ArgMin(data) axis, keepdims, select_last_index -> i64
//   ScatterND(data, indices, updates) reduction ("none", "add", "mul"; "max", "min" from 18)
//   TopK(X, K) axis, largest, sorted -> values, i64 indices; K compile-time (opset 1's `k`
//     attribute becomes the operand); ties go to the lower index, and the result is always
//     sorted (ONNX leaves the order unspecified for sorted = 0, so sorting is one valid order)
// NonZero and Unique are refused at import: their output shapes depend on the data, and
// tessera compiles for static shapes.
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <numeric>

#include "../op_util.h"
#include "eval_util.h"
#include "node_kernel.h"
#include "node_types.h"
#include "op_import.h"
#include "tessera/ir/op.h"
#include "tessera/te/ops_extra.h"

namespace tessera::graph::detail {

namespace {

using te::Expr;
using te::Var;

// ---- shared helpers -------------------------------------------------------------------------

const std::initializer_list<DType> kIndexTypes = {DType::I64, DType::I32};

// An index read from an index tensor, made non-negative; an error outside [-dim, dim).
int64_t checked_index(int64_t i, int64_t dim, const std::string& where) {
    if (i < -dim || i >= dim)
        throw UserError() << where << ": index " << i << " is out of range for extent " << dim;
    return i < 0 ? i + dim : i;
}

// Extents before and after `axis` (outer, inner) for line-wise loops along the axis.
std::pair<int64_t, int64_t> outer_inner(const Shape& s, int64_t axis) {
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
        outer *= s[d];
    for (size_t d = axis + 1; d < s.size(); ++d)
        inner *= s[d];
    return {outer, inner};
}

// The axes of a kernel's output as Exprs.
std::vector<Expr> exprs(const std::vector<Var>& v) { return {v.begin(), v.end()}; }

// A runtime index of an index tensor as i64, wrapped when negative and clamped into [0, dim):
// the evaluator rejects an index out of range, a kernel must not read outside the tensor.
Expr wrapped_index(Expr k, int64_t dim) {
    k = ir::cast(ir::DataType::i64(), k);
    k = ir::select(k < Expr(int64_t(0)), k + Expr(dim), k);
    return ir::min(ir::max(k, Expr(int64_t(0))), Expr(dim - 1));
}

// The node's `axis` attribute normalized against x (the importer normalizes it; graphs built
// otherwise may not).
size_t kernel_axis(const NodeKernel& k, const te::Tensor& x, int64_t def) {
    return static_cast<size_t>(
        normalize_axis(k.node().attr_int("axis", def), static_cast<int64_t>(x.ndim()), k.where()));
}

// The normalized `axis` attribute (import): an error naming the node when out of range.
void normalize_axis_attr(OpImport& im, const char* key, int64_t def) {
    im.set(key, Attribute::of_int(
                    normalize_axis(im.source().attr_int(key, def), im.input_rank(0), im.where())));
}

// ---- GatherElements ---------------------------------------------------------------------------

void check_gather_elements(const Shape& data, const Shape& idx, int64_t axis,
                           const std::string& where) {
    if (data.empty() || idx.size() != data.size())
        throw UserError() << where << ": indices " << shape_str(idx)
                          << " must have the rank (>= 1) of data " << shape_str(data);
    for (size_t d = 0; d < data.size(); ++d)
        if (static_cast<int64_t>(d) != axis && idx[d] > data[d])
            throw UserError() << where << ": indices " << shape_str(idx) << " exceed data "
                              << shape_str(data) << " in dim " << d;
}

EvalOutputs eval_gather_elements(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    const TensorData& idx = require_input(in, 1, where);
    require_dtype(idx, kIndexTypes, "indices", where);
    const int64_t axis = normalize_axis(n.attr_int("axis", 0), x.rank(), where);
    check_gather_elements(x.shape(), idx.shape(), axis, where);
    const std::vector<int64_t> ids = idx.as_i64();
    const std::vector<int64_t> xs = contiguous_strides(x.shape());
    TensorData out(x.dtype(), idx.shape());
    const size_t es = dtype_size(x.dtype());
    std::vector<int64_t> at(idx.rank(), 0);
    for (int64_t o = 0; o < out.numel(); ++o, next_index(at, idx.shape())) {
        int64_t src = 0;
        for (int64_t d = 0; d < x.rank(); ++d)
            src += (d == axis ? checked_index(ids[o], x.shape()[d], where) : at[d]) * xs[d];
        std::memcpy(out.raw() + o * es, x.raw() + src * es, es);
    }
    return {std::move(out)};
}

TypeList gather_elements_types(const NodeTypes& t) {
    const Value& x = t.in(0, "data");
    const Value& idx = t.in(1, "indices");
    t.dtype(idx, kIndexTypes, "indices");
    t.min_rank(x, 1, "data");
    const int64_t axis = normalize_axis(t.node().attr_int("axis", 0), x.shape.size(), t.where());
    check_gather_elements(x.shape, idx.shape, axis, t.where());
    return {{x.dtype, idx.shape}};
}

void gather_elements_kernel(NodeKernel& k) {
    const te::Tensor x = k.in(0), idx = k.in(1);
    const size_t axis = kernel_axis(k, x, 0);
    k.set(te::compute(
        idx.shape(),
        [&](const std::vector<Var>& i) {
            std::vector<Expr> at = exprs(i);
            at[axis] = wrapped_index(idx(exprs(i)), x.shape()[axis]);
            return x(at);
        },
        "gather_elements"));
}

// ---- GatherND ---------------------------------------------------------------------------------

// The output shape: indices.shape[:-1] + data.shape[batch_dims + last:], last =
// indices.shape[-1] (the length of each index tuple).
Shape gather_nd_shape(const Shape& data, const Shape& idx, int64_t b, const std::string& where) {
    const int64_t r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(idx.size());
    if (r < 1 || q < 1)
        throw UserError() << where << ": data " << shape_str(data) << " and indices "
                          << shape_str(idx) << " must have rank >= 1";
    if (b < 0 || b >= std::min(r, q))
        throw UserError() << where << ": batch_dims " << b << " must be in [0, " << std::min(r, q)
                          << ")";
    for (int64_t d = 0; d < b; ++d)
        if (data[d] != idx[d])
            throw UserError() << where << ": batch dims of data " << shape_str(data)
                              << " and indices " << shape_str(idx) << " differ";
    const int64_t last = idx[q - 1];
    if (last < 1 || last > r - b)
        throw UserError() << where << ": index tuples of length " << last << " do not fit data "
                          << shape_str(data) << " after " << b << " batch dims";
    Shape out(idx.begin(), idx.end() - 1);
    out.insert(out.end(), data.begin() + b + last, data.end());
    return out;
}

EvalOutputs eval_gather_nd(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    const TensorData& idx = require_input(in, 1, where);
    require_dtype(idx, kIndexTypes, "indices", where);
    const int64_t b = n.attr_int("batch_dims", 0);
    TensorData out(x.dtype(), gather_nd_shape(x.shape(), idx.shape(), b, where));
    const int64_t last = idx.shape().back();
    const std::vector<int64_t> ids = idx.as_i64();
    const std::vector<int64_t> xs = contiguous_strides(x.shape());
    // Each index tuple selects a contiguous slice of `slice` elements of data.
    int64_t slice = 1;
    for (int64_t d = b + last; d < x.rank(); ++d)
        slice *= x.shape()[d];
    const Shape tuples(idx.shape().begin(), idx.shape().end() - 1);
    const size_t es = dtype_size(x.dtype());
    std::vector<int64_t> at(tuples.size(), 0);
    const int64_t count = shape_numel(tuples);
    for (int64_t t = 0; t < count; ++t, next_index(at, tuples)) {
        int64_t src = 0;
        for (int64_t d = 0; d < b; ++d)
            src += at[d] * xs[d];
        for (int64_t j = 0; j < last; ++j)
            src += checked_index(ids[t * last + j], x.shape()[b + j], where) * xs[b + j];
        std::memcpy(out.raw() + t * slice * es, x.raw() + src * es,
                    static_cast<size_t>(slice) * es);
    }
    return {std::move(out)};
}

TypeList gather_nd_types(const NodeTypes& t) {
    const Value& x = t.in(0, "data");
    const Value& idx = t.in(1, "indices");
    t.dtype(idx, kIndexTypes, "indices");
    return {{x.dtype,
             gather_nd_shape(x.shape, idx.shape, t.node().attr_int("batch_dims", 0), t.where())}};
}

void gather_nd_kernel(NodeKernel& k) {
    const te::Tensor x = k.in(0), idx = k.in(1);
    const size_t b = static_cast<size_t>(k.node().attr_int("batch_dims", 0));
    const size_t q = idx.ndim();
    const int64_t last = idx.shape().back();
    k.set(te::compute(
        k.output_value().shape,
        [&](const std::vector<Var>& i) {
            // Output axes: the q - 1 tuple axes (the first b are batch axes), then the slice.
            std::vector<Expr> at(i.begin(), i.begin() + b);
            for (int64_t j = 0; j < last; ++j) {
                std::vector<Expr> tuple(i.begin(), i.begin() + (q - 1));
                tuple.push_back(Expr(j));
                at.push_back(wrapped_index(idx(tuple), x.shape()[b + j]));
            }
            at.insert(at.end(), i.begin() + (q - 1), i.end());
            return x(at);
        },
        "gather_nd"));
}

// ---- Size -------------------------------------------------------------------------------------

EvalOutputs eval_size(const Node& n, const EvalInputs& in, const std::string& where) {
    return {TensorData::scalar<int64_t>(require_input(in, 0, where).numel())};
}

TensorData size_value(const Node&, const std::vector<graph::Shape>& in) {
    return TensorData::scalar<int64_t>(shape_numel(in.at(0)));
}

TypeList size_types(const NodeTypes& t) {
    t.in(0, "data");
    return {{DType::I64, {}}};
}

// Like Shape's kernel: the count is known when the kernel is built.
void size_kernel(NodeKernel& k) {
    k.set(te::constant_table({},
                             {ir::make_const(k.out_type(), shape_numel(k.input_value(0).shape))}));
}

// ---- CumSum -----------------------------------------------------------------------------------

int64_t cumsum_axis(const std::vector<int64_t>& axis, int64_t rank, const std::string& where) {
    if (axis.size() != 1)
        throw UserError() << where << ": axis must be one integer, got " << axis.size();
    return normalize_axis(axis[0], rank, where);
}

EvalOutputs eval_cumsum(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    require_dtype(x, kNumeric, "x", where);
    const int64_t axis =
        cumsum_axis(int_elements(require_input(in, 1, where), "axis", where), x.rank(), where);
    const bool exclusive = n.attr_int("exclusive", 0) != 0;
    const bool reverse = n.attr_int("reverse", 0) != 0;
    // Plain variables, not a structured binding: lambdas below capture them (C++17).
    const std::pair<int64_t, int64_t> split = outer_inner(x.shape(), axis);
    const int64_t outer = split.first, inner = split.second;
    const int64_t dim = x.shape()[axis];
    TensorData out(x.dtype(), x.shape());
    visit_computed(x.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        const T* px = x.data<T>();
        T* po = out.data<T>();
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t j = 0; j < inner; ++j) {
                T acc = T(0);
                for (int64_t s = 0; s < dim; ++s) {
                    const int64_t a = reverse ? dim - 1 - s : s;
                    const int64_t at = (o * dim + a) * inner + j;
                    if (exclusive) {
                        po[at] = acc;
                        acc = static_cast<T>(acc + px[at]);
                    } else {
                        acc = static_cast<T>(acc + px[at]);
                        po[at] = acc;
                    }
                }
            }
        return 0;
    });
    return {std::move(out)};
}

TypeList cumsum_types(const NodeTypes& t) {
    const Value& x = t.in(0, "x");
    t.dtype(x, kNumeric, "x");
    t.min_rank(x, 1, "x");
    t.dtype(t.in(1, "axis"), kIndexTypes, "axis");
    cumsum_axis(t.ints_of(1, "axis"), x.shape.size(), t.where());
    return {{x.dtype, x.shape}};
}

// y[i] = sum over the axis of x where the position is before (or after, reversed) i: a
// quadratic reduction, which keeps it one compute stage that fuses like a reduction.
void cumsum_kernel(NodeKernel& k) {
    const te::Tensor x = k.in(0);
    const int64_t axis = cumsum_axis(k.static_ints(1), x.ndim(), k.where());
    const bool exclusive = k.node().attr_int("exclusive", 0) != 0;
    const bool reverse = k.node().attr_int("reverse", 0) != 0;
    const te::IterVar r = te::reduce_axis(x.shape()[axis], "r");
    k.set(te::compute(
        x.shape(),
        [&](const std::vector<Var>& i) {
            std::vector<Expr> at = exprs(i);
            at[axis] = r.var;
            const Expr a = Expr(i[axis]), s = Expr(r.var);
            const Expr in = reverse ? (exclusive ? s > a : s >= a) : (exclusive ? s < a : s <= a);
            return te::sum(ir::select(in, x(at), ir::make_zero(x.dtype())), {r});
        },
        "cumsum"));
}

// ---- ArgMax, ArgMin ---------------------------------------------------------------------------

// Whether a beats b for ArgMax (greater) or ArgMin (less); NaN beats every number, as in
// numpy's argmax and argmin, which the ONNX reference uses.
template <typename T> bool beats(T a, T b, bool is_max) {
    if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(b))
            return false;
        if (std::isnan(a))
            return true;
    }
    return is_max ? a > b : a < b;
}
template <typename T> bool same(T a, T b) {
    if constexpr (std::is_floating_point_v<T>)
        if (std::isnan(a) && std::isnan(b))
            return true;
    return a == b;
}

EvalOutputs eval_arg(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    require_dtype(x, kNumeric, "data", where);
    if (x.rank() == 0)
        throw UserError() << where << ": data must have rank >= 1";
    const int64_t axis = normalize_axis(n.attr_int("axis", 0), x.rank(), where);
    const bool keepdims = n.attr_int("keepdims", 1) != 0;
    const bool last = n.attr_int("select_last_index", 0) != 0;
    const bool is_max = n.op == Op::ArgMax;
    // Plain variables, not a structured binding: lambdas below capture them (C++17).
    const std::pair<int64_t, int64_t> split = outer_inner(x.shape(), axis);
    const int64_t outer = split.first, inner = split.second;
    const int64_t dim = x.shape()[axis];
    if (dim == 0)
        throw UserError() << where << ": reduction over an empty axis";
    TensorData out(DType::I64, reduced_shape(x.shape(), {axis}, keepdims));
    int64_t* po = out.data<int64_t>();
    visit_computed(x.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        const T* px = x.data<T>();
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t j = 0; j < inner; ++j) {
                int64_t best = 0;
                for (int64_t a = 1; a < dim; ++a) {
                    const T v = px[(o * dim + a) * inner + j], b = px[(o * dim + best) * inner + j];
                    if (beats(v, b, is_max) || (last && same(v, b)))
                        best = a;
                }
                po[o * inner + j] = best;
            }
        return 0;
    });
    return {std::move(out)};
}

TypeList arg_types(const NodeTypes& t) {
    const Value& x = t.in(0, "data");
    t.dtype(x, kNumeric, "data");
    t.min_rank(x, 1, "data");
    const Node& n = t.node();
    const int64_t axis = normalize_axis(n.attr_int("axis", 0), x.shape.size(), t.where());
    return {{DType::I64, reduced_shape(x.shape, {axis}, n.attr_int("keepdims", 1) != 0)}};
}

// Two stages: the extreme value m of each line, then the lowest (highest, for
// select_last_index) position where the line equals m. NaN is where kernel and evaluator may
// differ: the evaluator follows numpy (a NaN wins), the kernel the backend's max and min.
void arg_kernel(NodeKernel& k) {
    const te::Tensor x = k.in(0);
    const Node& n = k.node();
    const size_t axis = kernel_axis(k, x, 0);
    const bool keepdims = n.attr_int("keepdims", 1) != 0;
    const bool last = n.attr_int("select_last_index", 0) != 0;
    const bool is_max = n.op == Op::ArgMax;
    const Shape out = k.output_value().shape;
    const int64_t dim = x.shape()[axis];
    // x's index of output index i at position r along the axis.
    auto x_at = [&](const std::vector<Var>& i, Expr r) {
        std::vector<Expr> at;
        for (size_t d = 0, o = 0; d < x.ndim(); ++d) {
            if (d == axis) {
                at.push_back(r);
                o += keepdims ? 1 : 0;
            } else {
                at.push_back(i[o++]);
            }
        }
        return at;
    };
    const std::string name = is_max ? "argmax" : "argmin";
    const te::IterVar r1 = te::reduce_axis(dim, "r");
    const te::Tensor m = te::compute(
        out,
        [&](const std::vector<Var>& i) {
            const Expr v = x(x_at(i, r1.var));
            return is_max ? te::reduce_max(v, {r1}) : te::reduce_min(v, {r1});
        },
        name + "_value");
    const te::IterVar r2 = te::reduce_axis(dim, "r");
    k.set(te::compute(
        out,
        [&](const std::vector<Var>& i) {
            const Expr hit = ir::eq(x(x_at(i, r2.var)), m(exprs(i)));
            const Expr pos = Expr(r2.var);
            return last ? te::reduce_max(ir::select(hit, pos, Expr(int64_t(-1))), {r2})
                        : te::reduce_min(ir::select(hit, pos, Expr(dim)), {r2});
        },
        name));
}

void import_arg(OpImport& im) {
    normalize_axis_attr(im, "axis", 0);
    im.keep("keepdims", Attribute::of_int(1));
    im.keep("select_last_index", Attribute::of_int(0));
}

// ---- ScatterND --------------------------------------------------------------------------------

void check_scatter_nd(const Shape& data, const Shape& idx, const Shape& upd,
                      const std::string& where) {
    const int64_t r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(idx.size());
    if (r < 1 || q < 1)
        throw UserError() << where << ": data and indices must have rank >= 1";
    const int64_t k = idx[q - 1];
    if (k < 1 || k > r)
        throw UserError() << where << ": index tuples of length " << k << " do not fit data "
                          << shape_str(data);
    Shape want(idx.begin(), idx.end() - 1);
    want.insert(want.end(), data.begin() + k, data.end());
    if (upd != want)
        throw UserError() << where << ": updates " << shape_str(upd) << " must have shape "
                          << shape_str(want);
}

const char* const kScatterReductions[] = {"none", "add", "mul", "max", "min"};

EvalOutputs eval_scatter_nd(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    const TensorData& idx = require_input(in, 1, where);
    const TensorData& upd = require_input(in, 2, where);
    require_dtype(idx, {DType::I64}, "indices", where);
    require_dtype(x, kNumeric, "data", where);
    if (upd.dtype() != x.dtype())
        throw UserError() << where << ": updates are " << dtype_name(upd.dtype()) << ", data is "
                          << dtype_name(x.dtype());
    check_scatter_nd(x.shape(), idx.shape(), upd.shape(), where);
    const std::string red = n.attr_string("reduction", "none");
    const int64_t k = idx.shape().back();
    int64_t slice = 1;
    for (int64_t d = k; d < x.rank(); ++d)
        slice *= x.shape()[d];
    const std::vector<int64_t> ids = idx.as_i64();
    const std::vector<int64_t> xs = contiguous_strides(x.shape());
    const int64_t count = idx.numel() / k;
    TensorData out = x;
    visit_computed(x.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        T* po = out.data<T>();
        const T* pu = upd.data<T>();
        // Updates apply in index order: with repeated indices and no reduction the last wins.
        for (int64_t t = 0; t < count; ++t) {
            int64_t dst = 0;
            for (int64_t j = 0; j < k; ++j)
                dst += checked_index(ids[t * k + j], x.shape()[j], where) * xs[j];
            for (int64_t e = 0; e < slice; ++e) {
                T& o = po[dst + e];
                const T u = pu[t * slice + e];
                if (red == "add")
                    o = static_cast<T>(o + u);
                else if (red == "mul")
                    o = static_cast<T>(o * u);
                else if (red == "max")
                    o = std::max(o, u);
                else if (red == "min")
                    o = std::min(o, u);
                else
                    o = u;
            }
        }
        return 0;
    });
    return {std::move(out)};
}

TypeList scatter_nd_types(const NodeTypes& t) {
    const Value& x = t.in(0, "data");
    const Value& idx = t.in(1, "indices");
    const Value& upd = t.in(2, "updates");
    t.dtype(x, kNumeric, "data");
    t.dtype(idx, {DType::I64}, "indices");
    t.same_dtype(x, upd);
    check_scatter_nd(x.shape, idx.shape, upd.shape, t.where());
    const std::string red = t.node().attr_string("reduction", "none");
    if (std::find(std::begin(kScatterReductions), std::end(kScatterReductions), red) ==
        std::end(kScatterReductions))
        t.fail("unsupported reduction '" + red + "'");
    return {{x.dtype, x.shape}};
}

void import_scatter_nd(OpImport& im) {
    im.keep("reduction", Attribute::of_string("none"));
    const std::string red = im.source().attr_string("reduction", "none");
    const bool known = red == "none" || red == "add" || red == "mul" ||
                       (im.opset() >= 18 && (red == "max" || red == "min"));
    if (!known)
        im.fail("unsupported reduction '" + red + "'");
}

// The index tuple t (flat over indices.shape[:-1]) as indices' multi-index for element j.
std::vector<Expr> tuple_at(const te::Tensor& idx, Expr t, int64_t j) {
    const size_t q = idx.ndim();
    std::vector<Expr> at(q);
    at[q - 1] = Expr(j);
    for (size_t d = q - 1; d-- > 0;) {
        at[d] = t % Expr(idx.shape()[d]);
        t = t / Expr(idx.shape()[d]);
    }
    return at;
}

// updates' element for tuple t at the output's slice position (out axes k..r-1).
Expr update_at(const te::Tensor& upd, const te::Tensor& idx, Expr t, const std::vector<Var>& i,
               size_t k) {
    std::vector<Expr> at = tuple_at(idx, t, 0);
    at.pop_back();
    at.insert(at.end(), i.begin() + k, i.end());
    return upd(at);
}

// Whether index tuple t addresses the output element i.
Expr tuple_matches(const te::Tensor& idx, const te::Tensor& data, Expr t, const std::vector<Var>& i,
                   size_t k) {
    Expr all;
    for (size_t j = 0; j < k; ++j) {
        const Expr hit = ir::eq(wrapped_index(idx(tuple_at(idx, t, j)), data.shape()[j]), i[j]);
        all = j == 0 ? hit : ir::logical_and(all, hit);
    }
    return all;
}

// Each output element reduces over all index tuples: the ones that address it combine with the
// data (add: a sum; max, min: the extreme; none: the last one's update, as the evaluator applies
// them in order). mul has no product reduction: its factors are one select per tuple.
void scatter_nd_kernel(NodeKernel& k) {
    const te::Tensor data = k.in(0), idx = k.in(1), upd = k.in(2);
    const size_t kk = static_cast<size_t>(idx.shape().back());
    const int64_t count = te::num_elements(idx.shape()) / static_cast<int64_t>(kk);
    const std::string red = k.node().attr_string("reduction", "none");
    const ir::DataType dt = data.dtype();
    auto stage = [&](const std::string& name, auto body) {
        return te::compute(data.shape(), body, "scatter_nd_" + name);
    };
    if (red == "mul") {
        k.set(stage("mul", [&](const std::vector<Var>& i) {
            Expr y = data(exprs(i));
            for (int64_t t = 0; t < count; ++t)
                y = y * ir::select(tuple_matches(idx, data, Expr(t), i, kk),
                                   update_at(upd, idx, Expr(t), i, kk), ir::make_one(dt));
            return y;
        }));
        return;
    }
    const te::IterVar r = te::reduce_axis(count, "t");
    const Expr t = r.var;
    if (red == "none") {
        const te::Tensor last = stage("last", [&](const std::vector<Var>& i) {
            return te::reduce_max(
                ir::select(tuple_matches(idx, data, t, i, kk), t, Expr(int64_t(-1))), {r});
        });
        k.set(stage("none", [&](const std::vector<Var>& i) {
            const Expr l = last(exprs(i));
            const Expr at = ir::max(l, Expr(int64_t(0)));
            return ir::select(l >= Expr(int64_t(0)), update_at(upd, idx, at, i, kk),
                              data(exprs(i)));
        }));
        return;
    }
    const bool sum = red == "add", is_max = red == "max";
    const Expr identity = sum      ? ir::make_zero(dt)
                          : is_max ? ir::lowest_value(dt)
                                   : ir::highest_value(dt);
    const te::Tensor part = stage("part", [&](const std::vector<Var>& i) {
        const Expr u =
            ir::select(tuple_matches(idx, data, t, i, kk), update_at(upd, idx, t, i, kk), identity);
        return sum ? te::sum(u, {r}) : is_max ? te::reduce_max(u, {r}) : te::reduce_min(u, {r});
    });
    k.set(stage(red, [&](const std::vector<Var>& i) {
        const Expr x = data(exprs(i)), p = part(exprs(i));
        return sum ? x + p : is_max ? ir::max(x, p) : ir::min(x, p);
    }));
}

// ---- TopK -------------------------------------------------------------------------------------

int64_t topk_count(const std::vector<int64_t>& k, int64_t dim, const std::string& where) {
    if (k.size() != 1)
        throw UserError() << where << ": K must have one element, got " << k.size();
    if (k[0] < 0 || k[0] > dim)
        throw UserError() << where << ": K = " << k[0] << " is outside [0, " << dim << "]";
    return k[0];
}

EvalOutputs eval_topk(const Node& n, const EvalInputs& in, const std::string& where) {
    const TensorData& x = require_input(in, 0, where);
    require_dtype(x, kNumeric, "X", where);
    if (x.rank() == 0)
        throw UserError() << where << ": X must have rank >= 1";
    const int64_t axis = normalize_axis(n.attr_int("axis", -1), x.rank(), where);
    const int64_t dim = x.shape()[axis];
    const int64_t k = topk_count(int_elements(require_input(in, 1, where), "K", where), dim, where);
    const bool largest = n.attr_int("largest", 1) != 0;
    Shape os = x.shape();
    os[axis] = k;
    TensorData values(x.dtype(), os), indices(DType::I64, os);
    // Plain variables, not a structured binding: lambdas below capture them (C++17).
    const std::pair<int64_t, int64_t> split = outer_inner(x.shape(), axis);
    const int64_t outer = split.first, inner = split.second;
    int64_t* pi = indices.data<int64_t>();
    visit_computed(x.dtype(), [&](auto tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        const T* px = x.data<T>();
        T* pv = values.data<T>();
        std::vector<int64_t> order(dim);
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t j = 0; j < inner; ++j) {
                auto at = [&](int64_t a) { return px[(o * dim + a) * inner + j]; };
                std::iota(order.begin(), order.end(), int64_t(0));
                // Stable: equal values keep the lower index first.
                std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
                    return beats(at(a), at(b), largest);
                });
                for (int64_t s = 0; s < k; ++s) {
                    pv[(o * k + s) * inner + j] = at(order[s]);
                    pi[(o * k + s) * inner + j] = order[s];
                }
            }
        return 0;
    });
    EvalOutputs outs{std::move(values), std::move(indices)};
    outs.resize(n.outputs.size());
    return outs;
}

TypeList topk_types(const NodeTypes& t) {
    const Value& x = t.in(0, "X");
    t.dtype(x, kNumeric, "X");
    t.min_rank(x, 1, "X");
    t.dtype(t.in(1, "K"), {DType::I64}, "K");
    const int64_t axis = normalize_axis(t.node().attr_int("axis", -1), x.shape.size(), t.where());
    Shape os = x.shape;
    os[axis] = topk_count(t.ints_of(1, "K"), x.shape[axis], t.where());
    TypeList types = {{x.dtype, os}};
    if (t.num_outputs() > 1)
        types.push_back({DType::I64, os});
    return types;
}

void import_topk(OpImport& im) {
    if (im.opset() < 10) {
        im.expect_inputs(1, 1);
        if (!im.has("k"))
            im.fail("attribute 'k' is required");
        im.inputs().push_back(im.ints_constant("k", {im.attr("k").i}));
    } else {
        im.expect_inputs(2, 2);
    }
    normalize_axis_attr(im, "axis", -1);
    im.keep("largest", Attribute::of_int(1));
    im.keep("sorted", Attribute::of_int(1));
}

// By ranks, with no sort: an element's rank is the number of elements that come before it in
// the result (better, or equal at a lower index), so ranks are distinct; output position s
// takes the element of rank s. Quadratic in the axis extent.
void topk_kernel(NodeKernel& k) {
    const te::Tensor x = k.in(0);
    const size_t axis = kernel_axis(k, x, -1);
    const bool largest = k.node().attr_int("largest", 1) != 0;
    const int64_t dim = x.shape()[axis];
    const Shape os = k.output_value(0).shape;
    const Expr zero = Expr(int64_t(0)), one = Expr(int64_t(1));
    const te::IterVar rb = te::reduce_axis(dim, "b");
    const te::Tensor rank = te::compute(
        x.shape(),
        [&](const std::vector<Var>& i) {
            std::vector<Expr> at = exprs(i);
            at[axis] = rb.var;
            const Expr xb = x(at), xa = x(exprs(i));
            const Expr better = largest ? xb > xa : xb < xa;
            const Expr before =
                ir::logical_or(better, ir::logical_and(ir::eq(xb, xa), Expr(rb.var) < i[axis]));
            return te::sum(ir::select(before, one, zero), {rb});
        },
        "topk_rank");
    const te::IterVar ra = te::reduce_axis(dim, "a");
    const te::Tensor indices = te::compute(
        os,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> at = exprs(i);
            at[axis] = ra.var;
            return te::reduce_max(
                ir::select(ir::eq(rank(at), i[axis]), Expr(ra.var), Expr(int64_t(-1))), {ra});
        },
        "topk_order");
    k.set(te::compute(
        os,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> at = exprs(i);
            // Ranks are distinct, so a position always finds its element (the clamp keeps a
            // NaN-confused line in bounds).
            at[axis] = ir::max(indices(exprs(i)), zero);
            return x(at);
        },
        "topk"));
    // The indices output copies the order, so that no output is also read by another stage
    // (the tuner's sketches do not compute an output inside its consumer).
    if (k.node().outputs.size() > 1)
        k.set(te::compute(
                  os, [&](const std::vector<Var>& i) { return indices(exprs(i)); }, "topk_indices"),
              1);
}

// ---- refused ops ------------------------------------------------------------------------------

// NonZero and Unique: every step that meets the op gives the same one-line refusal.
[[noreturn]] void refuse_dynamic(const std::string& where) {
    throw UserError() << where
                      << " has a data-dependent output shape, which tessera does not "
                         "support";
}

using K = Attribute::Kind;
using FK = FusionKind;

OpDef refused(Op op, int since, int max_outputs, std::vector<AttrSpec> attrs) {
    return OpDef(op)
        .onnx(since, 1, 1, max_outputs, std::move(attrs))
        .import_with([](OpImport& im) { refuse_dynamic(im.where()); })
        .types([](const NodeTypes& t) -> TypeList { refuse_dynamic(t.where()); })
        .eval([](const Node&, const EvalInputs&, const std::string& where) -> EvalOutputs {
            refuse_dynamic(where);
        });
}

// ArgMax and ArgMin: one entry but for the op.
OpDef arg_op(Op op) {
    using K = Attribute::Kind;
    return OpDef(op)
        .onnx(1, 1, 1, 1,
              {{"axis", K::Int}, {"keepdims", K::Int}, {"select_last_index", K::Int, 12}})
        .import_with(import_arg)
        .types(arg_types)
        .eval(eval_arg)
        .fuses_as(FusionKind::Reduction)
        .builds(arg_kernel);
}

} // namespace

} // namespace tessera::graph::detail

namespace tessera::graph::ops {

using namespace detail;

const OpDef GatherElements =
    OpDef(Op::GatherElements)
        .onnx(11, 2, 2, 1, {{"axis", K::Int}})
        .import_with([](OpImport& im) { normalize_axis_attr(im, "axis", 0); })
        .moves_elements()
        .types(gather_elements_types)
        .eval(eval_gather_elements)
        .fuses_as(FK::Injective)
        .named("gather_elements")
        .builds(gather_elements_kernel);

const OpDef GatherND =
    OpDef(Op::GatherND)
        .onnx(11, 2, 2, 1, {{"batch_dims", K::Int, 12}})
        .import_with([](OpImport& im) { im.keep("batch_dims", Attribute::of_int(0)); })
        .moves_elements()
        .types(gather_nd_types)
        .eval(eval_gather_nd)
        .fuses_as(FK::Injective)
        .named("gather_nd")
        .builds(gather_nd_kernel);

const OpDef Size = OpDef(Op::Size)
                       .onnx(1, 1, 1, 1)
                       .moves_elements()
                       .types(size_types)
                       .eval(eval_size)
                       .from_types(size_value)
                       .static_from(0)
                       .builds(size_kernel);

const OpDef CumSum = OpDef(Op::CumSum)
                         .onnx(11, 2, 2, 1, {{"exclusive", K::Int}, {"reverse", K::Int}})
                         .import_with([](OpImport& im) {
                             im.keep("exclusive", Attribute::of_int(0));
                             im.keep("reverse", Attribute::of_int(0));
                         })
                         .types(cumsum_types)
                         .eval(eval_cumsum)
                         .fuses_as(FK::Reduction)
                         .static_from(1)
                         .builds(cumsum_kernel);

const OpDef ArgMax = arg_op(Op::ArgMax);
const OpDef ArgMin = arg_op(Op::ArgMin);

const OpDef ScatterND = OpDef(Op::ScatterND)
                            .onnx(11, 3, 3, 1, {{"reduction", K::String, 16}})
                            .import_with(import_scatter_nd)
                            .types(scatter_nd_types)
                            .eval(eval_scatter_nd)
                            .fuses_as(FK::Opaque)
                            .named("scatter_nd")
                            .builds(scatter_nd_kernel);

// Two outputs: Opaque.
const OpDef TopK = OpDef(Op::TopK)
                       .onnx(1, 1, 2, 2,
                             {{"k", K::Int, 1, 10},
                              {"axis", K::Int},
                              {"largest", K::Int, 11},
                              {"sorted", K::Int, 11}})
                       .import_with(import_topk)
                       .types(topk_types)
                       .eval(eval_topk)
                       .fuses_as(FK::Opaque)
                       .static_from(1)
                       .builds(topk_kernel);

const OpDef NonZero = refused(Op::NonZero, 9, 1, {});
const OpDef Unique = refused(Op::Unique, 11, 4, {{"axis", K::Int}, {"sorted", K::Int}});

} // namespace tessera::graph::ops
