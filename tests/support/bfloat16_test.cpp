// BFloat16: f32 -> bf16 rounding to nearest even against values worked out by hand, NaN and
// overflow, exact widening, and dot2_bf16 on hand-made words.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "tessera/support/bfloat16.h"

using namespace tessera;

namespace {

float from_bits(uint32_t x) {
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

} // namespace

TEST(BFloat16Test, RoundsToNearestEven) {
    EXPECT_EQ(f32_to_bf16_bits(1.0f), 0x3f80);
    EXPECT_EQ(f32_to_bf16_bits(-2.0f), 0xc000);
    // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even 1.
    EXPECT_EQ(f32_to_bf16_bits(from_bits(0x3f808000)), 0x3f80);
    // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up to the even one.
    EXPECT_EQ(f32_to_bf16_bits(from_bits(0x3f818000)), 0x3f82);
    // Just above and below a tie.
    EXPECT_EQ(f32_to_bf16_bits(from_bits(0x3f808001)), 0x3f81);
    EXPECT_EQ(f32_to_bf16_bits(from_bits(0x3f807fff)), 0x3f80);
    // A carry out of the mantissa steps the exponent: 2 - 2^-9 rounds to 2.
    EXPECT_EQ(f32_to_bf16_bits(from_bits(0x3fffc000)), 0x4000);
    // Subnormals are rounded, not flushed.
    EXPECT_EQ(f32_to_bf16_bits(from_bits(0x00018000)), 0x0002);
}

TEST(BFloat16Test, OverflowIsInfinityAndNaNStaysQuietNaN) {
    EXPECT_EQ(f32_to_bf16_bits(std::numeric_limits<float>::max()), 0x7f80);
    EXPECT_EQ(f32_to_bf16_bits(-std::numeric_limits<float>::infinity()), 0xff80);
    const uint16_t signalling = f32_to_bf16_bits(from_bits(0x7f800001)); // payload only below
    EXPECT_TRUE(std::isnan(bf16_bits_to_f32(signalling)));
    EXPECT_TRUE(std::isnan(bf16_bits_to_f32(f32_to_bf16_bits(std::nanf("")))));
}

TEST(BFloat16Test, WideningIsExactAndEveryFiniteBitPatternRoundTrips) {
    for (uint32_t b = 0; b < 0x10000; ++b) {
        const float f = bf16_bits_to_f32(static_cast<uint16_t>(b));
        uint32_t x;
        std::memcpy(&x, &f, 4);
        EXPECT_EQ(x, b << 16);
        if (!std::isnan(f)) {
            EXPECT_EQ(f32_to_bf16_bits(f), b) << std::hex << b;
        }
    }
}

TEST(BFloat16Test, Dot2SumsTheProductsOfTheHalves) {
    // a = (1.5, -2), b = (3, 0.25): 1.5 * 3 + (-2) * 0.25 = 4.
    const auto word = [](float lo, float hi) {
        return uint32_t(f32_to_bf16_bits(lo)) | uint32_t(f32_to_bf16_bits(hi)) << 16;
    };
    EXPECT_EQ(dot2_bf16(word(1.5f, -2.0f), word(3.0f, 0.25f)), 4.0f);
    EXPECT_EQ(dot2_bf16(word(0, 1), word(7, 0)), 0.0f);
    const BFloat16 a = 1.5f, b = 2;
    EXPECT_EQ(static_cast<float>(BFloat16(a * b)), 3.0f);
}
