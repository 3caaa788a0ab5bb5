// SHA-256 against the FIPS 180-4 / NIST test vectors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "tessera/support/sha256.h"

namespace tessera {
namespace {

TEST(Sha256, EmptyString) {
    EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, Abc) {
    EXPECT_EQ(sha256_hex("abc"),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, TwoBlockMessage) {
    // 56 bytes: the padding needs a second block.
    EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, FourHundredFortyEightBitMessage) {
    EXPECT_EQ(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                         "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
              "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, MillionAs) {
    // Fed in odd-sized pieces to exercise the incremental buffering.
    Sha256 s;
    std::string chunk(7, 'a');
    size_t left = 1000000;
    while (left > 0) {
        size_t n = std::min(left, chunk.size());
        s.update(chunk.data(), n);
        left -= n;
    }
    std::array<uint8_t, 32> d = s.digest();
    EXPECT_EQ(d[0], 0xcd);
    EXPECT_EQ(d[1], 0xc7);
    EXPECT_EQ(d[31], 0xd0);
    EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

std::string hex(const std::array<uint8_t, 32>& d) {
    std::string out;
    char buf[3];
    for (uint8_t b : d) {
        std::snprintf(buf, sizeof(buf), "%02x", b);
        out += buf;
    }
    return out;
}

TEST(Sha256, IncrementalEqualsOneShotAroundTheBlockBoundary) {
    // Every length near the 55/56/63/64-byte padding cases, split at two points.
    for (size_t n = 50; n < 130; ++n) {
        std::string msg(n, 'x');
        for (size_t i = 0; i < n; ++i)
            msg[i] = char('a' + (i * 7) % 26);
        Sha256 s;
        s.update(msg.substr(0, n / 3));
        s.update(msg.substr(n / 3, n / 3));
        s.update(msg.substr(2 * (n / 3)));
        EXPECT_EQ(hex(s.digest()), sha256_hex(msg)) << n;
    }
    // 64 bytes exactly (a full block, then a padding-only block), checked with sha256sum.
    EXPECT_EQ(sha256_hex(std::string(64, 'a')),
              "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
    EXPECT_NE(sha256_hex("a"), sha256_hex("b"));
}

} // namespace
} // namespace tessera
