#include "tessera/support/narrow_types.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "tessera/support/error.h"

namespace tessera {

using S = NarrowSpecials;

static constexpr NarrowFormatInfo kFormats[] = {
    // format                   name          bits float  signed E  M  bias specials max
    {NarrowFormat::F8E4M3FN, "f8e4m3fn", 8, true, true, 4, 3, 7, S::FiniteNaN, 0x7e},
    {NarrowFormat::F8E4M3FNUZ, "f8e4m3fnuz", 8, true, true, 4, 3, 8, S::UnsignedZero, 0x7f},
    {NarrowFormat::F8E5M2, "f8e5m2", 8, true, true, 5, 2, 15, S::InfAndNaN, 0x7b},
    {NarrowFormat::F8E5M2FNUZ, "f8e5m2fnuz", 8, true, true, 5, 2, 16, S::UnsignedZero, 0x7f},
    {NarrowFormat::F4E2M1, "f4e2m1", 4, true, true, 2, 1, 1, S::None, 0x7},
    {NarrowFormat::I4, "i4", 4, false, true, 0, 0, 0, S::None, 0x7},
    {NarrowFormat::U4, "u4", 4, false, false, 0, 0, 0, S::None, 0xf},
    {NarrowFormat::I2, "i2", 2, false, true, 0, 0, 0, S::None, 0x1},
    {NarrowFormat::U2, "u2", 2, false, false, 0, 0, 0, S::None, 0x3},
};

const NarrowFormatInfo& narrow_format_info(NarrowFormat f) {
    const size_t i = static_cast<size_t>(f);
    TESSERA_CHECK(i < std::size(kFormats) && kFormats[i].format == f)
        << "narrow format " << i << " not in table";
    return kFormats[i];
}

double narrow_decode(NarrowFormat f, uint8_t code) {
    const NarrowFormatInfo& info = narrow_format_info(f);
    const int full = 1 << info.bits, sign_bit = full >> 1;
    const int c = code & (full - 1);
    if (!info.is_float)
        return info.is_signed && c >= sign_bit ? c - full : c;
    const bool negative = (c & sign_bit) != 0;
    const int magnitude = c & (sign_bit - 1);
    const int m_bits = info.mantissa_bits;
    const int e = magnitude >> m_bits, m = magnitude & ((1 << m_bits) - 1);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    switch (info.specials) {
    case S::UnsignedZero:
        if (c == sign_bit)
            return nan;
        break;
    case S::FiniteNaN:
        if (magnitude == sign_bit - 1)
            return nan;
        break;
    case S::InfAndNaN:
        if (e == (1 << info.exponent_bits) - 1) {
            if (m != 0)
                return nan;
            return negative ? -std::numeric_limits<double>::infinity()
                            : std::numeric_limits<double>::infinity();
        }
        break;
    case S::None:
        break;
    }
    const double v = e == 0 ? std::ldexp(m, 1 - info.bias - m_bits)
                            : std::ldexp(m + (1 << m_bits), e - info.bias - m_bits);
    return negative ? -v : v;
}

uint8_t narrow_encode_integer(NarrowFormat f, int64_t x) {
    const NarrowFormatInfo& info = narrow_format_info(f);
    TESSERA_CHECK(!info.is_float) << info.name << " is not an integer format";
    return static_cast<uint8_t>(static_cast<uint64_t>(x) & ((1u << info.bits) - 1));
}

uint8_t narrow_encode(NarrowFormat f, double x, bool saturate) {
    const NarrowFormatInfo& info = narrow_format_info(f);
    const int full = 1 << info.bits, sign_bit = full >> 1;
    if (!info.is_float) {
        const double t = std::trunc(x); // NaN stays NaN and fails both range tests
        const double lo = info.is_signed ? -sign_bit : 0;
        const double hi = info.is_signed ? sign_bit - 1 : full - 1;
        if (!(t >= lo && t <= hi))
            return 0;
        return narrow_encode_integer(f, static_cast<int64_t>(t));
    }
    if (std::isnan(x)) { // as a positive NaN, whatever its sign bit
        switch (info.specials) {
        case S::UnsignedZero:
        case S::None: // no NaN: -0, as ml_dtypes turns a positive NaN into
            return static_cast<uint8_t>(sign_bit);
        default: // all-ones exponent and mantissa
            return static_cast<uint8_t>(sign_bit - 1);
        }
    }
    const bool negative = std::signbit(x);
    const int sign = negative ? sign_bit : 0;
    // What a value beyond the largest finite one becomes.
    int overflow = sign | info.max_finite_code;
    if (!saturate) {
        if (info.specials == S::InfAndNaN)
            overflow = sign | (((1 << info.exponent_bits) - 1) << info.mantissa_bits);
        else if (info.specials == S::FiniteNaN)
            overflow = sign | (sign_bit - 1);
        else if (info.specials == S::UnsignedZero)
            overflow = sign_bit;
    }
    const double a = std::fabs(x);
    if (std::isinf(a))
        return static_cast<uint8_t>(overflow);
    // a = q * 2^(e - M) with e the exponent of a (that of the smallest normal for subnormals);
    // the code's magnitude is (e + bias - 1) * 2^M + q, which stays right when rounding carries
    // q into the next binade (or a subnormal into the normals).
    const int e_min = 1 - info.bias, m_bits = info.mantissa_bits;
    const int e = a > 0 ? std::max(std::ilogb(a), e_min) : e_min;
    const double q = std::nearbyint(std::ldexp(a, m_bits - e)); // ties to even
    const double magnitude = std::ldexp(e + info.bias - 1, m_bits) + q;
    if (magnitude > info.max_finite_code)
        return static_cast<uint8_t>(overflow);
    if (magnitude == 0 && info.specials == S::UnsignedZero)
        return 0;
    return static_cast<uint8_t>(sign | static_cast<int>(magnitude));
}

} // namespace tessera
