// SHA-256 (FIPS 180-4), for stable content identities: workload keys and hardware fingerprints
// must be the same on every platform and in every tessera version, so no library hash is used.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera {

/// Incremental SHA-256. Feed bytes with update() any number of times, then call digest() once.
class Sha256 {
  public:
    Sha256();
    /// Appends bytes to the message. Pre: digest() has not been called.
    void update(const void* data, size_t len);
    void update(std::string_view s) { update(s.data(), s.size()); }
    /// Finishes the message and returns the 32-byte digest. Pre: called at most once.
    std::array<uint8_t, 32> digest();

  private:
    void compress(const uint8_t* block);
    uint32_t h_[8];
    uint8_t buf_[64];
    size_t buf_len_ = 0;
    uint64_t total_len_ = 0;
    bool finished_ = false;
};

/// The SHA-256 of `data` as 64 lower-case hex digits.
std::string sha256_hex(std::string_view data);

} // namespace tessera
