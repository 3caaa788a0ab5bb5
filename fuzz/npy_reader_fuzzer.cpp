// Fuzz target of the .npy reader (graph/tensor_io.h), which reads every input file a user gives
// `tessera run`: any byte string must parse or fail with a UserError naming the file, never
// crash or allocate more than its header promises. A tensor that parses must encode back to
// .npy bytes that parse to the same tensor.
//
// Seeds: the .npy inputs and outputs of the shared models. Driver: libFuzzer or
// standalone_driver.cpp, as for every fuzz target (CMakeLists.txt, scripts/fuzz_all.sh).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "tessera/graph/tensor_io.h"
#include "tessera/support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace tessera;
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    graph::TensorData t;
    try {
        t = graph::parse_npy(bytes, "fuzz-input.npy");
    } catch (const UserError&) {
        return 0; // rejected
    }
    const graph::TensorData again = graph::parse_npy(graph::npy_bytes(t), "round trip");
    // Bytes, not values: NaN payloads must survive too.
    TESSERA_CHECK(again.dtype() == t.dtype() && again.shape() == t.shape() &&
                  again.nbytes() == t.nbytes() &&
                  (t.nbytes() == 0 || std::memcmp(again.raw(), t.raw(), t.nbytes()) == 0))
        << "a parsed .npy does not round-trip";
    return 0;
}
