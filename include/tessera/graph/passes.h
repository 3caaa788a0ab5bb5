// Graph passes: rewrites of a Graph that keep what it computes (up to fp32 rounding) and make
// it cheaper to run. Each pass is a function `PassResult pass(Graph&)`; the straight-line
// pipeline that composes them is in pipeline.h.
//
// Common contract. Pre: the graph is shape-inferred (infer_shapes) and verifies. Post: it
// still verifies, every value a live node defines is typed, and graph inputs and outputs keep
// their order, names, dtypes and shapes (an output may become defined by a constant). Removed
// nodes leave holes (ids stay valid); dead nodes are left for eliminate_dead_code (except in
// simplify_algebra, which removes dead nodes between its rounds so that its single-use checks
// see the rewritten graph). Passes are deterministic: they visit nodes in topological or id
// order only.
#pragma once

#include <limits>
#include <string>

#include "tessera/graph/graph.h"

namespace tessera::graph {

/// What one pass did to a graph.
struct PassResult {
    std::string pass;     ///< the pass name, as used by PipelineOptions
    int changes = 0;      ///< rewrites made (0: the graph is unchanged)
    int nodes_before = 0; ///< live nodes before the pass
    int nodes_after = 0;  ///< live nodes after it
    std::string summary;  ///< short text, e.g. "folded 12 nodes into constants"
    double seconds = 0;   ///< wall time (filled by the pipeline)
};

/// "shape-inference": infer_shapes as a pass (changes = values whose type was set).
PassResult shape_inference_pass(Graph& g);

/// "empty-tensors" (every level, right after shape inference): a value with a zero extent
/// holds nothing, so it is known at compile time. Empty graph inputs are read as empty
/// constants (they stay inputs of the library); a node whose outputs are all empty becomes
/// constants; a node with an empty operand whose operands are all constant is evaluated
/// (a reduction of an empty set gives its identity); Concat drops empty operands and Split
/// its empty parts. Kernels never see a zero extent after it.
PassResult drop_empty_tensors(Graph& g);
/// True when a graph input or node output has a zero extent (what drop_empty_tensors handles).
bool has_empty_values(const Graph& g);

/// "constant-folding": every node whose inputs are all constants is evaluated with the
/// reference evaluator and its outputs replaced by constants; Shape of a statically shaped
/// value folds too, so Shape/Gather/Concat/Reshape chains and weight-only subgraphs collapse.
/// Nodes whose outputs would exceed kMaxFoldElements are kept.
PassResult fold_constants(Graph& g);
constexpr int64_t kMaxFoldElements = int64_t(1) << 26;

/// "dce": removes nodes no graph output depends on.
PassResult eliminate_dead_code(Graph& g);

/// "cse": merges equal constants (content hash, then byte equality) and then nodes with the
/// same op, attributes and inputs; the later node's uses read the earlier one's outputs.
PassResult eliminate_common_subexpressions(Graph& g);

/// "algebraic-simplification", to a fixpoint:
///  - identities: x+0, 0+x, x-0, x*1, 1*x, x/1 (when the constant does not broadcast x),
///    Identity, Dropout (inference), no-op Pad/Reshape/Transpose/Cast/Expand/Flatten/Squeeze;
///  - Transpose(Transpose(x)) composed (and dropped when the result is the identity),
///    Reshape-like chains (Reshape/Flatten/Squeeze/Unsqueeze) collapsed into one Reshape;
///  - BatchNormalization folded into a preceding Conv or Gemm (constant weights, the
///    producer used only by the BN) and otherwise turned into Mul + Add by constants;
///  - MatMul(A[M,K], B[K,N]) + bias[N] into Gemm;
///  - Pow(x, 2) and Pow(x, 3) of f32 x into x*x and x*x*x;
///  - decomposed LayerNorm (ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, optional
///    Mul scale, Add bias over the last axis) into LayerNormalization;
///  - GELU x * 0.5 * (1 + erf(x / sqrt 2)) (Div or Mul by 1/sqrt 2; either Mul order) into Gelu;
///  - exp(x - max(x)) / sum(exp(x - max(x))) (with or without the max) over one axis into
///    Softmax;
///  - AveragePool (no pads of its own, ceil_mode 0, dilations 1) of a constant Pad by zeros
///    of the rows and columns alone (each pad smaller than the window), read by the pool
///    only, into one AveragePool with those pads and count_include_pad 1.
PassResult simplify_algebra(Graph& g);

/// "quantized-ops" (-O1 and up, before constant folding): in a QDQ model, a Conv (2-D, group 1
/// or depthwise: group == C == K) reading DequantizeLinear(X u8, per-tensor constant scale and zero
/// point) and DequantizeLinear(W i8 constant, zero point 0, per tensor or per output channel)
/// becomes QConv(X, W, Offset, Scale) (ops.def), the 8-bit convolution: Scale[k] = x_scale *
/// w_scale[k] in f32, Offset[k] = bias[k] in units of Scale[k] - x_zero_point * sum(W[k]).
/// An i32 bias dequantized by exactly Scale[k] (what quantizers write) adds exactly; another
/// bias is rounded to the nearest unit. A depthwise conv folds only when its blocked form's
/// f32 sums are exact (R * S * 255 * 128 and every |Offset[k]| at most 2^24). A MatMul of such
/// operands (W [K, N], per tensor or per column), or a Gemm (alpha and beta 1, transA 0, its C
/// folded like a bias), becomes QMatMul with W packed into words at compile time. A MatMul of
/// two computed operands, each DequantizeLinear(u8, per-tensor constant scale and zero point),
/// of one rank with the same batch dimensions and an inner dimension that is a multiple of 4
/// (attention's), becomes QMatMulActivations on the bytes. The results are the dequantized
/// ops' up to f32 rounding; QuantizeLinear and the ops around stay as they are.
/// QuantizeLinear(MaxPool(DequantizeLinear(X u8, per tensor)), the same scale and zero point)
/// becomes MaxPool(X) on the bytes, exactly. A QuantizeLinear reading a product alone takes
/// its scale into the product's (Scale[k] / s); any other of f32 data and a per-tensor
/// constant scale s becomes QuantizeLinear(X * RN(1/s), 1): a multiply per element instead of
/// a division. Both round differently from dividing only where the quotient lies within an
/// f32 ulp or two of a half step: one quantization step there. Then a unit-scale
/// QuantizeLinear read only by a per-tensor DequantizeLinear of the same zero point z (a
/// conv's requantized output before a residual Add) becomes Clip(Round(X), lo - z, hi - z) *
/// scale, with lo..hi the byte type's range: exactly the same values, computed in f32.
PassResult fold_quantized_ops(Graph& g);

/// The element type the products (matmuls and convs) compute in: `--precision`. TF32 leaves
/// the graph f32 (as FP32 does); it allows a CUDA build's default schedules to run f32 matrix
/// products on tensor cores in TF32 (DefaultScheduleOptions::gpu_tf32).
/// FP16 stores the weights of matrix products and convolutions in f16 and leaves their
/// arithmetic, and every activation, f32 (convert_precision_fp16).
enum class Precision { FP32, BF16, TF32, FP16 };
/// "fp32", "bf16", "tf32", "fp16".
const char* precision_name(Precision p);
/// The precision named by precision_name(); throws UserError naming `text` otherwise.
Precision parse_precision(const std::string& text);

/// "precision" (bf16): a MatMul of an f32 value by f32 constant weights W [K, N] (K even, or
/// batched: X [B, M, K] by W [B, K, N], the Winograd pass's products), or
/// a Gemm (alpha and beta 1, transA 0, X of rank 2; transB's W transposed; its C becomes an
/// Add after), becomes MatMulBF16 on Cast(X to bf16) (one Cast per value, fused into its
/// producer by fusion) and W rounded to bf16 and packed into words of two rows at compile
/// time. Products of bf16 values are exact in f32 and are summed in f32: the results differ
/// from f32 ones by the operands' rounding (relative 2^-9 each). A MatMul of two computed f32
/// values of one rank with the same batch dimensions and an even reduction (attention's
/// products) becomes MatMulBF16NT on Casts of its left side and of its right side's transpose
/// (the input of the Transpose that made that side when it swapped the last two axes, else a
/// new Transpose). A ConvBlocked (not
/// depthwise) on constant weights becomes ConvBF16Blocked on PackBF16Blocked(X) (the input
/// rounded to bf16, padded and re-blocked once per value, pads and block; blocks of 32 input
/// channels, a matrix tile's row, when they divide the channels) with the weights packed into
/// words of two input channels. Runs after the layout pass (which makes the ConvBlocked) and
/// the Winograd pass (whose F(2x2) convs' batched products it converts, their transforms
/// staying f32; F(4x4)'s stay f32 whole, and bf16 builds give convs of 128 channels or more
/// F(2x2), pipeline.cpp). Other ops
/// stay f32.
PassResult convert_precision_bf16(Graph& g);

/// "precision" (fp16): each f32 constant of at least min_bytes (as f32) whose every reader
/// takes it as the weights of a product (input 1 of MatMul, Gemm, Conv or ConvBlocked: dense,
/// convolution and Winograd weights, after the layout and Winograd passes) and whose finite
/// values all lie within f16's range is rounded to f16 (to nearest, ties to even) and marked
/// Value::stored_f16:
/// a library stores it in half the bytes and its kernels widen it to f32 as they read it
/// (vcvtph2ps with F16C). Products and sums stay f32, so the results differ from f32's by the
/// weights' rounding alone (relative 2^-11 each, or absolute 2^-25 below f16's normal range).
/// A constant out of f16's range (a magnitude above 65504) stays f32, and so does a smaller
/// one: a weight that stays in a core's L2 cache gains nothing from half the bytes and pays
/// a conversion per vector its kernel loads (resnet18 on a Zen 4 core, 1 MiB of L2: the
/// 37 KiB stem and 0.6 MiB layer-1 Winograd weights 4-8% slower in f16, the 2.4 to 16 MiB
/// ones of layers 2 to 4 3-15% faster).
PassResult convert_precision_fp16(Graph& g, int64_t min_bytes = 0);

/// "horizontal-fusion": MatMuls that read one f32 value as their first operand and multiply it
/// by constant 2-D weights (attention's Q, K and V projections) become one MatMul by the
/// weights side by side and a Slice of the last axis per former MatMul, which fuses into its
/// consumers; when each of them was followed only by an Add of a constant bias over the last
/// axis, the biases merge into one Add too. A MatMul whose result is a graph output is left.
PassResult fuse_horizontally(Graph& g);

/// "padding-taps": a 2-D f32 Conv with constant weights whose taps read only padding for some
/// of its outputs (atrous convs at dilations near the image size: DeepLabV3's 12, 24 and 36 on
/// a 14x14 map; a 3x3 conv of a 1x1 map) computes without them. Along each spatial dim the
/// outputs fall into ranges that read the same taps inside the image; each pair of a row range
/// and a column range becomes a Conv of those taps (weights restricted to them, no padding) on
/// the Slice of the input they read (axes 2 and 3; the input itself when it is all of it), and
/// Concats along the columns (axis 3) and then the rows (axis 2) define the former output.
/// Taken when it is one part (a smaller conv), or at most 9 parts computing at most half the
/// products. Left: an output that reads padding only. The same sums less their zero terms.
PassResult drop_padding_taps(Graph& g);

/// "horizontal-conv-fusion": Convs of group 1 that read one f32 value with constant f32 weights
/// (and bias), the same attributes and the same filter shape but for the output channels (an
/// Inception block's 1x1 convolutions) become one Conv with the filters stacked along the
/// output channels (a missing bias as zeros) and a channel Slice (axis 1) per former Conv;
/// when each former Conv's only user was a Relu, one Relu follows the merged Conv. With
/// channel_block > 1 only branches whose channels fill whole blocks of that many merge, plus
/// at most one other, last: every slice but the last then starts and ends on a block of the
/// NCHW[x]c layout (the layout pass slices blocked values along whole channel blocks). A Conv
/// whose result (or Relu's) is a graph output is left.
PassResult fuse_convs_horizontally(Graph& g, int64_t channel_block);

/// "layout": moves CPU 2-D convolutions to the blocked channel layout NCHW[x]c, x = `block`
/// (ops.def: LayoutToBlocked, LayoutFromBlocked, ConvBlocked, MaxPoolBlocked,
/// AveragePoolBlocked):
///  - a Conv with constant f32 weights (and bias), groups 1 or depthwise (group == C, one
///    weight channel per group), and at least x / 2 output channels becomes ConvBlocked; its
///    weights become the constant [K/x, C/x, R, S, x(c), x(k)] and its bias [K/x, x], computed
///    at compile time. Channel counts that x does not divide are padded with zero channels
///    (zero weights, zero bias). A conv on fewer than x input channels (a first layer on RGB
///    or grey images) reads all C of them as one block instead ([N, 1, H, W, C], weights
///    [K/x, 1, R, S, C, x]) so that padding does not multiply its work; other grouped convs
///    stay NCHW;
///  - a MaxPool (no indices output, storage_order 0) whose input is blocked becomes
///    MaxPoolBlocked, an f32 AveragePool AveragePoolBlocked; a GlobalAveragePool whose input is
///    blocked becomes a ReduceMean over axes 2 and 3 (keepdims) of the blocked tensor, [N, C/x, 1,
///    1, x]; so does a ReduceMean over axes 2 and 3 (without keepdims, a Reshape of its NCHW result
///    follows);
///  - a Concat along the channels of 4-D f32 values, one of them blocked, whose parts but the
///    last have a multiple of x channels becomes the Concat of the blocked values along axis 1
///    (the channel blocks); one along the rows or columns, the Concat of the blocked values
///    along the same axis;
///  - a Slice of one blocked 4-D f32 value's channels (constant int64 start, end, axis 1, no
///    steps) that starts on a block and ends on one or at the channel count becomes the Slice
///    of the blocked value along axis 1 (whole channel blocks); one along rows and columns
///    only, the same Slice of the blocked value;
///  - a channel shuffle (Reshape [N, C, H, W] -> [N, g, C/g, H, W], Transpose perm
///    [0, 2, 1, 3, 4] and Reshape back, the first two read by the next alone) with g dividing
///    x and x dividing C runs in blocks: of a Concat of its g groups, each blocked or a channel
///    slice of a blocked value starting on a multiple of x/g, as a Concat along a last axis of
///    g lanes of each group's sub-blocks of x/g channels ([N, C/x, H, W, x/g, 1] views of the
///    blocked values), viewed as [N, C/x, H, W, x]; of another blocked value whose groups fill
///    whole blocks, as the same three ops on it ([N, C/x, H, W, x] viewed as [N, g, C/(gx), H,
///    W, g, x/g], transposed by [0, 2, 5, 3, 4, 6, 1]). A conv (group 1) reading a channel
///    slice of a blocked value that starts inside a block reads the blocks holding it when
///    they are as many as its own padded blocks, with zero weights outside the slice;
///  - Relu, LeakyRelu, Clip, Sigmoid, HardSigmoid, HardSwish, Tanh, Gelu, Neg and the
///    binary Add, Sub, Mul, Max, Min over a 4-D f32 NCHW output stay blocked when an operand
///    is already blocked; their other operands are same-shaped tensors (converted) or
///    constants varying along the channel axis only (re-laid out as [1, C/x, 1, 1, x]).
///    These ops keep the padding channels finite, which the zero weights of the next conv
///    need; Div, Pow, Log, Sqrt, Reciprocal stay NCHW;
///  - conversions appear only where NCHW data meets a blocked op (graph inputs, outputs and
///    other ops such as average pools or Flatten); one LayoutToBlocked per value, and
///    LayoutToBlocked(LayoutFromBlocked(b)) / LayoutFromBlocked(LayoutToBlocked(x)) pairs
///    cancel. Dead nodes are removed. Throws UserError when block < 1.
PassResult convert_layout_nchwc(Graph& g, int64_t block);
/// Which convolutions the winograd pass rewrites, and how.
struct WinogradOptions {
    /// The largest output tile m of F(m x m, 3 x 3): 4 or 2; 0 turns the pass off. Each conv
    /// takes the largest m <= max_tile that leaves it min_tiles tiles. F(2x2) does 2.25x fewer
    /// multiply-adds than the direct conv, F(4x4) 4x fewer, with larger transforms and about
    /// twice the rounding error (ResNet-18's logits: 3.1e-6 relative direct, 7.0e-6).
    int64_t max_tile = 4;
    /// The fewest input and output channels (padding included) of a conv rewritten in F(2x2)
    /// and in F(4x4): the transforms cost per channel what the matmul saves per channel pair,
    /// and F(4x4)'s larger transforms need more channels to pay (conv_bn_relu's 16- and
    /// 32-channel convs on a Zen 4 core: 0.303 ms direct, 0.248 in F(2x2)). F(4x4)'s rounding
    /// is also about twice F(2x2)'s.
    int64_t min_channels = 16;
    int64_t min_channels_f4 = 64;
    /// The most channels of a conv in F(4x4); above, F(2x2). bf16 builds set 127 (and
    /// min_channels 128): F(4x4)'s products stay f32 (the precision pass), F(2x2)'s run in
    /// bf16.
    int64_t max_channels_f4 = std::numeric_limits<int64_t>::max();
    /// The fewest output tiles (N * ceil(OH / m) * ceil(OW / m)): with few tiles the batched
    /// matmul streams the transformed weights (16/9 or 36/9 of the conv's) for little work.
    /// At 16, a one-image 7x7 stage (16 tiles of 2x2, padded to 8x8) and 14x14 one (16 of
    /// 4x4) qualify: on a Zen 4 core ResNet-18's 7x7x512 convs take 1.48 ms in F(2x2) against
    /// 2.16 direct (bf16: 0.79 against 1.10), its 14x14x256 ones 0.91 in F(4x4) against 1.06
    /// in F(2x2). (At 32, set on a Zen 1 when the direct 7x7 conv ran 8.6 ms and F(2x2) 9.9,
    /// before the batched matmul's register tiles, the 7x7 stage stayed direct.)
    int64_t min_tiles = 16;
};

/// "winograd" (-O3, after layout): a ConvBlocked with a 3x3 kernel, strides and dilations 1,
/// not depthwise, input blocks of `block` channels, constant weights, at least
/// opts.min_channels input and output channels (min_channels_f4 to max_channels_f4 for
/// F(4x4)) and min_tiles
/// output tiles becomes
/// WinogradInput -> MatMul with the weights transformed at compile time (U [E, C, K]) ->
/// WinogradOutput (which takes the bias), defining the conv's output value (ops.def). Throws
/// UserError for a max_tile other than 0, 2 and 4.
PassResult convert_conv_winograd(Graph& g, const WinogradOptions& opts = {});

/// The block used when a pipeline does not choose one (fixed, so that graph-level results do not
/// depend on the host). Builds and tuning choose layout_block_for(target vector width) instead.
constexpr int64_t kDefaultLayoutBlock = 8;

/// The NCHW[x]c block for a target whose widest f32 vector register has `vector_bits` bits: one
/// register of channels (16 with AVX-512, 8 with AVX2 and narrower, never below 8). A block of
/// 8 on an AVX-512 machine would leave half of every FMA unused: the convolutions of ResNet-18
/// ran at 200 GFLOP/s with NCHW8c and 270-310 GFLOP/s with NCHW16c on the same machine. The
/// block is part of the tasks' workloads, so tuning and build must use the same value for one
/// target (both call this with the target's width).
int64_t layout_block_for(int vector_bits);

} // namespace tessera::graph
