#include "tessera/te/narrow_cast.h"

#include <cmath>
#include <limits>

#include "tessera/ir/op.h"
#include "tessera/support/error.h"

namespace tessera::te {

using ir::DataType;
using ir::Expr;

namespace {

Expr i32(int64_t v, int lanes) { return ir::make_const(DataType::i32(lanes), v); }
Expr fconst(DataType t, double v) { return ir::make_const(t, v); }

// The integer value of code c (i32) in an integer format, sign-extended.
Expr decode_integer(const NarrowFormatInfo& info, Expr c, int lanes) {
    if (!info.is_signed)
        return c;
    const int full = 1 << info.bits;
    return ir::select(c >= i32(full / 2, lanes), c - i32(full, lanes), c);
}

Expr encode_integer(const NarrowFormatInfo& info, Expr x) {
    const DataType t = x.type();
    const int lanes = t.lanes, full = 1 << info.bits, half = full / 2;
    Expr v;
    if (t.is_float()) { // truncate; out of range (or NaN) gives 0
        if (t.bits < 32)
            x = ir::cast(DataType::f32(lanes), x);
        const DataType ft = x.type();
        const Expr tr = ir::select(x < fconst(ft, 0), ir::ceil(x), ir::floor(x));
        const Expr in_range =
            ir::logical_and(tr >= fconst(ft, info.is_signed ? -half : 0),
                            tr <= fconst(ft, info.is_signed ? half - 1 : full - 1));
        v = ir::cast(DataType::i32(lanes), ir::select(in_range, tr, fconst(ft, 0)));
    } else { // wrap: the low bits
        const DataType it = t.bits < 32 ? DataType::i32(lanes) : DataType(t.code, t.bits, lanes);
        Expr w = ir::cast(it, x) % ir::make_const(it, int64_t{full});
        v = ir::cast(DataType::i32(lanes), w);
    }
    // v in [-full, full): its low bits.
    return ir::cast(DataType::u8(lanes), (v + i32(full, lanes)) % i32(full, lanes));
}

} // namespace

Expr narrow_encode_expr(NarrowFormat f, Expr x, bool saturate) {
    const NarrowFormatInfo& info = narrow_format_info(f);
    if (!info.is_float)
        return encode_integer(info, std::move(x));
    const int lanes = x.type().lanes;
    if (!x.type().is_float() || x.type().bits < 32)
        x = ir::cast(DataType::f32(lanes), x);
    const DataType ft = x.type();
    const int sign_bit = 1 << (info.bits - 1), m_bits = info.mantissa_bits;
    const int e_min = 1 - info.bias;
    // Far enough above the largest exponent that anything clamped to it overflows.
    const int e_top = (1 << info.exponent_bits) - info.bias + 1;
    const Expr zero = fconst(ft, 0);
    const Expr a = ir::abs(x);
    // Negative, or -0 (1/-0 is -inf).
    const Expr negative =
        ir::logical_or(x < zero, ir::logical_and(ir::eq(x, zero), fconst(ft, 1) / x < zero));
    // The exponent e of a (that of the smallest normal for smaller values): floor(log2) of a
    // clamped to [2^e_min, 2^e_top] (NaN and infinity clamp to the top, 0 to the bottom), made
    // exact by comparing with powers of two.
    const Expr lo = fconst(ft, std::ldexp(1.0, e_min)), hi = fconst(ft, std::ldexp(1.0, e_top));
    const Expr ac = ir::select(a < lo, lo, ir::select(a < hi, a, hi));
    const Expr one = fconst(ft, 1);
    const Expr e0 =
        ir::cast(DataType::i32(lanes), ir::floor(ir::log(ac) * fconst(ft, 1.0 / std::log(2.0))));
    const Expr e1 = ir::select(ir::ldexp(one, e0) > ac, e0 - i32(1, lanes), e0);
    const Expr e = ir::select(ir::ldexp(one, e1 + i32(1, lanes)) <= ac, e1 + i32(1, lanes), e1);
    // a = q * 2^(e - M); the code's magnitude is (e + bias - 1) * 2^M + q, right also when q
    // rounds up into the next binade.
    const Expr q = ir::round_even(ir::ldexp(a, i32(m_bits, lanes) - e));
    const Expr magnitude =
        ir::cast(ft, (e + i32(info.bias - 1, lanes)) * i32(1 << m_bits, lanes)) + q;
    const Expr finite = ir::logical_and(magnitude <= fconst(ft, info.max_finite_code),
                                        a <= hi); // NaN and infinity fail both
    const Expr sign = ir::select(negative, i32(sign_bit, lanes), i32(0, lanes));
    Expr code = ir::cast(DataType::i32(lanes), ir::select(finite, magnitude, zero));
    if (info.specials == NarrowSpecials::UnsignedZero) // no -0
        code = code + ir::select(ir::ne(code, i32(0, lanes)), sign, i32(0, lanes));
    else
        code = code + sign;
    Expr overflow = sign + i32(info.max_finite_code, lanes);
    if (!saturate && info.specials == NarrowSpecials::InfAndNaN)
        overflow = sign + i32(((1 << info.exponent_bits) - 1) << m_bits, lanes);
    else if (!saturate && info.specials == NarrowSpecials::FiniteNaN)
        overflow = sign + i32(sign_bit - 1, lanes);
    else if (!saturate && info.specials == NarrowSpecials::UnsignedZero)
        overflow = i32(sign_bit, lanes);
    // A positive NaN's code (the IR does not see NaN's sign).
    const int nan_code = info.specials == NarrowSpecials::UnsignedZero ? sign_bit
                         : info.specials == NarrowSpecials::None       ? sign_bit // -0
                                                                       : sign_bit - 1;
    const Expr is_nan = ir::ne(x, x);
    code = ir::select(is_nan, i32(nan_code, lanes), ir::select(finite, code, overflow));
    return ir::cast(DataType::u8(lanes), code);
}

Expr narrow_decode_expr(NarrowFormat f, Expr code, DataType t) {
    const NarrowFormatInfo& info = narrow_format_info(f);
    const int lanes = code.type().lanes;
    TESSERA_CHECK(code.type().is_int() || code.type().is_uint())
        << "narrow code of type " << code.type();
    const int full = 1 << info.bits, sign_bit = full / 2;
    const Expr c = ir::cast(DataType::i32(lanes), code) % i32(full, lanes);
    if (!info.is_float)
        return ir::cast(t, decode_integer(info, c, lanes));
    const DataType ft = t.is_float() && t.bits == 64 ? DataType::f64(lanes) : DataType::f32(lanes);
    const int m_bits = info.mantissa_bits, m_full = 1 << m_bits;
    const Expr negative = c >= i32(sign_bit, lanes);
    const Expr magnitude = c % i32(sign_bit, lanes);
    const Expr e = magnitude / i32(m_full, lanes), m = magnitude % i32(m_full, lanes);
    const Expr significand = ir::select(ir::eq(e, i32(0, lanes)), m, m + i32(m_full, lanes));
    const Expr scale = ir::max(e, i32(1, lanes)) - i32(info.bias + m_bits, lanes);
    Expr v = ir::ldexp(ir::cast(ft, significand), scale);
    v = ir::select(negative, v * fconst(ft, -1), v); // -0 stays -0
    const int e_ones = (1 << info.exponent_bits) - 1;
    const double inf = std::numeric_limits<double>::infinity();
    const Expr nan = fconst(ft, std::numeric_limits<double>::quiet_NaN());
    switch (info.specials) {
    case NarrowSpecials::UnsignedZero:
        v = ir::select(ir::eq(c, i32(sign_bit, lanes)), nan, v);
        break;
    case NarrowSpecials::FiniteNaN:
        v = ir::select(ir::eq(magnitude, i32(sign_bit - 1, lanes)), nan, v);
        break;
    case NarrowSpecials::InfAndNaN: {
        const Expr top = ir::eq(e, i32(e_ones, lanes));
        const Expr infinity = ir::select(negative, fconst(ft, -inf), fconst(ft, inf));
        v = ir::select(top, ir::select(ir::eq(m, i32(0, lanes)), infinity, nan), v);
        break;
    }
    case NarrowSpecials::None:
        break;
    }
    return v.type() == t ? v : ir::cast(t, v);
}

} // namespace tessera::te
