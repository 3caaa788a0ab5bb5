// The checksum a model library carries of its plan and of its weights, checked when an
// instance is created: a library damaged after it was built (flipped bits, a bad copy) fails to
// load with one message instead of computing with corrupt numbers.
// This header has no tessera dependencies: the runtime is linked into built models alone.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::runtime {

/// A 64-bit checksum of n bytes at data (n may be 0; data may then be null). Four independent
/// multiply-xorshift chains over 8-byte little-endian words, then the tail bytes and n: every
/// change of one word changes the result, and it runs at several GB/s. Not cryptographic.
uint64_t content_checksum(const void* data, size_t n);

} // namespace tessera::runtime
