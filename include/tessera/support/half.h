// Half: an IEEE 754 binary16 value stored as its 16 bits, converted to and from float with
// round-to-nearest-even. It is the element type of f16 tensors on the host (constants, the
// reference evaluator, .npy files); arithmetic goes through float, one rounding per operation,
// which is how the generated code computes on f16 values too.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace tessera {

/// The f16 nearest to f (ties to even); NaN stays NaN (quiet), overflow becomes infinity.
inline uint16_t f32_to_f16_bits(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7fffffffu;
    if (abs > 0x7f800000u) // NaN: keep the top mantissa bits, force quiet
        return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
    if (abs >= 0x477ff000u) // rounds to beyond 65504: infinity
        return static_cast<uint16_t>(sign | 0x7c00u);
    if (abs < 0x38800000u) {   // below the smallest normal f16 (2^-14): subnormal or zero
        if (abs < 0x33000000u) // below half the smallest subnormal (2^-25): zero
            return static_cast<uint16_t>(sign);
        const uint32_t exp = abs >> 23;
        const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126 - exp; // 14..24: value = mant * 2^(exp-150), unit 2^-24
        uint32_t h = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1)))
            ++h;
        return static_cast<uint16_t>(sign | h);
    }
    // Normal: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits.
    uint32_t h = ((abs - 0x38000000u) >> 13);
    const uint32_t rem = abs & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        ++h; // a carry into the exponent is the correct rounding
    return static_cast<uint16_t>(sign | h);
}

/// The float equal to an f16 (exact).
inline float f16_bits_to_f32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0x1f) {
        x = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) {
        x = sign | ((exp + 112) << 23) | (mant << 13);
    } else if (mant == 0) {
        x = sign;
    } else { // subnormal: normalize
        uint32_t e = 113, m = mant;
        while (!(m & 0x400u)) {
            m <<= 1;
            --e;
        }
        x = sign | (e << 23) | ((m & 0x3ffu) << 13);
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

/// One f16 value. Implicit conversions to and from float let generic host code (the reference
/// evaluator's templates) compute on it through float.
struct Half {
    uint16_t bits = 0;

    Half() = default;
    /// Any arithmetic value, through float (a double is rounded twice, which differs from one
    /// rounding only when the double lies within 2^-24 relative of an f16 tie).
    template <typename N, typename = std::enable_if_t<std::is_arithmetic_v<N>>>
    Half(N v) : bits(f32_to_f16_bits(static_cast<float>(v))) {} // NOLINT(google-explicit-*)
    operator float() const { return f16_bits_to_f32(bits); }    // NOLINT
    static Half from_bits(uint16_t b) {
        Half h;
        h.bits = b;
        return h;
    }
};
static_assert(sizeof(Half) == 2, "Half is stored as two bytes");

} // namespace tessera
