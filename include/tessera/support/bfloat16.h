// BFloat16: a bfloat16 value (the top 16 bits of an IEEE binary32) stored as its 16 bits,
// converted from float with round-to-nearest-even (NaN stays NaN, made quiet; subnormals are
// kept, not flushed), as ONNX's Cast to bfloat16 rounds. AVX512-BF16's vcvtneps2bf16 agrees
// except on subnormal inputs, which it flushes to zero (0x007fffff gives 0x0000, not 0x0080,
// on a Zen 4 core): code generation uses it on vectors and takes the integer rounding for a
// vector that holds a subnormal (backends/llvm/codegen_llvm.cpp). It is the element
// type of bf16 tensors on the host (constants, the reference evaluator); arithmetic goes through
// float.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace tessera {

/// The bf16 nearest to f (ties to even); NaN stays NaN (quiet), overflow becomes infinity.
inline uint16_t f32_to_bf16_bits(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) // NaN: keep the sign and the top payload bits, quiet
        return static_cast<uint16_t>((x >> 16) | 0x40u);
    // Adding 0x7fff plus the kept part's lowest bit rounds half to even; a carry out of the
    // mantissa steps the exponent, which is right (up to infinity).
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(x >> 16);
}

/// The float equal to a bf16 (exact).
inline float bf16_bits_to_f32(uint16_t h) {
    const uint32_t x = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

/// The two bf16 halves of a (the low half first) times those of b, summed: the meaning of the
/// loop IR's dot2_bf16. Each product is exact in f32; their sum rounds once.
inline float dot2_bf16(uint32_t a, uint32_t b) {
    const auto lo = [](uint32_t w) { return bf16_bits_to_f32(static_cast<uint16_t>(w)); };
    const auto hi = [](uint32_t w) { return bf16_bits_to_f32(static_cast<uint16_t>(w >> 16)); };
    return lo(a) * lo(b) + hi(a) * hi(b);
}

/// One bf16 value. Implicit conversions to and from float let generic host code (the reference
/// evaluator's templates) compute on it through float.
struct BFloat16 {
    uint16_t bits = 0;

    BFloat16() = default;
    /// Any arithmetic value, through float (a double is rounded twice).
    template <typename N, typename = std::enable_if_t<std::is_arithmetic_v<N>>>
    BFloat16(N v) : bits(f32_to_bf16_bits(static_cast<float>(v))) {} // NOLINT(google-explicit-*)
    operator float() const { return bf16_bits_to_f32(bits); }        // NOLINT
    static BFloat16 from_bits(uint16_t b) {
        BFloat16 h;
        h.bits = b;
        return h;
    }
};
static_assert(sizeof(BFloat16) == 2, "BFloat16 is stored as two bytes");

} // namespace tessera
