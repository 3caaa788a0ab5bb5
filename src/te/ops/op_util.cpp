// Shape and dtype checks shared by the operator definitions.
#include "op_util.h"

#include <algorithm>

namespace tessera::te::detail {

void check_defined(const Tensor& t, const std::string& op, const char* role) {
    if (!t.defined())
        throw UserError() << op << ": missing " << role << " tensor";
}

void check_float(const Tensor& t, const std::string& op) {
    if (!t.dtype().is_float())
        throw UserError() << op << ": input '" << t.name() << "' must be float, got " << t.dtype();
}

void check_same_dtype(const Tensor& a, const Tensor& b, const std::string& op) {
    if (a.dtype() != b.dtype())
        throw UserError() << op << ": inputs '" << a.name() << "' and '" << b.name()
                          << "' have different dtypes " << a.dtype() << " and " << b.dtype();
}

void check_rank(const Tensor& t, size_t rank, const std::string& op, const char* role) {
    if (t.ndim() != rank)
        throw UserError() << op << ": " << role << " '" << t.name() << "' must have rank " << rank
                          << ", got shape " << shape_to_string(t.shape());
}

void check_word_product_operands(const Tensor& x, const Tensor& w, DataType x_dtype,
                                 const std::string& op) {
    check_defined(x, op, "input");
    check_defined(w, op, "weight");
    if (x.dtype() != x_dtype || w.dtype() != DataType::i32())
        throw UserError() << op << ": input must be " << ir::to_string(x_dtype)
                          << " and weight i32 words, got " << ir::to_string(x.dtype()) << " and "
                          << ir::to_string(w.dtype());
    if (x.ndim() == 0)
        throw UserError() << op << ": input '" << x.name() << "' must have rank >= 1";
}

int64_t normalize_axis(int64_t axis, size_t rank, const std::string& op) {
    int64_t r = static_cast<int64_t>(rank);
    if (axis < -r || axis >= r)
        throw UserError() << op << ": axis " << axis << " out of range for rank " << rank;
    return axis < 0 ? axis + r : axis;
}

std::vector<int64_t> normalize_axes(std::vector<int64_t> axes, size_t rank, const std::string& op) {
    if (axes.empty()) {
        for (size_t i = 0; i < rank; ++i)
            axes.push_back(static_cast<int64_t>(i));
        return axes;
    }
    for (auto& a : axes)
        a = normalize_axis(a, rank, op);
    std::sort(axes.begin(), axes.end());
    for (size_t i = 1; i < axes.size(); ++i)
        if (axes[i] == axes[i - 1])
            throw UserError() << op << ": axis " << axes[i] << " repeated";
    return axes;
}

Expr window_taps_inside(const Expr& start, int64_t kernel, int64_t dilation, int64_t lo, int64_t hi,
                        int64_t bound) {
    if (dilation == 1)
        return ir::min(Expr(kernel), Expr(hi) - start) -
               ir::max(Expr(int64_t{0}), Expr(lo) - start);
    // ceil(x / d) as (x + m d + d - 1) / d - m with x + m d >= 0: divisions of non-negative
    // numbers round the same whichever way the target's division rounds.
    const int64_t m = bound / dilation + 1;
    auto ceil_div = [&](Expr x) {
        return (x + Expr(m * dilation + dilation - 1)) / Expr(dilation) - Expr(m);
    };
    const Expr first = ir::max(Expr(int64_t{0}), ceil_div(Expr(lo) - start));
    const Expr end = ir::min(Expr(kernel), ceil_div(Expr(hi) - start));
    return ir::max(Expr(int64_t{0}), end - first);
}

Expr clamp_index(Expr e, int64_t lo, int64_t hi) {
    return ir::min(ir::max(std::move(e), Expr(lo)), Expr(hi));
}

void check_dtype(const Tensor& t, DataType want, const std::string& op, const char* role) {
    check_defined(t, op, role);
    if (t.dtype() != want)
        throw UserError() << op << ": " << role << " '" << t.name() << "' must be "
                          << ir::to_string(want) << ", got " << ir::to_string(t.dtype());
}

void check_conv_window(const Conv2dParams& p, const std::string& op) {
    if (p.stride_h < 1 || p.stride_w < 1 || p.dilation_h < 1 || p.dilation_w < 1 || p.pad_top < 0 ||
        p.pad_left < 0 || p.pad_bottom < 0 || p.pad_right < 0)
        throw UserError() << op << ": strides and dilations must be positive and pads "
                          << "non-negative";
}

int64_t conv_window_out(int64_t extent, int64_t kernel, int64_t stride, int64_t dilation,
                        const std::string& op) {
    const int64_t span = dilation * (kernel - 1) + 1;
    if (extent < span)
        throw UserError() << op << ": kernel extent " << span << " larger than the padded input "
                          << extent;
    return (extent - span) / stride + 1;
}

Expr signed_byte(Expr byte) {
    return ir::cast(DataType::i32(), ir::cast(DataType(DataType::Code::Int, 8), std::move(byte)));
}

Expr word_of_bytes(const std::vector<Expr>& bytes) {
    TESSERA_CHECK(!bytes.empty() && bytes.size() <= 4) << bytes.size() << " bytes in a word";
    Expr word = bytes[0];
    for (size_t b = 1; b < bytes.size(); ++b)
        word = word + bytes[b] * constant(DataType::i32(), double(int64_t(1) << (8 * b)));
    return word;
}

Tensor rows_as_words(const Tensor& x, const std::string& name) {
    const int64_t per_word = 4 / x.dtype().bytes();
    TESSERA_CHECK(x.ndim() >= 1 && x.shape().back() % per_word == 0)
        << name << ": rows of " << x.shape().back() << " " << ir::to_string(x.dtype())
        << " elements are not whole words";
    std::vector<int64_t> word_shape = x.shape();
    word_shape.back() /= per_word;
    return compute(
        word_shape,
        [&](const std::vector<Var>& i) {
            std::vector<Expr> xi = as_exprs(i);
            xi.back() = i.back() * Expr(per_word);
            return ir::bytes_as_word(x(xi));
        },
        name);
}

} // namespace tessera::te::detail
