// The operator library: tensor-expression definitions of the operators models use.
//
// Each function builds compute tensors from its inputs and returns the result; it validates the
// shapes and parameters and throws UserError naming the op and the offending dims (these
// functions are called by the graph importer with shapes from user models). Results keep the
// inputs' dtype; binary ops require equal dtypes. Stage tensors are named after the op
// ("matmul", "conv2d_pad", ...); names are hints only.
//
// Padding (conv2d, pools, pad): a separate padded stage ("<op>_pad") computed with a Select on
// the bounds, whose input read uses clamped indices so that it never reads out of bounds (Select
// evaluates both branches). The main stage then reads the padded stage without conditions; a
// schedule may inline the pad stage back. No pad stage is made when all pads are 0.
//
// The CLI's spec registry (parse_op_spec, make_op) is in te/op_registry.h, included below.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tessera/te/op_registry.h"
#include "tessera/te/tensor.h"

namespace tessera::te {

// ---- matmul.cpp ------------------------------------------------------------------------------

/// Matrix product with numpy/ONNX MatMul semantics: a [..., M, K] x b [..., K, N] -> [..., M, N]
/// with the leading (batch) dims broadcast; a rank-1 a is [K] (the M dim is dropped from the
/// result), a rank-1 b is [K] (the N dim is dropped).
Tensor matmul(const Tensor& a, const Tensor& b);
/// matmul with the operands converted to `acc` (a scalar float type) before the products, so
/// that products and sums are in acc and the result has type acc: f16 operands summed in f32
/// (what tensor cores compute). Throws UserError for another acc and as matmul does.
Tensor matmul_accumulate(const Tensor& a, const Tensor& b, DataType acc);

/// Fully connected layer: x [..., K], w [N, K] (out features, in features), optional bias [N]
/// (pass Tensor() for none): y[..., n] = sum_k x[..., k] * w[n, k] + bias[n]. The bias is a
/// second stage "dense_bias".
Tensor dense(const Tensor& x, const Tensor& w, const Tensor& bias = Tensor());

/// Batched product: a [B, M, K] x b [B, K, N] -> [B, M, N]; either B may be 1 (broadcast).
Tensor batch_matmul(const Tensor& a, const Tensor& b);

// ---- gemm.cpp --------------------------------------------------------------------------------

/// ONNX Gemm: y = alpha * op(a) op(b) + beta * c, op(t) = t^T when trans. a and b are rank 2
/// (float); c is optional (Tensor()) and broadcasts to [M, N] ([N], [1, N], [M, 1], scalar...).
/// Stages "gemm" (the product) and "gemm_bias" (scale and c; absent when alpha = 1 and there
/// is no c). Throws UserError when the inner dims differ or c does not broadcast.
Tensor gemm(const Tensor& a, const Tensor& b, const Tensor& c, double alpha = 1.0,
            double beta = 1.0, bool trans_a = false, bool trans_b = false);

// ---- conv2d.cpp ------------------------------------------------------------------------------

struct Conv2dParams {
    int64_t stride_h = 1, stride_w = 1;
    int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
    int64_t dilation_h = 1, dilation_w = 1;
    int64_t groups = 1;
    /// Same stride, pad (all four sides), dilation in both dims.
    static Conv2dParams make(int64_t stride, int64_t pad, int64_t dilation = 1, int64_t groups = 1);
};

/// 2-D convolution (cross-correlation), NCHW input x [N, C, H, W], OIHW weights
/// w [K, C / groups, R, S], optional bias [K] (second stage "conv2d_bias"). Output
/// [N, K, OH, OW] with OH = (H + pad_top + pad_bottom - dilation_h * (R - 1) - 1) / stride_h + 1.
/// Throws UserError when C or K is not divisible by groups, the weight's channel dim is not
/// C / groups, a parameter is out of range or the output would be empty.
Tensor conv2d(const Tensor& x, const Tensor& w, const Conv2dParams& p,
              const Tensor& bias = Tensor());

/// Depthwise convolution: conv2d with groups = C and weights [C * multiplier, 1, R, S]
/// (p.groups is ignored).
Tensor depthwise_conv2d(const Tensor& x, const Tensor& w, const Conv2dParams& p,
                        const Tensor& bias = Tensor());

// ---- nchwc.cpp -------------------------------------------------------------------------------
// The blocked channel layout NCHW[x]c of CPU convolutions: channel c of an NCHW tensor lives at
// [n, c / x, h, w, c % x]; channel counts are padded to a multiple of x with zeros.

/// x [N, C, H, W] -> [N, ceil(C / block), H, W, block] (stage "layout_to_nchwc").
Tensor layout_to_nchwc(const Tensor& x, int64_t block);
/// x [N, CB, H, W, block] -> [N, channels, H, W], dropping padding channels. Throws UserError
/// unless ceil(channels / block) == CB.
Tensor layout_from_nchwc(const Tensor& x, int64_t channels);
/// Blocked conv2d: x [N, CB, H, W, bc], w [KB, CB, R, S, bc, b], optional bias [KB, b]
/// -> [N, KB, OH, OW, b] (OH as in conv2d). The input block bc is usually b; a conv on a few
/// channels (an image's 3) reads them as one block bc = C. With `depthwise`, w is
/// [KB, 1, R, S, 1, b], bc == b and KB == CB: output channel c reads input channel c only
/// (p.groups is ignored). Otherwise p.groups = G counts groups of whole blocks:
/// w [KB, CB / G, R, S, bc, b] with KB a multiple of G; output block kb belongs to group
/// kb / (KB / G) and reads that group's input blocks only. Throws UserError when the shapes
/// do not match so. Stages
/// "conv2d_nchwc_pad" (when padded), "conv2d_nchwc", "conv2d_nchwc_bias".
Tensor conv2d_nchwc(const Tensor& x, const Tensor& w, const Conv2dParams& p,
                    const Tensor& bias = Tensor(), bool depthwise = false);

// ---- quantized_conv.cpp ---------------------------------------------------------------------

/// 8-bit convolution, NCHW: x u8 [N, C, H, W] (zero point x_zero_point, which also fills the
/// padding), w i8 [K, C / p.groups, R, S], offset i32 [K], scale f32 [K]:
/// y[n,k,..] = f32(sum(i32(x) * i32(w)) + offset[k]) * scale[k], f32. With offset =
/// bias_q - x_zero_point * sum(w[k]) and scale = x_scale * w_scale[k] it is the dequantized
/// convolution of a QDQ model. Stages "qconv2d_pad" (when padded), "qconv2d" (the i32 sum),
/// "qconv2d_dequantize".
Tensor qconv2d(const Tensor& x, const Tensor& w, const Tensor& offset, const Tensor& scale,
               const Conv2dParams& p, int64_t x_zero_point);

/// A blocked u8 image [N, CB, H, W, xb] (xb a multiple of 4) as i32 words of four channels in
/// blocks of `words_block` channels (wb; 0: xb), padded by p's pads with words of `pad_byte`:
/// [N, CB * xb / wb, H + pads, W + pads, wb / 4]. Word j of block cbw holds channels
/// cbw * wb + 4j .. + 3, byte i channel cbw * wb + 4j + i (read from input block channel / xb,
/// lane channel % xb). wb must be a multiple of xb that divides CB * xb. Stage "pack_u8_words".
/// The same words from an NCHW u8 image of at most 4 channels [N, C, H, W]: [N, 1, H + pads, W +
/// pads, 1], byte i of each word channel i (0 for i >= C), read from C planes (contiguous
/// along W, where a blocked copy of the image would be read across its planes). Stage
/// "pack_u8_planes".
Tensor pack_u8_planes(const Tensor& x, const Conv2dParams& p, int64_t pad_byte);
Tensor pack_u8_words(const Tensor& x, const Conv2dParams& p, int64_t pad_byte,
                     int64_t words_block = 0);

/// 8-bit depthwise convolution in the blocked layout, summed in f32: x u8 [N, CB, H, W, x]
/// (zero point x_zero_point, which fills the padding), w f32 [CB, 1, R, S, 1, x] holding s8
/// values, offset and scale f32 [CB, x]: y [N, CB, OH, OW, x] f32 = (sum(f32(x) * w) +
/// offset) * scale. Every product and partial sum is an integer below 2^24 when R * S * 255 *
/// 128 is (up to 513 taps), so the sum is the exact i32 one; with |offset| <= 2^24 it is
/// rounded once, as f32(i32 sum + offset). Stages "qdepthwise_conv2d_nchwc_pad" (when padded),
/// "qdepthwise_conv2d_nchwc" and "qdepthwise_conv2d_nchwc_dequantize".
Tensor qdepthwise_conv2d_nchwc(const Tensor& x, const Tensor& w, const Tensor& offset,
                               const Tensor& scale, const Conv2dParams& p, int64_t x_zero_point);

/// 8-bit convolution in the blocked layout on words from pack_u8_words: x i32 [N, CB, Hp, Wp,
/// xw], w i32 [KB, CB, R, S, xw, x] (word j of [kb, cb, r, s, j, k] holds the s8 weights of
/// output channel kb * x + k for input channels cb * 4xw + 4j .. + 3), offset i32 [KB, x],
/// scale f32 [KB, x]; p's pads must be 0 (the words are padded). y [N, KB, OH, OW, x] f32 =
/// f32(sum(dot4_u8s8(x, w)) + offset) * scale. Stages "qconv2d_nchwc" and
/// "qconv2d_nchwc_dequantize".
Tensor qconv2d_nchwc(const Tensor& x, const Tensor& w, const Tensor& offset, const Tensor& scale,
                     const Conv2dParams& p);

// ---- quantized_matmul.cpp -------------------------------------------------------------------

/// 8-bit matrix product: x u8 [..., K] times weights w i32 [ceil(K/4), N] (word [j, n] holds
/// the s8 weights of column n for rows 4j .. 4j + 3, byte i for row 4j + i; rows past K are 0),
/// offset i32 [N], scale f32 [N]: y[..., n] = f32(sum_k x[..., k] * w[k, n] + offset[n]) *
/// scale[n], f32. Stages "qmatmul_words" (x's rows as words), "qmatmul" (the i32 sums with
/// dot4_u8s8), "qmatmul_dequantize".
Tensor qmatmul(const Tensor& x, const Tensor& w, const Tensor& offset, const Tensor& scale);

/// 8-bit product of two computed operands (attention's): x u8 [..., M, K] with zero point
/// x_zero_point times y u8 [..., K, N] with zero point y_zero_point (the same batch
/// dimensions, K a multiple of 4), scale f32 [1]: z[..., m, n] = f32(sum_k (x[..., m, k] -
/// x_zero_point) * (y[..., k, n] - y_zero_point)) * scale[0], f32. vpdpbusd multiplies u8 by
/// s8, so y enters as y - 128 and the sums of x's rows and of y's columns correct for that and
/// for the zero points. Stages "qmatmul_activations_words" (x's rows as words),
/// "qmatmul_activations_columns" (words of four rows of y - 128 by column, [..., K / 4, N]),
/// "qmatmul_activations_row_sums", "qmatmul_activations_column_sums", "qmatmul_activations"
/// (the i32 sums) and "qmatmul_activations_dequantize". Throws UserError on other dtypes or
/// shapes, or zero points outside [0, 255].
Tensor qmatmul_activations(const Tensor& x, const Tensor& y, const Tensor& scale,
                           int64_t x_zero_point, int64_t y_zero_point);

// ---- bf16_matmul.cpp -------------------------------------------------------------------------

/// bf16 matrix product: x bf16 [..., K] (K even) times weights w i32 [K / 2, N] (word [j, n]
/// holds the bf16 weights of column n for rows 2j (low half) and 2j + 1 (high half)): y[..., n]
/// = sum_k x[..., k] * w[k, n] in f32, f32; with batched words w [B, K / 2, N], x is [B, M, K]
/// and batch b uses w[b]. Stages "bf16_matmul_words" (x's rows as words) and
/// "bf16_matmul" (the f32 sums with dot2_bf16). Throws UserError on other dtypes or shapes.
Tensor bf16_matmul(const Tensor& x, const Tensor& w);

/// bf16 product of two computed operands: x bf16 [..., M, K] times the transpose of y bf16
/// [..., N, K] (K even, the same batch dimensions): z[..., m, n] = sum_k x[..., m, k] *
/// y[..., n, k] in f32, f32. Stages "bf16_matmul_nt_words" (x's rows as words),
/// "bf16_matmul_nt_columns" (y's rows as words, transposed to [..., K / 2, N]: the word rows
/// by columns a weight has) and "bf16_matmul_nt". Throws UserError on other dtypes or shapes.
Tensor bf16_matmul_nt(const Tensor& x, const Tensor& y);
/// The same product with y as it is, bf16 [..., K, N]: z[..., m, n] = sum_k x[..., m, k] *
/// y[..., k, n] (attention's P V, whose V is not a transpose's input). Instead of the columns
/// stage, "bf16_matmul_nt_pairs" [..., K / 2, N, 2] interleaves y's rows 2j and 2j + 1 (two
/// dense rows in, one out), and the product reads each pair as a word. Throws UserError on
/// other dtypes or shapes.
Tensor bf16_matmul_kn(const Tensor& x, const Tensor& y);

// ---- bf16_conv.cpp ---------------------------------------------------------------------------

/// The elements of one row of a merged (folded) pack_bf16_nchwc output: the padded row's
/// `padded_width` pixels of `out_block` channels side by side, then, when out_block is odd, one
/// or two zeros: the row stays a whole number of words, and the last word of a window row's
/// run (half of it past the window) stays inside the row.
int64_t bf16_merged_row_elements(int64_t padded_width, int64_t out_block);

/// The blocked f32 activations x [N, CB, H, W, xb] rounded to bf16 (nearest even), padded by
/// p's pads with 0 and re-blocked into ceil(CB * xb / out_block) blocks of out_block channels
/// (channels past CB * xb are 0): bf16 [N, CBW, H + pads, W + pads, out_block], what
/// bf16_conv2d_nchwc reads; with `merge_width` the same data as [N, CBW, H + pads,
/// bf16_merged_row_elements(W + pads, out_block)] (a row's pixels as one dimension, for the
/// folded conv; its tail past the pixels 0). Stage "pack_bf16_nchwc".
/// Throws UserError unless x is f32 of rank 5 and out_block positive and even (odd only merged).
Tensor pack_bf16_nchwc(const Tensor& x, const Conv2dParams& p, int64_t out_block,
                       bool merge_width = false);

/// bf16 convolution in the blocked layout on pack_bf16_nchwc's output x bf16 [N, CB, Hp, Wp,
/// xb] (padded already: p's pads must be 0) and weights w i32 [KB, CB, R, S, xb / 2, b] (word
/// j of [kb, cb, r, s, j, k] holds the bf16 weights of output channel kb * b + k for input
/// channels cb * xb + 2j (low half) and 2j + 1), optional f32 bias [KB, b]: f32 [N, KB, OH, OW,
/// b], the sums in f32 with dot2_bf16. With pixel_block = xb > 0 the input is folded: x [N, CB,
/// Hp, bf16_merged_row_elements(Wp, xb)] (merge_width) and w [KB, CB, R, ceil(S * xb / 2), b],
/// a window row's S pixels one run of words (word j: elements 2j and 2j + 1 of the run, pixel
/// 2j / xb; with odd S * xb the last word's high half is the next pixel's, its weight 0), which
/// makes a few-channel conv (an image's) one long reduction per window row. Folded, the column
/// dilation must be 1 and p.stride_w * xb even (every run starts on a whole word); xb may be
/// odd (3 channels: 11 words for a 7-wide window instead of 14 with a zero fourth channel).
/// Stages "bf16_conv2d_nchwc" and "bf16_conv2d_nchwc_bias" (with a bias). Throws UserError on
/// other dtypes, shapes or parameters.
Tensor bf16_conv2d_nchwc(const Tensor& x, const Tensor& w, const Conv2dParams& p,
                         const Tensor& bias = Tensor(), int64_t pixel_block = 0);

// ---- winograd.cpp ----------------------------------------------------------------------------
// Winograd F(m x m, r x r) convolution as input transform -> batched matmul -> output
// transform, alpha = m + r - 1, E = alpha^2 tile positions, tiles of m x m outputs numbered
// p = (n * TH + ty) * TW + tx (TH = ceil(OH / m), TW = ceil(OW / m)).

/// The output tiling of one Winograd convolution.
struct WinogradTile {
    int64_t m = 2;                     ///< outputs per tile and axis
    int64_t out_h = 0, out_w = 0;      ///< the convolution's output size
    int64_t pad_top = 0, pad_left = 0; ///< the convolution's leading pads

