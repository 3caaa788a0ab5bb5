// Narrow types: codes of chosen values in every format, saturating and not, against the codes
// ONNX's reference (ml_dtypes) gives; every code decodes to a value that encodes back to it.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "tessera/support/narrow_types.h"

namespace tessera {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Ties, overflow, subnormals, signed zeros and infinities.
const std::vector<double> kValues = {
    0.47892547,   1e6,    1e-7, -1e-7, -1e6,  100,   -100, 460, 464, 465, 0.0013671875,
    0.0009765625, 2.5e-3, -0.0, 57344, 61440, 61441, 240,  248, 249, 6,   5,
    2.5,          0.25,   0.75, kInf,  -kInf};

struct Expected {
    NarrowFormat format;
    std::vector<int> saturated, unsaturated; // codes of kValues (from ml_dtypes)
};

const std::vector<Expected> kExpected = {
    {NarrowFormat::F8E4M3FN,
     {0x2f, 0x7e, 0x0,  0x80, 0xfe, 0x6c, 0xec, 0x7e, 0x7e, 0x7e, 0x1,  0x0,  0x1, 0x80,
      0x7e, 0x7e, 0x7e, 0x77, 0x78, 0x78, 0x4c, 0x4a, 0x42, 0x28, 0x34, 0x7e, 0xfe},
     {0x2f, 0x7f, 0x0,  0x80, 0xff, 0x6c, 0xec, 0x7e, 0x7e, 0x7f, 0x1,  0x0,  0x1, 0x80,
      0x7f, 0x7f, 0x7f, 0x77, 0x78, 0x78, 0x4c, 0x4a, 0x42, 0x28, 0x34, 0x7f, 0xff}},
    {NarrowFormat::F8E4M3FNUZ,
     {0x37, 0x7f, 0x0,  0x0,  0xff, 0x74, 0xf4, 0x7f, 0x7f, 0x7f, 0x1,  0x1,  0x3, 0x0,
      0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x54, 0x52, 0x4a, 0x30, 0x3c, 0x7f, 0xff},
     {0x37, 0x80, 0x0,  0x0,  0x80, 0x74, 0xf4, 0x80, 0x80, 0x80, 0x1,  0x1,  0x3, 0x0,
      0x80, 0x80, 0x80, 0x7f, 0x80, 0x80, 0x54, 0x52, 0x4a, 0x30, 0x3c, 0x80, 0x80}},
    {NarrowFormat::F8E5M2,
     {0x38, 0x7b, 0x0,  0x80, 0xfb, 0x56, 0xd6, 0x5f, 0x5f, 0x5f, 0x16, 0x14, 0x19, 0x80,
      0x7b, 0x7b, 0x7b, 0x5c, 0x5c, 0x5c, 0x46, 0x45, 0x41, 0x34, 0x3a, 0x7b, 0xfb},
     {0x38, 0x7c, 0x0,  0x80, 0xfc, 0x56, 0xd6, 0x5f, 0x5f, 0x5f, 0x16, 0x14, 0x19, 0x80,
      0x7b, 0x7c, 0x7c, 0x5c, 0x5c, 0x5c, 0x46, 0x45, 0x41, 0x34, 0x3a, 0x7c, 0xfc}},
    {NarrowFormat::F8E5M2FNUZ,
     {0x3c, 0x7f, 0x0,  0x0,  0xff, 0x5a, 0xda, 0x63, 0x63, 0x63, 0x1a, 0x18, 0x1d, 0x0,
      0x7f, 0x7f, 0x7f, 0x60, 0x60, 0x60, 0x4a, 0x49, 0x45, 0x38, 0x3e, 0x7f, 0xff},
     {0x3c, 0x80, 0x0,  0x0,  0x80, 0x5a, 0xda, 0x63, 0x63, 0x63, 0x1a, 0x18, 0x1d, 0x0,
      0x7f, 0x80, 0x80, 0x60, 0x60, 0x60, 0x4a, 0x49, 0x45, 0x38, 0x3e, 0x80, 0x80}},
    {NarrowFormat::F4E2M1,
     {0x1, 0x7, 0x0, 0x8, 0xf, 0x7, 0xf, 0x7, 0x7, 0x7, 0x0, 0x0, 0x0, 0x8,
      0x7, 0x7, 0x7, 0x7, 0x7, 0x7, 0x7, 0x6, 0x4, 0x0, 0x2, 0x7, 0xf},
     {}},
};

TEST(NarrowTypes, FloatCodesMatchTheReference) {
    for (const Expected& e : kExpected) {
        const char* name = narrow_format_info(e.format).name;
        for (size_t i = 0; i < kValues.size(); ++i) {
            EXPECT_EQ(narrow_encode(e.format, kValues[i], true), e.saturated[i])
                << name << " saturating " << kValues[i];
            // FLOAT4E2M1 always saturates.
            const int unsat = e.unsaturated.empty() ? e.saturated[i] : e.unsaturated[i];
            EXPECT_EQ(narrow_encode(e.format, kValues[i], false), unsat)
                << name << " not saturating " << kValues[i];
        }
    }
}

TEST(NarrowTypes, NaN) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    EXPECT_EQ(narrow_encode(NarrowFormat::F8E4M3FN, nan), 0x7f);
    EXPECT_EQ(narrow_encode(NarrowFormat::F8E4M3FN, -nan), 0x7f); // NaN's sign is not kept
    EXPECT_EQ(narrow_encode(NarrowFormat::F8E4M3FNUZ, nan), 0x80);
    EXPECT_EQ(narrow_encode(NarrowFormat::F8E5M2FNUZ, -nan), 0x80);
    EXPECT_TRUE(
        std::isnan(narrow_decode(NarrowFormat::F8E5M2, narrow_encode(NarrowFormat::F8E5M2, nan))));
    // No NaN in FLOAT4E2M1: -0.
    EXPECT_EQ(narrow_encode(NarrowFormat::F4E2M1, nan), 0x8);
    EXPECT_EQ(narrow_encode(NarrowFormat::F4E2M1, -nan), 0x8);
    EXPECT_TRUE(std::isnan(narrow_decode(NarrowFormat::F8E4M3FNUZ, 0x80)));
    EXPECT_TRUE(std::isnan(narrow_decode(NarrowFormat::F8E4M3FN, 0xff)));
    EXPECT_EQ(narrow_decode(NarrowFormat::F8E5M2, 0xfc), -kInf);
}

