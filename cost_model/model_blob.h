// The byte layout shared by every cost-model blob (CostModel::save/load): a header naming the
// blob format, the model kind and the feature layout version, then model-specific fields.
// Internal to cost_model/; integers are little-endian on every platform.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::cost::detail {

/// Appends the header, then fields, to a byte vector.
class BlobWriter {
  public:
    /// Writes the header: magic, blob format version, `kind` and kFeatureLayoutVersion.
    explicit BlobWriter(const std::string& kind);
    void u64(uint64_t v);
    void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
    /// A length-prefixed string.
    void str(const std::string& s);
    /// A length-prefixed byte run.
    void bytes(const uint8_t* data, size_t size);
    std::vector<uint8_t> take() { return std::move(out_); }

  private:
    std::vector<uint8_t> out_;
};

/// Reads what BlobWriter wrote. The constructor checks the header and throws UserError on a
/// blob that is not a tessera cost-model blob, holds another model kind, or was written with
/// another feature layout version; every read throws UserError when the blob is truncated.
class BlobReader {
  public:
    BlobReader(const std::vector<uint8_t>& blob, const std::string& expected_kind);
    uint64_t u64();
    int64_t i64() { return static_cast<int64_t>(u64()); }
    std::string str();
    std::vector<uint8_t> bytes();
    /// Throws UserError when bytes are left after the last field (a blob of another layout).
    void expect_end() const;

  private:
    const uint8_t* take(size_t n);
    const std::vector<uint8_t>& blob_;
    size_t pos_ = 0;
};

} // namespace tessera::cost::detail
