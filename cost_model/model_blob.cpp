// Cost-model blob header and fields (model_blob.h).
#include "model_blob.h"

#include "tessera/cost_model/features.h"
#include "tessera/support/error.h"

#include <cstring>

namespace tessera::cost::detail {

// "TSCM" then the blob format version: bump when the header itself changes.
static const uint8_t kMagic[4] = {'T', 'S', 'C', 'M'};
static const uint64_t kBlobFormatVersion = 1;

BlobWriter::BlobWriter(const std::string& kind) {
    out_.reserve(64);
    for (uint8_t b : kMagic) // byte by byte: g++ 12 misreads a range insert into an empty vector
        out_.push_back(b);
    u64(kBlobFormatVersion);
    str(kind);
    i64(kFeatureLayoutVersion);
}

void BlobWriter::u64(uint64_t v) {
    for (int i = 0; i < 8; ++i)
        out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void BlobWriter::str(const std::string& s) {
    bytes(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

void BlobWriter::bytes(const uint8_t* data, size_t size) {
    u64(size);
    out_.insert(out_.end(), data, data + size);
}

BlobReader::BlobReader(const std::vector<uint8_t>& blob, const std::string& expected_kind)
    : blob_(blob) {
    if (blob.size() < 4 || std::memcmp(blob.data(), kMagic, 4) != 0)
        throw UserError() << "not a tessera cost-model blob (" << blob.size() << " bytes)";
    pos_ = 4;
    uint64_t format = u64();
    if (format != kBlobFormatVersion)
        throw UserError() << "cost-model blob format " << format << " is not the supported "
                          << kBlobFormatVersion;
    std::string kind = str();
    if (kind != expected_kind)
        throw UserError() << "cost-model blob holds a '" << kind << "' model, expected '"
                          << expected_kind << "'";
    int64_t layout = i64();
    if (layout != kFeatureLayoutVersion)
        throw UserError() << "cost-model blob has feature layout version " << layout
                          << ", this build uses " << kFeatureLayoutVersion << " (retrain)";
}

const uint8_t* BlobReader::take(size_t n) {
    if (n > blob_.size() - pos_)
        throw UserError() << "cost-model blob is truncated at byte " << pos_ << " of "
                          << blob_.size();
    const uint8_t* p = blob_.data() + pos_;
    pos_ += n;
    return p;
}

uint64_t BlobReader::u64() {
    const uint8_t* p = take(8);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
        v |= static_cast<uint64_t>(p[i]) << (8 * i);
    return v;
}

std::string BlobReader::str() {
    std::vector<uint8_t> b = bytes();
    return std::string(b.begin(), b.end());
}

std::vector<uint8_t> BlobReader::bytes() {
    uint64_t n = u64();
    const uint8_t* p = take(n);
    return std::vector<uint8_t>(p, p + n);
}

void BlobReader::expect_end() const {
    if (pos_ != blob_.size())
        throw UserError() << "cost-model blob has " << (blob_.size() - pos_)
                          << " unexpected trailing bytes";
}

} // namespace tessera::cost::detail
