// Helpers shared by the test programs: seeded random data and tolerant comparison.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::testing {

/// n floats uniform in [lo, hi), from a fixed seed (never all zeros).
std::vector<float> random_floats(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

/// n i32 words from a fixed seed, every byte value equally likely; the first ones are the
/// byte extremes (all bytes 0xff, 0x80, 0x7f, 0, then 0xff80ff80) for n large enough.
std::vector<int32_t> random_words(size_t n, uint64_t seed);

/// Largest |a - b| / max(|b|, 1) over the elements; +inf when the sizes differ or a value is
/// NaN in one side only.
double max_rel_error(const std::vector<float>& a, const std::vector<float>& b);

/// How many times `what` occurs in text (overlapping occurrences counted), e.g. a call in
/// generated code.
int count_occurrences(const std::string& text, const std::string& what);

} // namespace tessera::testing
