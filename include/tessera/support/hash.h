// Stable, platform-independent hashing. Never hashes pointers.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace tessera {

/// Mixes a 64-bit value into a running hash (splitmix64 finalizer on the combination). The
/// result depends only on the sequence of values combined, on every platform.
inline uint64_t hash_combine(uint64_t seed, uint64_t v) {
    uint64_t x = seed ^ (v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/// FNV-1a over the bytes of a string.
inline uint64_t hash_string(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    return h;
}

/// Hash of a double by its bit pattern (so 0.0 and -0.0 differ, NaNs hash by payload).
inline uint64_t hash_double(double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    return bits;
}

} // namespace tessera