    /// Tiles along the height and the width: ceil(out / m). Pre: m >= 1.
    int64_t tiles_h() const { return (out_h + m - 1) / m; }
    int64_t tiles_w() const { return (out_w + m - 1) / m; }
};

/// Input transform: x [N, CB, H, W, b] (NCHW[b]c), table Bt [alpha, alpha] -> V [alpha^2,
/// N * TH * TW, CB * b] with V[a * alpha + b', p, c] = sum_ij Bt[a, i] * Bt[b', j] *
/// xpad[n, c / b, ty * m + i, tx * m + j, c % b] (0 outside the image), computed as rows then
/// columns, reading x in place (no padded copy). Stages "winograd_input_rows", "winograd_input".
/// Throws UserError on shapes that do not fit.
Tensor winograd_input_nchwc(const Tensor& x, const Tensor& table, const WinogradTile& t);
/// Output transform: m [alpha^2, P, KB * b] (the batched product of V with the transformed
/// weights), table At [m, alpha], optional bias [KB, b] -> y [N, KB, OH, OW, b] with
/// y[n, kb, h, w, k] = sum_ab At[h % m, a] * At[w % m, b] * m[a * alpha + b, tile of (n, h,
/// w), kb * b + k] (+ bias[kb, k]), computed as columns then rows. Stages
/// "winograd_output_cols", "winograd_output", "winograd_output_bias". Throws UserError on shapes
/// that do not fit.
Tensor winograd_output_nchwc(const Tensor& m, const Tensor& table, const Tensor& bias,
                             const WinogradTile& t, int64_t block);

// ---- pooling.cpp -----------------------------------------------------------------------------

struct Pool2dParams {
    int64_t kernel_h = 1, kernel_w = 1;
    int64_t stride_h = 1, stride_w = 1;
    int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
    int64_t dilation_h = 1, dilation_w = 1;
    /// Output size rounds up (the last window may hang over the bottom/right padding; a window
    /// that would start in the bottom/right padding is dropped, as in PyTorch).
    bool ceil_mode = false;
    /// avg_pool2d only: divide by the whole window size clipped to the padded input (true) or by
    /// the number of input elements in the window (false).
    bool count_include_pad = false;
    /// Square kernel, stride and pad on all four sides.
    static Pool2dParams make(int64_t kernel, int64_t stride, int64_t pad);
};

/// Pooling over the last two dims of x [..., H, W] (rank >= 2, usually NCHW). Output
/// [..., OH, OW], OH = (H + pad_top + pad_bottom - dilation_h * (kernel_h - 1) - 1) / stride_h + 1
/// (rounded up in ceil_mode). Max pool pads with the lowest value; avg pool sums in stage
/// "avg_pool2d_sum" then divides.
Tensor max_pool2d(const Tensor& x, const Pool2dParams& p);
Tensor avg_pool2d(const Tensor& x, const Pool2dParams& p);
/// max_pool2d of the blocked layout: x [N, CB, H, W, b] -> [N, CB, OH, OW, b], pooling dims 2
/// and 3 (stages "max_pool2d_nchwc_pad" when padded, "max_pool2d_nchwc").
Tensor max_pool2d_nchwc(const Tensor& x, const Pool2dParams& p);
/// avg_pool2d of the blocked layout: x [N, CB, H, W, b] -> [N, CB, OH, OW, b] (stages
/// "avg_pool2d_nchwc_pad" when padded, "avg_pool2d_nchwc": the sum of each element times the
/// reciprocal of its window's count, which rounds differently from avg_pool2d's one division).
Tensor avg_pool2d_nchwc(const Tensor& x, const Pool2dParams& p);
/// Mean / max over all dims from 2 on: x [N, C, ...] -> [N, C, 1, ...] (rank >= 3).
Tensor global_avg_pool2d(const Tensor& x);
Tensor global_max_pool2d(const Tensor& x);

// ---- elementwise.cpp -------------------------------------------------------------------------

/// numpy broadcasting of two shapes (trailing dims aligned, each pair equal or one of them 1).
/// Throws UserError naming `op` and both shapes otherwise.
std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                      const std::string& op);