TEST(NarrowTypes, EveryFloatCodeRoundTrips) {
    for (NarrowFormat f : {NarrowFormat::F8E4M3FN, NarrowFormat::F8E4M3FNUZ, NarrowFormat::F8E5M2,
                           NarrowFormat::F8E5M2FNUZ, NarrowFormat::F4E2M1}) {
        const NarrowFormatInfo& info = narrow_format_info(f);
        int finite = 0;
        for (int c = 0; c < (1 << info.bits); ++c) {
            const double v = narrow_decode(f, static_cast<uint8_t>(c));
            if (std::isnan(v))
                continue;
            ++finite;
            EXPECT_EQ(narrow_encode(f, v, false), c) << info.name << " code " << c << " = " << v;
        }
        // 8-bit: 256 codes less NaNs (2 for FN, 1 for FNUZ, 6 for E5M2); FLOAT4E2M1 has none.
        const int expected = info.bits == 4                                  ? 16
                             : info.specials == NarrowSpecials::FiniteNaN    ? 254
                             : info.specials == NarrowSpecials::UnsignedZero ? 255
                                                                             : 250;
        EXPECT_EQ(finite, expected) << info.name;
    }
    EXPECT_EQ(narrow_decode(NarrowFormat::F8E4M3FN, 0x7e), 448);
    EXPECT_EQ(narrow_decode(NarrowFormat::F8E4M3FNUZ, 0x7f), 240);
    EXPECT_EQ(narrow_decode(NarrowFormat::F8E5M2FNUZ, 0x7f), 57344);
    EXPECT_EQ(narrow_decode(NarrowFormat::F8E4M3FN, 0x01), std::ldexp(1.0, -9));
    EXPECT_EQ(narrow_decode(NarrowFormat::F4E2M1, 0xb), -1.5);
}

TEST(NarrowTypes, Integers) {
    // From floats: truncation; out of range or NaN gives 0 (ONNX's reference).
    std::vector<int> i4, u4;
    for (int v = -9; v <= 16; ++v) {
        i4.push_back(narrow_decode(NarrowFormat::I4, narrow_encode(NarrowFormat::I4, v + 0.75)));
        u4.push_back(narrow_decode(NarrowFormat::U4, narrow_encode(NarrowFormat::U4, v)));
    }
    EXPECT_EQ(i4, (std::vector<int>{-8, -7, -6, -5, -4, -3, -2, -1, 0, 0, 1, 2, 3,
                                    4,  5,  6,  7,  0,  0,  0,  0,  0, 0, 0, 0, 0}));
    EXPECT_EQ(u4, (std::vector<int>{0, 0, 0, 0, 0, 0, 0,  0,  0,  0,  1,  2,  3,
                                    4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0}));
    EXPECT_EQ(narrow_encode(NarrowFormat::I4, -1.0), 0xf); // the low nibble of two's complement
    EXPECT_EQ(narrow_encode(NarrowFormat::I2, -2.0), 0x2);
    EXPECT_EQ(narrow_decode(NarrowFormat::I2, 0x3), -1);
    EXPECT_EQ(narrow_decode(NarrowFormat::U2, 0x3), 3);
    EXPECT_EQ(narrow_encode(NarrowFormat::U2, 4.0), 0);
    EXPECT_EQ(narrow_encode(NarrowFormat::I4, std::numeric_limits<double>::quiet_NaN()), 0);
    // From integers: the low bits.
    EXPECT_EQ(Int4(int8_t{100}).bits, 0x4);
    EXPECT_EQ(UInt4(17).bits, 0x1);
    EXPECT_EQ(static_cast<float>(Int4(int8_t{-8})), -8.0f);
    EXPECT_EQ(static_cast<float>(Float8E4M3FN(100.0f)), 96.0f);
}

} // namespace
} // namespace tessera
