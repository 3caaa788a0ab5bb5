// Half: IEEE binary16 conversions, round-to-nearest-even, against values worked out by hand and
// an exhaustive round trip of all 65536 bit patterns.
#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

#include "tessera/support/half.h"

namespace tessera {
namespace {

uint16_t bits_of(float f) { return f32_to_f16_bits(f); }

TEST(HalfTest, RoundsToNearestEven) {
    EXPECT_EQ(bits_of(1.0f), 0x3c00);
    EXPECT_EQ(bits_of(-2.5f), 0xc100);
    EXPECT_EQ(bits_of(-0.0f), 0x8000);
    EXPECT_EQ(bits_of(65504.0f), 0x7bff);                     // largest finite
    EXPECT_EQ(bits_of(65519.0f), 0x7bff);                     // below the tie with 65536
    EXPECT_EQ(bits_of(65520.0f), 0x7c00);                     // the tie rounds to even: infinity
    EXPECT_EQ(bits_of(1.0f + std::ldexp(1.0f, -11)), 0x3c00); // tie: down to even 1.0
    EXPECT_EQ(bits_of(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02); // tie: up to even
    EXPECT_EQ(bits_of(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);
    EXPECT_EQ(bits_of(std::ldexp(1.0f, -14)), 0x0400);     // smallest normal
    EXPECT_EQ(bits_of(std::ldexp(1.0f, -24)), 0x0001);     // smallest subnormal
    EXPECT_EQ(bits_of(std::ldexp(1.0f, -25)), 0x0000);     // tie with 0: to even
    EXPECT_EQ(bits_of(3 * std::ldexp(1.0f, -25)), 0x0002); // tie between 1 and 2 ulps
    EXPECT_EQ(bits_of(std::ldexp(1.0f, -25) * 1.0001f), 0x0001);
    EXPECT_EQ(bits_of(1023 * std::ldexp(1.0f, -24) + std::ldexp(1.0f, -25)), 0x0400); // carry
    EXPECT_EQ(bits_of(std::numeric_limits<float>::infinity()), 0x7c00);
    EXPECT_EQ(bits_of(-1e10f), 0xfc00);
    const uint16_t nan = bits_of(std::numeric_limits<float>::quiet_NaN());
    EXPECT_EQ(nan & 0x7c00, 0x7c00);
    EXPECT_NE(nan & 0x3ff, 0);
}

TEST(HalfTest, EveryBitPatternRoundTrips) {
    for (uint32_t b = 0; b < 0x10000; ++b) {
        const float f = f16_bits_to_f32(static_cast<uint16_t>(b));
        if (std::isnan(f)) {
            EXPECT_TRUE((b & 0x7c00) == 0x7c00 && (b & 0x3ff)) << b;
            continue;
        }
        EXPECT_EQ(bits_of(f), b) << b;
    }
    EXPECT_EQ(f16_bits_to_f32(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(f16_bits_to_f32(0x3555), 0.333251953125f);
}

TEST(HalfTest, ArithmeticGoesThroughFloat) {
    const Half a = 1.5f, b = 2;
    EXPECT_EQ(static_cast<float>(Half(a * b)), 3.0f);
    EXPECT_EQ(Half(0.1).bits, bits_of(0.1f));
    EXPECT_LT(a, b);
}

} // namespace
} // namespace tessera
