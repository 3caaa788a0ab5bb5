// xoshiro256** seeded through splitmix64.
#include "tessera/support/rng.h"

#include "tessera/support/error.h"

namespace tessera {

static uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

Rng::Rng(uint64_t seed) {
    for (auto& s : s_) s = splitmix64(seed);
}

uint64_t Rng::next() {
    uint64_t result = rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
}

int64_t Rng::uniform_int(int64_t lo, int64_t hi) {
    TESSERA_CHECK(lo <= hi) << "empty range [" << lo << ", " << hi << "]";
    uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    if (span == 0) return static_cast<int64_t>(next());
    // Rejection sampling removes modulo bias.
    uint64_t limit = UINT64_MAX - UINT64_MAX % span;
    uint64_t r;
    do r = next();
    while (r >= limit);
    return lo + static_cast<int64_t>(r % span);
}

double Rng::uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

float Rng::uniform_float(float lo, float hi) {
    return lo + static_cast<float>(uniform01()) * (hi - lo);
}

void Rng::fill(std::vector<float>& v, float lo, float hi) {
    for (auto& x : v) x = uniform_float(lo, hi);
}

} // namespace tessera
