// Seeded random number generation, always passed explicitly (no global RNG, no time seeds).
#pragma once

#include <cstdint>
#include <vector>

namespace tessera {

/// A small deterministic generator (xoshiro256**). Same seed, same stream, on every platform
/// and standard library (unlike std::uniform_*_distribution).
class Rng {
public:
    explicit Rng(uint64_t seed);
    /// Next raw 64-bit value.
    uint64_t next();
    /// Uniform integer in [lo, hi] inclusive. Pre: lo <= hi.
    int64_t uniform_int(int64_t lo, int64_t hi);
    /// Uniform double in [0, 1).
    double uniform01();
    /// Uniform float in [lo, hi).
    float uniform_float(float lo, float hi);
    /// Fills v with uniform floats in [lo, hi).
    void fill(std::vector<float>& v, float lo = -1.0f, float hi = 1.0f);

private:
    uint64_t s_[4];
};

} // namespace tessera
