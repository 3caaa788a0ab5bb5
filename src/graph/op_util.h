// Shape arithmetic shared by shape inference, the reference evaluator and the importer:
// broadcasting, axes, windows of convolution and pooling, Slice and Reshape resolution.
// Every function throws UserError prefixed with `where` (a node description) on bad input.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "tessera/graph/graph.h"

namespace tessera::graph::detail {

/// floor(a / b) and ceil(a / b) for b > 0 and any sign of a.
int64_t floor_div(int64_t a, int64_t b);
int64_t ceil_div(int64_t a, int64_t b);

/// axis in [-rank, rank) mapped to [0, rank).
int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& where);
/// Each axis normalized; duplicates are an error.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank,
                                    const std::string& where);

/// numpy (multidirectional) broadcast of the shapes; error names both.
Shape broadcast_shapes(const std::vector<Shape>& shapes, const std::string& where);
/// Strides (in elements) for reading `in` as a tensor of shape `out` that it broadcasts to:
/// 0 along broadcast dims. Pre: in broadcasts to out.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);
/// Row-major strides of s.
std::vector<int64_t> contiguous_strides(const Shape& s);

/// Spatial window parameters of a 2-D Conv or pool (canonical attributes).
struct Window2d {
    std::array<int64_t, 2> kernel{1, 1}, stride{1, 1}, dilation{1, 1};
    std::array<int64_t, 4> pads{0, 0, 0, 0}; // begin h, begin w, end h, end w
    bool ceil_mode = false;
};
/// Reads kernel_shape (or `kernel` when the node has none), strides, dilations, pads and
/// ceil_mode from a node's attributes and validates them (positive, right lengths).
Window2d window_of(const Node& n, const std::array<int64_t, 2>& kernel, const std::string& where);
/// Output extent of one spatial dim (ONNX rule; with ceil_mode a last window starting in the
/// end padding is dropped). Error when the window does not fit.
int64_t window_output_dim(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                          int64_t pad_begin, int64_t pad_end, bool ceil_mode,
                          const std::string& where);
/// "WHAT 'name' must be a compile-time constant", naming the graph inputs v is computed from
/// (v itself when it is one) and how to give their values at build time (--bind), so that a
/// user (and a script) knows what to bind when the value is computed from inputs.
std::string must_be_constant(const Graph& g, ValueId v, const std::string& what);

/// Taps start + k * dilation (k in [0, kernel)) before `end`: an average pool's divisor along
/// one dim with count_include_pad (end: the input's extent plus its end padding; a ceil-mode
/// window's overhang past it does not count).
int64_t taps_before(int64_t start, int64_t kernel, int64_t dilation, int64_t end);

/// One sliced axis: element i of the result reads start + i * step.
struct SliceAxis {
    int64_t start = 0, step = 1, count = 0;
};
/// ONNX Slice with clamping; the result has one entry per input dim (unsliced dims are whole).
std::vector<SliceAxis> resolve_slice(const Shape& in, const std::vector<int64_t>& starts,
                                     const std::vector<int64_t>& ends,
                                     const std::vector<int64_t>& axes,
                                     const std::vector<int64_t>& steps, const std::string& where);

/// The shape Reshape produces from `spec` (0 copies a dim unless allowzero, one -1 inferred).
Shape resolve_reshape(const Shape& in, const std::vector<int64_t>& spec, bool allowzero,
                      const std::string& where);

/// Output shape of a reduction over `axes` (normalized, possibly empty = all dims).
Shape reduced_shape(const Shape& in, const std::vector<int64_t>& axes, bool keepdims);

/// Flatten to [prod(in[:axis]), prod(in[axis:])]; axis in [-rank, rank].
Shape flatten_shape(const Shape& in, int64_t axis, const std::string& where);
/// Squeeze `axes` (each of extent 1), or every extent-1 dim when axes is empty.
Shape squeeze_shape(const Shape& in, const std::vector<int64_t>& axes, const std::string& where);
/// Insert extent-1 dims at `axes` (positions in the output).
Shape unsqueeze_shape(const Shape& in, const std::vector<int64_t>& axes, const std::string& where);
/// The explicit permutation (reversed dims when `perm` is empty), validated.
std::vector<int64_t> transpose_perm(const std::vector<int64_t>& perm, int64_t rank,
                                    const std::string& where);
/// Shape of Concat along `axis` (normalized here); every shape must agree elsewhere.
Shape concat_shape(const std::vector<Shape>& in, int64_t axis, const std::string& where);
/// Sizes of the Split parts: `split` when given (checked to sum to the extent), else
/// `num_outputs` equal parts (extent must divide).
std::vector<int64_t> split_sizes(const Shape& in, int64_t axis, const std::vector<int64_t>& split,
                                 bool has_split, size_t num_outputs, const std::string& where);
/// Shape of Gather: data[:axis] + indices + data[axis+1:].
Shape gather_shape(const Shape& data, const Shape& indices, int64_t axis);
/// [start, end) of Shape's start/end attributes, clamped to [0, rank].
std::pair<int64_t, int64_t> shape_range(const Node& n, int64_t rank);
/// Shape of Pad with `pads` ([begin..., end...]); negative results are errors.
Shape pad_shape(const Shape& in, const std::vector<int64_t>& pads, const std::string& where);
/// Number of Range elements: max(ceil((limit - start) / delta), 0); delta 0 is an error.
int64_t range_count(double start, double limit, double delta, const std::string& where);

/// Matmul shapes with numpy semantics; returns the result shape.
Shape matmul_shape(const Shape& a, const Shape& b, const std::string& where);

} // namespace tessera::graph::detail
