// Fuzz target of the model plan loader (runtime/model_plan.h), which reads the plan bytes of
// every library a user loads: any byte string must parse or fail with std::runtime_error (the
// C API's one-line error), never crash, hang or read outside the bytes. A plan that parses is
// valid (parse_plan validates) and must encode back to exactly the bytes it came from. Each
// input is also tried resealed (its trailing checksum recomputed), so that mutations reach the
// parser's structural checks instead of stopping at the checksum.
//
// Seeds: the plans of small models built at test time (fuzz_seeds). Driver: libFuzzer or
// standalone_driver.cpp, as for every fuzz target (CMakeLists.txt, scripts/fuzz_all.sh).
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "tessera/runtime/checksum.h"
#include "tessera/runtime/model_plan.h"
#include "tessera/support/error.h"

namespace {

/// Parses `bytes`; a plan that parses must encode back to exactly them.
void parse_and_reencode(const std::string& bytes) {
    using namespace tessera;
    runtime::ModelPlan plan;
    try {
        plan = runtime::parse_plan(bytes.data(), bytes.size());
    } catch (const std::runtime_error&) {
        return; // rejected: the expected outcome for most mutations
    }
    TESSERA_CHECK(runtime::serialize_plan(plan) == bytes)
        << "a parsed plan does not encode back to its bytes";
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string bytes(reinterpret_cast<const char*>(data), size);
    parse_and_reencode(bytes); // almost every mutation fails the trailing checksum here
    // Resealed, the same bytes reach the structural checks behind the checksum.
    if (size >= 8) {
        const uint64_t sum = tessera::runtime::content_checksum(bytes.data(), size - 8);
        for (int i = 0; i < 8; ++i)
            bytes[size - 8 + i] = static_cast<char>((sum >> (8 * i)) & 0xff);
        parse_and_reencode(bytes);
    }
    return 0;
}
