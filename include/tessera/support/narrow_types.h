// Narrow element types: ONNX's 8- and 4-bit floats and 4- and 2-bit integers, each element
// stored in one byte (its code in the low bits), as numpy holds them through ml_dtypes and as a
// model library's C API passes them. One table gives each format's layout; the conversions
// here are the meaning of Cast to and from them (the reference evaluator uses them, and the
// kernels' expressions in te/narrow_cast.h are tested against them).
//
// Floats round to nearest, ties to even. Saturating conversions (ONNX Cast's default, and the
// only kind for FLOAT4E2M1) clamp finite overflow and infinities to the largest finite value;
// non-saturating ones give infinity (E5M2) or NaN (the formats without infinities). The
// "FNUZ" formats have no negative zero (0x80 is their NaN). NaN encodes as a positive NaN
// whatever its sign bit (kernels do not see it); formats without NaN (FLOAT4E2M1) turn it into
// -0, as ml_dtypes (ONNX's reference) does for a positive NaN. Integers
// from floats truncate toward zero; a value outside the range (or NaN) becomes 0, as ONNX's
// reference does; from integers they wrap (keep the low bits).
#pragma once

#include <cstdint>
#include <type_traits>

namespace tessera {

/// The narrow formats. E8M0 (exponent-only scales) is not among them.
enum class NarrowFormat : uint8_t {
    F8E4M3FN,
    F8E4M3FNUZ,
    F8E5M2,
    F8E5M2FNUZ,
    F4E2M1,
    I4,
    U4,
    I2,
    U2
};

/// How a narrow float spells NaN and infinity.
enum class NarrowSpecials : uint8_t {
    InfAndNaN,    ///< E5M2: all-ones exponent, mantissa 0 is infinity, others NaN (as IEEE)
    FiniteNaN,    ///< "FN": no infinity; all-ones exponent and mantissa is NaN (S.1111.111)
    UnsignedZero, ///< "FNUZ": no infinity, no negative zero; the code of -0 (0x80) is NaN
    None,         ///< no infinity and no NaN (FLOAT4E2M1)
};

/// The layout of one narrow format.
struct NarrowFormatInfo {
    NarrowFormat format;
    const char* name; ///< "f8e4m3fn", "i4" (tessera's spelling, as in graph dtype names)
    int bits;         ///< bits of a code: 8, 4 or 2 (the low bits of its byte)
    bool is_float;
    bool is_signed;
    // Floats only:
    int exponent_bits;
    int mantissa_bits;
    int bias; ///< a normal value is 1.m * 2^(e - bias)
    NarrowSpecials specials;
    uint8_t max_finite_code; ///< the code of the largest finite value (positive)
};

/// The table's row for f.
const NarrowFormatInfo& narrow_format_info(NarrowFormat f);

/// The value of code (its low info.bits bits; higher bits are ignored): exact as a double.
/// NaN codes give a quiet NaN, infinity codes infinity.
double narrow_decode(NarrowFormat f, uint8_t code);

/// The code of x in format f (see the file comment for rounding, saturation and range). The
/// code is in the byte's low bits, the others 0. `saturate` matters for the 8-bit floats only.
uint8_t narrow_encode(NarrowFormat f, double x, bool saturate = true);

/// The code of integer x in an integer format: its low bits (wrapping), as a cast between
/// integer types does. Pre: f is an integer format.
uint8_t narrow_encode_integer(NarrowFormat f, int64_t x);

/// One element of a narrow type, stored as its code. Conversions to and from arithmetic types
/// go through narrow_encode / narrow_decode, so generic host code (the reference evaluator's
/// templates) reads and writes it as a number.
template <NarrowFormat F> struct NarrowValue {
    uint8_t bits = 0;

    NarrowValue() = default;
    template <typename N, typename = std::enable_if_t<std::is_arithmetic_v<N>>>
    NarrowValue(N v) // NOLINT(google-explicit-constructor)
        : bits(encode(v)) {}
    operator float() const { return static_cast<float>(narrow_decode(F, bits)); } // NOLINT
    static NarrowValue from_bits(uint8_t b) {
        NarrowValue v;
        v.bits = b;
        return v;
    }

  private:
    template <typename N> static uint8_t encode(N v) {
        if constexpr (std::is_integral_v<N>)
            if (!narrow_format_info(F).is_float)
                return narrow_encode_integer(F, static_cast<int64_t>(v));
        return narrow_encode(F, static_cast<double>(v));
    }
};

using Float8E4M3FN = NarrowValue<NarrowFormat::F8E4M3FN>;
using Float8E4M3FNUZ = NarrowValue<NarrowFormat::F8E4M3FNUZ>;
using Float8E5M2 = NarrowValue<NarrowFormat::F8E5M2>;
using Float8E5M2FNUZ = NarrowValue<NarrowFormat::F8E5M2FNUZ>;
using Float4E2M1 = NarrowValue<NarrowFormat::F4E2M1>;
using Int4 = NarrowValue<NarrowFormat::I4>;
using UInt4 = NarrowValue<NarrowFormat::U4>;
using Int2 = NarrowValue<NarrowFormat::I2>;
using UInt2 = NarrowValue<NarrowFormat::U2>;

} // namespace tessera
