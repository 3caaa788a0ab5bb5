// Helpers shared by the operator definitions (private to src/te/ops).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tessera/ir/op.h"
#include "tessera/support/error.h"
#include "tessera/te/op_library.h"

namespace tessera::te::detail {

/// Throws UserError unless t is defined.
void check_defined(const Tensor& t, const std::string& op, const char* role);
/// Throws UserError unless t has a float dtype.
void check_float(const Tensor& t, const std::string& op);
/// Throws UserError unless t is defined and of dtype `want` (`role` names it: "input", ...).
void check_dtype(const Tensor& t, DataType want, const std::string& op, const char* role);
/// Throws UserError unless a and b have the same dtype.
void check_same_dtype(const Tensor& a, const Tensor& b, const std::string& op);
/// Throws UserError unless rank(t) == rank.
void check_rank(const Tensor& t, size_t rank, const std::string& op, const char* role);
/// The operands of a product of an activation x by weights packed as i32 words (bf16_matmul,
/// qmatmul): throws UserError unless both are defined, x is of dtype `x_dtype` with rank >= 1
/// and w is i32. The words' shape is each op's own check.
void check_word_product_operands(const Tensor& x, const Tensor& w, DataType x_dtype,
                                 const std::string& op);
/// Normalizes a possibly negative axis into [0, rank); UserError when out of range.
int64_t normalize_axis(int64_t axis, size_t rank, const std::string& op);
/// Normalized, sorted, duplicate-free axes; empty means all axes.
std::vector<int64_t> normalize_axes(std::vector<int64_t> axes, size_t rank, const std::string& op);

/// Throws UserError unless p's strides and dilations are positive and its pads non-negative.
void check_conv_window(const Conv2dParams& p, const std::string& op);
/// Output extent of a window of `kernel` taps over `extent` (padded already) input positions;
/// UserError when the window's span is larger than the input.
int64_t conv_window_out(int64_t extent, int64_t kernel, int64_t stride, int64_t dilation,
                        const std::string& op);

/// The immediate v in dtype t (scalar).
inline Expr constant(DataType t, double v) { return ir::make_const(t, v); }
/// Axis Vars as Exprs.
inline std::vector<Expr> as_exprs(const std::vector<Var>& v) { return {v.begin(), v.end()}; }
/// Number of taps start + k * dilation (k in [0, kernel)) inside [lo, hi): the divisor of an
/// average pool's window. `bound` is at least |lo - start| and |hi - start| for every start
/// (keeps the integer divisions' numerators non-negative). Dilation 1 gives the plain
/// min(kernel, hi - start) - max(0, lo - start).
Expr window_taps_inside(const Expr& start, int64_t kernel, int64_t dilation, int64_t lo, int64_t hi,
                        int64_t bound);
/// min(max(e, lo), hi) on i64 indices: keeps a read in bounds where Select guards it.
Expr clamp_index(Expr e, int64_t lo, int64_t hi);

/// The i32 value of u8 `byte` read as signed (byte - 256 from 128 on): a word's top byte.
Expr signed_byte(Expr byte);
/// The i32 word whose little-endian bytes are `bytes` (at most 4; missing high bytes 0), each
/// an i32 value: bytes[0..2] unsigned codes in [0, 255], bytes[3] signed in [-128, 127]
/// (signed_byte), so that the sum of byte << 8b is the word's bits without overflow.
Expr word_of_bytes(const std::vector<Expr>& bytes);

/// Stage `name`: x's rows (its last dimension) as i32 words of the consecutive elements they
/// hold (4 u8 or 2 bf16, bytes_as_word). Pre: x is u8 or bf16 and its rows are whole words.
Tensor rows_as_words(const Tensor& x, const std::string& name);

/// f(x value, output index): what a reduction stage reduces instead of x itself.
using ElementMap = std::function<Expr(Expr, const std::vector<Var>&)>;

/// One reduction stage `name` of x over `axes` (normalized, sorted) with op; with `f`, of
/// f(x[...], output index) (a map that feeds only this reduction writes no tensor of its own).
Tensor reduce_stage(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims,
                    ir::ReduceOp op, const std::string& name, const ElementMap& f = nullptr);

/// pad() with a chosen stage name (conv2d_pad, max_pool2d_pad, ...) and an immediate `value` of
/// x's dtype.
Tensor pad_named(const Tensor& x, std::vector<int64_t> before, std::vector<int64_t> after,
                 Expr value, PadMode mode, const std::string& name);

/// Mean over normalized `axes`: stage `name`_sum then `name` (the division).
Tensor mean_stages(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims,
                   const std::string& name);

} // namespace tessera::te::detail