/// Generic builders: y = f(x) elementwise; y = f(a, b) with numpy broadcasting.
Tensor unary(const Tensor& x, const std::function<Expr(Expr)>& f, const std::string& name);
/// y = f(elements of `ins` at one index of their numpy broadcast shape), for elementwise ops
/// whose operands differ in dtype (f casts as it needs; y has f's result type). Throws
/// UserError when an operand is undefined or the shapes do not broadcast.
Tensor broadcast_map(const std::vector<Tensor>& ins,
                     const std::function<Expr(const std::vector<Expr>&)>& f,
                     const std::string& name);
Tensor broadcast_binary(const Tensor& a, const Tensor& b, const std::function<Expr(Expr, Expr)>& f,
                        const std::string& name);

Tensor add(const Tensor& a, const Tensor& b);
Tensor subtract(const Tensor& a, const Tensor& b);
Tensor multiply(const Tensor& a, const Tensor& b);
Tensor divide(const Tensor& a, const Tensor& b); ///< Float: IEEE. Integer: floor division.
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);

Tensor relu(const Tensor& x);
Tensor clip(const Tensor& x, double lo, double hi); ///< min(max(x, lo), hi). Pre: lo <= hi.
Tensor leaky_relu(const Tensor& x, double alpha);   ///< x > 0 ? x : alpha * x. Float only.
/// Float-only math (UserError for other dtypes).
Tensor sigmoid(const Tensor& x); ///< 1 / (1 + exp(-x))
Tensor tanh(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor gelu(const Tensor& x); ///< 0.5 * x * (1 + erf(x / sqrt(2))), the exact (erf) form
Tensor exp(const Tensor& x);
Tensor sqrt(const Tensor& x);

// ---- softmax.cpp -----------------------------------------------------------------------------

/// Softmax along `axis` (negative counts from the end), numerically stable in four stages:
/// softmax_max (max along axis), softmax_exp (exp(x - max)), softmax_sum, softmax (exp / sum).
/// Float only.
Tensor softmax(const Tensor& x, int64_t axis = -1);

// ---- layer_norm.cpp --------------------------------------------------------------------------

/// Layer normalization over the dims from `axis` on (ONNX LayerNormalization):
/// y = (x - mean) / sqrt(var + epsilon) * gamma + beta, with mean and (biased) variance over
/// those dims, computed in two passes (stages layer_norm_sum, layer_norm_var, layer_norm).
/// gamma and beta have the normalized shape x.shape[axis:]; either may be Tensor() (no scale /
/// no shift). Float only.
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, int64_t axis = -1,
                  double epsilon = 1e-5);

