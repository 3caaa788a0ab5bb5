// Helpers shared by the test programs: seeded random data and tolerant comparison.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::testing {

/// n floats uniform in [lo, hi), from a fixed seed (never all zeros).
std::vector<float> random_floats(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

/// Largest |a - b| / max(|b|, 1) over the elements; +inf when the sizes differ or a value is
/// NaN in one side only.
double max_rel_error(const std::vector<float>& a, const std::vector<float>& b);

} // namespace tessera::testing
