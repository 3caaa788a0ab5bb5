// content_checksum (checksum.h).
#include "tessera/runtime/checksum.h"

namespace tessera::runtime {

namespace {

constexpr uint64_t kMultiplier = 0x9E3779B97F4A7C15ull; // odd: multiplying is a bijection

uint64_t mix(uint64_t h, uint64_t word) {
    h = (h ^ word) * kMultiplier;
    return h ^ (h >> 29); // also a bijection: a changed word keeps the chain changed
}

uint64_t load_le(const unsigned char* p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
        v |= static_cast<uint64_t>(p[i]) << (8 * i);
    return v;
}

} // namespace

uint64_t content_checksum(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    uint64_t lane[4] = {1, 2, 3, 4};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int l = 0; l < 4; ++l)
            lane[l] = mix(lane[l], load_le(p + i + 8 * l));
    uint64_t h = mix(0, static_cast<uint64_t>(n));
    for (uint64_t l : lane)
        h = mix(h, l);
    for (; i < n; ++i)
        h = mix(h, p[i]);
    return h;
}

} // namespace tessera::runtime