// ---- reduce.cpp ------------------------------------------------------------------------------

/// Reductions over `axes` (negative counts from the end; empty = all axes, as in ONNX). With
/// keepdims the reduced dims stay as 1, otherwise they are dropped (all dropped: rank 0).
/// reduce_mean is a sum stage ("reduce_mean_sum") then a division.
Tensor reduce_sum(const Tensor& x, std::vector<int64_t> axes, bool keepdims = false);
Tensor reduce_mean(const Tensor& x, std::vector<int64_t> axes, bool keepdims = false);
Tensor reduce_max(const Tensor& x, std::vector<int64_t> axes, bool keepdims = false);
Tensor reduce_min(const Tensor& x, std::vector<int64_t> axes, bool keepdims = false);

// ---- layout.cpp ------------------------------------------------------------------------------

/// y[i_perm[0], ...]: output dim d is input dim perm[d]. Empty perm reverses the dims.
Tensor transpose(const Tensor& x, std::vector<int64_t> perm = {});
/// Same elements in row-major order, new shape; at most one -1 (inferred). Element counts must
/// match.
Tensor reshape(const Tensor& x, std::vector<int64_t> shape);
/// Joins tensors of equal rank along `axis`; the other dims must match.
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);

/// ONNX Gather (gather.cpp): y = data[..., indices[j...], ...] along `axis` (negative counts
/// from the end); shape data[:axis] + indices.shape + data[axis+1:]. Integer indices; a
/// negative index counts from the end of the axis. Indices outside the axis are clamped (the
/// graph evaluator rejects them; a kernel never reads out of bounds).
Tensor gather(const Tensor& data, const Tensor& indices, int64_t axis = 0);

enum class PadMode : uint8_t {
    Constant, ///< Outside values are `value`.
    Edge,     ///< Outside values repeat the nearest edge element.
    Reflect,  ///< Mirror without repeating the edge (pads must be < the dim).
};
/// Pads dim d with before[d] elements in front and after[d] behind (negative pads crop).
/// Each output dim must stay positive.
Tensor pad(const Tensor& x, std::vector<int64_t> before, std::vector<int64_t> after,
           double value = 0, PadMode mode = PadMode::Constant);
/// Constant padding with a value known only when the kernel runs: `value` is an expression of
/// x's dtype, such as the element of a scalar input tensor.
Tensor pad(const Tensor& x, std::vector<int64_t> before, std::vector<int64_t> after, Expr value);

/// ONNX Slice: for each listed axis (default all, in order), the elements start, start + step,
/// ... before end. Negative starts/ends count from the end; they are clamped to the dim (as in
/// ONNX), steps default to 1 and may be negative but not 0. The result must not be empty.
Tensor slice(const Tensor& x, std::vector<int64_t> starts, std::vector<int64_t> ends,
             std::vector<int64_t> axes = {}, std::vector<int64_t> steps = {});

} // namespace tessera::te
